"""Decomposition invariance on several ranks (run under mpiexec; see README, Tests).

    mpiexec.mpich -n 2 .venv/bin/python -m pytest --with-mpi tests/mpi
    mpiexec.mpich -n 4 .venv/bin/python -m pytest --with-mpi tests/mpi   # 2 x 2 grids

Every rank runs the parallel world (MPI communicator) and also the same
scenario alone (SerialComm) as the 1-rank reference; results are gathered by
gid and compared.
"""
import faulthandler

import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from mpi_scenarios import dense_bed, gather, gather_pairs, owners, periodic_gas, pour, spring_net

pytestmark = pytest.mark.mpi(min_size=2)


def _max_relative_difference(a: dict, b: dict, scale: float) -> float:
    assert a.keys() == b.keys()
    return max(float(np.max(np.abs(a[g][0] - b[g][0]))) for g in a) / scale


def test_grid_uses_every_rank():
    world = dense_bed(default_comm())
    assert int(np.prod(world.domain.decomposition.dims)) == world.comm.size >= 2


def test_pour_conserves_particles_and_gids_with_migration():
    world = pour(default_comm())
    world.setup()
    gids0 = set(gather(world))
    before = owners(world)
    for _ in range(10):
        world.run(100)
        assert world.comm.sum(world.particles.n_owned) == 600
    gids = set(gather(world))
    assert gids == gids0 and len(gids) == 600
    after = owners(world)
    assert sum(before[g] != after[g] for g in gids) > 20, "too few particles changed rank"


def test_migration_with_gids_far_beyond_the_rows_of_a_rank():
    """On many ranks each holds N/P rows with gids up to N; gids 1000 apart on 2 ranks make
    the same sparse set (a dense gid map here would be 1,000 times the rows)."""
    world = pour(default_comm(), gid_stride=1000)
    ser = pour(SerialComm(), gid_stride=1000)
    before = owners(world)
    world.run(600)
    ser.run(600)
    after = owners(world)
    assert set(after) == set(range(0, 600_000, 1000))
    assert sum(before[g] != after[g] for g in after) > 20, "too few particles changed rank"
    a, b = gather(world), gather(ser)
    assert _max_relative_difference(a, b, float(world.box.length.max())) < 1e-9


def test_dense_bed_matches_one_rank_after_200_steps():
    par = dense_bed(default_comm())
    ser = dense_bed(SerialComm())
    par.run(200)
    ser.run(200)
    a = gather(par, fields=("position", "velocity"))
    b = gather(ser, fields=("position", "velocity"))
    L = float(par.box.length.max())
    assert _max_relative_difference(a, b, L) < 1e-9
    assert max(float(np.max(np.abs(a[g][1] - b[g][1]))) for g in a) < 1e-9 * max(
        float(np.max(np.abs(v[1]))) for v in b.values())
    n_touching = par.comm.sum(sum(s.touching for s in par.systems if hasattr(s, "touching")))
    assert n_touching > 500


def test_tangential_history_across_rank_boundaries_matches_one_rank():
    par = dense_bed(default_comm())
    ser = dense_bed(SerialComm())
    par.run(150)
    ser.run(150)
    hp = gather_pairs(par)
    hs = gather_pairs(ser)
    assert hp.keys() == hs.keys() and len(hs) > 500
    scale = max(float(np.max(np.abs(v))) for v in hs.values())
    assert max(float(np.max(np.abs(hp[k] - hs[k]))) for k in hs) < 1e-9 * scale
    # some of those pairs join particles owned by different ranks
    owner = owners(par)
    assert sum(owner[i] != owner[j] for i, j in hp) > 20


def test_total_momentum_conserved_in_periodic_box():
    world = periodic_gas(default_comm())
    world.setup()

    def momentum():
        p = world.particles
        return world.comm.sum((p.mass[:, None] * p.velocity).sum(axis=0))

    p0 = momentum()
    world.run(400)
    scale = world.comm.sum(float((world.particles.mass * np.linalg.norm(world.particles.velocity, axis=1)).sum()))
    assert world.comm.sum(sum(s.touching for s in world.systems if hasattr(s, "touching"))) > 0
    np.testing.assert_allclose(momentum(), p0, rtol=0, atol=1e-13 * scale)


def test_spring_net_crossing_ranks_matches_one_rank():
    par = spring_net(default_comm())
    ser = spring_net(SerialComm())
    par.run(400)
    ser.run(400)
    a = gather(par)
    b = gather(ser)
    assert _max_relative_difference(a, b, float(par.box.length.max())) < 1e-9
    # springs live with their anchor: every spring's anchor is owned where the spring is
    s = par.springs
    assert np.all(par.particles.lookup().rows(s.vertices[:, 0], owned_only=True) >= 0)
    assert par.comm.sum(s.n_owned) == 3 * 16 * 16
    moved = max(float(np.max(np.abs(b[g][0] - spring_net(SerialComm()).particles.position[g])))
                for g in list(b)[:50])
    assert moved > 1e-6, "the net did not move: the comparison would be vacuous"


def test_destinations_follow_each_row_and_its_periodic_images():
    """Between ``plan_rebuild`` and ``rebuild`` (the ``before_rebuild`` hooks): an owned row
    goes to the rank owning its wrapped position, a periodic image of an own row goes with
    that row, a copy of another rank's row is -1; the rebuild then sends rows there."""
    world = periodic_gas(default_comm())
    world.run(300)
    p, domain, me = world.particles, world.domain, world.comm.rank
    rng = np.random.default_rng(me)
    points = rng.uniform(world.box.lo, world.box.hi, (200, 3))
    elsewhere = points[domain.decomposition.owner_ranks(points) != me]
    p.position[:3] = elsewhere[:3]  # three rows about to leave (no step runs before the rebuild)
    domain.plan_rebuild(p)
    dest = domain.destinations(p)
    assert dest.shape == (p.n,)
    np.testing.assert_array_equal(dest[:p.n_owned], domain.decomposition.owner_ranks(p.position))
    row_of = {int(g): k for k, g in enumerate(p.owned("gid"))}
    ghost_gids = p.with_ghosts("gid")[p.n_owned:]
    expected = [dest[row_of[int(g)]] if int(g) in row_of else -1 for g in ghost_gids]
    np.testing.assert_array_equal(dest[p.n_owned:], expected)
    assert (dest[:3] != me).all() and (dest[p.n_owned:] == -1).any()
    going = {int(g): int(r) for g, r in zip(p.owned("gid"), dest[:p.n_owned])}
    domain.rebuild(p)  # the planned migration
    here = set(int(g) for g in p.owned("gid"))
    assert all(r == me for g, r in going.items() if g in here)
    assert all(going[g] == me for g in here if g in going)


def _first_three_ranks():
    """An MpiComm of the first three ranks (None on the others): pour's tall box on it is a
    1 x 1 x 3 grid without periodic z, whose middle rank neighbours both others and whose
    outer ranks neighbour one each (on 2 or 4 ranks every rank neighbours all or none)."""
    from mpi4py import MPI

    from ecs_dem.comm import MpiComm

    sub = MPI.COMM_WORLD.Split(0 if MPI.COMM_WORLD.Get_rank() < 3 else MPI.UNDEFINED)
    return None if sub == MPI.COMM_NULL else MpiComm(sub)


@pytest.mark.mpi(min_size=3)
def test_migration_on_three_slabs_where_only_the_middle_rank_neighbours_all():
    """Every rank must take the same path through a migration's collectives: a middle rank
    that skipped the vote on far rows (all its peers are neighbours) while the outer ranks
    held it deadlocked the first migration. A deadlock here ends the process after 120 s
    with every thread's traceback, instead of hanging the suite."""
    comm = _first_three_ranks()
    if comm is None:
        return
    faulthandler.dump_traceback_later(120, exit=True)
    try:
        world = pour(comm)
        world.setup()
        dec = world.domain.decomposition
        assert list(dec.dims) == [1, 1, 3] and not world.box.periodic[2]
        assert comm.allgather_object(dec.neighbour_ranks().size) == [1, 2, 1]
        assert not dec.every_rank_adjacent
        before = owners(world)
        world.run(600)
        after = owners(world)
        assert sum(before[g] != after[g] for g in after) > 20, "too few particles changed rank"
        reference = pour(SerialComm())
        reference.run(600)
        a, b = gather(world), gather(reference)
        assert _max_relative_difference(a, b, float(world.box.length.max())) < 1e-9
    finally:
        faulthandler.cancel_dump_traceback_later()
