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
