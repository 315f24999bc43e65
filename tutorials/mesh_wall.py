"""Tutorial: grains through an STL funnel into a turning cup (docs/tutorials/mesh-wall.md).

Rigid walls made of triangles: a funnel from a CAD file (a cone, written in
millimetres as a CAD program would) and, below it, a cup (a cylinder and a
round bottom) that turns about the vertical axis. Grains fall through the
funnel, pile up in the cup and are carried round by it. The script prints the pile as it forms, then
compares what the walls feel with what the grains weigh, and the grains'
rotation with the cup's.

    python tutorials/mesh_wall.py              # the full settings: 1,500 grains, 1.5 s
    python tutorials/mesh_wall.py --short      # the short settings (CI): 300 grains, 0.8 s
    mpiexec.mpich -n 2 .venv/bin/python tutorials/mesh_wall.py --short

``ECS_DEM_TUTORIAL_SHORT=1`` in the environment selects the short settings
too. Everything is in SI units, except the funnel's file, which is in mm.
"""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.mesh.generators import cylinder, flat_sheet
from ecs_dem.components.mesh.io import write_mesh
from ecs_dem.components.mesh_walls import Rotation, add_mesh_wall
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.run.hopper import hopper_mesh
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.neighbors.search import NeighborSearch

# The two sets of settings: the same physics, fewer grains and less time for CI.
FULL = {"grains": 1500, "duration": 1.5, "reports": 6}
SHORT = {"grains": 300, "duration": 0.8, "reports": 4}

R_MIN, R_MAX = 1.2e-3, 1.5e-3      # m, grain radii, uniform in between
GRAVITY = 9.81                     # m/s^2, along -z
CUP_RADIUS = 0.03                  # m
CUP_HEIGHT = 0.02                  # m
CUP_RATE = 3.0                     # rad/s about +z
FUNNEL_HEIGHT = 0.03               # m, the funnel's orifice above the cup's bottom


def settings_from(argv=None):
    """(short settings?, output folder): --short or ECS_DEM_TUTORIAL_SHORT=1; --output."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short settings (CI)")
    parser.add_argument("--output", default="output/tutorials/mesh_wall", help="output folder")
    args = parser.parse_args(argv)
    return args.short or os.environ.get("ECS_DEM_TUTORIAL_SHORT") == "1", Path(args.output)


def write_funnel(path: Path) -> None:
    """A funnel as a CAD program would save it: an open cone in mm, orifice 14 mm wide at
    z = 0, 60 mm wide at the top, walls 30 degrees from the vertical, and a short straight
    rim above (the hopper driver's generator)."""
    cone = hopper_mesh(7.0, 30.0, math.radians(30.0), 3.0, bin_height=10.0)  # mm
    write_mesh(path, cone)


def grain_column(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Radii and centres of n grains on a jittered lattice inside the funnel's straight rim
    and above it (m, in the world's frame: the orifice at z = FUNNEL_HEIGHT)."""
    radius = rng.uniform(R_MIN, R_MAX, n)
    spacing = 2.2 * R_MAX
    reach = 0.028 - R_MAX                      # inside the 30 mm rim
    axis = np.arange(-reach, reach + 1e-12, spacing)
    x, y = np.meshgrid(axis, axis, indexing="ij")
    disc = np.hypot(x, y) <= reach
    x, y = x[disc], y[disc]
    layers = math.ceil(n / len(x))
    z = FUNNEL_HEIGHT + 0.045 + spacing * np.arange(layers)   # from the rim's middle up
    position = np.column_stack([np.tile(x, layers), np.tile(y, layers), np.repeat(z, len(x))])
    position = position[:n] + rng.uniform(-0.05, 0.05, (n, 3)) * spacing
    return radius, position


def build_world(grains: int, funnel_file: Path, comm) -> World:
    rng = np.random.default_rng(5)  # same seed on every rank: every rank builds the same grains
    radius, position = grain_column(grains, rng)

    # 1. The material and the time step, as in the pour tutorial.
    E, nu, rho = 1e7, 0.3, 2500.0  # Pa, -, kg/m^3
    dt = 0.2 * float(rayleigh_time(R_MIN, rho, E, nu))

    # 2. The box holds the walls and the grains.
    half = CUP_RADIUS + 0.005
    top = float(position[:, 2].max()) + 2 * R_MAX
    world = World(Box((-half, -half, -0.01), (half, half, top)), dt=dt, skin=0.2 * R_MAX,
                  comm=comm)
    glass = add_species(world, youngs_modulus=E, poisson_ratio=nu, density=rho,
                        restitution=0.5, friction=0.5)
    add_particles(world, position, radius, glass)

    # 3. The funnel from its file: scale=1e-3 reads millimetres, translate places it (m).
    #    It stands still (no motion); grains touch its triangles, edges and vertices.
    add_mesh_wall(world, funnel_file, scale=1e-3, translate=(0.0, 0.0, FUNNEL_HEIGHT),
                  species=glass)

    # 4. The cup from generated meshes (no file needed): a round bottom (wall 1) and an open
    #    cylinder (wall 2), both turning about the vertical axis through the origin from
    #    t = 0. Their torques (mesh_walls.torque) are about that point.
    turning = Rotation(point=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), rate=CUP_RATE)
    add_mesh_wall(world, flat_sheet(3e-3, radius=CUP_RADIUS), species=glass, motion=turning)
    add_mesh_wall(world, cylinder(CUP_RADIUS, CUP_HEIGHT, 3e-3), species=glass, motion=turning)

    # 5. The systems: the mesh walls' contacts use the grains' contact law. Their set-up
    #    adds the candidate search and the cup's motion.
    law = HertzMindlinLaw()
    first_half, second_half = velocity_verlet()
    world.add_system(first_half)
    world.add_system(NeighborSearch())
    world.add_system(Gravity((0.0, 0.0, -GRAVITY)))
    world.add_system(ContactForces(law))
    world.add_system(MeshWallContacts(law))
    world.add_system(second_half)
    return world


def main(argv=None) -> int:
    short, folder = settings_from(argv)
    settings = SHORT if short else FULL
    comm = default_comm()
    say = print if comm.rank == 0 else (lambda *a, **k: None)  # print on one rank only

    funnel_file = folder / "funnel.stl"
    if comm.rank == 0:
        write_funnel(funnel_file)  # one rank writes the file ...
    comm.barrier()                 # ... and every rank reads it once it is there
    world = build_world(settings["grains"], funnel_file, comm)
    steps = int(round(settings["duration"] / world.dt))
    say(f"mesh wall ({'short' if short else 'full'} settings): {settings['grains']} grains, "
        f"dt = {world.dt:.3g} s, {steps} steps")
    say(f"walls: funnel {world.mesh_walls.triangle_count[0]} triangles, cup "
        f"{world.mesh_walls.triangle_count[1:3].sum()} triangles")
    say(f"{'time (s)':>8} {'in funnel':>10} {'in cup':>7} {'cup load (N)':>13}")
    p = world.particles
    done = 0
    for k in range(1, settings["reports"] + 1):
        chunk = steps * k // settings["reports"] - done
        world.run(chunk)
        done += chunk
        # measures over all ranks (collective: every rank calls them)
        below = p.position[:, 2] < FUNNEL_HEIGHT
        in_funnel = observe.count(world, ~below)
        in_cup = observe.count(world, below)
        load = -float(world.mesh_walls.force[1, 2])   # the grains push the bottom down
        say(f"{world.time:8.3f} {in_funnel:10d} {in_cup:7d} {load:13.4f}")

    # what the walls carry against the weight, and how the pile turns with the cup
    mass = observe.total(world, p.mass)
    funnel_load = -float(world.mesh_walls.force[0, 2])
    cup_load = -float(world.mesh_walls.force[1:3, 2].sum())
    xy = p.position[:, :2]
    # the grains' mean angular velocity about the axis: sum m (x v_y - y v_x) / sum m r^2
    lz = observe.total(world, p.mass * (xy[:, 0] * p.velocity[:, 1] - xy[:, 1] * p.velocity[:, 0]))
    inertia = observe.total(world, p.mass * (xy**2).sum(axis=1))
    torque = float(world.mesh_walls.torque[1:3, 2].sum())
    say(f"grains {observe.count(world, p)}, weight {mass * GRAVITY:.4f} N")
    say(f"funnel carries {funnel_load:.4f} N, cup {cup_load:.4f} N, together "
        f"{(funnel_load + cup_load) / (mass * GRAVITY):.1%} of the weight")
    say(f"pile turns at {lz / inertia:.3f} rad/s, the cup at {CUP_RATE:.3f} rad/s")
    say(f"torque of the grains on the cup about its axis {torque:.3e} N m")
    say(f"funnel file: {funnel_file} (mm)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
