"""run/drum.py: a clamped circular membrane under pressure against Hencky's membrane solution.

The driver's own Foeppl-Hencky solver must give the published coefficient for nu = 0.3
(w0 = 0.653 a (q a / E h)^(1/3); Hencky 1915 as corrected by Fichter, NASA TP-3658, 1997),
and the simulated centre deflection (bending off, strains of about 2 %) must lie within 3 %
of the solution for nu = 1/3.
"""
import pytest

from helpers import load_driver


def load_drum():
    return load_driver("drum")


def drum_in(tmp_path):
    """(the driver, its output and checkpoint paths in tmp_path, the --set arguments that
    choose them with a snapshot every 20 steps, the time step)."""
    drum = load_drum()
    out, ck = tmp_path / "drum.h5", tmp_path / "drum.checkpoint.h5"
    common = ["--set", f"output={out}", "--set", f"checkpoint={ck}", "--set", "snapshot_every=20",
              "--set", "progress=false"]
    return drum, out, ck, common, drum.build_world(dict(drum.DEFAULTS, output=str(out))).dt


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

    drum, out, ck, common, dt = drum_in(tmp_path)
    assert drum.main([*common, "--set", f"duration={100 * dt}"]) == 0
    assert drum.main([*common, "--set", f"duration={200 * dt}", "--set", f"restart={ck}"]) == 0
    with h5py.File(out, "r") as f:
        assert sorted(int(k) for k in f["snapshots"]) == list(range(0, 201, 20))


def test_bad_input_and_another_drums_checkpoint_leave_the_earlier_run_as_it_was(tmp_path, capsys):
    """Refused before anything is written: values out of range (a run of no length used to
    replace the earlier files with a step-0 run), a checkpoint of another drum (its
    pressure differs: RANGES and IDENTITY in run/drum.py)."""
    drum, out, ck, common, dt = drum_in(tmp_path)
    assert drum.main([*common, "--set", f"duration={40 * dt}"]) == 0
    before = {p: p.read_bytes() for p in (out, ck)}
    for bad, message in ((["duration=0"], "'duration' = 0.0 is outside (0, infinity)"),
                         (["pressure=nan"], "'pressure' = nan is outside"),
                         (["drag=-20"], "'drag' = -20.0 is outside"),
                         ([f"duration={80 * dt}", "pressure=60", f"restart={ck}"],
                          "belongs to another run (pressure = 90.0 there, 60.0 here)")):
        args = list(common)
        for b in bad:
            args += ["--set", b]
        capsys.readouterr()
        assert drum.main(args) == 2, bad
        assert message in capsys.readouterr().err, bad
        assert {p: p.read_bytes() for p in (out, ck)} == before, bad


def test_no_pressure_is_refused_before_the_run(capsys):
    """pressure = 0 ran and then divided by Hencky's deflection, which is 0 (ZeroDivisionError)."""
    drum = load_drum()
    assert drum.main(["--set", "pressure=0"]) == 2
    assert "config key 'pressure' = 0.0 is outside (0, infinity)" in capsys.readouterr().err
