"""The contact-law interface beyond Hertz: a law's per-particle inputs (both bodies, 0 for a
wall), history of integer and bool dtypes, and binding again when a species changes."""

import numpy as np
import pytest

from toy_laws import C, K, StickyLaw

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.errors import UnstableTimeStepError
from ecs_dem.table import Field, Halo
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts

R = 0.01
STICKINESS = Field("stickiness", np.float64, (), Halo.FORWARD, 0.0, "1", "toy input")


def _world(positions, law, dt=1e-5, friction=0.5, velocity=None):
    world = World(Box((-0.1,) * 3, (0.1,) * 3), dt=dt, skin=1e-3, sort=False)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0, restitution=0.9,
                friction=friction)
    create_particle_table(world).add_field(STICKINESS)
    add_particles(world, positions, R, velocity=velocity)
    add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), ContactForces(law), WallContacts(law), second):
        world.add_system(s)
    return world


def test_a_law_reads_both_particles_inputs_and_zero_for_a_wall():
    """Two grains touching each other (overlap d1) and the lower one touching the floor
    (overlap d2): F_pair = K d1 - C (q_a + q_b), F_wall = K d2 - C q_a (the wall's input is
    0); then the integer history counts the advanced steps exactly and the bool one
    latches."""
    d1, d2 = 1e-4, 2e-4
    world = _world([[0.0, 0.0, R - d2], [0.0, 0.0, 3 * R - d2 - d1]], StickyLaw())
    p = world.particles
    p.stickiness[p.rows_of([0, 1])] = [2.0, 3.0]
    world.setup()
    lower, upper = p.rows_of([0, 1])
    f_pair = K * d1 - C * (2.0 + 3.0)
    f_wall = K * d2 - C * 2.0
    assert p.force[upper, 2] == pytest.approx(f_pair, rel=1e-9)
    assert p.force[lower, 2] == pytest.approx(f_wall - f_pair, rel=1e-9)
    assert world.walls.force[0, 2] == pytest.approx(-f_wall, rel=1e-9)
    assert world.pairs.contact_steps[0, 0] == 0  # the set-up pass does not advance history
    world.run(3)
    assert world.pairs.contact_steps.dtype == np.int32 and world.pairs.contact_steps[0, 0] == 3
    assert p.wall_contact_steps[lower, 0, 0] == 3 and p.wall_contact_steps[upper, 0, 0] == 0
    assert world.pairs.ever_pushed.dtype == np.bool_
    assert not world.pairs.ever_pushed[0, 0] and not p.wall_ever_pushed[lower, 0, 0]
    p.stickiness[lower] = -10.0  # now the wall contact pushes above 1 N: the flag latches
    world.run(1)
    assert p.wall_ever_pushed[lower, 0, 0]
    p.stickiness[lower] = 2.0
    world.run(1)
    assert p.wall_ever_pushed[lower, 0, 0] and p.wall_contact_steps[lower, 0, 0] == 5


def test_integer_history_is_reset_when_the_contact_ends():
    world = _world([[0.0, 0.0, R - 1e-4]], StickyLaw())
    world.run(3)
    p = world.particles
    assert p.wall_contact_steps[0, 0, 0] == 3
    p.velocity[0] = [0.0, 0.0, 100.0]  # off the floor in the next step
    world.run(1)
    assert p.wall_contact_steps[0, 0, 0] == 0


def test_a_changed_friction_binds_the_law_again():
    """A grain sliding on the floor (its tangential spring has reached the Coulomb cap after
    some 60 steps): the tangential force is mu F_n; lowering the species' friction between
    two runs changes it at the next step."""
    world = _world([[0.0, 0.0, R - 1e-5]], HertzMindlinLaw(), dt=1e-7, friction=0.5,
                   velocity=[[1.0, 0.0, 0.0]])
    world.run(200)
    p, contacts = world.particles, world.systems[3]
    ratio = -p.force[0, 0] / p.force[0, 2]
    assert ratio == pytest.approx(0.5, rel=1e-6)
    world.species.friction[0] = 0.2
    world.run(1)
    ratio = -p.force[0, 0] / p.force[0, 2]
    assert ratio == pytest.approx(0.2, rel=1e-6)
    mu = contacts.bound.function.parameters.index("mu")
    assert contacts.bound.parameters[0, -1, mu] == 0.2


def test_a_stiffer_species_is_checked_against_the_time_step_again():
    world = _world([[0.0, 0.0, 0.05]], HertzMindlinLaw(), dt=1e-6)
    world.run(1)
    world.species.youngs_modulus[0] = 1e13  # the Rayleigh time falls far below dt
    with pytest.raises(UnstableTimeStepError, match="exceeds the stable limit"):
        world.run(1)
