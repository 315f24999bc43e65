"""run/wet_pile.py: a collapsing column of wet grains stands steeper than a dry one; the flank
fit reads the angle of a known heap; bad input is refused."""
import csv
import math

import numpy as np
import pytest

from helpers import load_driver


@pytest.fixture(scope="module")
def pile():
    return load_driver("wet_pile")


@pytest.fixture(autouse=True)
def full_speed(monkeypatch):
    from ecs_dem import declaration_guard

    monkeypatch.setattr(declaration_guard, "DEFAULT", False)  # thousands of steps


def test_flank_angles_of_a_triangular_heap(pile):
    rng = np.random.default_rng(2)
    r = 1e-3
    x = rng.uniform(-0.05, 0.05, 20000)
    height = np.maximum(0.02 - math.tan(math.radians(25.0)) * np.abs(x), 0.0)
    top = 2 * r + height * rng.uniform(0.0, 1.0, x.size)
    x[:400] = np.linspace(-0.05, 0.05, 400)  # the surface itself in every bin
    top[:400] = 2 * r + np.maximum(0.02 - math.tan(math.radians(25.0)) * np.abs(x[:400]), 0)
    left, right = pile.flank_angles(x, top, r, 0.15, 0.8)
    assert left == pytest.approx(25.0, abs=0.3) and right == pytest.approx(25.0, abs=0.3)


def test_wet_heap_stands_steeper_and_keeps_its_liquid(pile, tmp_path):
    out = tmp_path / "pile"
    argv = ["--set", "particles=300", "--set", "duration=0.5", "--set", "contents=0,0.01",
            "--set", f"output={out}"]
    assert pile.main(argv) == 0
    with open(f"{out}.csv") as fh:
        dry, wet = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]
    assert dry["bridges"] == 0 and wet["bridges"] > 100
    assert 10.0 < dry["angle_deg"] < wet["angle_deg"] - 3.0
    assert abs(wet["imbalance_m3"]) <= 1e-12 * wet["liquid_m3"]
    assert wet["kinetic_energy_per_m_g_r"] < 0.01  # at rest
    assert (tmp_path / "pile.png").stat().st_size > 0


@pytest.mark.parametrize("key, value, message", [
    ("contents", "0,-0.1", "give liquid contents"),
    ("fit_low", "0.9", "need fit_low < fit_high"),
    ("contact_angle", "95", "contact_angle"),
])
def test_bad_input_is_refused_with_the_fix(pile, tmp_path, capsys, monkeypatch, key, value,
                                           message):
    monkeypatch.chdir(tmp_path)
    assert pile.main(["--set", f"{key}={value}", "--set", "duration=0.001"]) == 2
    assert message in capsys.readouterr().err
