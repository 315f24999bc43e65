"""run/spray_drum.py: a flat-fan nozzle sprays a turning drum; the grains' liquid grows at the
nozzle's rate minus what the drum catches, the balance holds, the files are written."""
import csv
import math

import numpy as np
import pytest

from helpers import load_driver


@pytest.fixture(scope="module")
def sd():
    return load_driver("spray_drum")


@pytest.fixture(autouse=True)
def full_speed(monkeypatch):
    from ecs_dem import declaration_guard

    monkeypatch.setattr(declaration_guard, "DEFAULT", False)  # thousands of steps


SHORT = dict(particles=150, settle_time=0.1, spray_time=0.1, samples=4, histograms=2)


def test_driver_sprays_the_bed_and_conserves_liquid(sd, tmp_path):
    out = tmp_path / "out"
    argv = [a for k, v in SHORT.items() for a in ("--set", f"{k}={v}")]
    assert sd.main(argv + ["--set", f"output={out}"]) == 0
    with open(out / "spray_drum.csv") as fh:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]
    assert len(rows) == SHORT["samples"]
    cfg = sd.DEFAULTS
    droplet = 4 / 3 * math.pi * cfg["droplet_radius"] ** 3
    for r in rows:
        # the nozzle's rate: whole droplets emitted by the end of the sample's step
        assert abs(r["inserted_m3"] - cfg["volume_rate"] * r["time_s"]) <= 1.01 * droplet
        assert abs(r["imbalance_m3"]) <= 1e-12 * r["inserted_m3"]
        assert r["on_grains_m3"] == pytest.approx(r["films_m3"] + r["bridges_m3"], rel=1e-12)
        assert r["mean_content_m3"] == pytest.approx(r["on_grains_m3"] / SHORT["particles"],
                                                     rel=1e-12)
    on = [r["on_grains_m3"] for r in rows]
    assert all(b > a for a, b in zip(on[1:], on[2:])) and on[-1] > 0.3 * rows[-1]["inserted_m3"]
    g = sd.growth_check([{"time": r["time_s"], "on_grains": r["on_grains_m3"],
                          "lost_at_walls": r["lost_m3"], "airborne": r["airborne_m3"],
                          "inserted": r["inserted_m3"]} for r in rows], cfg["volume_rate"])
    assert 0 < g["lost_fraction"] < 0.7
    assert g["slope"] == pytest.approx(g["expected"], rel=0.05)
    with open(out / "spray_drum_histograms.csv") as fh:
        hist = list(csv.reader(fh))
    assert len(hist) == cfg["bins"] + 1 and len(hist[0]) == 2 + SHORT["histograms"]
    assert sum(int(h[-1]) for h in hist[1:]) == SHORT["particles"]
    assert (out / "spray_drum.png").stat().st_size > 0


@pytest.mark.parametrize("key, value, message", [
    ("nozzle_height", "0.05", "outside the drum"),
    ("histograms", "20", "exceeds samples"),
    ("droplet_radius", "0", "droplet_radius"),
])
def test_bad_input_is_refused_with_the_fix(sd, tmp_path, capsys, monkeypatch, key, value,
                                           message):
    monkeypatch.chdir(tmp_path)
    assert sd.main(["--set", f"{key}={value}", "--set", "settle_time=0.001"]) == 2
    assert message in capsys.readouterr().err
