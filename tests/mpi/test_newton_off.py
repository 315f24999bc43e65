"""Pairs across a rank boundary evaluated on both sides (``newton off``, ContactForces' default).

The rank of the lower gid evaluates a cross-rank pair from ``pairs``, the
other from ``pair_mirrors``; each adds the force to its own particle, and no
contact force travels back; a periodic image's share goes straight to its
own row (``Domain.home_rows``), so the schedule has no reverse of the
particles' forces at all. Checked on the dense bed (periodic in x and y, lasting
contacts, rows migrating): the two copies of every touching cross-rank
contact carry the same history, the state equals the 1-rank run to 1e-9 and
``newton=True`` (evaluate once, send forces back) gives the same state.
"""
import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from mpi_scenarios import dense_bed, gather

pytestmark = pytest.mark.mpi(min_size=2)

STEPS = 200


def histories(table):
    """{(gid_i, gid_j): tangential spring} of the rows with a non-zero history."""
    h = table.owned("tangential_spring")
    return {(int(a), int(b)): h[k].copy() for k, (a, b) in
            enumerate(zip(table.owned("gid_i"), table.owned("gid_j"))) if np.any(h[k] != 0)}


def test_cross_rank_pairs_are_evaluated_on_both_sides():
    comm = default_comm()
    world = dense_bed(comm)
    world.run(STEPS)
    schedule = world.describe_schedule()
    # every share of a force lands in an owned row: nothing to bring home, not even from
    # the periodic images of a rank's own rows
    # gravity, first, sets the force and the contacts, first for torque, set it in place of
    # their zeros (System.assigns_owned): on the mirrors' rank too, nothing goes to ghost rows
    assert "zero particles." not in schedule
    assert "sets particles.force (its zero skipped)" in schedule
    assert "sets particles.torque (its zero skipped)" in schedule
    assert not [line for line in schedule.splitlines() if line.strip().startswith("reverse")]
    assert world.domain.rebuild_count > 1
    canonical, mirrored = {}, {}
    for part in comm.world.allgather(histories(world.pairs)):
        canonical.update(part)
    for part in comm.world.allgather(histories(world.pair_mirrors)):
        assert not set(part) & set(mirrored), "a mirror on two ranks"
        mirrored.update(part)
    assert len(mirrored) > 10  # many touching contacts cross a rank boundary
    for key, h in mirrored.items():
        np.testing.assert_allclose(h, canonical[key], rtol=1e-9, atol=1e-15)
    one = dense_bed(SerialComm())
    one.run(STEPS)
    assert one.pair_mirrors.n_owned == 0  # one rank: periodic images keep the once-only rule
    a, b = gather(one, fields=("position", "velocity")), gather(world, fields=("position", "velocity"))
    assert a.keys() == b.keys()
    for k, name in enumerate(("position", "velocity")):
        ref = np.array([a[g][k] for g in sorted(a)])
        got = np.array([b[g][k] for g in sorted(a)])
        assert np.max(np.abs(got - ref)) <= 1e-9 * np.max(np.abs(ref)), name


def test_newton_on_gives_the_same_state():
    comm = default_comm()
    world = dense_bed(comm)
    once = dense_bed(comm, newton=True)
    world.run(STEPS)
    once.run(STEPS)
    assert "reverse particles.force" in once.describe_schedule()
    a, b = gather(world, fields=("position",)), gather(once, fields=("position",))
    ref = np.array([a[g][0] for g in sorted(a)])
    got = np.array([b[g][0] for g in sorted(a)])
    assert np.max(np.abs(got - ref)) <= 1e-9 * np.max(np.abs(ref))
