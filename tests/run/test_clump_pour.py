"""run/clump_pour.py: the packing fraction on a grid and the angle of a fitted surface against
values derived here, a short pour of clumps end to end, and bad shapes refused."""
import csv
import math

import numpy as np
import pytest

from helpers import load_driver

pour = load_driver("clump_pour")


def test_packing_fraction_of_spheres_in_a_box():
    """Two disjoint spheres and an overlapping pair (a lens counted once) in a unit box."""
    x = np.array([[0.25, 0.25, 0.25], [0.75, 0.75, 0.75], [0.75, 0.25, 0.25], [0.85, 0.25, 0.25]])
    r = np.array([0.2, 0.2, 0.1, 0.1])
    d = 0.1  # lens of two spheres of radius a at distance d: pi (4a + d)(2a - d)^2 / 12
    lens = math.pi * (4 * 0.1 + d) * (2 * 0.1 - d) ** 2 / 12
    exact = 2 * 4 / 3 * math.pi * 0.2**3 + 2 * 4 / 3 * math.pi * 0.1**3 - lens
    phi = pour.packing_fraction(x, r, np.zeros(3), np.ones(3))
    assert phi == pytest.approx(exact, rel=0.01)


def test_repose_angle_of_a_straight_slope():
    centre = np.linspace(0.0, 0.1, 41)
    wall = 0.03
    height = np.clip(wall - math.tan(math.radians(27.0)) * (centre - 0.01), 0.0, wall)
    angle, _ = pour.repose_angle(centre, height, wall)
    assert angle == pytest.approx(27.0, abs=1e-9)
    assert math.isnan(pour.repose_angle(centre, np.zeros_like(centre), wall)[0])


def test_a_short_pour_of_clumps(tmp_path):
    out = tmp_path / "pour.h5"
    short = ["grains=120", "box_width=0.02", "insert_fraction=0.3", "dt_fraction=0.4",
             "settle_time=0.22", "release_time=0.1", "quiet=true", "snapshot_every=2000",
             f"output={out}"]
    status = pour.main([word for s in short for word in ("--set", s)])
    assert status == 0
    with open(tmp_path / "pour_summary.csv") as f:
        row = next(csv.DictReader(f))
    assert 0.35 < float(row["packing_fraction"]) < 0.7
    angle = float(row["angle_of_repose (deg)"])
    assert 5 < angle < 60
    profile = np.loadtxt(tmp_path / "pour_profile.csv", delimiter=",", skiprows=1)
    assert profile[0, 1] > 0 and profile[-1, 1] == 0.0  # the grains flowed out, not to the end
    assert (tmp_path / "pour.png").stat().st_size > 1000
    import h5py
    with h5py.File(out) as f:
        last = f["snapshots"][sorted(f["snapshots"])[-1]]
        assert last["bodies"]["position"].shape[0] == 120
        assert np.all(last["body"][:] >= 0)


def test_unknown_shapes_are_refused(capsys, tmp_path):
    assert pour.main(["--set", "shapes=dimer,cube", "--set", f"output={tmp_path / 'x.h5'}"]) == 2
    assert "'cube' is not sphere nor a library shape" in capsys.readouterr().err
