"""Per-pair data of any dtype and row shape (systems/neighbor_search.py carry-over).

A user system keeps int32, float64 (3,), uint8 (2,) with a non-zero default,
and float32 (2, 2) fields per pair (tests/mpi_scenarios.ContactAge). An
oracle outside the engine recomputes, by brute force over all particle
pairs, how many consecutive steps each pair has touched: the engine's pair
rows must agree after hundreds of steps with many list rebuilds and
re-sorts, and after a restart.
"""
import numpy as np

from ecs_dem.comm import SerialComm
from helpers import straight_and_resumed
from mpi_scenarios import dense_bed, gather_pair_data, pour, with_contact_age


def touching_pairs(world):
    p = world.particles
    d = np.linalg.norm(p.position[:, None] - p.position[None, :], axis=2)
    close = d < p.radius[:, None] + p.radius[None, :]
    a, b = np.nonzero(np.triu(close, 1))
    ga, gb = p.gid[a], p.gid[b]
    return set(zip(np.minimum(ga, gb).tolist(), np.maximum(ga, gb).tolist()))


def test_per_pair_data_of_any_dtype_survives_rebuilds_and_sorting():
    world = with_contact_age(pour(SerialComm(), n=300))
    world.setup()
    oracle = {pair: 1 for pair in touching_pairs(world)}
    rebuilds0 = world.domain.rebuild_count
    for _ in range(1500):
        world.step_once()
        now = touching_pairs(world)
        oracle = {pair: oracle.get(pair, 0) + 1 for pair in now}
    assert world.domain.rebuild_count - rebuilds0 > 5
    data = gather_pair_data(world)
    touching = {k: v for k, v in data.items() if v[0] > 0}
    assert set(touching) == set(oracle)
    assert max(oracle.values()) > 100 and min(oracle.values()) < 20  # old and new contacts
    for pair, (age, first_gap, code, total) in data.items():
        assert age == oracle.get(pair, 0), pair
        if age:
            np.testing.assert_array_equal(code, [1, 2])
            assert np.linalg.norm(first_gap) > 0
            assert total[0, 0] == np.float32(sum(range(1, int(age) + 1)))
        else:
            np.testing.assert_array_equal(code, [7, 7])  # the default, also for new pairs
            assert not np.any(first_gap)


def test_per_pair_data_continues_exactly_after_restart(tmp_path):
    build = lambda: with_contact_age(dense_bed(SerialComm(), n_side=7, layers=4))  # noqa: E731
    straight, resumed = straight_and_resumed(build, tmp_path / "ck.h5", 60, 60)
    a, b = gather_pair_data(straight), gather_pair_data(resumed)
    assert a.keys() == b.keys()
    assert sum(v[0] > 0 for v in a.values()) > 100
    for k in a:
        for x, y in zip(a[k], b[k]):
            np.testing.assert_array_equal(x, y)
