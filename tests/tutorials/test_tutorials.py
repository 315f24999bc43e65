"""The tutorials (tutorials/*.py, docs/tutorials/*.md) run with their short settings.

Each script runs in a subprocess with ``--short``, as CI and a reader would run
it, writing into a temporary directory. Checked: the lines of its output that
do not depend on the dynamics (the set-up: counts, time step, masses) equal
the committed short output that its page shows (docs/tutorials/output/<name>.txt),
and the physical results the script prints agree with what this test derives
(grains at rest, the walls and clamps carrying the weight, Stokes' terminal
velocity, MC-DEM stiffer than plain Hertz, the triaxial sample in equilibrium
at the confining stress). The pour also runs on 2 ranks under mpiexec.mpich.
The dynamics of a granular packing amplify round-off, so its printed time
series are checked by their physics, not digit by digit.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from helpers import PYTHON, REPO

TUTORIALS = REPO / "tutorials"
OUTPUT = REPO / "docs" / "tutorials" / "output"
MPIEXEC = shutil.which("mpiexec.mpich")


def run(script: str, *args, ranks: int = 1, timeout: float = 600) -> list[str]:
    """The lines a tutorial prints with its short settings (the run must succeed)."""
    command = [PYTHON, str(TUTORIALS / script), "--short", *args]
    if ranks > 1:
        command = [MPIEXEC, "-n", str(ranks), *command]
    env = dict(os.environ, ECS_DEM_TUTORIAL_SHORT="1")
    res = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                         cwd=REPO)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return res.stdout.splitlines()


def committed(name: str) -> list[str]:
    return (OUTPUT / f"{name}.txt").read_text().splitlines()


def starting(lines: list[str], *prefixes: str) -> list[str]:
    return [line for line in lines if line.startswith(prefixes)]


def number(line: str, label: str) -> float:
    """The number after `label` in `line`."""
    match = re.search(re.escape(label) + r"\s*(-?[0-9.]+(?:e-?[0-9]+)?)", line)
    assert match, f"{label!r} not in {line!r}"
    return float(match.group(1))


# ---------------------------------------------------------------------------------- pour
POUR_STABLE = ("pour (short settings)", "time (s)", "grains ")


def check_pour(lines: list[str]) -> None:
    assert starting(lines, *POUR_STABLE) == starting(committed("pour"), *POUR_STABLE)
    table = [line.split() for line in lines if re.match(r"\s+[0-9.]+\s+[0-9.e+-]+\s+\d+", line)]
    energy = [float(row[1]) for row in table]
    (mass_line,) = starting(lines, "grains ")
    weight = number(mass_line, "weight")
    # the bed comes to rest: its kinetic energy falls, far below that of the grains lifted by
    # their own size (weight x largest radius, 2 mm)
    assert len(table) == 3 and energy[-1] < min(energy[:-1])
    assert energy[-1] < 1e-4 * weight * 2e-3
    (walls_line,) = starting(lines, "floor carries")
    floor, walls = number(walls_line, "floor carries"), number(walls_line, "all walls")
    assert walls == pytest.approx(weight, rel=0.01)  # at rest the walls carry the bed
    assert 0.5 * weight < floor <= walls * 1.001     # most of it on the floor (Janssen)


def test_pour(tmp_path):
    check_pour(run("pour.py", "--output", str(tmp_path / "pour.h5")))
    assert (tmp_path / "pour.xdmf").exists() and (tmp_path / "pour_energy.png").exists()


@pytest.mark.skipif(MPIEXEC is None, reason="needs Debian's MPICH (mpiexec.mpich)")
def test_pour_on_two_ranks(tmp_path):
    """The same grains on 2 ranks: the same set-up lines, and the same physics."""
    check_pour(run("pour.py", "--output", str(tmp_path / "pour.h5"), ranks=2))


# ----------------------------------------------------------------------------- membrane
MEMBRANE_STABLE = ("membrane_from_stl (short", "a mesh with a fin", "read ", "validated",
                   "30 grains", "time (s)")


def test_membrane_from_stl(tmp_path):
    lines = run("membrane_from_stl.py", "--output", str(tmp_path / "membrane.h5"))
    mine = [line.replace(str(tmp_path / "sheet_mm.stl"), "output/tutorials/sheet_mm.stl")
            for line in starting(lines, *MEMBRANE_STABLE)]
    assert mine == starting(committed("membrane_from_stl"), *MEMBRANE_STABLE)
    table = [line.split() for line in lines if re.match(r"\s+[0-9.]+\s+[0-9.e+-]+\s+[0-9.]+$", line)]
    assert len(table) == 5
    assert float(table[-1][1]) < 0.05 * max(float(row[1]) for row in table)  # settling
    assert float(table[-1][2]) > 0.5  # mm: the grains press a dimple into the sheet
    (balance,) = starting(lines, "the clamped vertices carry")
    carried = number(balance, "together")
    assert carried == pytest.approx(number(balance, "against a weight of"), rel=0.03)
    assert starting(lines, "grains fallen through the sheet") == [
        "grains fallen through the sheet: 0"]
    assert (tmp_path / "sheet_mm.stl").exists() and (tmp_path / "membrane.xdmf").exists()


# ---------------------------------------------------------------------------- new force
def test_new_force(tmp_path):
    lines = run("new_force.py")
    assert starting(lines, "new_force", "relaxation") == starting(committed("new_force"),
                                                                 "new_force", "relaxation")
    assert any(line.strip().startswith("StokesDrag [FORCES]") for line in lines)
    # terminal velocity: reached to round-off by the small grains, within exp(-t / tau) by the
    # largest (tau = 2 rho r^2 / (9 eta) = 3.57 ms after 0.02 s: 0.4 %)
    rows = starting([line.strip() for line in lines], "r = ")
    assert len(rows) == 5
    for row in rows:
        stokes, simulated = number(row, "Stokes"), number(row, "simulated")
        assert simulated == pytest.approx(stokes, rel=1e-2, abs=1e-3)
    assert number(rows[0], "difference") < 1e-9


# ---------------------------------------------------------------------------- compression
def test_compression(tmp_path):
    lines = run("compression.py", "--output", str(tmp_path))
    assert lines[0] == committed("compression")[0]
    (plain,) = starting([line.strip() for line in lines], "plain Hertz")
    (mc,) = starting([line.strip() for line in lines], "MC-DEM (gamma 1.19)")
    f_plain, f_mc = number(plain, "(gamma 0)"), number(mc, "(gamma 1.19)")
    assert 0 < f_plain < f_mc  # opposite contacts stiffen each other
    (ratio,) = starting([line.strip() for line in lines], "MC-DEM is")
    assert number(ratio, "MC-DEM is") == pytest.approx(f_mc / f_plain, rel=0.01)
    for name in ("summary.csv", "top_force.png"):
        assert (tmp_path / name).exists()


# ------------------------------------------------------------------------------ triaxial
def test_triaxial(tmp_path):
    lines = run("triaxial.py", "--output", str(tmp_path))
    stable = ("triaxial (short", "--- model", "preparation:", "  dt =")
    assert starting(lines, *stable) == starting(committed("triaxial"), *stable)
    confinement = starting(lines, "confinement at")
    assert len(confinement) == 2  # both models reach equilibrium before the axial loading
    for line in confinement:
        assert "(equilibrium)" in line and "grains outside 0" in line
        assert number(line, "sigma_top") == pytest.approx(100.0, rel=0.02)  # kPa, the servo
    summary = [row for row in starting([line.strip() for line in lines], "small_")
               if "peak sigma_d" in row]
    assert len(summary) == 2  # one row per model in the script's summary
    for row in summary:  # axial loading raises the deviatoric stress; no grain escaped
        assert number(row, "peak sigma_d") > 1.0 and row.endswith("grains escaped 0")
    for model in ("patch", "particle"):
        assert (tmp_path / f"small_{model}_seed1.csv").exists()
    assert (tmp_path / "small.png").exists()


# ---------------------------------------------------------------------------- mesh wall
MESH_WALL_STABLE = ("mesh wall (short settings)", "walls:", "time (s)")


def check_mesh_wall(lines: list[str]) -> None:
    assert starting(lines, *MESH_WALL_STABLE) == starting(committed("mesh_wall"),
                                                          *MESH_WALL_STABLE)
    table = [line.split() for line in lines if re.match(r"\s+[0-9.]+\s+\d+\s+\d+\s+[0-9.-]+$",
                                                        line)]
    (weight_line,) = starting(lines, "grains ")
    grains, weight = int(number(weight_line, "grains")), number(weight_line, "weight")
    # every grain passes the funnel and stays in the cup
    assert int(table[-1][1]) == 0 and int(table[-1][2]) == grains
    (walls_line,) = starting(lines, "funnel carries")
    # at the end the cup carries the pile's weight, the empty funnel nothing
    assert number(walls_line, "cup") == pytest.approx(weight, rel=0.02)
    assert abs(number(walls_line, "funnel carries")) < 1e-3 * weight
    # the pile turns with the cup
    (turn_line,) = starting(lines, "pile turns")
    assert number(turn_line, "pile turns at") == pytest.approx(number(turn_line, "the cup at"),
                                                               rel=0.03)


def test_mesh_wall(tmp_path):
    check_mesh_wall(run("mesh_wall.py", "--output", str(tmp_path)))
    assert (tmp_path / "funnel.stl").stat().st_size > 0


# ------------------------------------------------------------------------------- clumps
CLUMPS_STABLE = ("clumps (short", "template", "dimer", "tetrahedron", "elongated", "by hand",
                 "from STL", "27 clumps", "time (s)", "weight")


def check_clumps(lines: list[str]) -> None:
    assert starting(lines, *CLUMPS_STABLE) == starting(committed("clumps"), *CLUMPS_STABLE)
    table = [line.split() for line in lines if re.match(r"\s+[0-9.]+\s+[0-9.e+-]+\s+[0-9.]+$", line)]
    energy = [float(row[1]) for row in table]
    assert len(table) == 5 and energy[-1] < 1e-3 * max(energy)  # the pour comes to rest
    (weight_line,) = starting(lines, "weight")
    (floor_line,) = starting(lines, "floor carries")
    # at rest the floor carries every body's M g once and every sphere's m g
    assert number(floor_line, "floor carries") == pytest.approx(number(weight_line, "weight"),
                                                                rel=2e-3)


def test_clumps():
    check_clumps(run("clumps.py"))


# ---------------------------------------------------------------------------------- wet
WET_STABLE = ("wet (short settings)", "nozzle:", "time (s)")


def test_wet(tmp_path):
    lines = run("wet.py", "--output", str(tmp_path / "wet.h5"))
    assert starting(lines, *WET_STABLE) == starting(committed("wet"), *WET_STABLE)
    (nozzle,) = starting(lines, "nozzle:")
    per_second = number(nozzle, "(")
    rows = [line.split() for line in lines if re.match(r"\s*0\.\d+\s", line)]
    assert len(rows) == 4
    for row in rows:
        assert abs(float(row[-1])) < 1e-12  # films + bridges + airborne + lost = inserted
    assert float(rows[-1][4]) > 0  # droplets that missed the bed were lost on the floor
    (end,) = starting(lines, "droplets sprayed")
    # whole droplets: floor(rate t) at the end of 0.08 s
    assert abs(number(end, "sprayed") - per_second * 0.08) <= 1.0
    assert number(end, "bridges") > 10
    assert (tmp_path / "wet.xdmf").exists()


# ---------------------------------------------------------------------- coarse graining
CG_STABLE = ("coarse graining (short", "snapshots ", "z (mm)")


def test_coarse_graining(tmp_path):
    """The bed's coarse-grained vertical stress is the weight above it; the fields file and
    the command line the tutorial prints reproduce it."""
    import h5py
    import numpy as np

    out = tmp_path / "cg.h5"
    lines = run("coarse_graining.py", "--output", str(out))
    assert starting(lines, *CG_STABLE) == starting(committed("coarse_graining"), *CG_STABLE)
    (check,) = starting(lines, "sigma_zz against")
    assert number(check, "largest deviation") < 1.0  # per cent
    table = [line.split() for line in lines if re.match(r"\s+[0-9.]+\s+0\.[0-9]+\s+[0-9.]+\s+[0-9.]+$",
                                                         line)]
    assert len(table) >= 4
    for z, nu, szz, weight in ([float(v) for v in row] for row in table):
        assert 0.6 < nu < 0.74 and szz == pytest.approx(weight, rel=0.01)
    (cli,) = starting(lines, "the same from the command line: ")
    command = cli.split(": ", 1)[1].split()[1:]  # after "python"
    res = subprocess.run([PYTHON, *command, "--out", str(tmp_path / "cli.h5")],
                         capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stderr
    with h5py.File(tmp_path / "cli.h5", "r") as a, h5py.File(tmp_path / "cg_cg.h5", "r") as b:
        (key,) = list(a["fields"])
        np.testing.assert_allclose(a[f"fields/{key}/stress"][...], b[f"fields/{key}/stress"][...],
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(MPIEXEC is None, reason="needs Debian's MPICH (mpiexec.mpich)")
def test_clumps_on_two_ranks():
    """The same clumps on 2 ranks: the same set-up lines, and the same physics."""
    check_clumps(run("clumps.py", ranks=2))
