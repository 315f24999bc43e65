"""Per-pair data of any dtype and row shape (systems/neighbors/search.py carry-over).

A user system keeps int32, float64 (3,), uint8 (2,) with a non-zero default,
and float32 (2, 2) fields per pair (tests/mpi_scenarios.ContactAge). An
oracle outside the engine recomputes, by brute force over all particle
pairs, how many consecutive steps each pair has touched: the engine's pair
rows must agree after hundreds of steps with many list rebuilds and
re-sorts, and after a restart.
"""
import numpy as np
import pytest

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


@pytest.mark.parametrize("largest", [600, 10**12])
def test_history_match_finds_each_old_pair_by_its_gids_whatever_their_size(largest):
    """match_history against a dictionary, with compact gids (a bucket per gid) and with gids
    far beyond the number of pairs (a rank of a large run: hashed buckets, where gid_i
    values that share their low bits land in one bucket)."""
    from ecs_dem.systems.neighbors.kernels import match_history
    rng = np.random.default_rng(7)
    m = 500
    shared_low_bits = (np.arange(40) << 20) + 5 if largest > 10**6 else np.arange(40)
    gid_i = np.concatenate([rng.integers(0, largest, m - 40), shared_low_bits])
    gid_j = gid_i + rng.integers(1, 1000, m)
    keep = (rng.random(m) < 0.6).astype(np.uint8)
    kept = np.flatnonzero(keep)  # the candidates: the rows with data (KeptRows)
    old = {}
    for c, k in enumerate(kept):
        old.setdefault((int(gid_i[k]), int(gid_j[k])), c)  # the first of duplicates, as the kernel
    # new pairs: a shuffled half of the old ones (kept or not) and pairs never seen
    pick = rng.permutation(m)[: m // 2]
    new_i = np.concatenate([gid_i[pick], rng.integers(0, 2 * largest, 100), gid_i[:20]])
    new_j = np.concatenate([gid_j[pick], rng.integers(0, 2 * largest, 100), gid_j[:20] + 1])
    src = np.empty(new_i.size, dtype=np.int64)
    match_history(gid_i[kept], gid_j[kept], new_i, new_j, int(gid_i[kept].min()),
                  int(gid_i[kept].max()), src)
    expected = [old.get((int(a), int(b)), -1) for a, b in zip(new_i, new_j)]
    assert src.tolist() == expected
    assert (src >= 0).sum() > 100  # the test exercises matches, not only misses
