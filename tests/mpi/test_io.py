"""Parallel HDF5 output and checkpoint/restart across ranks."""
import h5py
import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.io.checkpoint import restart, write_checkpoint
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from mpi_scenarios import dense_bed, gather

pytestmark = pytest.mark.mpi(min_size=2)


@pytest.fixture
def shared_dir(tmp_path):
    """One directory for all ranks (rank 0's tmp_path)."""
    return default_comm().broadcast_object(str(tmp_path))


def test_collective_snapshot_equals_state_gathered_by_gid(shared_dir):
    comm = default_comm()
    world = dense_bed(comm)
    out = Hdf5Output(f"{shared_dir}/run.h5", None, comm)
    world.add_system(SnapshotWriter(out, 30))
    world.run(30)
    out.close()
    state = gather(world, fields=("position", "velocity", "radius"))
    with h5py.File(f"{shared_dir}/run.h5", "r") as f:
        g = f["snapshots/000000030"]
        gids = g["gid"][:]
        assert sorted(gids.tolist()) == sorted(state) and f.attrs["ranks"] == comm.size
        for k, gid in enumerate(gids):
            for name, value in zip(("position", "velocity", "radius"), state[int(gid)]):
                np.testing.assert_array_equal(g[name][k], value)
        assert f["timeseries"] is not None


def test_restart_on_same_rank_count_is_exact(shared_dir):
    comm = default_comm()
    straight = dense_bed(comm)
    straight.run(60)
    write_checkpoint(straight, f"{shared_dir}/ck.h5")
    straight.run(60)
    resumed = dense_bed(comm)
    restart(resumed, f"{shared_dir}/ck.h5")
    resumed.run(60)
    a = gather(straight, fields=("position", "velocity"))
    b = gather(resumed, fields=("position", "velocity"))
    assert all(np.array_equal(a[g][0], b[g][0]) and np.array_equal(a[g][1], b[g][1]) for g in a)


def test_checkpoint_from_several_ranks_continues_on_one_rank(shared_dir):
    comm = default_comm()
    par = dense_bed(comm)
    par.run(60)
    write_checkpoint(par, f"{shared_dir}/cross.h5")
    par.run(60)
    one = dense_bed(SerialComm())   # every rank restarts the whole state alone
    restart(one, f"{shared_dir}/cross.h5")
    assert one.particles.n_owned == comm.sum(par.particles.n_owned)
    one.run(60)
    a = gather(par)
    b = gather(one)
    scale = float(par.box.length.max())
    assert max(float(np.max(np.abs(a[g][0] - b[g][0]))) for g in a) < 1e-9 * scale


def test_without_parallel_h5py_rows_are_gathered_to_rank_zero(shared_dir, monkeypatch, capsys):
    import types

    from ecs_dem.io import parallel_h5

    monkeypatch.setattr(h5py, "get_config", lambda: types.SimpleNamespace(mpi=False))
    monkeypatch.setattr(parallel_h5, "_warned", False)
    comm = default_comm()
    world = dense_bed(comm)
    world.setup()
    out = Hdf5Output(f"{shared_dir}/gathered.h5", None, comm)
    assert not out.shared.collective and (out.file is None) == (comm.rank != 0)
    out.write_snapshot(0, 0.0, world.particles, ("gid", "position"))
    out.append(0, 0.0, {"kinetic_energy": 1.5})
    out.close()
    err = capsys.readouterr().err
    assert ("h5py was built without MPI" in err) == (comm.rank == 0)
    state = gather(world)
    comm.barrier()
    with h5py.File(f"{shared_dir}/gathered.h5", "r") as f:
        gids = f["snapshots/000000000/gid"][:]
        assert sorted(gids.tolist()) == sorted(state)
        pos = f["snapshots/000000000/position"][:]
        for k, gid in enumerate(gids):
            np.testing.assert_array_equal(pos[k], state[int(gid)][0])
        assert f["timeseries/kinetic_energy"][:].tolist() == [1.5]


@pytest.mark.two_ranks
def test_time_series_begun_on_one_rank_continues_on_several(shared_dir):
    """A 1-rank run's file continued after a restart on all ranks, past the chunks the serial
    file had allocated (records of 256 rows; the case-1 triaxial run hung at record 2049,
    HDF5's collective flush waiting for metadata that rank 0 alone had written): every
    record is there once, in order, the ones after the restart step replaced; snapshots
    after it are deleted (that aborted when rank 0 alone had read the file first)."""
    comm = default_comm()
    path = f"{shared_dir}/series.h5"
    first, resume, last = 700, 499, 1100
    if comm.rank == 0:
        with Hdf5Output(path, None, SerialComm()) as out:
            for k in range(first):
                out.append(k, 0.5 * k, {"a": -1.0, "b": np.zeros(2)})
                if k % 200 == 0:
                    g = out.file["snapshots"].create_group(f"{k:09d}")
                    g.attrs["time"] = 0.5 * k
                    g.create_dataset("position", data=np.full((3, 3), float(k)))
    comm.barrier()
    with Hdf5Output(path, None, comm, resume_step=resume) as out:
        assert [k for k, *_ in out.snapshots] == [0, 200, 400]
        for k in range(resume + 1, last):
            out.append(k, 0.5 * k, {"a": -1.0 if k <= resume else float(k), "b": np.full(2, k)})
    comm.barrier()
    with h5py.File(path, "r") as f:
        ts = f["timeseries"]
        assert ts["step"][:].tolist() == list(range(last))
        np.testing.assert_array_equal(ts["time"][:], 0.5 * np.arange(last))
        a = ts["a"][:]
        assert np.all(a[:resume + 1] == -1.0) and a[resume + 1:].tolist() == list(range(resume + 1, last))
        np.testing.assert_array_equal(ts["b"][resume + 1:, 1], np.arange(resume + 1, last))
        assert sorted(f["snapshots"]) == [f"{k:09d}" for k in (0, 200, 400)]


def test_a_room_check_that_fails_on_rank_0_raises_on_every_rank(shared_dir, monkeypatch):
    """Rank 0 alone asks the file system for room; an OSError there (a folder it may not
    read) reached rank 0 only, which stopped while the others waited for its answer: a hang.
    Every rank must raise it. A hang ends the process after 60 s (faulthandler)."""
    import errno
    import faulthandler

    import ecs_dem.io.parallel_h5 as parallel_h5

    comm = default_comm()

    def refused(folder):
        raise PermissionError(errno.EACCES, "Permission denied", folder)

    if comm.rank == 0:
        monkeypatch.setattr(parallel_h5.os, "statvfs", refused)
    faulthandler.dump_traceback_later(60, exit=True)
    try:
        with pytest.raises(OSError, match="Permission denied"):
            parallel_h5.ensure_space(f"{shared_dir}/run.h5", 100, comm)
        comm.barrier()
    finally:
        faulthandler.cancel_dump_traceback_later()
