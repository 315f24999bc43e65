"""ecs_dem.driver: the frame of every driver. The configuration (defaults, --set, a TOML file,
--show-config, ranges, the driver's checks) reaches run(job); the errors a driver expects
become one message and an exit code (2 bad input, 3 a breakdown or results not written,
128 + the signal for a stopped sweep); rank 0 alone prints and writes."""
import math
import signal

import pytest

from ecs_dem import InputError, StateError
from ecs_dem.comm import SerialComm
from ecs_dem.driver import Job, run_driver, write_csv
from ecs_dem.errors import ConfigValueError, RunStopped
from ecs_dem.runner import RUN_DEFAULTS

DEFAULTS = {"steps": 10, "name": "a", "output": "", **RUN_DEFAULTS}
RANGES = (("steps", 1, math.inf, True),)


class RankComm:
    """A communicator that says it is rank `rank` of 2 (its collectives are not used here)."""

    def __init__(self, rank):
        self.rank, self.size = rank, 2

    def barrier(self):
        pass


def test_the_configuration_reaches_the_run_and_the_status_comes_back(tmp_path, capsys):
    seen = {}

    def run(job):
        seen.update(job.cfg)
        job.print("hello from", job.ranks, "rank(s)")
        return 7

    config = tmp_path / "c.toml"
    config.write_text('name = "from the file"\nsteps = 3\n')
    assert run_driver(["--config", str(config), "--set", "steps=5"], defaults=DEFAULTS,
                      ranges=RANGES, run=run) == 7
    assert seen["steps"] == 5 and seen["name"] == "from the file"  # --set wins over the file
    assert capsys.readouterr().out == "hello from 1 rank(s)\n"
    assert run_driver([], defaults=DEFAULTS, run=lambda job: None) == 0  # None: 0
    with pytest.raises(SystemExit) as stop:
        run_driver(["--show-config"], defaults=DEFAULTS, run=run)
    assert stop.value.code == 0 and "steps = 10" in capsys.readouterr().out


def test_defaults_chosen_by_an_argument(capsys):
    def choose(argv):
        return dict(DEFAULTS, name=argv[0]), argv[1:]

    names = []
    assert run_driver(["b", "--set", "steps=2"], defaults=choose,
                      run=lambda job: names.append((job.cfg["name"], job.cfg["steps"]))) == 0
    assert names == [("b", 2)]


def test_bad_input_is_one_message_and_exit_code_2_before_the_run(capsys, monkeypatch):
    ran = []
    for argv, message in ((["--set", "steps=0"], "'steps' = 0 is outside [1, infinity]"),
                          (["--set", "stepz=1"], "unknown config key 'stepz'")):
        assert run_driver(argv, defaults=DEFAULTS, ranges=RANGES, run=ran.append) == 2
        err = capsys.readouterr().err
        assert err.count("error: ") == 1 and message in err, err

    def check(cfg):
        raise ConfigValueError("the name must not be a")

    assert run_driver([], defaults=DEFAULTS, check=check, run=ran.append) == 2
    assert "error: the name must not be a" in capsys.readouterr().err
    monkeypatch.setattr("ecs_dem.runner.launch_rank", lambda: 1)  # printed by rank 0 alone
    assert run_driver(["--set", "steps=0"], defaults=DEFAULTS, ranges=RANGES, run=ran.append) == 2
    assert capsys.readouterr().err == ""
    assert ran == []

    def run(job):
        raise InputError("no such sample")

    assert run_driver([], defaults=DEFAULTS, run=run) == 2
    assert "error: no such sample" in capsys.readouterr().err


def test_a_breakdown_exits_3_after_its_message_and_keeps_what_it_can(capsys):
    kept = []

    def run(job):
        job.on_breakdown = lambda: kept.append(job.cfg["name"])
        raise StateError("the membrane tore")

    assert run_driver([], defaults=DEFAULTS, run=run) == 3
    assert "error: the membrane tore" in capsys.readouterr().err and kept == ["a"]


def test_a_stopped_sweep_exits_with_128_plus_the_signal_and_its_note(capsys):
    def run(job):
        done = []
        job.on_stop = lambda: f"nothing written ({len(done)} of 3 done)"
        done.append(1)
        raise RunStopped(signal.SIGTERM, "in case 2")

    assert run_driver([], defaults=DEFAULTS, run=run, soft_kill=True) == 128 + signal.SIGTERM
    assert capsys.readouterr().out == ("stopped by SIGTERM in case 2: nothing written (1 of 3 "
                                       "done)\n")

    def bare(job):
        raise RunStopped(signal.SIGINT)

    assert run_driver([], defaults=DEFAULTS, run=bare) == 128 + signal.SIGINT
    assert capsys.readouterr().out == "stopped by SIGINT\n"


def test_results_that_cannot_be_written_exit_3_naming_the_file(tmp_path, capsys):
    def run(job):
        job.write_csv(tmp_path / "no" / "such" / "dir.csv", ["a"], [[1.0]])

    assert run_driver([], defaults=DEFAULTS, run=run) == 3
    assert f"error: cannot write {tmp_path / 'no' / 'such' / 'dir.csv'}: No such file" \
        in capsys.readouterr().err

    def run_other_error(job):  # not a write: an OSError elsewhere is no input error
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        run_driver([], defaults=DEFAULTS, run=run_other_error)


def test_rank_0_alone_prints_and_writes(tmp_path, capsys):
    calls = []
    for rank in (0, 1):
        job = Job(dict(DEFAULTS), RankComm(rank))
        job.print("line", rank)
        result = job.write(lambda x: calls.append((rank, x)) or x * 2, 21)
        assert result == (42 if rank == 0 else None)
        path = job.write_csv(tmp_path / f"r{rank}.csv", ["x"], [[0.5]])
        assert (path is not None) == (rank == 0)
        assert job.ranks == 2
    assert capsys.readouterr().out == "line 0\n"
    assert calls == [(0, 21)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r0.csv"]


def test_csv_floats_as_written_or_formatted(tmp_path):
    rows = [["a", 1, 0.1 + 0.2, 1e-20 / 3]]
    plain = write_csv(tmp_path / "p.csv", ["s", "i", "x", "y"], rows)
    assert plain.read_text().splitlines() == ["s,i,x,y", f"a,1,{0.1 + 0.2!r},{1e-20 / 3!r}"]
    short = write_csv(tmp_path / "s.csv", ["s", "i", "x", "y"], iter(rows), ".6g")
    assert short.read_text().splitlines()[1] == "a,1,0.3,3.33333e-21"


def test_the_output_names_its_checkpoint_beside_it_unless_one_is_given(tmp_path):
    job = Job(dict(DEFAULTS), SerialComm())
    with job.open_output(tmp_path / "run.h5", checkpoint_beside=True) as output:
        assert output.path == tmp_path / "run.h5" and not output.opened
    assert job.cfg["checkpoint"] == str(tmp_path / "run.checkpoint.h5")
    job = Job(dict(DEFAULTS, checkpoint=str(tmp_path / "mine.h5")), SerialComm())
    job.open_output(tmp_path / "run.h5", checkpoint_beside=True)
    assert job.cfg["checkpoint"] == str(tmp_path / "mine.h5")
    job = Job(dict(DEFAULTS), SerialComm())
    with pytest.raises(InputError, match="is a directory"):  # before a name is made from it
        job.open_output(tmp_path, checkpoint_beside=True)
    assert job.cfg["checkpoint"] == ""
