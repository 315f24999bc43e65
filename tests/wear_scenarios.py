"""A grain sliding at constant load over a flat mesh wall, worn through the contact system:
the acceptance of wear (removed volume k F_t s, the worn depth along the track), shared by
tests/systems/mesh_wall/test_wear.py, tests/mpi/test_mesh_wear.py and bench/validation.py.

The grain is held (``fixed``: it drifts at its velocity and feels no force) at a constant
overlap over a flat sheet and slides along x at constant speed without spinning: a constant
normal load, the Coulomb force once the tangential spring has loaded, over a path that
crosses many triangles, their edges and vertices.
"""
import math

import numpy as np

from ecs_dem import Box, World
from ecs_dem.comm import SerialComm
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.mesh_walls import add_mesh_wall
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.observe import gather_by_gid, sum_of
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.mesh_wall.wear import MeshWear

E, NU, MU = 5e6, 0.3, 0.5          # Pa, 1, 1
R, OVERLAP = 3e-3, 4e-5            # m
SPEED, DT, STEPS = 2.0, 5e-6, 2000  # m/s, s: a path of 2 cm
EDGE = 1e-3                         # m, the mesh's triangles
K, FACTOR, EVERY = 1e-9, 10.0, 500
START = (-0.01, 1.3e-4)             # m, where the grain starts (x, y)


def hertz_load() -> float:
    """F_n = 4/3 E* sqrt(R) delta^(3/2) of a sphere on a rigid plane, E* = E / (1 - nu^2)."""
    return 4.0 / 3.0 * E / (1.0 - NU * NU) * math.sqrt(R) * OVERLAP ** 1.5


def sliding_grain(comm=None, steps: int = STEPS) -> dict:
    """Run the grain over the sheet; returns (on every rank) the wall's force, the removed
    volume and work summed over ranks, the path length, and the worn mesh gathered by gid."""
    world = World(Box((-0.02, -0.02, -0.01), (0.02, 0.02, 0.01)), dt=DT, skin=2e-4,
                  comm=comm if comm is not None else SerialComm())
    grain = add_species(world, youngs_modulus=E, poisson_ratio=NU, density=2500.0,
                        restitution=1.0, friction=MU)  # no damping: F_t = mu F_n
    add_mesh_wall(world, flat_sheet(EDGE, width=0.03, height=0.012))
    add_particles(world, np.array([[START[0], START[1], R - OVERLAP]]), R, grain,
                  velocity=np.array([[SPEED, 0.0, 0.0]]), fixed=True)
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    for s in (first, MeshWallContacts(law), second, MeshWear(K, FACTOR, every=EVERY)):
        world.add_system(s)
    world.run(steps)
    tri = world.mesh_triangles
    volume, work = sum_of(world, float(tri.owned("wear_volume").sum()),
                          float(tri.owned("worn_work").sum()))
    tgid, corners, tvolume = gather_by_gid(world, tri, ("gid", "vertices", "wear_volume"),
                                           root=None)
    vgid, x0, depth = gather_by_gid(world, world.mesh_vertices, ("gid", "x0", "wear_depth"),
                                    root=None)
    origin = world.mesh_walls.origin[0]
    centroid = (x0 + origin)[np.searchsorted(vgid, corners)].mean(axis=1)
    return {"force": world.mesh_walls.force[0].copy(), "volume": float(volume),
            "work": float(work), "path": SPEED * DT * steps, "vertex_position": x0 + origin,
            "vertex_depth": depth, "triangle_centroid": centroid, "triangle_volume": tvolume,
            "vertex_gid": vgid}


def expected_volume(result: dict) -> float:
    """f k F_t s with the tangential force the wall felt at the end (sliding)."""
    return FACTOR * K * abs(float(result["force"][0])) * result["path"]


def track_errors(result: dict) -> tuple[float, float]:
    """(the largest gap between the volume removed before x and f k F_t (x - x_start), over
    x along the track, in units of the volume of one edge length of track; the farthest
    worn vertex from the track's line, in units of the contact radius plus one edge)."""
    per_length = FACTOR * K * abs(float(result["force"][0]))
    cx, volume = result["triangle_centroid"][:, 0], result["triangle_volume"]
    order = np.argsort(cx)
    cumulative = np.cumsum(volume[order])
    xs = np.linspace(START[0] + 2 * EDGE, START[0] + result["path"] - 2 * EDGE, 50)
    removed = np.interp(xs, cx[order], cumulative)
    gap = float(np.max(np.abs(removed - per_length * (xs - START[0]))) / (per_length * EDGE))
    worn = result["vertex_depth"] > 0
    a = math.sqrt(R * OVERLAP)
    lateral = np.abs(result["vertex_position"][worn, 1] - START[1]) / (a + EDGE)
    return gap, float(lateral.max())
