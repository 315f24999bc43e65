"""End to end: run/compression.py (Brodu et al. 2015, Sect. V) on a small packing.

A handful of grains, two fast cycles: the driver prepares the packing, runs
gamma = 0 and 1.19, and writes its CSV files and plots. Checked: the files
and their columns, that the top-plate force grows with strain on loading and
lies above the unloading curve on average (hysteresis > 0), that MC-DEM
(gamma = 1.19) is stiffer than independent contacts at maximum strain, the
ratio column, and that bad input is refused with a message.
"""
import csv
import math
import subprocess

import numpy as np
import pytest

from helpers import PYTHON, REPO

SMALL = ["particles=60", "box_width=0.05", "cycles=2", "discard=1", "plate_speed=0.02", "levels=5",
         "samples_per_level=2", "initial_z=5", "gammas=0,1.19"]


def run(*settings, timeout=300):
    args = [PYTHON, str(REPO / "run" / "compression.py")]
    for s in settings:
        args += ["--set", s]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def read(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_compression_driver_writes_curves_and_mc_dem_is_stiffer(tmp_path):
    res = run(*SMALL, f"output={tmp_path}")
    assert res.returncode == 0, res.stderr
    for name in ("top_force.csv", "contacts.csv", "force_distribution.csv", "summary.csv",
                 "samples_gamma0.csv", "samples_gamma1.19.csv", "top_force.png", "contacts.png",
                 "force_distribution.png"):
        assert (tmp_path / name).stat().st_size > 100, name
    summary = {float(r["gamma"]): r for r in read(tmp_path / "summary.csv")}
    top0 = float(summary[0.0]["top_force_at_max_strain_N"])
    top119 = float(summary[1.19]["top_force_at_max_strain_N"])
    assert top119 > 1.2 * top0 > 0
    assert float(summary[0.0]["ratio_to_gamma1.19"]) == pytest.approx(top0 / top119, rel=1e-5)
    assert int(summary[1.19]["late_contacts"]) == 0
    curves = read(tmp_path / "top_force.csv")
    for g in ("0", "1.19"):
        load = np.array([float(r[f"top_force_N_gamma{g}_loading"]) for r in curves])
        unload = np.array([float(r[f"top_force_N_gamma{g}_unloading"]) for r in curves])
        assert np.all(np.diff(load) > 0), load
        assert np.mean(load - unload) > 0
        assert float(summary[float(g)]["hysteresis"]) > 0
    z = read(tmp_path / "contacts.csv")
    assert float(z[-1]["Z_all_gamma1.19_loading"]) > float(z[0]["Z_all_gamma1.19_loading"]) > 3
    p = read(tmp_path / "force_distribution.csv")
    width = float(p[1]["f_over_mean"]) - float(p[0]["f_over_mean"])
    assert sum(float(r["P_gamma0_max"]) for r in p) * width > 0.99
    assert "gamma 1.19" in res.stdout and "top force" in res.stdout


def test_compression_refuses_bad_input():
    res = run("gammas=0,-1")
    assert res.returncode == 2 and "gammas must be one or more numbers >= 0" in res.stderr
    res = run("cycles=2", "discard=2")
    assert res.returncode == 2 and "need cycles > discard" in res.stderr


def test_the_force_distribution_is_normalised_and_undefined_without_forces():
    from helpers import load_driver

    module = load_driver("compression")
    bins = np.linspace(0.0, 4.0, 9)
    forces = [np.array([1.0, 2.0, 3.0]), np.zeros(0), np.array([0.5, 1.5])]
    hist = module.distribution(forces, bins)
    assert np.sum(hist * np.diff(bins)) == pytest.approx(1.0)  # every f/<f> lies in [0, 4)
    # no contacts at the sampled levels: undefined, not a crash after half the files
    assert np.all(np.isnan(module.distribution([np.zeros(0), np.zeros(0)], bins)))


@pytest.mark.parametrize("key, value", [("youngs_modulus", -1.0), ("density", 0.0), ("tau", -1.0),
                                        ("touch_force", 0.0), ("box_width", float("nan")),
                                        ("friction", -1.0), ("dt_fraction", 0.0),
                                        ("skin_fraction", 0.0), ("lift_strain", math.inf),
                                        ("plate_speed", math.inf), ("particles", 0),
                                        ("settle_gravity", math.inf), ("levels", 1),
                                        ("prepare_restitution", 0.0),
                                        ("prepare_friction", math.nan), ("box_depth", -0.01),
                                        ("weight_density", -1.0), ("gravity", math.inf),
                                        ("piston_travel", -0.01), ("poisson_ratio", 0.51),
                                        ("mc_iterations", -1)])
def test_the_material_and_thresholds_are_range_checked_by_name(key, value):
    """A negative modulus used to surface as 'dt must be positive (got nan)', a negative
    friction only after the preparation, and skin_fraction = 0 as a ZeroDivisionError after
    the whole run; an infinite lift_strain or plate_speed as an OverflowError or a
    non-finite state."""
    from ecs_dem.errors import InputError
    from helpers import load_driver

    compression = load_driver("compression")
    compression.check_config(dict(compression.DEFAULTS))
    with pytest.raises(InputError, match=f"config key '{key}' = "):
        compression.check_config(dict(compression.DEFAULTS, **{key: value}))


def test_results_that_cannot_be_written_are_an_error_not_a_traceback(tmp_path, capsys,
                                                                     monkeypatch):
    """A full disk after the last gamma was an OSError traceback."""
    from helpers import load_driver

    compression = load_driver("compression")

    def no_room(cfg, results, out):
        raise OSError(28, "No space left on device", str(out / "top_force.csv"))

    monkeypatch.setattr(compression, "write_outputs", no_room)
    argv = [x for a in (*SMALL, "gammas=0", "cycles=1", "discard=0", "levels=2", "quiet=true",
                        f"output={tmp_path}")
            for x in ("--set", a)]
    assert compression.main(argv) == 3
    assert (f"error: cannot write {tmp_path / 'top_force.csv'}: No space left on device"
            in capsys.readouterr().err)


def test_the_piston_travel_sets_the_lift_above_h0_and_a_short_one_is_refused():
    """The experiment's stroke: 27.5 mm from the highest position to 13.4 % strain of H0."""
    from ecs_dem.errors import InputError
    from helpers import load_driver

    compression = load_driver("compression")
    cfg = dict(compression.DEFAULTS, piston_travel=0.0275)
    h0 = 0.171
    lift = compression.lift_strain(cfg, h0)
    assert (lift + cfg["max_strain"]) * h0 == pytest.approx(0.0275, rel=1e-12)
    assert compression.lift_strain(dict(cfg, piston_travel=0.0), h0) == cfg["lift_strain"]
    with pytest.raises(InputError, match="piston_travel 20 mm is shorter than the compression"):
        compression.lift_strain(dict(cfg, piston_travel=0.02), h0)


def test_the_experiments_sample_weighs_on_the_floor_throughout(tmp_path):
    """weight_density > 0: gravity acts on the grains in the cycles too, with the buoyant
    weight N (4/3) pi r^3 weight_density g; a rectangular container (box_depth). Averaged over
    every sample, floor force minus top force is that weight (dynamics and wall friction:
    within 25 %); without it (the density-matched default) they balance."""
    from helpers import load_driver

    compression = load_driver("compression")
    settings = [*SMALL, "gammas=0", "box_depth=0.06", "weight_density=300", "poisson_ratio=0.5",
                "piston_travel=0.012", f"output={tmp_path}", "plots=false"]
    res = run(*settings)
    assert res.returncode == 0, res.stderr
    assert "piston travel 12 mm" in res.stdout
    rows = read(tmp_path / "samples_gamma0.csv")
    difference = np.mean([float(r["bottom_force"]) - float(r["top_force"]) for r in rows])
    cfg = dict(compression.DEFAULTS, weight_density=300.0)
    # the grains' volumes: the driver's diameters (same seed, same draw)
    rng = np.random.default_rng(cfg["seed"])
    d = cfg["diameter"] * rng.uniform(1 - cfg["polydispersity"], 1 + cfg["polydispersity"], 60)
    weight = np.sum(np.pi / 6 * d**3) * 300.0 * cfg["gravity"]
    assert difference == pytest.approx(weight, rel=0.25)
