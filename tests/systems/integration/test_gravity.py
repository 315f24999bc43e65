"""Uniform body force: m g on free rows, nothing on fixed rows; with velocity Verlet a free
particle falls on the parabola x0 + v0 t + g t^2 / 2 (exact for a constant force, to
round-off), and LAMMPS's chute gravity points along (sin a, 0, -cos a)."""
import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.errors import InputError
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity, add_body_force
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from helpers import colliding_pile


@pytest.mark.parametrize("n", [1, 9, 400])
def test_the_kernel_adds_m_g_to_free_rows_only(n):
    rng = np.random.default_rng(n)
    mass = rng.uniform(0.5, 2.0, n)
    fixed = rng.random(n) < 0.3
    g = np.array([0.7, -0.2, -9.81])
    force = rng.normal(size=(n, 3))
    expected = force + np.where(fixed[:, None], 0.0, mass[:, None] * g)
    before = force.copy()
    add_body_force(mass, fixed, g, force)
    np.testing.assert_allclose(force, expected, rtol=1e-15, atol=0)
    assert np.array_equal(force[fixed], before[fixed])


def test_a_free_particle_falls_on_the_parabola_and_a_fixed_one_stays():
    world = World(Box((-1,) * 3, (1,) * 3), dt=1e-3)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    add_particles(world, [[0.0, 0.0, 0.5], [0.5, 0.5, 0.5]], 0.01,
                  velocity=[[0.1, -0.2, 0.3], [0.0, 0.0, 0.0]])
    world.particles.fixed[1] = True
    g = np.array([0.5, 0.0, -9.81])
    first, second = velocity_verlet()
    for s in (first, Gravity(g), second):
        world.add_system(s)
    steps = 200
    world.run(steps)
    t = steps * world.dt
    p = world.particles
    row = {gid: k for k, gid in enumerate(p.gid[:p.n_owned])}
    free, held = row[0], row[1]
    np.testing.assert_allclose(p.position[free], [0.0, 0.0, 0.5] + np.array([0.1, -0.2, 0.3]) * t
                               + 0.5 * g * t * t, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(p.velocity[free], np.array([0.1, -0.2, 0.3]) + g * t,
                               rtol=1e-12, atol=1e-14)
    assert np.array_equal(p.position[held], [0.5, 0.5, 0.5])
    assert np.array_equal(p.velocity[held], [0.0, 0.0, 0.0])


def test_chute_gravity_is_tilted_about_y_as_lammps_and_bad_input_is_refused():
    a = 26.0
    np.testing.assert_allclose(Gravity.chute(9.81, a).acceleration,
                               9.81 * np.array([np.sin(np.radians(a)), 0.0,
                                                -np.cos(np.radians(a))]), rtol=1e-15)
    with pytest.raises(InputError, match="finite"):
        Gravity((0.0, np.nan, -9.81))


@pytest.mark.parametrize("n", [1, 9, 400])
def test_setting_the_body_force_gives_the_bits_of_a_zero_then_an_addition(n):
    rng = np.random.default_rng(n)
    mass = rng.uniform(0.5, 2.0, n)
    fixed = rng.random(n) < 0.3
    g = np.array([0.7, 0.0, -9.81])  # a fixed row's 0 * -9.81 is -0.0; 0.0 + -0.0 is +0.0
    added = np.zeros((n, 3))
    add_body_force(mass, fixed, g, added)
    set_ = rng.normal(size=(n, 3))
    add_body_force(mass, fixed, g, set_, True)
    assert set_.tobytes() == added.tobytes()


class AddingGravity(Gravity):
    """Gravity as a plain contribution: the force is zeroed first and it adds."""

    assigns_owned = {}


def _falling_pile(gravity):
    """Spheres colliding, gravity before the contacts (so it sets the force, unless it is an
    AddingGravity)."""
    contacts = ContactForces(HertzMindlinLaw())
    world, order = colliding_pile([gravity, contacts], contacts, seed=4)
    p = world.particles
    return gravity, p.position[order].tobytes(), p.force[order].tobytes()


def test_gravity_that_sets_the_force_gives_the_same_bits_as_adding():
    g = (0.0, 0.0, -9.81)
    setting, position, force = _falling_pile(Gravity(g))
    adding, plain_position, plain_force = _falling_pile(AddingGravity(g))
    assert setting.assigning == {("particles", "force")} and adding.assigning == frozenset()
    assert position == plain_position and force == plain_force
