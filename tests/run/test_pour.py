"""run/pour.py's input checks (the pour itself runs in tests/engine/test_soft_kill.py and the
MPI scenarios)."""
import shutil
import subprocess

import pytest

from helpers import PYTHON, REPO, load_driver


def test_an_output_that_names_no_file_is_an_input_error(tmp_path, capsys, monkeypatch):
    """output= made the checkpoint's name from an empty path: a ValueError traceback."""
    monkeypatch.chdir(tmp_path)
    pour = load_driver("pour")
    for output in ("", "."):
        assert pour.main(["--set", f"output={output}"]) == 2
        assert "is a directory: choose a file name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="needs Debian's MPICH")
def test_on_two_ranks_a_bad_key_is_printed_once_and_a_missing_file_by_each_rank(tmp_path):
    def stderr(*args):
        res = subprocess.run(["mpiexec.mpich", "-n", "2", PYTHON, str(REPO / "run" / "pour.py"),
                              *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert res.returncode == 2, res.stderr
        return res.stderr  # the ranks' lines may run together: count the messages

    assert stderr("--set", "bogus=1").count("error: unknown config key 'bogus'") == 1
    assert stderr("--config", "missing.toml").count(
        "error: config file missing.toml does not exist") == 2


def _config(pour, **values):
    cfg = dict(pour.DEFAULTS)
    cfg.update(values)
    return cfg


def test_default_radii_stay_uniform_from_the_same_random_stream():
    """Without a psd the pour draws lattice positions, then uniform radii, from the seed."""
    import numpy as np

    pour = load_driver("pour")
    cfg = _config(pour, particles=300)
    world = pour.build_world(cfg)
    rng = np.random.default_rng(cfg["seed"])
    pos = pour.lattice_positions(300, cfg["box_width"], 2.2 * cfg["radius_max"], rng)
    radius = rng.uniform(cfg["radius_min"], cfg["radius_max"], 300)
    p = world.particles
    np.testing.assert_array_equal(p.position[:300], pos)
    np.testing.assert_array_equal(p.radius[:300], radius)


def test_a_volume_lognormal_poured_from_random_insertion(tmp_path):
    import csv

    import numpy as np

    from ecs_dem.components.insertion.check import compare

    pour = load_driver("pour")
    out = tmp_path / "bed.h5"
    args = ["psd=lognormal", "psd_mean=4e-3", "psd_spread=0.2", "psd_basis=volume",
            "insertion=random", "particles=600", "duration=0.002", f"output={out}", "quiet=true",
            "snapshot_every=0"]
    assert pour.main([a for kv in args for a in ("--set", kv)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "bed_psd.csv")))
    assert float(rows[-1]["inserted_volume"]) == 1.0
    cfg = _config(pour, psd="lognormal", psd_mean=4e-3, psd_spread=0.2, psd_basis="volume",
                  insertion="random", particles=600)
    world = pour.build_world(cfg)
    p = world.particles
    x, r = p.position[:600], p.radius[:600]
    assert r.min() >= cfg["radius_min"] and r.max() <= cfg["radius_max"]
    gaps = [np.min(np.linalg.norm(x[i + 1:] - x[i], axis=1) - r[i + 1:] - r[i])
            for i in range(599)]
    assert min(gaps) >= 0  # no overlaps at the start
    psd = pour.size_distribution(cfg)
    assert compare(psd, 2 * r, "volume")["ok"] and compare(psd, 2 * r, "number")["ok"]


@pytest.mark.parametrize("values, message", [
    (["psd=gamma"], "use uniform, normal, lognormal"),
    (["psd=uniform", "psd_basis=weight"], "basis 'weight' is unknown"),
    (["insertion=poisson"], "use lattice or random"),
    (["insertion=random", "insert_fraction=0.4", "particles=4000", "box_width=0.02"],
     "lower insert_fraction"),
])
def test_bad_psd_settings_name_the_fix(values, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pour = load_driver("pour")
    args = [a for kv in values + [f"output={tmp_path / 'x.h5'}"] for a in ("--set", kv)]
    assert pour.main(args) == 2
    assert message in capsys.readouterr().err
