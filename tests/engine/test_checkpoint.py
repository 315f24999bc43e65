"""Checkpoint/restart (ecs_dem/io/checkpoint.py): exact continuation, atomic writes, bad input."""
import subprocess
import textwrap

import numpy as np
import pytest

from ecs_dem.comm import SerialComm
from ecs_dem.errors import InputError
from ecs_dem.io.checkpoint import Checkpointer, _state_fields, restart, write_checkpoint
from helpers import PYTHON, REPO
from mpi_scenarios import dense_bed, gather, spring_net


@pytest.mark.parametrize("scenario", [dense_bed, spring_net])
def test_n_steps_restart_n_steps_equals_2n_steps_exactly(tmp_path, scenario):
    straight = scenario(SerialComm())
    straight.rng.random(3)
    straight.run(80)
    write_checkpoint(straight, tmp_path / "ck.h5", {"seed": 1})
    rng_next = straight.rng.random()
    straight.run(80)
    resumed = scenario(SerialComm())
    assert restart(resumed, tmp_path / "ck.h5") == {"seed": 1}
    assert resumed.step == 80 and resumed.time == pytest.approx(80 * resumed.dt)
    assert resumed.rng.random() == rng_next
    resumed.run(80)
    a, b = gather(straight, fields=("position", "velocity", "angular_velocity")), gather(
        resumed, fields=("position", "velocity", "angular_velocity"))
    for g in a:
        for x, y in zip(a[g], b[g]):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(straight.pairs.tangential_spring, resumed.pairs.tangential_spring)


def test_restart_rejects_missing_file_and_foreign_tables(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        restart(dense_bed(SerialComm()), tmp_path / "nothing.h5")
    net = spring_net(SerialComm())
    net.run(2)
    write_checkpoint(net, tmp_path / "net.h5")
    with pytest.raises(InputError, match="lacks fields .*restart with the driver"):
        restart(dense_bed(SerialComm()), tmp_path / "net.h5")


def test_scratch_fields_stay_out_of_checkpoints_and_restart_at_their_default(tmp_path):
    """A scratch field (recomputed before every read) is not state: the file leaves it out, so
    a checkpoint written before the field existed restarts a world that has it; its rows get
    the field's default, and a non-scratch field missing from the file is still refused."""
    import h5py

    from ecs_dem.table import Field, Halo

    scratch = Field("work", np.float64, (), Halo.FORWARD, 7.0, "", "scratch", scratch=True)
    plain = dense_bed(SerialComm())
    plain.run(5)
    write_checkpoint(plain, tmp_path / "old.h5")
    withfield = dense_bed(SerialComm())
    withfield.particles.add_field(scratch)
    withfield.particles.work[:] = 1.0
    withfield.run(5)
    write_checkpoint(withfield, tmp_path / "new.h5")
    with h5py.File(tmp_path / "new.h5", "r") as f:
        assert "work" not in f["tables/particles"] and "velocity" in f["tables/particles"]
    resumed = dense_bed(SerialComm())
    resumed.particles.add_field(scratch)
    restart(resumed, tmp_path / "old.h5")
    assert resumed.step == 5 and np.all(resumed.particles.work == 7.0)
    np.testing.assert_array_equal(np.sort(resumed.particles.gid), np.sort(plain.particles.gid))
    resumed.particles.add_field(Field("state", np.float64, (), Halo.FORWARD, 0.0))
    with pytest.raises(InputError, match=r"lacks fields \['state'\]"):
        restart(dense_bed_with(resumed.particles.fields), tmp_path / "old.h5")


def dense_bed_with(fields):
    world = dense_bed(SerialComm())
    for f in fields.values():
        world.particles.add_field(f)
    return world


KILLED_WRITE = textwrap.dedent('''
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from ecs_dem.comm import SerialComm
    from ecs_dem.io import parallel_h5
    from ecs_dem.io.checkpoint import write_checkpoint
    from mpi_scenarios import dense_bed
    world = dense_bed(SerialComm())
    world.run(30)
    calls = 0
    original = parallel_h5.SharedFile.write_rows
    def dying(self, *args, **kw):
        global calls
        calls += 1
        if calls == 5:   # half-way through the tables
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, *args, **kw)
    parallel_h5.SharedFile.write_rows = dying
    write_checkpoint(world, {path!r})
''')


def test_checkpoint_killed_half_way_leaves_previous_one_loadable(tmp_path):
    path = tmp_path / "ck.h5"
    world = dense_bed(SerialComm())
    world.run(10)
    write_checkpoint(world, path)
    script = tmp_path / "kill.py"
    script.write_text(KILLED_WRITE.format(tests=str(REPO / "tests"), path=str(path)))
    res = subprocess.run([PYTHON, str(script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == -9, res.stderr
    assert (tmp_path / "ck.h5.tmp").exists()  # the half-written file
    resumed = dense_bed(SerialComm())
    restart(resumed, path)
    assert resumed.step == 10
    resumed.run(5)
    write_checkpoint(resumed, path)  # a stale .tmp does not block the next checkpoint
    assert not (tmp_path / "ck.h5.tmp").exists()


def test_checkpointer_writes_periodically_and_on_stop(tmp_path):
    world = dense_bed(SerialComm())
    ck = world.add_system(Checkpointer(tmp_path / "p.h5", every=25))
    world.run(60)
    assert ck.last_written == 50
    world.stop_requested = 15
    ck.on_stop(world)
    assert ck.last_written == 60


def damaged_copies(tmp_path):
    """A good checkpoint of the dense bed, and damaged versions of it: (label, path)."""
    import shutil

    import h5py

    world = dense_bed(SerialComm())
    world.run(3)
    good = write_checkpoint(world, tmp_path / "good.h5", {"seed": 1})
    text = tmp_path / "text.h5"
    text.write_text("not a checkpoint\n")
    cut = tmp_path / "cut.h5"
    cut.write_bytes(good.read_bytes()[:2000])
    no_step = tmp_path / "no_step.h5"
    shutil.copy(good, no_step)
    with h5py.File(no_step, "a") as f:
        del f.attrs["step"]
    short = tmp_path / "short.h5"
    shutil.copy(good, short)
    with h5py.File(short, "a") as f:
        position = f["tables/particles/position"][:]
        del f["tables/particles/position"]
        f["tables/particles/position"] = position[:-5]
    return good, [("text", text), ("cut", cut), ("no_step", no_step), ("short", short)]


def test_a_damaged_checkpoint_is_an_input_error_that_names_the_file(tmp_path):
    from ecs_dem.io.checkpoint import checkpoint_step, read_config

    good, damaged = damaged_copies(tmp_path)
    assert checkpoint_step(good) == 3 and read_config(good) == {"seed": 1}
    for label, path in damaged:
        with pytest.raises(InputError, match=f"checkpoint {path}") as info:
            restart(dense_bed(SerialComm()), path)
        assert ("cannot be read" in str(info.value)) == (label != "short"), label
        assert ("different lengths" in str(info.value)) == (label == "short"), label
        if label in ("text", "cut", "no_step"):
            with pytest.raises(InputError, match="cannot be read"):
                checkpoint_step(path)


def _device_with_free_bytes(monkeypatch, free):
    """os.statvfs as parallel_h5 sees it: `free` bytes available on every device."""
    import ecs_dem.io.parallel_h5 as parallel_h5

    class Stats:
        f_bavail, f_frsize = free, 1

    monkeypatch.setattr(parallel_h5.os, "statvfs", lambda folder: Stats)


def test_a_checkpoint_that_cannot_fit_is_refused_before_the_last_one_is_touched(
        tmp_path, monkeypatch):
    """HDF5 out of space in the middle of a checkpoint left handles that crashed the process
    when freed (a segmentation fault, no message); the room is now asked for first."""
    import errno

    from ecs_dem.errors import OutputError
    from ecs_dem.io.parallel_h5 import SPACE_MARGIN

    world = dense_bed(SerialComm(), n_side=6, layers=3)
    path = tmp_path / "ck.h5"
    world.add_system(Checkpointer(path, every=10))
    world.run(10)
    before = path.read_bytes()
    state = sum(t.owned(f).nbytes for t in world.tables.values() for f in _state_fields(t))
    need = SPACE_MARGIN[0] * state + SPACE_MARGIN[1]
    _device_with_free_bytes(monkeypatch, int(need) - 1)
    with pytest.raises(OutputError, match=r"step 20: an output file \(.*ck.h5\) could not be "
                                          r"written: No space left on device \("):
        world.run(10)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["ck.h5"]
    with pytest.raises(OSError) as raised:
        write_checkpoint(world, path)
    assert raised.value.errno == errno.ENOSPC
    _device_with_free_bytes(monkeypatch, int(need) + 1)  # just enough: written
    write_checkpoint(world, path)
    assert path.read_bytes() != before
