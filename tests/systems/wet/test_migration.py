"""Liquid migration: a bridge takes its particles' liquid at first contact (shared among the
bridges a particle starts in one step, capped at half the maximum bridge volume each),
returns it in equal halves at rupture, and the liquid is conserved throughout."""

import math

import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.wet import add_liquid
from ecs_dem.errors import InputError
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.wet.balance import LiquidBalance, liquid_totals
from ecs_dem.systems.wet.laws import LiquidBridgeWillet, LiquidMigrationWillet
from ecs_dem.systems.wet.migration import liquid_migration

R = 1e-3


def wet_world(positions, velocities, films, vmax, box=0.02, periodic=False, vmin=0.0):
    world = World(Box((-box,) * 3, (box,) * 3, periodic=(periodic,) * 3), dt=2e-6, skin=1e-4)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0)
    add_particles(world, positions, R, velocity=velocities)
    add_liquid(world, films)
    law = LiquidMigrationWillet(LinearSpringDashpotLaw(kn=1e3, gamman=0.0, friction=0.0),
                                max_bridge_volume=vmax, min_bridge_volume=vmin)
    contacts = ContactForces(law)
    balance = LiquidBalance(every=1)
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *liquid_migration(contacts), contacts, second, balance):
        world.add_system(s)
    world.setup()
    return world, balance


def films_by_gid(world):
    p = world.particles
    return p.liquid_film[np.argsort(p.gid[:p.n_owned])]


def test_formation_takes_the_liquid_and_rupture_returns_equal_halves():
    f0, f1, vmax = 3e-11, 1e-11, 1e-10
    world, balance = wet_world([[-1.2 * R, 0, 0], [1.2 * R, 0, 0]],
                               [[1.0, 0, 0], [-1.0, 0, 0]], [f0, f1], vmax)
    inserted = f0 + f1
    formed_at = ruptured_at = None
    for step in range(3000):
        world.run(1)
        v = world.pairs.bridge_volume[:world.pairs.n_owned, 0] if world.pairs.n_owned else []
        if formed_at is None and len(v) and v[0] > 0:
            formed_at = step
            # each gives min(film, vmax/2): all of it here
            assert v[0] == pytest.approx(f0 + f1, rel=1e-15)
            np.testing.assert_array_equal(films_by_gid(world), [0.0, 0.0])
        if formed_at is not None and ruptured_at is None and len(v) and v[0] == 0:
            ruptured_at = step
            np.testing.assert_allclose(films_by_gid(world), [0.5 * inserted] * 2, rtol=1e-15)
            p = world.particles
            sep = np.linalg.norm(p.position[0] - p.position[1]) - 2 * R
            assert sep >= (f0 + f1) ** (1 / 3)  # the rupture distance (theta = 0)
            step_gap = 2 * abs(p.velocity[0, 0]) * world.dt
            assert sep < (f0 + f1) ** (1 / 3) + 2 * step_gap
            break
    assert formed_at is not None and ruptured_at is not None
    for row in balance.records:
        assert abs(row["imbalance"]) <= 1e-15 * inserted
        assert row["inserted"] == pytest.approx(inserted, rel=1e-15)


def test_the_cap_and_a_particle_shared_among_the_bridges_it_starts():
    """A wet middle particle touches two dry ones in the same step: each bridge gets
    min(film / 2, vmax / 2) from it and nothing from the dry ones."""
    film, vmax = 4e-11, 3e-11
    world, balance = wet_world([[0, 0, 0], [-2.05 * R, 0, 0], [2.05 * R, 0, 0]],
                               [[0, 0, 0], [0.5, 0, 0], [-0.5, 0, 0]], [film, 0.0, 0.0], vmax)
    for _ in range(400):
        world.run(1)
        v = world.pairs.bridge_volume[:world.pairs.n_owned, 0]
        if np.count_nonzero(v):
            break
    v = np.sort(v[v > 0])
    expected = min(film / 2, vmax / 2)
    np.testing.assert_allclose(v, [expected, expected], rtol=1e-15)
    assert films_by_gid(world)[0] == pytest.approx(film - 2 * expected, abs=1e-27)
    assert abs(liquid_totals(world)["imbalance"]) <= 1e-15 * film


def test_no_bridge_below_the_minimum_volume():
    world, _ = wet_world([[-1.2 * R, 0, 0], [1.2 * R, 0, 0]], [[1.0, 0, 0], [-1.0, 0, 0]],
                         [1e-12, 0.0], 1e-10, vmin=2e-12)
    world.run(400)
    assert not np.any(world.pairs.bridge_volume[:world.pairs.n_owned])
    assert films_by_gid(world)[0] == 1e-12


def test_liquid_is_conserved_in_a_gas_of_wet_grains():
    rng = np.random.default_rng(7)
    n_side = 5
    grid = (np.arange(n_side) - (n_side - 1) / 2) * 2.6 * R
    pos = np.array([[x, y, z] for x in grid for y in grid for z in grid])
    pos += rng.uniform(-0.2 * R, 0.2 * R, pos.shape)
    vel = rng.normal(0.0, 0.6, pos.shape)
    films = rng.uniform(0.0, 4e-11, len(pos))
    world, balance = wet_world(pos, vel, films, 3e-11, box=n_side * 1.3 * R, periodic=True)
    world.run(3000)
    migration = world.systems[3]
    assert migration.formed > 20 and migration.ruptured > 5
    inserted = films.sum()
    worst = max(abs(r["imbalance"]) for r in balance.records)
    assert worst <= 1e-12 * inserted
    assert min(r["bridges"] for r in balance.records[-10:]) > 0


def test_bad_input_is_refused():
    world = World(Box((-0.01,) * 3, (0.01,) * 3), dt=1e-6, skin=1e-4)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0)
    add_particles(world, [[0, 0, 0]], R)
    with pytest.raises(InputError, match="negative liquid"):
        add_liquid(world, -1e-12)
    static = ContactForces(LiquidBridgeWillet(LinearSpringDashpotLaw(kn=1e3, gamman=0.0,
                                                                     friction=0.0)))
    with pytest.raises(InputError, match="migrating wet law"):
        liquid_migration(static)


def test_a_wall_bridge_takes_the_particles_liquid_and_loses_half_at_rupture():
    from ecs_dem.components.walls import add_wall
    from ecs_dem.systems.walls.contacts import WallContacts

    film, vmax = 4e-11, 5e-11
    world = World(Box((-0.02,) * 3, (0.02,) * 3), dt=2e-6, skin=1e-4)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0)
    add_particles(world, [[0, 0, 1.2 * R]], R, velocity=[[0, 0, -1.0]])
    add_wall(world, (0, 0, 0), (0, 0, 1))
    add_liquid(world, film)
    law = LiquidMigrationWillet(LinearSpringDashpotLaw(kn=1e3, gamman=0.0, friction=0.0),
                                max_bridge_volume=vmax)
    contacts, walls = ContactForces(law), WallContacts(law)
    balance = LiquidBalance(every=1)
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *liquid_migration(contacts, walls), contacts, walls,
              second, balance):
        world.add_system(s)
    world.setup()
    p = world.particles
    volume = min(film, vmax / 2)
    formed = False
    for _ in range(4000):
        world.run(1)
        v = p.wall_bridge_volume[0, 0, 0]
        if v > 0 and not formed:
            formed = True
            assert v == volume and p.liquid_film[0] == pytest.approx(film - volume, rel=1e-15)
            assert walls.touching == 1
        if formed and v == 0:
            gap = p.position[0, 2] - R
            assert gap >= volume ** (1 / 3)
            assert p.liquid_lost[0] == pytest.approx(volume / 2, rel=1e-15)
            assert p.liquid_film[0] == pytest.approx(film - volume / 2, rel=1e-15)
            break
    else:
        pytest.fail("the wall bridge never formed and ruptured")
    assert max(abs(r["imbalance"]) for r in balance.records) <= 1e-15 * film
    assert balance.records[-1]["lost_at_walls"] == pytest.approx(volume / 2, rel=1e-15)
