"""The shared run loop (ecs_dem/runner.py): a run that ends on a condition; soft kill across
the chunks of a run (a signal late in a step or between chunks is not lost)."""
import os
import signal

import pytest

from ecs_dem import Box, InputError, Stage, System, World
from ecs_dem.components.particles import add_particles, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.errors import RunStopped
from ecs_dem.runner import RUN_DEFAULTS, run_or_stop, run_world
from ecs_dem.soft_kill import SoftKill
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet


def small_world():
    world = World(Box((-1,) * 3, (1,) * 3), dt=1e-3, skin=0.1)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    create_particle_table(world)
    add_particles(world, [[0.0, 0.0, 0.0]], 0.01, velocity=[[1.0, 0.0, 0.0]])
    for s in velocity_verlet():
        world.add_system(s)
    return world


def test_run_ends_at_the_first_check_where_the_condition_holds():
    cfg = dict(RUN_DEFAULTS, progress=False)
    world = small_world()
    asked = []

    def until(w):
        asked.append(w.step)
        return w.particles.position[0, 0] > 0.0245  # x = t (m/s * s): true from step 25

    assert run_world(world, cfg, 1000, until=until, check_every=10) == 0
    assert asked == [0, 10, 20, 30]
    assert world.step == 30


def test_run_without_the_condition_met_stops_at_the_step_limit():
    world = small_world()
    run_world(world, dict(RUN_DEFAULTS, progress=False), 45, until=lambda w: False, check_every=10)
    assert world.step == 45


def test_a_restarted_run_asks_at_the_same_steps_and_ends_at_the_same_step(tmp_path):
    from ecs_dem.io.checkpoint import write_checkpoint

    cfg = dict(RUN_DEFAULTS, progress=False)
    world = small_world()
    world.setup()
    world.run(13)
    write_checkpoint(world, str(tmp_path / "ck.h5"), cfg)
    world = small_world()
    asked = []

    def until(w):
        asked.append(w.step)
        return w.particles.position[0, 0] > 0.0245

    run_world(world, dict(cfg, restart=str(tmp_path / "ck.h5")), 1000, until=until, check_every=10)
    assert asked == [13, 20, 30]
    assert world.step == 30


def test_a_restart_configured_with_another_time_step_continues_at_it(tmp_path, capsys):
    from ecs_dem.io.checkpoint import write_checkpoint

    cfg = dict(RUN_DEFAULTS, progress=False)
    world = small_world()
    world.setup()
    world.run(10)
    write_checkpoint(world, str(tmp_path / "ck.h5"), cfg)
    x10, t10 = world.particles.position[0, 0], world.time
    same = small_world()
    run_world(same, dict(cfg, restart=str(tmp_path / "ck.h5")), 20)
    assert same.dt == 1e-3 and "time step" not in capsys.readouterr().out
    finer = small_world()
    finer.dt = 2.5e-4
    run_world(finer, dict(cfg, restart=str(tmp_path / "ck.h5")), 20)
    assert "time step 0.00025 s from the configuration" in capsys.readouterr().out
    assert finer.dt == 2.5e-4 and finer.time == pytest.approx(t10 + 10 * 2.5e-4, rel=1e-12)
    assert finer.particles.position[0, 0] == pytest.approx(x10 + 10 * 2.5e-4 * 1.0, rel=1e-12)


class SignalAt(System):
    """Sends this process SIGTERM during the given step (after the step's stop vote)."""

    stage = Stage.INTEGRATE_SECOND

    def __init__(self, step):
        self.at = step
        self.stopped_at = None

    def run(self, world):
        if world.step == self.at:
            os.kill(os.getpid(), signal.SIGTERM)

    def on_stop(self, world):
        self.stopped_at = world.step


def test_a_signal_during_the_last_step_of_a_run_stops_it():
    world = small_world()
    probe = world.add_system(SignalAt(5))
    world.run(5)
    assert world.stop_requested == signal.SIGTERM and probe.stopped_at == 5


def test_a_signal_between_chunks_stops_the_next_chunk_at_its_first_step():
    world = small_world()
    probe = world.add_system(SignalAt(-1))
    with world.soft_kill():
        world.run(3)
        os.kill(os.getpid(), signal.SIGTERM)  # outside run(): the block's handler catches it
        world.run(10)
    assert world.stop_requested == signal.SIGTERM and probe.stopped_at == 4


def test_run_or_stop_ends_a_driver_that_runs_in_chunks_at_the_first_signal():
    """World.run returns on a signal; a loop of runs without this check went on running."""
    world = small_world()
    probe = world.add_system(SignalAt(3))
    finished = []
    with pytest.raises(RunStopped, match="^stopped by SIGTERM in the test$") as stop:
        with world.soft_kill():
            for _ in range(10):
                run_or_stop(world, 2, "in the test")
                finished.append(world.step)
    assert stop.value.signal == signal.SIGTERM
    assert finished == [2] and probe.stopped_at == world.step == 4


def test_a_signal_between_two_worlds_of_one_block_stops_the_second_at_its_first_step():
    """A driver's block (SoftKill) is shared by every world's runs inside it: a signal while
    the driver builds its next world is not the default handler's, and not lost."""
    before = signal.getsignal(signal.SIGTERM)
    first, second = small_world(), small_world()
    with SoftKill() as outer:
        first.run(3)
        os.kill(os.getpid(), signal.SIGTERM)  # between the two worlds' runs
        with second.soft_kill() as inner:
            assert inner is outer
            second.run(10)
    assert first.stop_requested is None and first.step == 3
    assert second.stop_requested == signal.SIGTERM and second.step == 1
    assert signal.getsignal(signal.SIGTERM) is before  # the block put the handler back


def test_a_restart_from_another_runs_checkpoint_is_refused_and_other_changes_are_printed(
        tmp_path, capsys):
    from ecs_dem.io.checkpoint import write_checkpoint

    saved = dict(RUN_DEFAULTS, progress=False, seed=1, sample_every=200, note=(1, 2))
    world = small_world()
    world.setup()
    world.run(10)
    path = str(tmp_path / "ck.h5")
    write_checkpoint(world, path, saved)
    other_seed = dict(saved, seed=2, restart=path)
    with pytest.raises(InputError, match=r"belongs to another run \(seed = 1 there, 2 here\)"):
        run_world(small_world(), other_seed, 20, identity=("seed",))
    same = small_world()  # the same run, recorded more often: allowed, and said
    run_world(same, dict(saved, sample_every=100, restart=path), 20,
              identity=("seed", "note"))
    out = capsys.readouterr().out
    assert "departs from the checkpoint's configuration: sample_every 200 -> 100" in out
    assert "seed" not in out.split("departs")[1] and "note" not in out  # a tuple saved as a list
    assert same.step == 20


def test_nothing_to_run_and_an_unwritable_checkpoint_stop_before_the_set_up(tmp_path):
    from ecs_dem.io.checkpoint import write_checkpoint

    from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter

    cfg = dict(RUN_DEFAULTS, progress=False)
    for steps in (0, -5):
        world = small_world()
        with pytest.raises(InputError, match=f"nothing to run: the run ends at step {steps}"):
            with Hdf5Output(tmp_path / "run.h5") as out:
                world.add_system(SnapshotWriter(out, 1))  # set-up would write step 0
                run_world(world, cfg, steps)
        assert not (tmp_path / "run.h5").exists()
    world = small_world()
    world.setup()
    world.run(10)
    path = str(tmp_path / "ck.h5")
    write_checkpoint(world, path, cfg)
    with pytest.raises(InputError, match="would start at step 10 \\(the checkpoint's\\)"):
        run_world(small_world(), dict(cfg, restart=path), 10)
    (tmp_path / "plain").write_text("")
    world = small_world()
    with pytest.raises(InputError, match="cannot create checkpoint .* is a file, not a directory"):
        run_world(world, dict(cfg, checkpoint=str(tmp_path / "plain" / "ck.h5")), 5)
    assert world.step == 0


def test_a_checkpoint_named_like_the_output_is_refused_before_the_output_changes(
        tmp_path, monkeypatch):
    """checkpoint = the output's path: the first checkpoint replaced the output file (its
    snapshots gone, the XDMF pointing at nothing)."""
    from ecs_dem.runner import open_output

    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.h5").write_bytes(b"an earlier run's output")
    for checkpoint in ("run.h5", str(tmp_path / "run.h5"), "./sub/../run.h5"):
        cfg = dict(RUN_DEFAULTS, checkpoint=checkpoint)
        with pytest.raises(InputError, match="is the output file.*such as run.checkpoint.h5"):
            open_output("run.h5", cfg)
    assert (tmp_path / "run.h5").read_bytes() == b"an earlier run's output"
    open_output("run.h5", dict(RUN_DEFAULTS, checkpoint="run.checkpoint.h5")).close()


def test_error_exit_prints_the_error_and_returns_the_drivers_code(capsys):
    from ecs_dem.errors import OutputError, StateError
    from ecs_dem.runner import error_exit

    assert error_exit(InputError("config key 'x' = -1 is outside (0, infinity)")) == 2
    assert capsys.readouterr().err == "error: config key 'x' = -1 is outside (0, infinity)\n"
    assert error_exit(StateError("gid 7 has a non-finite position")) == 3
    assert error_exit(OutputError("step 5: an output file could not be written")) == 3
    assert error_exit(OSError(28, "No space left on device", "out/summary.csv")) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "error: cannot write out/summary.csv: No space left on device"
    assert err[0] == "error: gid 7 has a non-finite position"


@pytest.mark.parametrize("rank, value_printed, file_printed", [("0", True, True),
                                                                ("1", False, True)])
def test_a_configuration_value_error_is_printed_by_rank_0_alone(
        capsys, monkeypatch, rank, value_printed, file_printed):
    """Every rank reads the same arguments: an unknown key or a value out of range would
    otherwise be printed once per rank; a file that cannot be read may differ by node."""
    from ecs_dem import comm
    from ecs_dem.errors import ConfigError, ConfigValueError
    from ecs_dem.runner import error_exit

    monkeypatch.setattr(comm, "_DEFAULT", None)  # before MPI starts: the launcher's rank
    for name in comm.RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PMI_RANK", rank)
    assert comm.launch_rank() == int(rank)
    assert error_exit(ConfigValueError("unknown config key 'bogus'")) == 2
    assert (capsys.readouterr().err != "") == value_printed
    assert error_exit(ConfigError("config file run.toml does not exist")) == 2
    assert (capsys.readouterr().err != "") == file_printed
    monkeypatch.setattr(comm, "_DEFAULT", comm.SerialComm())  # once it exists: its rank
    assert comm.launch_rank() == 0


def test_progress_of_a_chunked_run_counts_to_its_limit_not_to_each_chunk():
    """A run that ends on a condition runs in chunks of `check_every` steps; its progress
    prints once per interval (here: never before the end) and against the step limit, not
    a line at every chunk's end as if each were a finished run."""
    import io

    from ecs_dem.progress import Progress

    def printed(run):
        world = small_world()
        out = io.StringIO()
        world.add_system(Progress(interval=1e9, stream=out))
        run(world)
        return out.getvalue().splitlines(), world

    lines, world = printed(lambda w: run_world(w, dict(RUN_DEFAULTS, progress=False), 1000,
                                               until=lambda w: w.step >= 100, check_every=10))
    assert world.step == 100 and world.horizon_step is None
    assert lines == []
    lines, _ = printed(lambda w: run_world(w, dict(RUN_DEFAULTS, progress=False), 60,
                                           until=lambda w: False, check_every=10))
    assert len(lines) == 1 and lines[0].startswith("step 60/60 at most")
    lines, _ = printed(lambda w: w.run(50))  # a plain run: one line at its end
    assert len(lines) == 1 and lines[0].startswith("step 50/50 ")
