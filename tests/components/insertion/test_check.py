"""The PSD check (components/insertion/check.py): CSV and plot of inserted against requested,
the Kolmogorov statistic, and the command line."""
import csv
import math

import numpy as np
import pytest

from ecs_dem.components.insertion.check import (
    KS_MEAN, compare, kolmogorov_survival, main, write_check)
from ecs_dem.components.insertion.psd import uniform


def test_kolmogorov_distribution_values():
    # P(sqrt(n) D > 1.3581) = 5 %, > 1.6276 = 1 % (the tabulated critical values)
    assert kolmogorov_survival(1.3581) == pytest.approx(0.05, abs=2e-4)
    assert kolmogorov_survival(1.6276) == pytest.approx(0.01, abs=1e-4)
    assert KS_MEAN == pytest.approx(0.8687, abs=1e-4)


def test_compare_counts_the_exact_distance():
    psd = uniform(1e-3, 2e-3)
    # two grains at the quartiles: F jumps to 1/2 at 1.25 mm, where Q = 1/4
    st = compare(psd, [1.25e-3, 1.75e-3])
    assert st["D"] == pytest.approx(0.25) and st["n"] == pytest.approx(2)
    # by volume the weights are d^3: n_eff = (w1 + w2)^2 / (w1^2 + w2^2)
    w = np.array([1.25, 1.75]) ** 3
    assert compare(psd, [1.25e-3, 1.75e-3], "volume")["n"] == pytest.approx(
        w.sum() ** 2 / np.sum(w * w))


def test_write_check_files(tmp_path):
    psd = uniform(1e-3, 2e-3, "volume")
    d = psd.sample(2000, np.random.default_rng(1))
    stats = write_check(tmp_path / "out", psd, d)
    assert stats["number"]["ok"] and stats["volume"]["ok"]
    rows = list(csv.DictReader(open(tmp_path / "out.csv")))
    assert len(rows) == 2000 + 2
    last = rows[-1]
    assert float(last["inserted_number"]) == pytest.approx(1.0)
    assert float(last["requested_volume"]) == pytest.approx(1.0)
    mid = min(rows, key=lambda r: abs(float(r["diameter"]) - 1.5e-3))
    x = float(mid["diameter"])
    assert float(mid["requested_volume"]) == pytest.approx((x - 1e-3) / 1e-3, rel=1e-7)
    assert abs(float(mid["inserted_volume"]) - float(mid["requested_volume"])) < 0.05
    assert (tmp_path / "out.png").stat().st_size > 10000


def test_command_line(tmp_path, capsys):
    stem = tmp_path / "cli"
    assert main(["--psd", "uniform", "--d-min", "1e-3", "--d-max", "2e-3", "--count", "500",
                 "--out", str(stem)]) == 0
    assert "matches" in capsys.readouterr().out and stem.with_suffix(".png").exists()
    assert main(["--psd", "weibull", "--out", str(stem)]) == 2
    assert "use uniform, normal, lognormal" in capsys.readouterr().err
