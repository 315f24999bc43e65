"""Wet grains on several ranks: the same films, bridges and motion as one rank (within 1e-9),
liquid conserved to 1e-12, and a restart that continues bit for bit.

A periodic gas of wet grains colliding often (bridges form and rupture across rank
boundaries, rows migrate): both ranks of a cross-rank pair take the same migration decision,
each changes the film of its own particle (``systems.wet.migration``)."""
import numpy as np
import pytest

from helpers import straight_and_resumed
from mpi_scenarios import gather, gather_pair_data

from ecs_dem import Box, World
from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.droplets import add_nozzle
from ecs_dem.components.walls import add_wall
from ecs_dem.components.wet import add_liquid
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts
from ecs_dem.systems.wet.balance import LiquidBalance, liquid_totals
from ecs_dem.systems.wet.droplets import spray
from ecs_dem.systems.wet.laws import LiquidMigrationLS
from ecs_dem.systems.wet.migration import liquid_migration

pytestmark = pytest.mark.mpi(min_size=2)

R = 1e-3
STEPS = 1200


def wet_gas(comm, n_side=6, sprayed=False):
    """A periodic gas of wet grains; `sprayed`: between two planar walls (z) instead, with
    the top layer empty, sprayed by a cone (down onto the grains: its droplets are absorbed
    on either rank) and a fan (up: lost on the top wall)."""
    rng = np.random.default_rng(7 if sprayed else 5)
    width = n_side * 2.6 * R
    world = World(Box((0, 0, 0), (width,) * 3, (True, True, not sprayed)), dt=2e-6,
                  skin=1e-4, comm=comm)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.8,
                friction=0.3)
    grid = (np.arange(n_side) + 0.5) * 2.6 * R
    pos = np.array([[x, y, z] for x in grid for y in grid
                    for z in (grid[:-1] if sprayed else grid)])
    pos += rng.uniform(-0.2 * R, 0.2 * R, pos.shape)
    add_particles(world, pos, R * rng.uniform(0.9, 1.1, len(pos)),
                  velocity=rng.normal(0.0, 0.6, pos.shape))
    add_liquid(world, rng.uniform(0.0, 4e-11, len(pos)))
    law = LiquidMigrationLS(HertzMindlinLaw(), viscosity=1e-3, min_separation=1e-6,
                            max_bridge_volume=3e-11)
    contacts = ContactForces(law)
    walls, droplets = None, ()
    if sprayed:
        add_wall(world, [0, 0, 0], [0, 0, 1])
        add_wall(world, [0, 0, width], [0, 0, -1])
        add_nozzle(world, [0.3 * width, 0.5 * width, width - 0.6 * R], [0, 0, -1],
                   droplet_radius=4e-5, speed=4.0, rate=2e5, half_angle=25.0, seed=1)
        add_nozzle(world, [0.7 * width, 0.4 * width, width - 0.6 * R], [0.3, 0, 1],
                   droplet_radius=3e-5, speed=6.0, rate=1e5, shape="fan", fan_angle=40.0,
                   thickness_angle=5.0, seed=2, start=2e-4)
        walls, droplets = WallContacts(law), spray()
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *droplets, *liquid_migration(contacts, walls), contacts,
              *([walls] if walls else []), second, LiquidBalance(every=50)):
        world.add_system(s)
    return world


def bridges(world):
    """{(gid_i, gid_j): bridge volume} of the bridges over all ranks (each once)."""
    return {key: float(v[0][0]) for key, v in gather_pair_data(world, ("bridge_volume",)).items()
            if v[0][0] > 0}


def assert_particles_agree(one, world, fields=("position", "velocity", "liquid_film")):
    """Particle fields on several ranks equal one rank's within 1e-9 of their largest value."""
    a, b = gather(one, fields=fields), gather(world, fields=fields)
    assert a.keys() == b.keys()
    for k, name in enumerate(fields):
        ref = np.array([a[g][k] for g in sorted(a)])
        got = np.array([b[g][k] for g in sorted(a)])
        assert np.max(np.abs(got - ref)) <= 1e-9 * np.max(np.abs(ref)), name


def assert_same_bits(straight, resumed, table, fields) -> int:
    """The rows of `table` of both worlds hold the same bits; returns their count."""
    a, b = gather(straight, table, fields), gather(resumed, table, fields)
    assert a.keys() == b.keys()
    for g in a:
        for x, y in zip(a[g], b[g]):
            np.testing.assert_array_equal(x, y)
    return len(a)


def assert_liquid_conserved(world) -> dict:
    """The balance now and in every record holds to 1e-12 of the inserted liquid."""
    totals = liquid_totals(world)
    assert abs(totals["imbalance"]) <= 1e-12 * totals["inserted"]
    for row in world.systems[-1].records:
        assert abs(row["imbalance"]) <= 1e-12 * row["inserted"]
    return totals


def test_ranks_agree_with_one_rank_and_conserve_liquid():
    world = wet_gas(default_comm())
    world.run(STEPS)
    one = wet_gas(SerialComm())
    one.run(STEPS)
    migration = world.systems[3]
    formed = world.comm.sum(migration.formed)
    assert formed > 20 and world.comm.sum(migration.ruptured) > 5
    assert_particles_agree(one, world)
    ba, bb = bridges(one), bridges(world)
    assert ba.keys() == bb.keys() and len(ba) > 5
    for key in ba:
        assert bb[key] == pytest.approx(ba[key], rel=1e-9)
    assert_liquid_conserved(world)


@pytest.mark.parametrize("sprayed", [False, True])
def test_restart_continues_bit_for_bit(tmp_path, sprayed):
    path = default_comm().broadcast_object(str(tmp_path / "wet.h5"))
    straight, resumed = straight_and_resumed(lambda: wet_gas(default_comm(), sprayed=sprayed),
                                             path, STEPS // 2, STEPS // 2)
    assert_same_bits(straight, resumed, "particles",
                     ("position", "velocity", "liquid_film", "liquid_inserted"))
    assert bridges(straight) == bridges(resumed)
    if sprayed:
        assert assert_same_bits(straight, resumed, "droplets",
                                ("position", "velocity", "volume", "state")) > 20
        for f in ("emitted", "sprayed", "lost"):
            np.testing.assert_array_equal(straight.tables["nozzles"].owned(f),
                                          resumed.tables["nozzles"].owned(f))
    assert liquid_totals(straight) == liquid_totals(resumed)


# ----------------------------------------------------------------- spray droplets

def test_sprayed_droplets_agree_with_one_rank_and_conserve_liquid():
    world = wet_gas(default_comm(), sprayed=True)
    world.run(STEPS)
    one = wet_gas(SerialComm(), sprayed=True)
    one.run(STEPS)
    nozzles = world.tables["nozzles"]
    assert nozzles.emitted.tolist() == one.tables["nozzles"].emitted.tolist()
    assert nozzles.emitted.sum() > 400
    lost = float(nozzles.lost.sum())
    assert 0 < lost < 0.9 * float(nozzles.sprayed.sum())
    assert lost == pytest.approx(float(one.tables["nozzles"].lost.sum()), rel=1e-9)
    assert_particles_agree(one, world)
    da = gather(one, "droplets", ("position", "state"))
    db = gather(world, "droplets", ("position", "state"))
    assert da.keys() == db.keys() and len(da) > 20
    for g in da:
        assert db[g][1] == da[g][1]
        np.testing.assert_allclose(db[g][0], da[g][0], rtol=0, atol=1e-12)
    for w in (world, one):
        assert assert_liquid_conserved(w)["airborne"] > 0
