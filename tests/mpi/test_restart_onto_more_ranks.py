"""Restart a 1-rank checkpoint on several ranks (docs/user-guide/output-checkpoints.md).

"Restart continues bit for bit on the same rank count and correctly on a
different one": the rows are redistributed by position as at set-up, the
neighbour lists are rebuilt with the contact history carried over by gid pair,
and the forces are the saved ones (ecs_dem/io/checkpoint.py). So a 1-rank run
of 2N steps and the same run checkpointed after N steps and continued on
`size` ranks for N more must agree particle by particle (by gid) up to the
round-off of summing contact forces in another order, amplified over N steps.

The scenario is tests/mpi_scenarios.dense_bed: 864 frictional spheres in a
compressed bed on a floor, periodic in x and y, with random velocities and
spins, so that many contacts carry tangential history (pairs and wall).
"""
import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.io.checkpoint import restart, write_checkpoint
from mpi_scenarios import dense_bed, gather

pytestmark = pytest.mark.mpi(min_size=2)

N = 150  # steps before and after the checkpoint (the continuation migrates rows once)


@pytest.fixture
def shared_dir(tmp_path):
    """One directory for all ranks (rank 0's tmp_path)."""
    return default_comm().broadcast_object(str(tmp_path))


def touching_history(world):
    """{(gid_i, gid_j): tangential_spring} of the touching pairs, over all ranks, and the number of
    those whose partner j is owned by another rank (cross-rank contacts), summed over ranks.

    Touching is decided from the positions (|x_i - x_j| < r_i + r_j, ghost rows
    hold the periodic images), not from the history.
    """
    p, q = world.particles, world.pairs
    gid = p.with_ghosts("gid")
    x = p.with_ghosts("position")
    r = p.with_ghosts("radius")
    i, j = q.i.astype(np.int64), q.j.astype(np.int64)
    touching = np.linalg.norm(x[i] - x[j], axis=1) < r[i] + r[j]
    spring = q.tangential_spring
    mine = {(int(gid[a]), int(gid[b])): spring[k].copy()
            for k, (a, b) in enumerate(zip(i, j)) if touching[k]}
    owned = set(p.gid.tolist())
    cross = sum(1 for (a, b) in mine if b not in owned)
    comm = world.comm
    if comm.size == 1:
        return mine, cross
    merged = {}
    for part in comm.world.allgather(mine):
        assert not set(part) & set(merged), "a pair is evaluated on two ranks"
        merged.update(part)
    return merged, comm.sum(cross)


def test_one_rank_checkpoint_continues_on_several_ranks(shared_dir):
    """1-rank run of 2N steps == 1-rank N steps, checkpoint, `size` ranks N steps (by gid).

    Checked: the particles and gids are conserved; right after the restart
    every touching pair carries exactly the tangential history it had in the
    checkpoint (including pairs now split between two ranks) and every
    particle its wall history; after N more steps positions, velocities and
    spins agree with the uninterrupted run to 1e-11 of their largest value
    (round-off of a different summation order, amplified by the contacts:
    measured up to 4e-17 / 4e-14 / 2e-14 for positions / velocities / spins
    on 2 ranks, 2e-16 / 2e-13 / 3e-13 on 4), far below the 1e-9 used for the
    reverse direction in tests/mpi/test_io.py.
    The continuation rebuilds (migrates rows between ranks) at least once.
    """
    comm = default_comm()
    path = f"{shared_dir}/one_rank.h5"
    one = dense_bed(SerialComm())  # the 1-rank reference, computed by every rank alone
    one.run(N)
    saved, _ = touching_history(one)
    saved_wall = gather(one, fields=("wall_tangential_spring",))
    at_checkpoint = gather(one)
    if comm.rank == 0:
        write_checkpoint(one, path)
    comm.barrier()
    one.run(N)

    par = dense_bed(comm)
    restart(par, path)
    assert par.step == N
    n_total = one.particles.n_owned
    assert comm.sum(par.particles.n_owned) == n_total
    assert comm.min(par.particles.n_owned) > 0 and comm.max(par.particles.n_owned) < n_total
    assert comm.min(par.particles.n_ghost) > 0

    restored, cross = touching_history(par)
    assert sorted(restored) == sorted(saved)
    for key, value in saved.items():
        np.testing.assert_array_equal(restored[key], value)
    n_history = sum(1 for v in saved.values() if np.any(v != 0))
    assert n_history > 500  # the bed is full of lasting frictional contacts
    assert cross > 20  # and many of them now join particles owned by different ranks
    restored_wall = gather(par, fields=("wall_tangential_spring",))
    for g, value in saved_wall.items():
        np.testing.assert_array_equal(restored_wall[g][0], value[0])
    assert sum(bool(np.any(v[0] != 0)) for v in saved_wall.values()) > 50

    rebuilds = par.domain.rebuild_count
    par.run(N)
    assert par.domain.rebuild_count > rebuilds
    fields = ("position", "velocity", "angular_velocity")
    a, b = gather(one, fields=fields), gather(par, fields=fields)
    assert sorted(a) == sorted(b) == list(range(n_total))
    for k, name in enumerate(fields):
        scale = max(float(np.abs(a[g][k]).max()) for g in a)
        worst = max(float(np.abs(a[g][k] - b[g][k]).max()) for g in a)
        assert worst <= 1e-11 * scale, (name, worst, scale)
    # the continuation did something: the spheres moved by far more than the tolerance
    moved = max(float(np.abs(a[g][0] - at_checkpoint[g][0]).max()) for g in a)
    assert moved > 1e-6  # m; positions are O(1e-2) m
