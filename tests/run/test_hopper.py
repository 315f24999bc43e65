"""run/hopper.py: the generated cone is a clean open surface of the right area; Beverloo's fit
recovers C and k from exact data; a short discharge flows steadily, loses no grain, and a wider
orifice passes more."""
import math
import warnings

import numpy as np
import pytest

from helpers import load_driver

from ecs_dem.components.mesh.validation import boundary_loops, validate_mesh


@pytest.fixture(scope="module")
def hopper():
    return load_driver("hopper")


@pytest.fixture(autouse=True)
def full_speed(monkeypatch):
    from ecs_dem import declaration_guard

    monkeypatch.setattr(declaration_guard, "DEFAULT", False)  # 10^4 steps


def test_hopper_mesh_is_an_open_cone_and_bin_of_the_right_area(hopper):
    r0, r1, theta, h = 0.006, 0.03, math.radians(35.0), 0.02
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # consistent winding as generated
        mesh = validate_mesh(hopper.hopper_mesh(r0, r1, theta, 2e-3, h))
    loops = sorted(len(loop) for loop in boundary_loops(mesh))
    assert loops == [round(2 * math.pi * r0 / 2e-3), round(2 * math.pi * r1 / 2e-3)]
    z = mesh.vertices[:, 2]
    assert z.min() == 0.0 and z.max() == pytest.approx((r1 - r0) / math.tan(theta) + h)
    slant = (r1 - r0) / math.sin(theta)
    area = math.pi * (r0 + r1) * slant + 2 * math.pi * r1 * h   # the smooth surfaces
    assert mesh.areas.sum() == pytest.approx(area, rel=5e-3)     # polygons: a little less
    assert mesh.areas.sum() < area


def test_ring_band_joins_rings_of_any_counts(hopper):
    for nl, nu in ((7, 7), (5, 11), (13, 4)):
        la = 2 * math.pi * np.arange(nl) / nl + 0.3
        ua = 2 * math.pi * (np.arange(nu) + 0.5) / nu
        t = hopper.ring_band(np.arange(nl), la, np.arange(nu) + nl, ua)
        assert len(t) == nl + nu
        # a cylinder band: every edge of either ring is used exactly once
        edges = {tuple(sorted(e)) for tri in t for e in ((tri[0], tri[1]), (tri[1], tri[2]),
                                                        (tri[2], tri[0]))}
        for k in range(nl):
            assert tuple(sorted((k, (k + 1) % nl))) in edges
        for k in range(nu):
            assert tuple(sorted((nl + k, nl + (k + 1) % nu))) in edges


def test_beverloo_fit_recovers_c_and_k(hopper):
    rho, g, d, C, k = 1500.0, 9.81, 3e-3, 0.58, 1.6
    D = np.array([0.012, 0.016, 0.02, 0.026])
    W = C * rho * math.sqrt(g) * (D - k * d) ** 2.5
    assert hopper.beverloo_fit(D, W, rho, g, d) == pytest.approx((C, k), rel=1e-10)


SHORT = dict(particles=500, bin_height=0.0, top_radius=0.028, settle_time=0.15,
             discharge_time=0.6, record_every=25)


def test_discharge_is_steady_conserves_mass_and_grows_with_the_orifice(hopper):
    cfg = dict(hopper.DEFAULTS, **SHORT, diameters="0.016,0.022")
    bed = hopper.settle(cfg)
    mass = float(np.sum(cfg["density"] * 4 / 3 * math.pi * bed[1] ** 3))
    rho_b = hopper.bulk_density(cfg, 0.016, bed[0], bed[1])
    assert 0.5 < rho_b / cfg["density"] < 0.68   # a random packing of spheres
    flows = []
    for D in (0.016, 0.022):
        r = hopper.discharge(cfg, bed, D)
        assert r["mass"] == pytest.approx(mass, rel=1e-12)
        assert r["mass_end"] == pytest.approx(mass, rel=1e-12)   # no grain lost
        assert r["grains_end"] == len(bed[1])
        assert r["flow"] > 0
        # steady: the two halves of the window agree
        assert r["flow_first"] == pytest.approx(r["flow_second"], rel=0.25)
        # the discharged mass never decreases (grains do not climb back)
        assert np.all(np.diff(r["discharged"]) >= -1e-12 * mass)
        flows.append(r["flow"])
    # Beverloo's exponent: W grows much faster than D (with k d > 0, faster than D^2.5)
    assert flows[1] / flows[0] > (0.022 / 0.016) ** 2.5


@pytest.mark.parametrize("key, value, message", [
    ("diameters", "0.02,wide", "give orifice diameters in m"),
    ("diameters", "0.005", "the hopper would jam"),
    ("diameters", "0.07", "must be smaller than the top"),
    ("particles", "100000", "the hopper holds at most"),
])
def test_bad_input_is_refused_with_the_fix(hopper, tmp_path, capsys, monkeypatch, key, value,
                                           message):
    monkeypatch.chdir(tmp_path)
    assert hopper.main(["--set", f"{key}={value}"]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written
