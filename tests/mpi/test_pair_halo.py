"""Forward and reverse of per-pair fields across ranks (the multi-contact correction needs both).

Pairs are anchored to their lower-gid particle and evaluated by its owner.
With a FORWARD per-pair field, the owner of the *other* particle also sees the
value; with a REVERSE per-pair field, contributions made on ghost pair rows
come back to the evaluating rank.
"""
import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo
from mpi_scenarios import dense_bed, gather

pytestmark = pytest.mark.mpi(min_size=2)


class PairOverlap(System):
    """Owner of each pair stores its overlap (FORWARD per-pair field)."""

    stage = Stage.FORCES
    reads = {"pairs": ("i", "j")}
    reads_ghosts = {"particles": ("position", "radius")}
    writes = {"pairs": ("overlap",)}

    def setup(self, world):
        world.pairs.add_field(Field("overlap", np.float64, (), Halo.FORWARD, 0.0, "m"))
        world.pairs.add_field(Field("acknowledged", np.float64, (), Halo.REVERSE, 0.0))
        world.particles.add_field(Field("overlap_sum", np.float64, (), Halo.LOCAL, 0.0, "m"))

    def run(self, world):
        p, q = world.particles, world.pairs
        x, r = p.with_ghosts("position"), p.with_ghosts("radius")
        d = np.linalg.norm(x[q.i] - x[q.j], axis=1)
        q.overlap[...] = np.maximum(r[q.i] + r[q.j] - d, 0.0)


class SumOverlapsOnOwners(System):
    """Every owned particle sums the overlaps of all its pairs, wherever they were evaluated,
    and acknowledges (REVERSE) each pair row it sees of which it owns the partner."""

    stage = Stage.FORCES
    reads = {"pairs": ("gid_i", "gid_j")}
    reads_ghosts = {"pairs": ("overlap", "gid_i", "gid_j")}
    writes = {"particles": ("overlap_sum",)}
    accumulates = {"pairs": ("acknowledged",)}

    def run(self, world):
        p, q = world.particles, world.pairs
        lookup = p.lookup()
        gi, gj = q.with_ghosts("gid_i"), q.with_ghosts("gid_j")
        ov = q.with_ghosts("overlap")
        total = np.zeros(p.n_owned)
        for g, sign in ((gi, True), (gj, False)):
            rows = lookup.rows(g, owned_only=True)
            mine = rows >= 0
            if sign:  # the anchor side: count only owned pair rows (ghost rows have a ghost anchor)
                mine &= np.arange(g.size) < q.n_owned
            np.add.at(total, rows[mine], ov[mine])
        p.overlap_sum[...] = total
        j_rows = lookup.rows(gj, owned_only=True)
        q.with_ghosts("acknowledged")[j_rows >= 0] += 1.0


def _world(comm):
    world = dense_bed(comm, periodic_xy=False)
    world.systems.insert(-1, PairOverlap())
    world.systems.insert(-1, SumOverlapsOnOwners())
    return world


def test_per_pair_fields_forward_and_reverse_across_ranks():
    par, ser = _world(default_comm()), _world(SerialComm())
    par.run(20)
    ser.run(20)
    a = gather(par, fields=("overlap_sum",))
    b = gather(ser, fields=("overlap_sum",))
    assert max(abs(float(a[g][0] - b[g][0])) for g in b) < 1e-15
    assert sum(float(v[0]) > 0 for v in b.values()) > 500
    # every touching pair row was acknowledged exactly once, by the owner of its partner
    q = par.pairs
    touching = q.overlap > 0
    assert touching.sum() > 0
    np.testing.assert_array_equal(q.acknowledged[touching], 1.0)
    ghosts = par.comm.sum(q.n_ghost)
    assert ghosts > 0, "no pair row crossed a rank: the test exercised nothing"
