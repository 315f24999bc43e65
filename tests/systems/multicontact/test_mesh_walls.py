"""MC-DEM with triangulated (mesh) walls: a grain against a flat STL mesh wall feels what it
feels against the equivalent planar wall (systems.mesh_wall.contacts, systems.multicontact).

Reference: the same scene with the mesh floor replaced by a planar wall, run with the planar
walls' MC-DEM (tests/systems/multicontact/test_multicontact.py pins that one against Eq. (1)
and its fixed point). The floor's contact is a contact side of its grain in Eq. (1) either
way, so the corrections, forces and the fixed point agree to round-off (the sums of Eq. (1)
run over the contacts in another order); the independent-contact forces (gamma = 0) differ
from them by percents, so a mesh contact left out of the correction would fail.
"""
import math

import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.mesh.io import write_mesh
from ecs_dem.components.mesh_walls import add_mesh_wall
from ecs_dem.components.particles import add_particles, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.errors import InputError
from ecs_dem.systems.contact.hertz_saturated import SaturatedHertzLaw
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.multicontact.systems import multicontact
from ecs_dem.systems.neighbors.search import NeighborSearch

E, NU, RHO = 23.3e3, 0.3, 1000.0  # the hydrogel's modulus; nu = 0.3: every term of Eq. (1)
R = 5e-3
GAMMA = 1.19
DELTA_FLOOR = 0.06 * R
FLOOR = -(R - DELTA_FLOOR)            # the floor's height under grain A (at the origin)
FOOT = (0.0011, 0.0007)               # A's foot point, inside a triangle of the sheet


def scene(tmp_path, floor, *, gamma=GAMMA, free=False, friction=0.03, floor_height=FLOOR):
    """Grain A at (FOOT, 0) on a floor at height `floor_height` (overlap DELTA_FLOOR at FLOOR).
    `floor`: "mesh" (a flat STL sheet of 8 mm triangles, several times the contact's radius
    sqrt(2 R delta), so that Table 1 keeps one contact) or "plane". Fixed, pressed along -x
    by a planar side wall (overlap 0.04 R) and by a tilted one from above (0.05 R); or
    `free`: under gravity, with grain B resting on top of it, both sliding along y at
    6 cm/s."""
    world = World(Box((-0.05,) * 3, (0.05,) * 3), dt=2e-4, skin=0.2 * R, sort=False)
    add_species(world, youngs_modulus=E, poisson_ratio=NU, density=RHO, restitution=0.9,
                friction=friction)
    create_particle_table(world)
    a = np.array([FOOT[0], FOOT[1], 0.0])
    if free:
        e = np.array([-0.02, 0.0, 1.0]) / math.sqrt(1.0004)
        add_particles(world, [a, a + (2.0 * R - 1e-3 * R) * e], R,
                      velocity=[[0.0, 0.06, 0.0]] * 2)
    else:
        e = np.array([-0.6, 0.1, 0.8]) / math.sqrt(1.01)
        add_particles(world, [a], R, fixed=True)
        add_wall(world, (a[0] + R - 0.04 * R, 0.0, 0.0), (-1.0, 0.0, 0.0))
        add_wall(world, a + (R - 0.05 * R) * e, -e)
    if floor == "mesh":
        path = tmp_path / "floor.stl"
        write_mesh(path, flat_sheet(8e-3, width=0.06, height=0.06))
        add_mesh_wall(world, path, translate=(0.0, 0.0, floor_height))
    else:
        add_wall(world, (0.0, 0.0, floor_height), (0.0, 0.0, 1.0))
    law = SaturatedHertzLaw()
    systems = multicontact(law, gamma)
    first, second = velocity_verlet()
    extra = [MeshWallContacts(law, model=systems[0].model)] if floor == "mesh" else []
    gravity = [Gravity((0.0, 0.0, -9.81))] if free else []
    for s in (first, NeighborSearch(), *gravity, *systems, *extra, second):
        world.add_system(s)
    return world


def floor_state(world, floor):
    """(W of A toward the floor, the floor's normal force on A) of the last evaluation."""
    if floor == "plane":
        p = world.particles
        return p.mc_wall_displacement[0, -1], p.mc_wall_force[0, -1]
    pairs = world.mesh_pairs
    on = np.flatnonzero(pairs.mc_mesh_force[:pairs.n_owned] != 0.0)
    assert on.size == 1  # one selected contact: a face contact
    return pairs.mc_mesh_displacement[on[0]], pairs.mc_mesh_force[on[0]]


def test_grain_on_a_flat_mesh_wall_converges_to_the_planar_walls_fixed_point(tmp_path):
    """Fixed grains: each step is one iteration of the lagged fixed-point map. Step by step,
    the forces on both grains, the floor's force and A's W toward it agree with the planar
    floor's to 1e-12, up to the fixed point (40 steps); the floor force then differs from
    gamma = 0's by more than 1 %."""
    mesh, plane = scene(tmp_path, "mesh"), scene(tmp_path, "plane")
    mesh.setup()
    plane.setup()
    for step in range(40):
        mesh.step_once()
        plane.step_once()
        scale = np.abs(plane.particles.force[0]).max()
        np.testing.assert_allclose(mesh.particles.force[0], plane.particles.force[0],
                                   rtol=1e-12, atol=1e-12 * scale)
        W_mesh, F_mesh = floor_state(mesh, "mesh")
        W_plane, F_plane = floor_state(plane, "plane")
        assert F_mesh == pytest.approx(F_plane, rel=1e-12)
        assert W_mesh == pytest.approx(W_plane, rel=1e-12, abs=1e-12 * R)
        np.testing.assert_allclose(mesh.mesh_walls.force[0], [0.0, 0.0, -F_plane],
                                   rtol=1e-12, atol=1e-12 * F_plane)
    assert abs(W_plane) > 1e-3 * DELTA_FLOOR
    independent = scene(tmp_path, "mesh", gamma=0.0)
    independent.run(1)
    assert abs(floor_state(independent, "mesh")[1] / F_plane - 1.0) > 0.01


def selected_triangle(world):
    """The triangle of grain A's one floor contact."""
    pairs = world.mesh_pairs
    on = np.flatnonzero((pairs.mc_mesh_force[:pairs.n_owned] != 0.0) & (pairs.i == 0))
    assert on.size == 1
    return int(pairs.triangle[on[0]])


def test_free_grains_on_a_flat_mesh_wall_move_as_on_the_planar_wall(tmp_path):
    """Free grains under gravity, frictionless (the lever arm of a mesh contact, |d| + W/2,
    differs from the planar wall's mid-overlap one only in torques): grain A slides along y
    at 6 cm/s, its foot point crossing from one triangle onto the next, while B lands on it.
    400 steps (0.08 s), floor force to 1e-5 (measured 3e-6: the lagged W of the new
    triangle's candidate), positions to 1e-7 R (5e-9); the force never drops (a neighbouring
    triangle's candidate displaced by the contact it continues would lose it)."""
    mass = RHO * 4.0 / 3.0 * math.pi * R**3
    rest = (3.0 * mass * 9.81 * (1 - NU**2) / (4.0 * E * math.sqrt(R))) ** (2.0 / 3.0)
    mesh, plane = (scene(tmp_path, floor, free=True, friction=0.0, floor_height=-(R - rest))
                   for floor in ("mesh", "plane"))
    start = mesh.particles.position[:2].copy()
    for world in (mesh, plane):
        world.setup()
    triangles = {selected_triangle(mesh)}
    for step in range(400):
        mesh.step_once()
        plane.step_once()
        triangles.add(selected_triangle(mesh))
        W_mesh, F_mesh = floor_state(mesh, "mesh")
        W_plane, F_plane = floor_state(plane, "plane")
        assert F_mesh == pytest.approx(F_plane, rel=1e-5)
    assert len(triangles) >= 2
    np.testing.assert_allclose(mesh.particles.position[:2], plane.particles.position[:2],
                               rtol=0, atol=1e-7 * R)
    assert np.abs(mesh.particles.position[:2] - start).max() > 0.5 * R
    assert mesh.pairs.mc_force[:mesh.pairs.n_owned].max() > 0.0  # B rests on A


def test_mesh_walls_without_the_model_are_refused_in_an_mc_dem_world(tmp_path):
    world = scene(tmp_path, "plane")
    write_mesh(tmp_path / "floor.stl", flat_sheet(1.7e-3, width=0.04, height=0.04))
    add_mesh_wall(world, tmp_path / "floor.stl", translate=(0.0, 0.0, -0.02))
    world.add_system(MeshWallContacts(SaturatedHertzLaw()))
    with pytest.raises(InputError, match=r"give the model: MeshWallContacts\(law, model="):
        world.run(1)
