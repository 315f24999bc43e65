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
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo
from mpi_scenarios import dense_bed, gather

pytestmark = pytest.mark.mpi(min_size=2)

COUNT_FIELDS = (
    Field("contacts_i32", np.int32, (), Halo.REVERSE, 0, "", "touching partners"),
    Field("partner_gid_sum", np.int64, (), Halo.REVERSE, 0, "", "sum of the partners' gids"),
    Field("half_contacts", np.float32, (), Halo.REVERSE, 0.0, "", "0.5 per touching partner"),
    Field("contact_pair", np.int32, (2,), Halo.REVERSE, 0, "", "(1, 2) per touching partner"),
)
NAMES = tuple(f.name for f in COUNT_FIELDS)


class CountContacts(System):
    """Add to both particles of every touching pair (owned and ghost rows) in non-float64 fields."""

    stage = Stage.FORCES
    reads = {"pairs": ("i", "j")}
    reads_ghosts = {"particles": ("position", "radius", "gid")}
    accumulates = {"particles": NAMES}

    def setup(self, world):
        for f in COUNT_FIELDS:
            world.particles.add_field(f)
        self.on_ghosts = 0
        self.from_other_ranks = 0

    def run(self, world):
        p, q = world.particles, world.pairs
        x, r, gid = p.with_ghosts("position"), p.with_ghosts("radius"), p.with_ghosts("gid")
        i, j = q.i.astype(np.int64), q.j.astype(np.int64)
        touching = np.linalg.norm(x[i] - x[j], axis=1) < r[i] + r[j]
        i, j = i[touching], j[touching]
        both = np.concatenate([i, j])
        np.add.at(p.with_ghosts("contacts_i32"), both, np.int32(1))
        np.add.at(p.with_ghosts("partner_gid_sum"), both, np.concatenate([gid[j], gid[i]]))
        np.add.at(p.with_ghosts("half_contacts"), both, np.float32(0.5))
        np.add.at(p.with_ghosts("contact_pair"), both, np.array([1, 2], dtype=np.int32))
        ghost = both[both >= p.n_owned]
        self.on_ghosts = ghost.size
        self.from_other_ranks = int(np.count_nonzero(~np.isin(gid[ghost], p.gid)))


class ReadCounts(System):
    """Reads one count on owners mid-step: the scheduler must reverse it before this runs."""

    stage = Stage.FORCES
    reads = {"particles": ("contacts_i32",)}
    writes = {"particles": ("seen_contacts",)}

    def setup(self, world):
        world.particles.add_field(Field("seen_contacts", np.int64, (), Halo.LOCAL, -1))

    def run(self, world):
        p = world.particles
        p.seen_contacts[...] = p.contacts_i32


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
