"""Soft kill: SIGTERM to a running `mpiexec -n 2` job leaves a checkpoint that restarts;
a second signal ends the process at once."""
import shutil
import signal
import subprocess
import time

import h5py
import pytest

from helpers import PYTHON, REPO

POUR = [str(REPO / "run" / "pour.py"), "--set", "particles=800", "--set", "quiet=false",
        "--set", "diagnostics_every=200", "--set", "snapshot_every=0"]


def _start(cmd, tmp_path):
    return subprocess.Popen(cmd + ["--set", f"output={tmp_path}/p.h5",
                                   "--set", f"checkpoint={tmp_path}/ck.h5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_steps(proc, deadline=120):
    t0 = time.monotonic()
    for line in proc.stdout:
        if line.startswith("step") and not line.startswith("step        0"):
            return
        assert time.monotonic() - t0 < deadline
    raise AssertionError(f"the run ended early: {proc.stderr.read()}")


@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="needs Debian's MPICH")
def test_sigterm_to_mpiexec_job_leaves_checkpoint_that_restarts(tmp_path):
    proc = _start(["mpiexec.mpich", "-n", "2", PYTHON, *POUR, "--set", "duration=20"], tmp_path)
    _wait_for_steps(proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "stopped by SIGTERM" in out and "SIGTERM received" in err
    with h5py.File(tmp_path / "ck.h5") as f:
        step = int(f.attrs["step"])
        assert step > 0 and f.attrs["ranks"] == 2
    res = subprocess.run(["mpiexec.mpich", "-n", "2", PYTHON, *POUR,
                          "--set", f"duration={(step + 300) * 2.6e-5}",
                          "--set", f"output={tmp_path}/p.h5", "--set", f"checkpoint={tmp_path}/ck.h5",
                          "--set", f"restart={tmp_path}/ck.h5"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"restarted from {tmp_path}/ck.h5 at step {step}" in res.stdout
    with h5py.File(tmp_path / "ck.h5") as f:
        assert int(f.attrs["step"]) > step  # the final checkpoint of the continued run
    with h5py.File(tmp_path / "p.h5") as f:
        steps = f["timeseries/step"][:]
        assert steps[0] == 0 and steps[-1] > step and (steps[1:] > steps[:-1]).all()


def test_second_signal_exits_at_once(tmp_path):
    proc = _start([PYTHON, *POUR, "--set", "duration=20", "--set", "checkpoint_every=0"], tmp_path)
    _wait_for_steps(proc)
    proc.send_signal(signal.SIGINT)
    # a person presses Ctrl-C twice with a gap; signals sent back to back coalesce
    for line in proc.stderr:  # other messages (warnings) may come first
        if "SIGINT received" in line:
            break
    else:
        raise AssertionError("the first signal was not acknowledged")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT
    assert "second signal SIGINT: exiting now" in err


SIGNAL_IN_SETUP = """
import os, signal, sys
from ecs_dem.run import pour
from ecs_dem.world import World
original, sent = World.setup, []
def setup(self):
    original(self)
    if not sent:  # during the set-up's first records, once
        sent.append(os.kill(os.getpid(), signal.SIGTERM))
World.setup = setup
sys.exit(pour.main(sys.argv[1:]))
"""


def test_sigterm_during_the_set_up_stops_after_the_first_step_with_a_checkpoint(tmp_path):
    """The set-up writes the output's first records (on a restart, into the file that holds
    the earlier run's): a signal there used to end the process by the default handler."""
    res = subprocess.run([PYTHON, "-c", SIGNAL_IN_SETUP, *POUR[1:],
                          "--set", f"output={tmp_path}/p.h5", "--set", f"checkpoint={tmp_path}/ck.h5"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "SIGTERM received" in res.stderr and "stopped by SIGTERM at step 1" in res.stdout
    with h5py.File(tmp_path / "ck.h5") as f:
        assert int(f.attrs["step"]) == 1
    with h5py.File(tmp_path / "p.h5") as f:
        assert f["timeseries/step"][0] == 0
