"""run/friction.py, the sliding test of Goetz & Poeschel Sect. 3.2, on kinematic and free sheets.

A grain pressed onto fixed patches and dragged at constant speed must feel a constant normal
force (the load) and a constant friction force mu F_n (mu the mean of the two species'
coefficients), to round-off, along a mesh edge, along a row of vertices and obliquely. The
same grain on vertex spheres (MSS_particle) rides over bumps: its height and forces oscillate;
on a free sheet of vertex spheres it still feels mu F_n on average (the vertices do not roll).
"""
import importlib.util
import sys

import pytest

from helpers import REPO


@pytest.fixture(scope="module")
def friction():
    spec = importlib.util.spec_from_file_location("friction", REPO / "run" / "friction.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def full_speed(monkeypatch):
    from ecs_dem import declaration_guard

    monkeypatch.setattr(declaration_guard, "DEFAULT", False)  # 10^5 steps per case


@pytest.mark.parametrize("path", ["edge", "vertices", "oblique"])
def test_grain_slides_on_patches_at_constant_forces(friction, path):
    cfg = dict(friction.DEFAULTS, length=0.002, run_in=0.001, settle=0.02, sheet=0.012)
    r = friction.run_case(cfg, "patch", "kinematic", path)
    assert r["fn_mean"] == pytest.approx(cfg["load"], rel=1e-12)
    assert r["fn_rsd"] < 1e-9 and r["ft_rsd"] < 1e-9
    assert r["ratio"] == pytest.approx(1.0, abs=1e-9)
    assert len(r["rows"]) > 100


def test_grain_on_vertex_spheres_rides_over_bumps(friction):
    cfg = dict(friction.DEFAULTS, length=0.002, run_in=0.001, settle=0.02, sheet=0.012)
    r = friction.run_case(cfg, "particle", "kinematic", "edge")
    assert r["height_amplitude"] > 1e-6  # m: the spheres' bumps, not round-off
    assert r["ft_rsd"] > 1e-3


def test_grain_on_a_free_vertex_sphere_sheet_feels_the_membrane_friction(friction):
    """The free sheet's vertices must not roll under the grain like ball bearings (they have no
    rotational freedom): sliding gives F_t = mu F_n on average over the bumps, where spinning
    vertex spheres gave F_t / (mu F_n) = 0.004."""
    cfg = dict(friction.DEFAULTS, sheet=0.008, settle=0.003, run_in=0.0005, length=0.001,
               samples=100)
    r = friction.run_case(cfg, "particle", "free", "edge")
    assert r["fn_mean"] == pytest.approx(cfg["load"], rel=0.1)
    assert 0.5 < r["ratio"] < 1.5
