"""A new rigid geometry is one module (tests/cylinder_wall.py): a cylinder wall works with every
law, with history, and with MC-DEM, on the contact pipeline's shared machinery.

Expected values are derived here: the law's force at the overlap the cylinder's geometry
gives (its surface is, locally, a plane at the distance of the nearest surface point), and
MC-DEM on a cylinder equal to MC-DEM on the tangent planes at the same contact points.
"""
import math

import numpy as np
import pytest

from cylinder_wall import CylinderContacts, add_cylinder

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.hertz_saturated import SaturatedHertzLaw
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.multicontact import MultiContact, multicontact
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts

R = 5e-3        # grain radius, m
RC = 0.04       # cylinder radius, m
E, NU = 1e7, 0.3
ESTAR = E / (1 - NU**2)  # a rigid wall: the grain's compliance alone
KN = 2e3        # N/m, the linear law


def world_with(positions, dt=1e-6, skin=2e-4, friction=0.5, restitution=0.9):
    world = World(Box((-0.05,) * 3, (0.05,) * 3), dt=dt, skin=skin, sort=False)
    add_species(world, youngs_modulus=E, poisson_ratio=NU, density=1000.0,
                restitution=restitution, friction=friction)
    create_particle_table(world)
    add_particles(world, positions, R)
    return world


def add_systems(world, *systems):
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *systems, second):
        world.add_system(s)


LAWS = {"hertz_mindlin": lambda: HertzMindlinLaw(),
        "hertz_saturated": lambda: SaturatedHertzLaw(),
        "linear": lambda: LinearSpringDashpotLaw(kn=KN, gamman=0.0, friction=0.5)}


def expected_normal(law: str, delta: float) -> float:
    if law == "linear":
        return KN * delta
    return 4.0 / 3.0 * ESTAR * math.sqrt(R * delta) * delta


@pytest.mark.parametrize("law", sorted(LAWS))
def test_a_grain_against_the_inside_and_the_outside_feels_the_laws_normal_force(law):
    """Grains at rest touching a drum (inside) and a pillar (outside) at oblique points: the
    force is the law's at overlap r - h, along the surface normal toward the grain, and the
    cylinders take the opposite force."""
    delta = 0.02 * R
    direction = np.array([0.6, 0.8, 0.0])
    inner = (RC - R + delta) * direction + [0.0, 0.0, 0.01]  # against the drum, from inside
    pillar_axis_point = np.array([0.0, 0.0, -0.03])
    outer = pillar_axis_point + (0.01 + R - delta) * np.array([0.0, 1.0, 0.0])
    world = world_with([inner, outer], dt=1e-7)
    add_cylinder(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), RC, inside=True)
    add_cylinder(world, pillar_axis_point, (1.0, 0.0, 0.0), 0.01, inside=False)
    add_systems(world, CylinderContacts(LAWS[law]()))
    world.setup()
    p = world.particles
    f = expected_normal(law, delta)
    np.testing.assert_allclose(p.force[p.rows_of([0])[0]], -f * direction, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(p.force[p.rows_of([1])[0]], [0.0, f, 0.0], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(world.cylinders.force[0], f * direction, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(world.cylinders.force[1], [0.0, -f, 0.0], rtol=1e-9, atol=1e-15)


def test_a_spinning_drum_drags_a_resting_grain_along_its_surface():
    """A grain pressed against a drum that spins about z: the surface slides under it at
    spin x r, so friction (history of a contact with a cylinder, carried step to step)
    pushes the grain along the surface's motion and the tangential spring grows."""
    delta = 0.02 * R
    world = world_with([[RC - R + delta, 0.0, 0.0]], dt=1e-7)
    add_cylinder(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), RC, spin=2.0)  # surface at +y
    add_systems(world, CylinderContacts(HertzMindlinLaw()))
    world.run(20)
    p = world.particles
    assert p.force[0, 1] > 0.0  # dragged toward +y, the surface's direction at x > 0
    spring = p.cylinder_tangential_spring[0, 0]
    assert spring[1] < 0.0 and abs(spring[0]) < 1e-3 * abs(spring[1])
    assert world.cylinders.force[0, 1] == pytest.approx(-p.force[0, 1], rel=1e-12)


def _squeezed(use_cylinder: bool, gamma: float):
    """A grain squeezed between a floor and the drum's wall above it (or the drum's tangent
    plane there), with a neighbour touching it from the side along the drum's axis (so both
    grains see the drum where its surface is a straight line): MC-DEM couples the contacts."""
    top = 0.02  # the drum's surface above the grains: drum axis along y at height top - RC
    grain = np.array([0.0, 0.0, top - R + 0.01 * R])
    side = grain + [0.0, 2 * R - 0.01 * R, 0.0]
    world = world_with([grain, side], dt=1e-7)
    add_wall(world, (0.0, 0.0, grain[2] - R + 0.01 * R), (0.0, 0.0, 1.0))
    mc = multicontact(SaturatedHertzLaw(), gamma)
    systems = list(mc)
    if use_cylinder:
        add_cylinder(world, (0.0, 0.0, top - RC), (0.0, 1.0, 0.0), RC)
        systems.append(CylinderContacts(SaturatedHertzLaw(), model=mc[0].model))
    else:
        add_wall(world, (0.0, 0.0, top), (0.0, 0.0, -1.0))
    add_systems(world, *systems)
    return world


@pytest.mark.parametrize("gamma", [0.0, 1.19])
def test_multicontact_sees_the_cylinder_as_it_sees_a_wall(gamma):
    """MC-DEM with the drum above the grain equals MC-DEM with the drum's tangent plane there:
    the grain's surface displacements, the contact forces and the motion agree to round-off
    (the two shapes compute the same distance by different arithmetic) over 200 steps; gamma
    1.19 moves the forces away from gamma 0 (the correction is there)."""
    drum, plane = _squeezed(True, gamma), _squeezed(False, gamma)
    for world in (drum, plane):
        world.run(200)
    a, b = drum.particles, plane.particles
    np.testing.assert_allclose(a.force, b.force, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.position, b.position, rtol=0, atol=1e-15)
    np.testing.assert_allclose(a.mc_wall_force[:, 0], b.mc_wall_force[:, 0], rtol=1e-9)
    np.testing.assert_allclose(a.mc_cylinder_force[:, 0], b.mc_wall_force[:, 1], rtol=1e-9)
    np.testing.assert_allclose(a.mc_cylinder_displacement[:, 0], b.mc_wall_displacement[:, 1],
                               rtol=1e-9, atol=1e-18)
    np.testing.assert_allclose(drum.cylinders.force[0], plane.walls.force[1], rtol=1e-9)
    if gamma:
        assert np.all(np.abs(a.mc_cylinder_displacement[:, 0]) > 1e-9)
        reference = _squeezed(True, 0.0)
        reference.run(200)
        assert not np.allclose(reference.particles.force, a.force, rtol=1e-6)


def test_a_second_system_on_the_same_cylinders_is_refused():
    world = world_with([[0.0, 0.0, 0.0]])
    add_cylinder(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), RC)
    add_systems(world, CylinderContacts(HertzMindlinLaw()), CylinderContacts(HertzMindlinLaw()))
    from ecs_dem.errors import InputError
    with pytest.raises(InputError, match="evaluates the same contacts"):
        world.setup()


def test_the_model_is_shared_by_the_systems_of_multicontact():
    systems = multicontact(SaturatedHertzLaw(), 1.19)
    models = {id(s.model) for s in systems}
    assert len(models) == 1 and isinstance(systems[0].model, MultiContact)
    assert isinstance(systems[1], ContactForces) and isinstance(systems[2], WallContacts)
