"""End to end: the triaxial test, ecs_dem.run.triaxial (Goetz & Poeschel 2023, Sect. 3.1) on the
small sample.

The small case (about 350 grains) with a fast preparation, loaded to 0.5 %
axial strain with each membrane model (MSS_particle with coarser vertices and
a weaker bending damper, at the grains' time step).
Checked: the prepared packing has no overlap (pair distances, platens and
the cylinder, computed here) and its solid fraction is the grains' volume
over the cylinder's; confinement ends in equilibrium with the servo platen's stress within
2 % of sigma_c and the other within 5 %; no grain leaves the membrane; axial loading
raises sigma_d; the strain column is ln(h0/h); the files exist; a run
stopped by SIGTERM during loading and restarted records the uninterrupted
run's time series bit for bit; bad input is refused with a message; a run
that breaks down stops with the error and keeps the curves recorded so far.
"""
import csv
import math
import os
import re
import signal
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import pytest

from helpers import PYTHON

R, H = 0.015, 0.06  # the small case
# a faster stress ramp than the default 20 ms: the small sample still ends the confinement in
# equilibrium (the criterion decides), in about half the steps
TINY = ["prep_grow_time=0.01", "prep_relax_time=0.005", "confine_ramp=0.008", "max_strain=0.005",
        "sample_every=100", "snapshot_every=100000"]
# MSS_particle with fewer vertices, for speed (the paper's bending damper, limited where the
# grains' time step cannot resolve it: systems/membrane/bending.py)
COARSE_PARTICLES = ["particle_edge=2e-3", "vertex_radius=1e-3"]


def run(*args, timeout=600):
    return subprocess.run([PYTHON, "-m", "ecs_dem.run.triaxial", *args], capture_output=True,
                          text=True, timeout=timeout)


def settings(out, extra=()):
    args = []
    for s in (*TINY, *extra, f"output_dir={out}"):
        args += ["--set", s]
    return args


def read(path):
    with open(path) as fh:
        rows = list(csv.reader(fh))
    names = [h.split(" (")[0] for h in rows[0]]
    data = np.array(rows[1:], dtype=float)
    return {n: data[:, k] for k, n in enumerate(names)}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """model -> (output directory, completed process) of an uninterrupted run, run once."""
    done = {}

    def get(model):
        if model not in done:
            out = tmp_path_factory.mktemp(model)
            done[model] = out, run("--model", model, *settings(
                out, COARSE_PARTICLES if model == "particle" else ()))
        return done[model]
    return get


def timeseries(path):
    import h5py

    with h5py.File(path, "r") as f:
        return {k: np.asarray(v) for k, v in f["timeseries"].items()}


@pytest.mark.parametrize("model", ["patch", "particle"])
def test_triaxial_confines_then_loads(finished, model):
    tmp_path, res = finished(model)
    assert res.returncode == 0, res.stderr + res.stdout
    assert "(equilibrium)" in res.stdout
    pack = np.load(tmp_path / "small_seed1_packing.npz")
    x, r = pack["position"], pack["radius"]
    d = np.linalg.norm(x[:, None] - x[None], axis=2) + np.eye(r.size) * 1.0
    assert np.all(d >= r[:, None] + r[None, :])
    assert np.all(x[:, 2] >= r) and np.all(x[:, 2] + r <= H)
    assert np.all(np.hypot(x[:, 0], x[:, 1]) + r <= R)  # the mesh lies inside the circle
    assert float(pack["solid_fraction"]) == pytest.approx(
        np.sum(4 / 3 * np.pi * r**3) / (np.pi * R**2 * H), rel=1e-12)

    t = read(tmp_path / f"small_{model}_seed1.csv")
    start = int(np.argmax(t["phase"] >= 1))
    assert t["sigma_top"][start] == pytest.approx(100e3, rel=0.02)
    # the membrane's friction carries a little of the axial load
    assert t["sigma_bottom"][start] == pytest.approx(100e3, rel=0.05)
    assert np.all(t["escaped"] == 0)
    shear = t["phase"] >= 1
    h0 = t["height"][start]
    np.testing.assert_allclose(t["strain"][shear], np.log(h0 / t["height"][shear]), rtol=1e-6,
                               atol=1e-8)  # the CSV keeps 10 digits of h
    assert t["strain"][-1] >= 0.005
    assert t["sigma_d"][-1] > 5e3  # loading raises the axial stress above the cell pressure
    assert 0.8e5 < t["sigma_felt"][start] < 1.02e5
    for name in (f"small_{model}_seed1.h5", f"small_{model}_seed1.xdmf", "small.png",
                 "small_summary.csv", f"small_{model}_seed1.checkpoint.h5"):
        assert (tmp_path / name).stat().st_size > 100, name


def test_sigterm_during_loading_and_restart_give_the_uninterrupted_series(finished, tmp_path):
    reference, res = finished("patch")
    assert res.returncode == 0, res.stderr
    (tmp_path / "small_seed1_packing.npz").write_bytes(
        (reference / "small_seed1_packing.npz").read_bytes())
    cmd = [PYTHON, "-m", "ecs_dem.run.triaxial", *settings(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    for line in proc.stdout:  # the first record of the loading phase
        if line.strip().startswith("strain"):
            proc.send_signal(signal.SIGTERM)
            break
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0 and "stopped by SIGTERM" in out, out + err
    checkpoint = tmp_path / "small_patch_seed1.checkpoint.h5"
    res = run(*settings(tmp_path, [f"restart={checkpoint}"]))
    assert res.returncode == 0, res.stderr + res.stdout
    assert "restarted from" in res.stdout
    a = timeseries(reference / "small_patch_seed1.h5")
    b = timeseries(tmp_path / "small_patch_seed1.h5")
    assert sorted(a) == sorted(b) and a["step"].size == b["step"].size
    assert np.any(a["phase"] >= 1) and a["step"][-1] > 0
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_triaxial_refuses_an_unknown_case_or_model(tmp_path):
    res = run("--case", "3", "--set", f"output_dir={tmp_path}")
    assert res.returncode == 2 and "choose one of" in res.stderr
    res = run("--model", "springs", "--set", f"output_dir={tmp_path}")
    assert res.returncode == 2 and "patch or particle" in res.stderr


def test_a_run_that_breaks_down_stops_with_the_error_and_keeps_its_curves(tmp_path):
    # a membrane 125 times softer than rubber under 100 kPa stretches past max_stretch at once
    res = run(*settings(tmp_path, ["membrane_modulus=1e4", "max_stretch=1.05"]))
    assert res.returncode == 3, res.stderr[-2000:]
    assert "error: " in res.stderr and "Traceback" not in res.stderr
    assert "ghost width" in res.stderr  # names what broke
    data = read(tmp_path / "small_patch_seed1.csv")
    assert data["step"].size >= 1 and data["step"][0] == 0
    assert "the curves to the stop" in res.stdout
    # on several ranks every rank ends at the error: the report tool rewrites the curves
    (tmp_path / "small_patch_seed1.csv").unlink()
    again = subprocess.run([PYTHON, "-m", "ecs_dem.run.triaxial.report",
                            str(tmp_path / "small_patch_seed1.h5")],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert np.array_equal(read(tmp_path / "small_patch_seed1.csv")["step"], data["step"])


def test_a_config_files_case_and_model_choose_the_sample_and_the_command_line_wins(tmp_path):
    config = tmp_path / "case2.toml"
    config.write_text('case = "2"\nmodel = "particle"\n')

    def shown(*args):
        res = run("--config", str(config), *args, "--show-config")
        assert res.returncode == 0, res.stderr
        return tomllib.loads(res.stdout)  # TOML that --config reads back

    cfg = shown()
    assert (cfg["case"], cfg["model"], cfg["radius"], cfg["height"]) == (
        "2", "particle", 0.035, 0.14)
    cfg = shown("--case", "small", "--set", "model=patch")
    assert (cfg["case"], cfg["model"], cfg["radius"]) == ("small", "patch", R)
    config.write_text('case = "3"\n')
    res = run("--config", str(config), "--set", f"output_dir={tmp_path}")
    assert res.returncode == 2 and "choose one of" in res.stderr and not any(tmp_path.glob("*.h5"))


def test_bad_input_and_a_foreign_or_damaged_checkpoint_leave_the_earlier_run_as_it_was(
        finished, tmp_path):
    import shutil

    import h5py

    reference, res = finished("patch")
    assert res.returncode == 0, res.stderr
    for f in reference.iterdir():
        shutil.copy(f, tmp_path / f.name)
    h5 = tmp_path / "small_patch_seed1.h5"
    checkpoint = tmp_path / "small_patch_seed1.checkpoint.h5"
    damaged = tmp_path / "damaged.checkpoint.h5"  # an earlier step, and a field cut short
    shutil.copy(checkpoint, damaged)
    with h5py.File(damaged, "a") as f:
        f.attrs["step"] = 100
        position = f["tables/particles/position"][:]
        del f["tables/particles/position"]
        f["tables/particles/position"] = position[:-5]
    before = {p.name: p.read_bytes() for p in (h5, checkpoint)}
    assert timeseries(h5)["step"][-1] > 100
    cases = [(["max_strain=-0.1"], "'max_strain' = -0.1 is outside (0, 1)"),
             (["confining_stress=-1e5"], "'confining_stress' = -100000.0 is outside"),
             ([f"restart={damaged}"], "different lengths"),
             ([f"restart={h5}"], "cannot be read")]  # the output file, not a checkpoint
    for extra, message in cases:
        res = run(*settings(tmp_path, extra))
        assert res.returncode == 2 and message in res.stderr, res.stderr[-2000:]
        assert "Traceback" not in res.stderr
        assert {p.name: p.read_bytes() for p in (h5, checkpoint)} == before, extra
    # the seed-2 run would write its own files: refused before it writes them
    res = run(*settings(tmp_path, ["seed=2", f"restart={checkpoint}"]))
    assert res.returncode == 2, res.stderr[-2000:]
    assert "belongs to another run (seed = 1 there, 2 here)" in res.stderr
    assert not (tmp_path / "small_patch_seed2.h5").exists()
    assert not (tmp_path / "small_seed2_packing.npz").exists()  # nor prepares its sample


@pytest.mark.parametrize("key, value, shown", [
    ("prep_grow_time", 0.0, "(0, infinity)"),       # was a ZeroDivisionError after insertion
    ("prep_start_scale", 2.0, "(0, 1]"),           # was a traceback after 20 grains
    ("prep_modulus", -5.0, "(0, infinity)"),       # was 'time step dt ... (got nan)'
    ("prep_speed", -1.0, "[0, infinity]"),         # was accepted
    ("prep_relax_time", -1.0, "[0, infinity]"),    # was accepted
    ("grain_restitution", 0.0, "(0, 1]"),
    ("membrane_damping", -1.0, "[0, infinity]"),   # was refused only after the preparation
    ("membrane_poisson", 0.6, "(-1, 0.5]"),
    ("seed", -1, "[0, infinity]"),
])
def test_the_materials_and_the_preparation_are_range_checked_before_anything_runs(key, value,
                                                                                    shown):
    from ecs_dem.errors import InputError
    from helpers import load_driver

    triaxial = load_driver("triaxial")
    triaxial.check_sample(dict(triaxial.DEFAULTS))
    with pytest.raises(InputError, match=re.escape(f"config key '{key}' = {value!r} is outside "
                                                   f"{shown}")):
        triaxial.check_sample(dict(triaxial.DEFAULTS, **{key: value}))


def test_a_sample_with_no_room_at_the_start_scale_is_an_input_error():
    """More grains than the cylinder holds at prep_start_scale: the error names the keys to
    change (and exits with 2 as bad input, not with a traceback)."""
    from ecs_dem.errors import InputError
    from helpers import load_driver

    triaxial = load_driver("triaxial")
    from ecs_dem.run.triaxial.preparation import insert

    cfg = dict(triaxial.DEFAULTS, prep_start_scale=1.0, grains=5000)
    with pytest.raises(InputError, match="no room for grain .* lower it or the solid fraction"):
        insert(cfg, np.random.default_rng(1))


def test_sigterm_during_the_preparation_stops_the_run_without_a_packing(tmp_path):
    """The preparation has no checkpoint: it used to return its unfinished packing on
    SIGTERM, cache it as the sample's, and go on into the test."""
    proc = subprocess.Popen([PYTHON, "-m", "ecs_dem.run.triaxial",
                             *settings(tmp_path, ["prep_grow_time=0.2"])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith("preparation:"):  # printed just before its steps start
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "stopped by SIGTERM during the preparation: no packing written" in out
    assert "Traceback" not in err
    assert not list(tmp_path.glob("*.npz")) and not list(tmp_path.glob("*.h5"))


def test_curves_that_cannot_be_written_say_how_to_write_them_later(tmp_path, monkeypatch):
    """A full disk ends the run with an OutputError; the driver then wrote the curves into the
    same full disk and ended in a traceback from its own error handler."""
    from helpers import load_driver

    triaxial = load_driver("triaxial.driver")  # the module whose write_curves looks it up

    def no_room(h5, csv_path):
        raise OSError(28, "No space left on device", str(csv_path))

    monkeypatch.setattr(triaxial, "write_run_csv", no_room)
    lines = []
    cfg = dict(triaxial.DEFAULTS)
    triaxial.write_curves(tmp_path / "small_patch_seed1.h5", tmp_path / "small_patch_seed1.csv",
                          cfg, lines.append, "done: ")
    assert lines == ["  the curves could not be written (No space left on device): make room, "
                     "then python -m ecs_dem.run.triaxial.report "
                     f"{tmp_path / 'small_patch_seed1.h5'} --sigma-c {cfg['confining_stress']:g}"]


def test_a_damaged_packing_cache_is_prepared_again_and_a_full_disk_leaves_none(
        tmp_path, monkeypatch):
    """A cache cut short (a full disk during np.savez) stopped every later run of the sample
    with a BadZipFile traceback; the cache is now written whole or not at all."""
    from ecs_dem.comm import SerialComm
    from helpers import load_driver

    from ecs_dem.run.triaxial import preparation as prep

    made = {"position": np.zeros((2, 3)), "radius": np.ones(2), "solid_fraction": 0.6}
    calls = []
    monkeypatch.setattr(prep, "prepare", lambda cfg, comm, log: calls.append(1) or made)
    cfg = dict(load_driver("triaxial").DEFAULTS)
    path = tmp_path / "small_seed1_packing.npz"
    path.write_bytes(b"PK\x03\x04 cut short")
    lines = []
    assert prep.packing(cfg, path, SerialComm(), lines.append) is made
    assert calls == [1] and "cannot be read" in lines[0] and "preparing it again" in lines[0]
    again = prep.packing(cfg, path, SerialComm(), lines.append)  # the new cache is read
    assert calls == [1] and np.array_equal(again["radius"], made["radius"])

    def savez_on_a_full_disk(file, **arrays):
        Path(file).write_bytes(b"PK\x03\x04")  # the first bytes went out
        raise OSError(28, "No space left on device")

    path.unlink()
    monkeypatch.setattr(prep.np, "savez", savez_on_a_full_disk)
    assert prep.packing(cfg, path, SerialComm(), lines.append) is made
    assert "could not be cached" in lines[-1] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("change, message", [
    ({"grains": 2}, "2 grains fill 0.311 % of the sample: below 30 %"),  # was a ZeroDivisionError
    ({"solid_fraction": 0.2}, "fill 20 % of the sample"),
    ({"height": 0.001}, "too small for grains of radius up to 0.0027 m"),  # was high - low < 0
    ({"radius": 0.005}, "radius >= 2 radius_max"),
])
def test_a_sample_too_small_or_too_loose_for_its_grains_is_refused(change, message):
    """The fill is the grains' mean volume pi/3 (b^4 - a^4)/(b - a) (radii uniform in [a, b])
    times their count over the cylinder's; derived here for grains=2 in the small case:
    2 * pi/3 * (2.7^4 - 2.3^4) mm^4 / 0.4 mm / (pi 15^2 mm^2 * 60 mm) = 0.311 %."""
    from ecs_dem.errors import InputError
    from helpers import load_driver

    triaxial = load_driver("triaxial")
    cfg = dict(triaxial.DEFAULTS, **change)
    with pytest.raises(InputError, match=re.escape(message)):
        triaxial.check_sample(cfg)
    a, b = 2.3, 2.7
    assert 2 * math.pi / 3 * (b**4 - a**4) / (b - a) / (math.pi * 15**2 * 60) == pytest.approx(
        0.003106, rel=1e-4)


@pytest.mark.parametrize("model, change, message", [
    ("patch", {"patch_edge": 1e-9}, "use a larger edge_length"),  # was killed by the kernel
    ("particle", {"particle_edge": 1e-9}, "use a larger edge_length"),
    ("patch", {"patch_edge": 0.05}, "a ring needs at least 3 segments"),  # was after the prep
])
def test_a_membrane_mesh_too_fine_or_too_coarse_is_refused_before_the_preparation(
        model, change, message):
    from ecs_dem.errors import InputError
    from helpers import load_driver

    triaxial = load_driver("triaxial")
    cfg = dict(triaxial.DEFAULTS, model=model, **change)
    with pytest.raises(InputError, match=re.escape(message)):
        triaxial.check_sample(cfg)
