"""run/drum.py: a clamped circular membrane under pressure against Hencky's membrane solution.

The driver's own Foeppl-Hencky solver must give the published coefficient for nu = 0.3
(w0 = 0.653 a (q a / E h)^(1/3); Hencky 1915 as corrected by Fichter, NASA TP-3658, 1997),
and the simulated centre deflection (bending off, strains of about 2 %) must lie within 3 %
of the solution for nu = 1/3.
"""
import importlib.util
import sys

import pytest

from helpers import REPO


def load_drum():
    spec = importlib.util.spec_from_file_location("drum", REPO / "run" / "drum.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's cache finds the module of a cached kernel by name
    spec.loader.exec_module(module)
    return module


def test_hencky_coefficient_is_the_published_value():
    drum = load_drum()
    c, n0 = drum.hencky_coefficient(0.3)
    assert c == pytest.approx(0.653, abs=1.5e-3)
    assert n0 == pytest.approx(0.431, abs=2e-3)  # centre stress coefficient (Fichter: 0.4310)
    assert drum.hencky_coefficient(1.0 / 3.0)[0] < c  # a stiffer Poisson ratio, a smaller dent


def test_drum_centre_deflection_matches_hencky(tmp_path, monkeypatch):
    from ecs_dem import declaration_guard

    monkeypatch.setattr(declaration_guard, "DEFAULT", False)  # 40,000 steps: at full speed
    drum = load_drum()
    cfg = dict(drum.DEFAULTS, output=str(tmp_path / "drum.h5"), snapshot_every=0)
    world = drum.build_world(cfg)
    world.run(int(round(cfg["duration"] / world.dt)))
    w0 = drum.centre_deflection(world)
    c, _ = drum.hencky_coefficient(1.0 / 3.0)
    a = cfg["radius"]
    expected = c * a * (cfg["pressure"] * a / (cfg["youngs_modulus"] * cfg["thickness"])) ** (1 / 3)
    assert expected > 0.1 * a  # a large deflection: the membrane regime, not small plates
    assert w0 == pytest.approx(expected, rel=0.03)


def test_a_restarted_drum_keeps_what_it_wrote_before_the_checkpoint(tmp_path):
    """A restart continues the driver's HDF5 file (ecs_dem.runner.open_output): the snapshots
    up to the checkpoint stay, the continued run adds the later ones once each."""
    import h5py

    drum = load_drum()
    out, ck = tmp_path / "drum.h5", tmp_path / "drum.checkpoint.h5"
    common = ["--set", f"output={out}", "--set", f"checkpoint={ck}", "--set", "snapshot_every=20",
              "--set", "progress=false"]
    dt = drum.build_world(dict(drum.DEFAULTS, output=str(out))).dt
    assert drum.main([*common, "--set", f"duration={100 * dt}"]) == 0
    assert drum.main([*common, "--set", f"duration={200 * dt}", "--set", f"restart={ck}"]) == 0
    with h5py.File(out, "r") as f:
        assert sorted(int(k) for k in f["snapshots"]) == list(range(0, 201, 20))
