"""Reverse reduction of non-float64 REVERSE fields across ranks (and periodic images).

A custom system adds, for every touching pair, to both of its particles in
REVERSE fields of several dtypes: int32 (1), int64 (the partner's gid), float32
(0.5, exact in binary) and an int32 2-vector (1, 2). Pairs are evaluated once
globally, by the owner of the lower gid, so the partner is often a ghost row:
a copy of a particle owned by the other rank, or a periodic image. The engine
must sum those ghost rows back into their owners whatever the dtype, so every
particle ends the step with its number of contacts, the sum of its partners'
gids, half its count and (count, 2 count).

Reference: a brute-force count over all pairs of the positions gathered by
gid from every rank (minimum image along the periodic x and y), independent of
the engine's pair list and ghosts. Scenario: tests/mpi_scenarios.dense_bed
(864 spheres in a compressed bed, periodic in x and y): many contacts cross
both the rank boundaries and the periodic faces.
"""
import numpy as np
import pytest

from ecs_dem.comm import default_comm
from mpi_scenarios import NAMES, CountContacts, ReadCounts, dense_bed, gather

pytestmark = pytest.mark.mpi(min_size=2)


def brute_force_counts(world):
    """{gid: (contacts, sum of partner gids)} from all pairs of the gathered positions, and the
    number of contacts of this rank's particles with particles owned by other ranks."""
    state = gather(world, fields=("position", "radius"))
    gids = np.array(sorted(state), dtype=np.int64)
    x = np.array([state[g][0] for g in gids])
    r = np.array([float(state[g][1]) for g in gids])
    d = x[:, None, :] - x[None, :, :]
    box = world.box
    for a in range(3):
        if box.periodic[a]:
            d[..., a] -= box.length[a] * np.rint(d[..., a] / box.length[a])
    touch = np.linalg.norm(d, axis=-1) < r[:, None] + r[None, :]
    np.fill_diagonal(touch, False)
    counts = touch.sum(axis=1)
    sums = touch @ gids
    mine = np.isin(gids, world.particles.gid)
    cross = int(touch[np.ix_(mine, ~mine)].sum())
    return {int(g): (int(c), int(s)) for g, c, s in zip(gids, counts, sums)}, cross


def test_non_float_reverse_fields_sum_ghost_contributions_across_ranks():
    """Over five steps, every owned particle's counts equal the brute-force ones, in every dtype.

    Also: seen_contacts (read mid-step) equals the count; ghost rows are zero
    after the reduction; every rank owns particles touching particles of
    another rank, and contacts were accumulated on ghost rows of particles
    owned by another rank (the pair rule puts each cross-rank contact on one
    side only, so the other side's counts arrive by message: the test
    exercises the messages between ranks, not only local periodic images).
    """
    comm = default_comm()
    world = dense_bed(comm, periodic_xy=True)
    counter = CountContacts()
    world.systems.insert(-1, counter)
    world.systems.insert(-1, ReadCounts())
    for _ in range(5):
        world.step_once()
        expected, cross = brute_force_counts(world)
        p = world.particles
        want = np.array([expected[int(g)] for g in p.gid], dtype=np.int64).reshape(-1, 2)
        count, gid_sum = want[:, 0], want[:, 1]
        np.testing.assert_array_equal(p.contacts_i32, count)
        np.testing.assert_array_equal(p.seen_contacts, count)
        np.testing.assert_array_equal(p.partner_gid_sum, gid_sum)
        np.testing.assert_array_equal(p.half_contacts, (0.5 * count).astype(np.float32))
        np.testing.assert_array_equal(p.contact_pair, np.stack([count, 2 * count], axis=1))
        for name in NAMES:
            assert not np.any(p.with_ghosts(name)[p.n_owned:]), name
        assert sum(c for c, _ in expected.values()) > 3000  # about 5 contacts per sphere
        assert comm.min(p.n_owned) > 0
        assert comm.min(cross) > 0
        assert comm.sum(counter.from_other_ranks) > 0
        assert comm.sum(p.n_owned) == len(expected)
