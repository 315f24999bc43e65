"""Insertion is the same on every rank: each rank draws the same grains from the same seed,
and the set-up then hands each grain to the rank that owns its position."""
import numpy as np
import pytest

from ecs_dem.comm import default_comm
from mpi_scenarios import gather

pytestmark = pytest.mark.mpi(min_size=2)


def test_every_rank_inserts_the_same_grains():
    from mpi4py import MPI

    from ecs_dem.components.insertion import MeshRegion, insert, lognormal
    from ecs_dem.components.mesh.generators import icosphere

    region = MeshRegion(icosphere(0.02, 2))
    grains = insert(region, lognormal(2e-3, 0.3, 1e-3, 4e-3, "volume"), np.random.default_rng(3),
                    solid_fraction=0.2)
    state = np.concatenate((grains.position.ravel(), grains.diameter, grains.orientation.ravel()))
    everyone = MPI.COMM_WORLD.allgather(state)
    for other in everyone[1:]:
        np.testing.assert_array_equal(other, everyone[0])


def test_random_pour_distributes_every_grain_once():
    from helpers import load_driver

    pour = load_driver("pour")
    cfg = dict(pour.DEFAULTS, particles=500, psd="uniform", insertion="random")
    world = pour.build_world(cfg, comm=default_comm())
    before = {int(g): world.particles.position[i].copy()
              for i, g in enumerate(world.particles.gid[:world.particles.n_owned])}
    world.setup()
    assert world.comm.sum(world.particles.n_owned) == 500
    after = gather(world)
    assert set(after) == set(before)
    for g, value in after.items():
        np.testing.assert_array_equal(value[0], before[g])


def test_clumps_from_a_psd_on_two_ranks_are_the_one_rank_clumps():
    """Spheres and dimers drawn from a PSD on every rank: after the set-up hands the bodies
    and pebbles out, the bodies (com, orientation, mass) are those of a 1-rank world bit for
    bit, and no pebbles of different bodies overlap, after 100 steps of falling too."""
    from ecs_dem.comm import SerialComm
    from ecs_dem.components.clumps import library
    from ecs_dem.components.clumps.shapes import clump_shape
    from ecs_dem.components.insertion import insert
    from ecs_dem.components.insertion.insert import add_to_world
    from ecs_dem.components.insertion.psd import SPHERE, Component, Mixture, uniform
    from ecs_dem.components.insertion.regions import BoxRegion
    from ecs_dem.observe import gather_by_gid
    from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
    from ecs_dem.systems.contact.pair_forces import ContactForces
    from ecs_dem.systems.integration.gravity import Gravity
    from clump_scenarios import add_clump_systems
    from ecs_dem import Box, World
    from ecs_dem.components.species import add_species

    def build(comm):
        region = BoxRegion((0, 0, 0), (0.03, 0.03, 0.03))
        psd = uniform(2e-3, 3e-3, "volume")
        mix = Mixture([Component(psd, 0.5, 0, SPHERE),
                       Component(psd, 0.5, 0, clump_shape(library.dimer(1e-3)))], "volume")
        world = World(Box(region.lo, region.hi), dt=2e-6, skin=2e-4, comm=comm)
        add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0)
        add_to_world(world, insert(region, mix, np.random.default_rng(2), count=300))
        law = HertzMindlinLaw()
        add_clump_systems(world, Gravity((0, 0, -9.81)), ContactForces(law))
        world.setup()
        return world

    par, ser = build(default_comm()), build(SerialComm())
    fields = ("com", "orientation", "mass")
    for a, b in zip(gather_by_gid(par, "bodies", fields, root=None),
                    gather_by_gid(ser, "bodies", fields, root=None)):
        np.testing.assert_array_equal(a, b)
    par.run(100)
    x, r, body = gather_by_gid(par, "particles", ("position", "radius", "body"), root=None)
    label = np.where(body >= 0, body, -2 - np.arange(body.size))
    d = np.linalg.norm(x[:, None] - x[None], axis=2) - r[:, None] - r[None]
    d[label[:, None] == label[None]] = np.inf
    assert par.comm.sum(par.bodies.n_owned) == ser.bodies.n_owned > 50
    assert d.min() > -0.01 * r.min()  # contacts only, no interpenetration
