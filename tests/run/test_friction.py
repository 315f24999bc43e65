"""run/friction.py, the sliding test of Goetz & Poeschel Sect. 3.2, on kinematic and free sheets.

A grain pressed onto fixed patches and dragged at constant speed must feel a constant normal
force (the load) and a constant friction force mu F_n (mu the mean of the two species'
coefficients), to round-off, along a mesh edge, along a row of vertices and obliquely. The
same grain on vertex spheres (MSS_particle) rides over bumps: its height and forces oscillate;
on a free sheet of vertex spheres it still feels mu F_n on average (the vertices do not roll).
"""
import signal
import subprocess

import numpy as np
import pytest

from helpers import PYTHON, REPO, load_driver


@pytest.fixture(scope="module")
def friction():
    return load_driver("friction")


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


@pytest.mark.parametrize("path", ["edge", "vertices", "oblique"])
def test_sticking_grain_keeps_one_spring_across_patches(friction, path):
    """Below the Coulomb limit the friction force is the Mindlin spring: F_t = (2/3) k_t xi +
    gamma_t v_t along the whole drag, with xi the distance dragged and k_t = 8 G* sqrt(r delta)
    (Hertz-Mindlin Eq. (4.6)), as the selected patch changes every 0.7 mm. A spring lost or
    restarted at a hand-over shows as a drop of F_t (docs/physics.md: never reset at a
    hand-over). The grain gets no rotational freedom (inertia 0): the drag zeroes its spin after
    each step, but the half kick before the force pass would roll it by up to 7 rad/s under
    these forces, and the contact point would not move with the grain."""
    cfg = dict(friction.DEFAULTS, grain_friction=300.0, membrane_friction=300.0, settle=0.02,
               sheet=0.012, length=0.004, run_in=0.0)
    world, drag, direction = friction.build_world(cfg, "patch", "kinematic", path)
    world.run(int(round(cfg["settle"] / world.dt)))
    p = world.particles
    grain = int(np.flatnonzero(p.membrane < 0)[0])
    p.inertia[grain] = 0.0
    drag.velocity = cfg["speed"] * direction
    start = p.position[grain].copy()
    rows = []
    for _ in range(100):  # 4 mm
        world.run(800)
        f, x = friction.grain_contact_force(world)
        rows.append(((x - start) @ direction, -(f @ direction), f[2] + cfg["load"], x[2]))
    along, ft, fn, height = np.array(rows).T
    assert np.ptp(height) < 1e-12 and fn == pytest.approx(cfg["load"], rel=1e-9)
    delta = cfg["grain_radius"] - height.mean()
    shear = [e / (2 * (1 + nu)) for e, nu in ((cfg["grain_modulus"], cfg["grain_poisson"]),
                                              (cfg["membrane_modulus"], 1 / 3))]
    gstar = 1 / ((2 - cfg["grain_poisson"]) / shear[0] + (2 - 1 / 3) / shear[1])
    kt = 8 * gstar * np.sqrt(cfg["grain_radius"] * delta)
    slope, offset = np.polyfit(along, ft, 1)
    # rel 2e-3: the half kick slows the grain as F_t grows, and gamma_t v_t falls with it
    assert slope == pytest.approx(2 / 3 * kt, rel=2e-3)
    assert np.abs(ft - (slope * along + offset)).max() < 1e-6 * ft.max()
    assert ft.max() < 0.5 * 300.0 * cfg["load"] and ft.max() > 50 * ft.min() > 0


def test_every_case_and_the_output_path_are_checked_before_the_first_case_runs(
        friction, tmp_path, capsys):
    """A typo in the last case used to surface after the valid ones had run (and were lost)."""
    out = tmp_path / "f"
    for args, message in ((["paths=edge,diagonal"], "unknown case patch/kinematic/diagonal"),
                          (["samples=0"], "'samples' = 0 is outside [1, infinity]"),
                          (["spacing=0"], "'spacing' = 0.0 is outside (0, infinity)"),
                          (["restitution=0"], "'restitution' = 0.0 is outside (0, 1]"),
                          ([f"output={tmp_path / 'plain' / 'f'}"], "is a file, not a directory"),
                          (["output="], "names no file"),  # was a ValueError from with_suffix
                          (["length=1e-9"], "less than one time step")):  # an IndexError
        (tmp_path / "plain").write_text("")
        argv = ["--set", f"output={out}", "--set", "models=patch", "--set", "variants=kinematic"]
        for a in args:
            argv += ["--set", a]
        assert friction.main(argv) == 2
        captured = capsys.readouterr()
        assert message in captured.err and "F_n" not in captured.out  # no case ran
        assert not out.with_suffix(".csv").exists()


def test_a_time_step_too_long_for_any_case_is_refused_before_the_first_case_runs(
        friction, tmp_path, capsys):
    """dt = 1e-3 used to send the grain off the sheet and report F_n = 0 with exit 0. The limit
    is the grain's Rayleigh time, t_R = pi r sqrt(rho/G) / (0.1631 nu + 0.8766), derived here;
    a free sheet's springs are checked too, and the first case must not run if a later
    variant's step is refused."""
    cfg = friction.DEFAULTS
    G = cfg["grain_modulus"] / (2 * (1 + cfg["grain_poisson"]))
    t_r = (np.pi * cfg["grain_radius"] * np.sqrt(cfg["grain_density"] / G)
           / (0.1631 * cfg["grain_poisson"] + 0.8766))
    out = tmp_path / "f"
    for dt in (1e-3, 1.01 * t_r):
        argv = ["--set", f"output={out}", "--set", "models=patch",
                "--set", "variants=kinematic,free", "--set", f"dt={float(dt)!r}"]
        assert friction.main(argv) == 2
        captured = capsys.readouterr()
        assert f"exceeds the stable limit {t_r:.4g}" in captured.err, captured.err
        assert "F_n" not in captured.out and not out.with_suffix(".csv").exists()
    # a step the kinematic sheet takes, but not the free sheet's springs (stiffened 8000
    # times: their limit falls about 90 times, below 1e-6 s): the kinematic cases must not run
    argv = ["--set", f"output={out}", "--set", "models=patch", "--set", "variants=kinematic,free",
            "--set", "dt=1e-6", "--set", "membrane_modulus=1e10"]
    assert friction.main(argv) == 2
    captured = capsys.readouterr()
    assert "of the stiffest spring" in captured.err, captured.err
    assert "F_n" not in captured.out and not out.with_suffix(".csv").exists()


def test_sigterm_ends_the_whole_sweep_with_nothing_written(tmp_path):
    """The driver runs each case in chunks: SIGTERM used to end only the chunk it arrived in,
    and the sweep ran on to the end (exit 0), while the engine said it was stopping."""
    out = tmp_path / "f"
    args = ["models=patch", "variants=kinematic", "paths=edge,vertices,oblique", "length=0.002",
            "run_in=0.001", "settle=0.02", "sheet=0.012", f"output={out}"]
    proc = subprocess.Popen([PYTHON, str(REPO / "run" / "friction.py"),
                             *[x for a in args for x in ("--set", a)]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith("patch"):  # the first case is done: the sweep is running
            break
    proc.send_signal(signal.SIGTERM)
    printed, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "stopped by SIGTERM in case patch/kinematic/" in printed
    assert "of 3 cases had finished" in printed and "Traceback" not in err
    assert not out.with_suffix(".csv").exists() and not out.with_suffix(".png").exists()


def test_results_that_cannot_be_written_are_an_error_not_a_traceback(
        friction, tmp_path, capsys, monkeypatch):
    """A full disk at the end of the sweep was an OSError traceback."""
    def no_room(results, out):
        raise OSError(28, "No space left on device", f"{out}.csv")

    monkeypatch.setattr(friction, "write_outputs", no_room)
    out = tmp_path / "f"
    argv = [x for a in ("models=patch", "variants=kinematic", "paths=edge", "length=0.001",
                        "run_in=0.0005", "settle=0.005", "sheet=0.012", "samples=10",
                        f"output={out}") for x in ("--set", a)]
    assert friction.main(argv) == 3
    assert f"error: cannot write {out}.csv: No space left on device" in capsys.readouterr().err
