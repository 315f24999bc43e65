"""Clumps on several ranks (systems/rigid_body, components/clumps/bodies.py).

A pour of dimers, tetrahedra, elongated grains and spheres in a box periodic in x
and y: bodies own their anchor pebble's rank, pebbles on other ranks are placed from
the body's ghost row and send their forces to it. The body trajectories equal the
1-rank run's to 1e-9 while bodies straddle rank boundaries and migrate; a restart on
the same rank count continues bit for bit; the systems keep their declarations on
several ranks (debug mode).
"""
import numpy as np
import pytest

from clump_scenarios import body_state, mixed_pour
from helpers import straight_and_resumed

from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.io.checkpoint import restart, write_checkpoint

pytestmark = pytest.mark.mpi(min_size=2)

STEPS = 800


def owners(world) -> dict:
    """{body gid: rank} over every rank."""
    b = world.bodies
    mine = {int(g): world.comm.rank for g in b.gid[:b.n_owned]}
    merged = {}
    for part in world.comm.world.allgather(mine):
        merged.update(part)
    return merged


def straddling(world) -> int:
    """Owned bodies, summed over ranks, with a pebble owned by another rank (its row a
    ghost row here)."""
    b, p = world.bodies, world.particles
    rows = b.pebble_rows[:b.n_owned]
    return world.comm.sum(int(np.count_nonzero(((rows >= p.n_owned) & (b.pebbles[:b.n_owned] >= 0))
                                               .any(axis=1))))


def test_body_trajectories_match_the_one_rank_run():
    par = mixed_pour(default_comm(), balance_every=100, sideways=1.0, debug=False)
    ser = mixed_pour(SerialComm(), balance_every=100, sideways=1.0, debug=False)
    par.setup()
    ser.setup()
    start = owners(par)
    crossing = 0
    for _ in range(STEPS // 100):
        par.run(100)
        ser.run(100)
        crossing += straddling(par)
    assert crossing > 0
    end = owners(par)
    assert sum(start[g] != end[g] for g in start) > 0  # bodies migrated
    assert par.comm.sum(par.bodies.n_owned) == ser.bodies.n_owned == 48
    a, b = body_state(par), body_state(ser)
    scale = {"com": 1e-2, "velocity": 1.0, "orientation": 1.0, "angular_momentum":
             np.abs(b["angular_momentum"]).max(), "angular_velocity": 100.0}
    for f in a:
        np.testing.assert_allclose(a[f], b[f], rtol=0, atol=1e-9 * scale[f], err_msg=f)
    assert np.abs(b["velocity"]).max() > 0.1  # still moving: the comparison means something


def test_restart_continues_bit_for_bit(tmp_path_factory):
    comm = default_comm()
    path = comm.broadcast_object(str(tmp_path_factory.mktemp("clumps") / "c.h5"))
    build = lambda: mixed_pour(comm, balance_every=100, sideways=1.0, debug=False)
    straight, resumed = straight_and_resumed(build, path, 300, 200)
    a, b = body_state(straight), body_state(resumed)
    for f in a:
        assert np.array_equal(a[f], b[f]), f


def test_declarations_hold_on_several_ranks():
    world = mixed_pour(default_comm(), cells=(3, 3, 2), sideways=1.0)
    world.run(60)
    assert world.comm.sum(world.bodies.n_owned) == sum(k % 4 != 3 for k in range(18))


def test_one_rank_checkpoint_continues_on_several_ranks(tmp_path_factory):
    """A 1-rank checkpoint restarted on `size` ranks: the bodies are redistributed with
    their anchor pebbles and continue as the uninterrupted 1-rank run (to 1e-9)."""
    comm = default_comm()
    path = comm.broadcast_object(str(tmp_path_factory.mktemp("clumps") / "one.h5"))
    build = lambda c: mixed_pour(c, balance_every=100, sideways=1.0, debug=False)
    one = build(SerialComm())
    one.run(300)
    if comm.rank == 0:
        write_checkpoint(one, path)
    comm.barrier()
    one.run(300)
    par = build(comm)
    restart(par, path)
    assert comm.min(par.bodies.n_owned) > 0
    par.run(300)
    a, b = body_state(par), body_state(one)
    for f in a:
        scale = max(float(np.abs(b[f]).max()), 1e-2)
        np.testing.assert_allclose(a[f], b[f], rtol=0, atol=1e-9 * scale, err_msg=f)
