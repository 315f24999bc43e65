"""Validation: the fast cases checked against an analytic solution, a paper or a peer code.

Runs each case and prints one table: the case, its reference (analytic, a
paper's figure or table, a peer code's log), the measured and the reference
value, the tolerance, pass or fail, and the command that regenerates it (the
test that asserts the same, where one does). The measurements are the tests' own helpers and the drivers'
functions (tests/ and run/), called here with the tests' settings, so the
table and the test suite cannot drift apart. docs/validation.md explains each
row: the figure it checks and why its tolerance is what it is.

    python bench/validation.py                  # every fast case (table in docs/validation.md)
    python bench/validation.py --only hertz,drum
    python bench/validation.py --list
    python bench/validation.py --markdown docs/validation.md   # the table into that page

``--markdown PATH`` writes the table as MyST Markdown between the lines
``<!-- validation table -->`` and ``<!-- end validation table -->`` of PATH
(the rest of the page is kept), or prints it when PATH is ``-``. The LAMMPS
row needs LAMMPS's data file ``data.chute`` (``--lammps-data PATH``; looked
for in shared/lammps-bench in the folder above the clone) and is skipped,
with a note, without it. The exit status is 0 when every row that ran passed, 1 otherwise.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
DEFAULT_LAMMPS_DATA = REPO.parent / "shared" / "lammps-bench" / "data.chute"
BEGIN, END = "<!-- validation table -->", "<!-- end validation table -->"


@dataclass
class Row:
    case: str
    reference: str       # kind and source: "analytic: ...", "paper: ...", "peer code: ..."
    measured: str
    expected: str
    tolerance: str
    passed: bool | None  # None: skipped
    command: str

    def __post_init__(self):
        if self.passed is not None:
            self.passed = bool(self.passed)  # numpy booleans are not True


def test_module(relative: str):
    """The test module tests/<relative>, imported as a library (its helpers; no test runs)."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))  # the tests import their helpers as `helpers`
    path = TESTS / relative
    spec = importlib.util.spec_from_file_location(f"validation_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rel_row(case, reference, measured, expected, rel, command, fmt="{:.6g}", unit=""):
    """A row passing when |measured / expected - 1| <= rel."""
    err = abs(measured / expected - 1.0)
    return Row(case, reference, f"{fmt.format(measured)}{unit}", f"{fmt.format(expected)}{unit}",
               f"rel {rel:g} (off {err:.1e})", err <= rel, command)


def pytest_cmd(path, k=None):
    return f"pytest {path}" + (f' -k "{k}"' if k else "")


# ------------------------------------------------------------------- cases

def hertz(args) -> list[Row]:
    """Head-on collisions of two equal Hertz-Mindlin spheres (r 1 mm, E 1e8 Pa)."""
    t = test_module("systems/contact/test_hertz_mindlin.py")
    path = "tests/systems/contact/test_hertz_mindlin.py"
    v = 1.0
    dmax, tc = t.hertz_impact(v, t.MASS / 2, t.ESTAR_PAIR, t.R / 2)
    duration, restitution, overlap = t.collide(v, 1.0)
    rows = [
        rel_row("Hertz impact, contact time (e = 1, 1 m/s)",
                "analytic: Hertz, t_c = 2.9432 delta_max / v", duration * 1e6, tc * 1e6, 1e-4,
                pytest_cmd(path, "duration"), unit=" us"),
        rel_row("Hertz impact, largest overlap", "analytic: Hertz energy balance",
                overlap * 1e6, dmax * 1e6, 1e-4, pytest_cmd(path, "duration"), unit=" um"),
        rel_row("Hertz impact, restitution (e = 1)", "analytic: elastic", restitution, 1.0,
                1e-6, pytest_cmd(path, "duration")),
    ]
    for eps, speed in ((0.9, 1.0), (0.5, 10.0)):
        _, restitution, _ = t.collide(speed, eps)
        rows.append(rel_row(f"Restitution, e = {eps} at {speed:g} m/s",
                            "analytic: the species' e (MercuryDPM damping)", restitution, eps,
                            1e-3, pytest_cmd(path, "unclamped")))
    _, restitution, _ = t.collide(v, 0.9, clamp=True)
    rows.append(rel_row("Restitution, clamped law (F_n >= 0), e = 0.9",
                        "analytic: clamped Hertz ODE (RK4)", restitution,
                        t.clamped_restitution(0.9), 1e-3, pytest_cmd(path, "clamped")))
    return rows


def springs(args) -> list[Row]:
    """A membrane edge spring between two free vertices: the two-body oscillator."""
    t = test_module("systems/membrane/test_stretching.py")
    path = "tests/systems/membrane/test_stretching.py"
    _, period, _ = t.undamped_period()
    rows = [rel_row("Membrane spring, undamped period", "analytic: 2 pi sqrt(m_eff / k)",
                    period * 1e3, 2 * math.pi / t.OMEGA0 * 1e3, 5e-3, pytest_cmd(path, "period"),
                    unit=" ms")]
    ratios, expected = t.decay_ratios(0.1)
    worst = max(abs(ratios / expected - 1.0))
    rows.append(Row("Membrane spring, amplitude ratio per period (gamma 0.1)",
                    "analytic: exp(-2 pi gamma / sqrt(1 - gamma^2))",
                    f"{ratios.mean():.6g} ({len(ratios)} periods)", f"{expected:.6g}",
                    f"rel 1e-2 each (worst {worst:.1e})", worst <= 1e-2,
                    pytest_cmd(path, "decay")))
    return rows


def hinges(args) -> list[Row]:
    """A symmetric membrane hinge: the bending force of Goetz & Poeschel Eq. (11)."""
    t = test_module("systems/membrane/test_bending.py")
    _, f, _, magnitude = t.symmetric_bend()
    import numpy as np

    return [rel_row("Membrane hinge, bending force of a symmetric bend",
                    "paper: Goetz & Poeschel Eq. (11)", float(np.linalg.norm(f[0])), magnitude,
                    1e-12, pytest_cmd("tests/systems/membrane/test_bending.py", "eq_11"),
                    fmt="{:.12g}", unit=" N")]


def sphere(args) -> list[Row]:
    """A closed spherical membrane (icosphere level 3) inflated by 2 kPa, run to rest."""
    t = test_module("systems/membrane/test_dynamics.py")
    _, change, expected = t.inflated_sphere()
    return [rel_row("Pressurised sphere, radius change at 2 kPa",
                    "analytic: Laplace, p R0 lambda^2 = 3 E d (lambda - 1)", change * 1e3,
                    expected * 1e3, 5e-3,
                    pytest_cmd("tests/systems/membrane/test_dynamics.py", "pressure"), unit=" mm")]


def drum(args) -> list[Row]:
    """run/drum.py: a clamped circular membrane under pressure, Hencky's solution."""
    from ecs_dem import declaration_guard
    from ecs_dem.run import drum as driver

    declaration_guard.DEFAULT = False
    c, _ = driver.hencky_coefficient(0.3)
    rows = [Row("Hencky drum, coefficient C for nu = 0.3",
                "paper: Hencky 1915 / Fichter 1997 (NASA TP-3658)", f"{c:.4f}", "0.653",
                f"abs 1.5e-3 (off {abs(c - 0.653):.1e})", abs(c - 0.653) <= 1.5e-3,
                pytest_cmd("tests/run/test_drum.py", "coefficient"))]
    with tempfile.TemporaryDirectory(prefix="validation_drum_") as tmp:
        cfg = dict(driver.DEFAULTS, output=str(Path(tmp) / "drum.h5"), snapshot_every=0)
        world = driver.build_world(cfg)
        world.run(int(round(cfg["duration"] / world.dt)))
        w0 = driver.centre_deflection(world)
    expected, _ = driver.hencky_deflection(cfg)
    rows.append(rel_row("Hencky drum, centre deflection (90 Pa)",
                        "analytic: Hencky's membrane, nu = 1/3", w0 * 1e3, expected * 1e3, 0.03,
                        pytest_cmd("tests/run/test_drum.py", "centre_deflection"),
                        fmt="{:.4f}", unit=" mm"))
    return rows


def table1(args) -> list[Row]:
    """Grain-patch contact selection, Goetz & Poeschel Table 1, case by case."""
    t = test_module("systems/membrane/test_patch_contacts.py")

    def text(contacts):
        return "; ".join(f"{kind} {tri}" for tri, kind in sorted(contacts)) or "none"

    rows = []
    for case, (mesh, position, radius, touching_expected, kept_expected) in t.TABLE_1.items():
        touching, kept = t.selection(mesh, position, radius)
        ok = kept == kept_expected and touching_expected in (None, touching)
        rows.append(Row(f"Table 1: {case}", "paper: Goetz & Poeschel Table 1",
                        f"kept {text(kept)} of {len(touching)}", f"kept {text(kept_expected)}",
                        "exact", ok, pytest_cmd("tests/systems/membrane/test_patch_contacts.py",
                                                "table_1")))
    return rows


def friction(args) -> list[Row]:
    """run/friction.py: a grain dragged over kinematic MSS_patch and MSS_particle sheets."""
    from ecs_dem import declaration_guard
    from ecs_dem.run import friction as driver

    declaration_guard.DEFAULT = False
    path = "tests/run/test_friction.py"
    cfg = dict(driver.DEFAULTS, length=0.002, run_in=0.001, settle=0.02, sheet=0.012)
    rows = []
    for way in ("edge", "oblique"):
        r = driver.run_case(cfg, "patch", "kinematic", way)
        worst = max(r["fn_rsd"], r["ft_rsd"])
        rows.append(Row(f"Friction on MSS_patch, {way} path: F_t / (mu F_n)",
                        "paper: Sect. 3.2, Fig. 6 (smooth patches)",
                        f"{r['ratio']:.10f} (rsd of F_n, F_t {worst:.0e})", "1, constant",
                        "abs 1e-9; rsd 1e-9", abs(r["ratio"] - 1) <= 1e-9 and worst < 1e-9,
                        pytest_cmd(path, "constant_forces")))
    r = driver.run_case(cfg, "particle", "kinematic", "edge")
    rows.append(Row("Friction on MSS_particle, edge path: height bumps",
                    "paper: Sect. 3.2, Fig. 6 (vertex spheres)",
                    f"{r['height_amplitude'] * 1e6:.3g} um, rsd of F_t {r['ft_rsd']:.2g}",
                    "bumps > 1 um", "> 1 um; rsd > 1e-3",
                    r["height_amplitude"] > 1e-6 and r["ft_rsd"] > 1e-3,
                    pytest_cmd(path, "bumps")))
    return rows


def triaxial(args) -> list[Row]:
    """The triaxial test's small sample (354 grains), MSS_patch: confinement and loading."""
    t = test_module("run/test_triaxial.py")
    with tempfile.TemporaryDirectory(prefix="validation_triaxial_") as tmp:
        res = t.run("--model", "patch", *t.settings(tmp), timeout=3600)
        if res.returncode != 0:
            raise RuntimeError(f"the triaxial test failed:\n{res.stderr[-2000:]}")
        series = t.read(Path(tmp) / "small_patch_seed1.csv")
    import numpy as np

    start = int(np.argmax(series["phase"] >= 1))
    top, bottom = series["sigma_top"][start] / 1e3, series["sigma_bottom"][start] / 1e3
    cmd = pytest_cmd("tests/run/test_triaxial.py", "confines_then_loads")
    ref = "paper: Sect. 3.1, sigma_c = 100 kPa"
    rows = [rel_row("Triaxial (small), servo platen at equilibrium", ref, top, 100.0, 0.02, cmd,
                    fmt="{:.2f}", unit=" kPa"),
            rel_row("Triaxial (small), other platen at equilibrium", ref, bottom, 100.0, 0.05,
                    cmd, fmt="{:.2f}", unit=" kPa")]
    sd = series["sigma_d"][series["phase"] >= 1]
    escaped = int(series["escaped"].max())
    rows.append(Row("Triaxial (small), loading to 0.5 % strain",
                    "paper: Fig. 5, sigma_d rises from 0; no grain escapes",
                    f"sigma_d {sd[-1] / 1e3:.1f} kPa, {escaped} escaped", "> 5 kPa, 0 escaped",
                    "threshold", sd[-1] > 5e3 and escaped == 0, cmd))
    return rows


def mcdem(args) -> list[Row]:
    """run/compression.py: 514 soft spheres compressed to 13.4 %, gamma 0, 1, 1.19."""
    import csv

    from ecs_dem.run import compression

    with tempfile.TemporaryDirectory(prefix="validation_compression_") as tmp:
        settings = ["cycles=1", "discard=0", "plots=false", "quiet=true", f"output={tmp}"]
        argv = [w for s in settings for w in ("--set", s)]
        if compression.main(argv) != 0:
            raise RuntimeError("run/compression.py failed")
        with open(Path(tmp) / "summary.csv") as fh:
            summary = {float(r["gamma"]): float(r["ratio_to_gamma1.19"]) for r in csv.DictReader(fh)}
    rows = []
    cmd = "python run/compression.py --set cycles=1 --set discard=0"
    for gamma, paper, model in ((0.0, 0.43, "independent contacts"),
                                (1.0, 0.80, "elastic half-space")):
        rows.append(rel_row(f"MC-DEM, top force at 13.4 %: {model} / MC-DEM",
                            "paper: Brodu et al. 2015 Table I (R_top)", summary[gamma], paper,
                            0.1, cmd, fmt="{:.3f}"))
    return rows


def lammps(args) -> list[Row]:
    """run/chute.py from LAMMPS's data.chute: the thermo line of step 100, digit for digit."""
    data = Path(args.lammps_data)
    case = "LAMMPS chute (32,000 spheres), KinEng and c_1 at step 100"
    ref = "peer code: LAMMPS log.6Oct16.chute.fixed.icc.1"
    cmd = pytest_cmd("tests/run/test_chute.py", "lammps")
    if not data.is_file():
        return [Row(case, ref, f"skipped: no {data.name} (--lammps-data PATH)",
                    "784292.08 1571.0968", "every digit", None, cmd)]
    from ecs_dem.run import chute

    lines = []
    world = chute.build_world(dict(chute.DEFAULTS, data=str(data)), log=lines.append)
    world.run(100)
    words = lines[-1].split()
    measured = f"{float(words[2]):.8g} {float(words[3]):.8g}"
    expected = "784292.08 1571.0968"
    return [Row(case, ref, measured, expected, "every printed digit", measured == expected, cmd)]


def wear(args) -> list[Row]:
    """A grain held at constant overlap slides 2 cm over a flat mesh wall, worn through the
    contact system (tests/wear_scenarios.py, the tests' settings)."""
    w = test_module("wear_scenarios.py")
    path = "tests/systems/mesh_wall/test_wear.py"
    cmd = pytest_cmd(path, "grain_sliding")
    result = w.sliding_grain()
    gap, lateral = w.track_errors(result)
    return [
        rel_row("Wear, grain sliding over a mesh wall: removed volume",
                "analytic: Reye-Archard, V = f k F_t s", result["volume"] * 1e9,
                w.expected_volume(result) * 1e9, 1e-2, cmd, unit=" mm^3"),
        rel_row("Wear, grain sliding over a mesh wall: F_t", "analytic: mu F_n, Hertz load",
                abs(float(result["force"][0])), w.MU * w.hertz_load(), 1e-3, cmd, unit=" N"),
        Row("Wear, grain sliding over a mesh wall: depth along the track",
            "analytic: volume before x = f k F_t (x - x_0)",
            f"worst gap {gap:.2f} edge, worn vertices within {lateral:.2f} (a + edge)",
            "gap < 1 edge; within 1 (a + edge)", "threshold", gap < 1.0 and lateral <= 1.0, cmd),
    ]


def meshwall(args) -> list[Row]:
    """Mesh walls: a sphere on a tilted STL plane; the hopper's Beverloo fit; the drum's torque."""
    import numpy as np

    from ecs_dem import declaration_guard
    from ecs_dem.run import hopper, rotating_drum

    declaration_guard.DEFAULT = False
    t = test_module("systems/mesh_wall/test_mesh_wall_contacts.py")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="validation_meshwall_") as tmp:
        for motion in ("fixed", "translation", "rotation"):
            world, _, expected = t.pressed_into_tilted_plane(Path(tmp), motion)
            worst = max(worst, float(np.linalg.norm(world.particles.force[0] - expected)
                                     / np.linalg.norm(expected)))
    rows = [Row("Sphere on a tilted STL plane (fixed, translating, rotating): force",
                "analytic: Hertz-Mindlin on a rigid plane, k delta - gamma v_n",
                f"largest rel. error {worst:.1e}", "0", "rel 1e-9", worst <= 1e-9,
                pytest_cmd("tests/systems/mesh_wall/test_mesh_wall_contacts.py", "tilted"))]
    cfg = dict(hopper.DEFAULTS)
    bed = hopper.settle(cfg)
    diameters = hopper.diameters_of(cfg)
    rho_b = hopper.bulk_density(cfg, min(diameters), bed[0], bed[1])
    flows = [hopper.discharge(cfg, bed, D)["flow"] for D in diameters]
    c, k = hopper.beverloo_fit(diameters, flows, rho_b, cfg["gravity"],
                               hopper.mean_diameter(cfg))
    where = ", ".join(f"{D * 1e3:.3g}" for D in diameters)
    for name, value, lo, hi in (("C", c, 0.55, 0.65), ("k", k, 1.3, 2.9)):
        rows.append(Row(f"Hopper, Beverloo's {name} (D = {where} mm, 2000 grains)",
                        "paper: Beverloo et al. 1961; Nedderman 1992", f"{value:.3f}",
                        f"{lo}-{hi}", "in the range", lo <= value <= hi,
                        "python run/hopper.py"))
    dcfg = dict(rotating_drum.DEFAULTS, particles=250, settle_time=0.15, spin_up=0.25,
                sample_time=0.25, samples=8, lifters=4)
    r = rotating_drum.run_speed(dcfg, rotating_drum.settle(dcfg), 3.0)
    rows.append(rel_row("Rotating drum (3 rad/s): drive torque",
                        "analytic: torque of gravity on the lifted bed, -M g x_cm",
                        r["torque"] * 1e3, r["gravity_torque"] * 1e3, 0.15,
                        pytest_cmd("tests/run/test_rotating_drum.py", "balances"),
                        fmt="{:.4g}", unit=" mN m"))
    return rows


def screen(args) -> list[Row]:
    """The screen-wear driver's short run (tests/run/test_screen_wear.py's settings): the
    screen's worn volume against acceleration k W at every wear update."""
    import csv

    from ecs_dem import declaration_guard
    from ecs_dem.run import screen_wear

    declaration_guard.DEFAULT = False
    t = test_module("run/test_screen_wear.py")
    with tempfile.TemporaryDirectory(prefix="validation_screen_") as tmp:
        if screen_wear.main(t.argv(dict(t.SHORT, output=Path(tmp)))) != 0:
            raise RuntimeError("run/screen_wear.py failed")
        with open(Path(tmp) / "screen_wear.csv") as f:
            rows = list(csv.DictReader(f))
    worst = max(float(r["relative_difference"]) for r in rows)
    return [Row(f"Screen wear (run/screen_wear.py, {len(rows)} updates): worn volume",
                "analytic: Reye-Archard, V = f k W (W the frictional work)",
                f"largest rel. difference {worst:.1e}, V = {float(rows[-1]['worn_volume_m3']) * 1e9:.4g} mm^3",
                "f k W", "rel 1e-12", worst <= 1e-12,
                pytest_cmd("tests/run/test_screen_wear.py", "acceleration_k"))]


def wet(args) -> list[Row]:
    """Wet matter: a spray droplet's flight, the wet collision against its ODE, the spray
    drum's liquid balance and growth, the wet pile's angle (the tests' short settings)."""
    import csv

    import numpy as np

    from ecs_dem import declaration_guard
    from ecs_dem.run import spray_drum, wet_collision, wet_pile

    declaration_guard.DEFAULT = False
    t = test_module("systems/wet/test_droplets.py")
    x, v, x_expected, v_expected = t.ballistic_flight()
    worst = float(max(np.max(np.abs(x - x_expected)), np.max(np.abs(v - v_expected))))
    rows = [Row("Spray droplet, ballistic flight (4000 steps)",
                "analytic: x0 + v0 t + g t^2 / 2, v0 + g t", f"largest error {worst:.1e}",
                "0", "abs 1e-12 (m, m/s)", worst <= 1e-12,
                pytest_cmd("tests/systems/wet/test_droplets.py", "ballistic"))]
    c = test_module("run/test_wet_collision.py")
    r = wet_collision.collide(c.CFG, 2.0)
    rows.append(rel_row(f"Wet collision (LiquidMigrationLS), restitution at St = "
                        f"{r['stokes']:.3g}", "analytic: the two-body ODE (RK4, 2 ns)",
                        r["restitution"], c.ode_restitution(c.CFG, 2.0), 1e-2,
                        pytest_cmd("tests/run/test_wet_collision.py", "two_body_ode")))
    d = test_module("run/test_spray_drum.py")
    with tempfile.TemporaryDirectory(prefix="validation_wet_") as tmp:
        argv = [a for k, val in d.SHORT.items() for a in ("--set", f"{k}={val}")]
        if spray_drum.main(argv + ["--set", f"output={tmp}"]) != 0:
            raise RuntimeError("run/spray_drum.py failed")
        with open(Path(tmp) / "spray_drum.csv") as f:
            sampled = [{k: float(val) for k, val in row.items()} for row in csv.DictReader(f)]
        pile = wet_pile.main(["--set", "particles=300", "--set", "duration=0.5", "--set",
                              "contents=0,0.01", "--set", f"output={tmp}/pile"])
        if pile != 0:
            raise RuntimeError("run/wet_pile.py failed")
        with open(Path(tmp) / "pile.csv") as f:
            dry, wetted = [float(row["angle_deg"]) for row in csv.DictReader(f)]
    imbalance = max(abs(r["imbalance_m3"]) / r["inserted_m3"] for r in sampled)
    rows.append(Row("Spray drum (150 grains): liquid balance at every sample",
                    "conservation: films + bridges + airborne + lost = sprayed",
                    f"largest |imbalance| / sprayed {imbalance:.1e}", "0", "rel 1e-12",
                    imbalance <= 1e-12, pytest_cmd("tests/run/test_spray_drum.py", "conserves")))
    g = spray_drum.growth_check([{"time": r["time_s"], "on_grains": r["on_grains_m3"],
                                  "lost_at_walls": r["lost_m3"], "airborne": r["airborne_m3"],
                                  "inserted": r["inserted_m3"]} for r in sampled],
                                spray_drum.DEFAULTS["volume_rate"])
    rows.append(rel_row("Spray drum: growth of the liquid on the grains",
                        "nozzle rate minus droplets lost on the drum (and airborne)",
                        g["slope"] * 1e9, g["expected"] * 1e9, 0.05,
                        pytest_cmd("tests/run/test_spray_drum.py", "conserves"),
                        fmt="{:.4g}", unit=" mm^3/s"))
    rows.append(Row("Wet pile (300 grains): angle of repose, 1 % liquid against dry",
                    "paper: cohesion steepens a heap (Thornton et al. 2023, Sect. 5)",
                    f"{wetted:.1f} deg against {dry:.1f} deg", "steeper by > 3 deg",
                    "threshold", wetted > dry + 3.0,
                    pytest_cmd("tests/run/test_wet_pile.py", "steeper")))
    return rows


def cg(args) -> list[Row]:
    """Coarse-grained fields of a small flowing chute (tests/cg/test_flow_balance.py): the
    mass and momentum balances between two steps on three grids."""
    import numpy as np

    from ecs_dem.cg.kernels import Kernel

    t = test_module("cg_flow.py")
    world = t.small_chute()
    world.run(3000)
    cells = (24, 48, 96)
    grids = [t.profile_grid(world, n) for n in cells]
    res = np.array(t.balance_residuals(world, grids, Kernel.lucy(3.0 * t.R)))
    command = pytest_cmd("tests/cg/test_flow_balance.py")
    rows = []
    for col, label in ((0, "mass (continuity)"), (1, "momentum, downslope"),
                       (2, "momentum, vertical")):
        worst = float(res[-1, col])
        falls = bool(np.all(res[1:, col] < res[:-1, col] / 2.5))
        rows.append(Row(f"Coarse-grained {label} balance, flowing chute, {cells[-1]} layers",
                        "analytic: Goldhirsch's balance equations (exact for the fields)",
                        f"residual {worst:.2e} ({', '.join(f'{v:.2g}' for v in res[:, col])} "
                        f"on {', '.join(map(str, cells))} layers)",
                        "0 to the grid error", "< 0.05, falls > 2.5x per halving",
                        worst < 0.05 and falls, command))
    return rows


def clumps(args) -> list[Row]:
    """A tilted dimer bouncing off an elastic floor: the rigid-body impulse solution."""
    t = test_module("systems/rigid_body/test_clumps.py")
    b, _, _, v_after, w_after = t.tilted_dimer_bounce()
    cmd = pytest_cmd("tests/systems/rigid_body/test_clumps.py", "impulse")
    ref = "analytic: rigid-body impulse, J = 2 v0 / (1/M + n.((I^-1 (rho x n)) x rho))"
    return [rel_row("Clump (dimer, tilted 30 deg) off a wall: v_z after", ref,
                    float(b.velocity[0, 2]), float(v_after[2]), 1e-2, cmd, unit=" m/s"),
            rel_row("Clump (dimer, tilted 30 deg) off a wall: w_y after", ref,
                    float(b.angular_velocity[0, 1]), float(w_after[1]), 1e-2, cmd,
                    unit=" rad/s")]


CASES = {"hertz": hertz, "springs": springs, "hinges": hinges, "sphere": sphere, "drum": drum,
         "table1": table1, "friction": friction, "triaxial": triaxial, "mcdem": mcdem,
         "lammps": lammps, "wear": wear, "meshwall": meshwall, "screen": screen, "wet": wet,
         "cg": cg, "clumps": clumps}



# ------------------------------------------------------------------- output

def verdict(row: Row) -> str:
    return "skip" if row.passed is None else ("pass" if row.passed else "FAIL")


def text_table(rows: list[Row]) -> str:
    head = ("case", "reference", "measured", "expected", "tolerance", "", "command")
    cells = [head] + [(r.case, r.reference, r.measured, r.expected, r.tolerance, verdict(r),
                       r.command) for r in rows]
    widths = [max(len(c[k]) for c in cells) for k in range(len(head) - 1)]
    return "\n".join("  ".join(c[k].ljust(widths[k]) for k in range(len(widths))) + "  " + c[-1]
                     for c in cells)


def cpu_seconds() -> float:
    """Processor time of this process and its finished children (s): unlike the wall time,
    it does not grow when other work shares the cores."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def markdown_table(rows: list[Row], seconds: float, processor: float) -> str:
    def esc(s):
        return s.replace("|", "\\|")

    out = [BEGIN, "",
           "| case | reference | measured | expected | tolerance | result | command |",
           "|---|---|---|---|---|---|---|"]
    out += [f"| {esc(r.case)} | {esc(r.reference)} | {esc(r.measured)} | {esc(r.expected)} | "
            f"{esc(r.tolerance)} | {verdict(r)} | `{r.command}` |" for r in rows]
    passed = sum(r.passed is True for r in rows)
    skipped = sum(r.passed is None for r in rows)
    out += ["", f"{passed} of {len(rows) - skipped} rows pass"
            + (f", {skipped} skipped" if skipped else "")
            + f"; `python bench/validation.py` took {seconds / 60:.1f} minutes on "
            f"{os.cpu_count()} cores ({processor / 60:.1f} minutes of processor time).", "", END]
    return "\n".join(out)


def write_markdown(path: str, table: str) -> None:
    if path == "-":
        print(table)
        return
    page = Path(path)
    text = page.read_text() if page.exists() else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + table + text[text.index(END) + len(END):]
    else:
        text = (text + "\n\n" if text else "") + table + "\n"
    page.write_text(text)
    print(f"table written to {page}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help=f"comma-separated cases ({', '.join(CASES)})")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--markdown", metavar="PATH",
                    help="write the table as MyST into PATH (between its markers), '-' prints it")
    ap.add_argument("--lammps-data", default=str(DEFAULT_LAMMPS_DATA),
                    help="LAMMPS's data.chute for the digit comparison (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.list:
        for name, fn in CASES.items():
            print(f"{name:9s} {fn.__doc__.splitlines()[0]}")
        return 0
    names = list(CASES) if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; the cases are {', '.join(CASES)}")
    rows: list[Row] = []
    t0, c0 = time.perf_counter(), cpu_seconds()
    for name in names:
        t1, c1 = time.perf_counter(), cpu_seconds()
        print(f"{name}: {CASES[name].__doc__.splitlines()[0]}", flush=True)
        new = CASES[name](args)
        rows += new
        print(f"  {time.perf_counter() - t1:.0f} s (processor {cpu_seconds() - c1:.0f} s): "
              + ", ".join(f"{verdict(r)}" for r in new), flush=True)
    seconds, processor = time.perf_counter() - t0, cpu_seconds() - c0
    print()
    print(text_table(rows))
    failed = [r for r in rows if r.passed is False]
    print(f"\n{sum(r.passed is True for r in rows)} passed, {len(failed)} failed, "
          f"{sum(r.passed is None for r in rows)} skipped in {seconds:.0f} s "
          f"(processor time {processor:.0f} s)")
    if args.markdown:
        write_markdown(args.markdown, markdown_table(rows, seconds, processor))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
