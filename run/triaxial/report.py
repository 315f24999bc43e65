"""Triaxial results: a run's time series to CSV; each case's summary table and plots.

Summary of a run (axial loading only; stresses compressive positive)::

    peak_sigma_d        largest sigma_d (Pa) and the strain at which it occurs
    friction_angle      mobilised at the peak: sin phi = sigma_d / (sigma_d + 2 sigma_c)
                        (sigma_1 = sigma_c + sigma_d, sigma_3 = sigma_c)
    dilatancy_angle     from the slope of eps_v against eps over +-window around the
                        peak: sin psi = -s / (2 - s), s = d eps_v / d eps (positive psi:
                        the sample dilates)
    min_eps_v, final_eps_v   largest compaction and the volumetric strain at the end
    final_sigma_d       sigma_d at the last record
"""
from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import numpy as np

COLUMNS = ("step", "time", "phase", "strain", "height", "sigma_c", "sigma_membrane", "sigma_top",
           "sigma_bottom", "sigma_p", "sigma_d", "sigma_felt", "volume", "volumetric_strain",
           "sample_radius", "area", "force_top", "force_bottom", "kinetic_energy", "escaped")
UNITS = {"time": "s", "height": "m", "volume": "m^3", "sample_radius": "m", "area": "m^2",
         "force_top": "N", "force_bottom": "N", "kinetic_energy": "J"}


def write_run_csv(h5_path: Path, csv_path: Path) -> Path:
    """The time series of the run's HDF5 file (every record, including those before a
    restart) as CSV; stresses in Pa."""
    import h5py

    with h5py.File(h5_path, "r") as f:
        ts = f["timeseries"] if "timeseries" in f else {}
        data = {k: np.asarray(ts[k]) for k in COLUMNS if k in ts}
    if "sigma_d" not in data or any(v.ndim != 1 for v in data.values()):
        raise ValueError("not a triaxial run's output (its time series has no sigma_d): give "
                         "output/triaxial/<case>_<model>_seed<seed>.h5")
    header = [f"{k} ({UNITS.get(k, 'Pa' if k.startswith('sigma') else '1')})" for k in data]
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in zip(*data.values()):
            w.writerow([f"{v:.10g}" for v in row])
    return csv_path


def read_run_csv(path: Path) -> dict[str, np.ndarray]:
    with open(path) as fh:
        rows = list(csv.reader(fh))
    names = [h.split(" (")[0] for h in rows[0]]
    values = np.array(rows[1:], dtype=float).reshape(-1, len(names))
    return {n: values[:, k] for k, n in enumerate(names)}


def summarise(run: dict[str, np.ndarray], sigma_c: float, window: float = 0.02) -> dict:
    shear = run["phase"] >= 1
    eps, sd, ev = run["strain"][shear], run["sigma_d"][shear], run["volumetric_strain"][shear]
    if eps.size < 3:
        return {}
    k = int(np.argmax(sd))
    near = np.abs(eps - eps[k]) <= window
    slope = float(np.polyfit(eps[near], ev[near], 1)[0]) if np.count_nonzero(near) >= 3 else math.nan
    return {"peak_sigma_d": float(sd[k]), "strain_at_peak": float(eps[k]),
            "friction_angle": math.degrees(math.asin(sd[k] / (sd[k] + 2 * sigma_c))),
            "dilatancy_angle": math.degrees(math.asin(-slope / (2 - slope))),
            "min_eps_v": float(ev.min()), "final_eps_v": float(ev[-1]),
            "final_strain": float(eps[-1]), "final_sigma_d": float(sd[-1]),
            "escaped": int(run["escaped"].max()) if "escaped" in run else 0}


def write_case_report(directory: Path, case: str, sigma_c: float) -> list[str]:
    """Summary CSV and plots of every run of `case` in `directory`; returns printable lines."""
    runs = {p.stem: read_run_csv(p) for p in sorted(directory.glob(f"{case}_*_seed*.csv"))}
    if not runs:
        return []
    summaries = {name: summarise(run, sigma_c) for name, run in runs.items()}
    keys = ("peak_sigma_d", "strain_at_peak", "friction_angle", "dilatancy_angle", "min_eps_v",
            "final_eps_v", "final_strain", "final_sigma_d", "escaped")
    with open(directory / f"{case}_summary.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "peak_sigma_d (Pa)", "strain_at_peak", "friction_angle (deg)",
                    "dilatancy_angle (deg)", "min_eps_v", "final_eps_v", "final_strain",
                    "final_sigma_d (Pa)", "escaped (grains)"])
        for name, s in summaries.items():
            if s:
                w.writerow([name, *(f"{s[k]:.6g}" for k in keys)])
    lines = [f"case {case}: run, peak sigma_d (kPa) at strain (%), friction angle, dilatancy angle "
             "(deg), eps_v at the end (%), last strain"]
    for name, s in summaries.items():
        if s:
            lines.append(f"  {name:28s} {s['peak_sigma_d'] / 1e3:8.1f} at {100 * s['strain_at_peak']:5.2f}"
                         f"  {s['friction_angle']:5.1f}  {s['dilatancy_angle']:5.1f}"
                         f"  {100 * s['final_eps_v']:6.2f}  to {100 * s['final_strain']:5.2f} %"
                         + (f"  ({s['escaped']} grain(s) left the membrane)" if s["escaped"] else ""))
    lines += compare_models(runs)
    png = plot_case(directory / f"{case}.png", runs, case)
    lines.append(f"  {directory / f'{case}_summary.csv'}, {png}")
    return lines


def compare_models(runs: dict[str, dict], points: int = 400) -> list[str]:
    """Do MSS_patch and MSS_particle agree within their run-to-run scatter?

    On a common strain grid (0 to the smallest final strain), sigma_d of each
    run interpolated: the scatter of a model is the rms over strain of the
    difference between two of its seeds; the model difference is the rms of
    the difference of the two models' mean curves. Were the models the same,
    the model difference of two-seed means would be about the scatter / sqrt(2).
    Empty unless each model has at least two runs.
    """
    curves = {}
    for name, run in runs.items():
        model = next((m for m in ("patch", "particle") if f"_{m}_" in name), None)
        if not name.rsplit("_", 1)[-1].startswith("seed"):  # clumps: not a model's spheres
            model = None
        shear = run["phase"] >= 1
        if model is not None and np.count_nonzero(shear) >= 3:
            curves.setdefault(model, []).append((run["strain"][shear], run["sigma_d"][shear]))
    if len(curves) < 2 or min(len(c) for c in curves.values()) < 2:
        return []
    top = min(float(e[-1]) for c in curves.values() for e, _ in c)
    grid = np.linspace(0.0, top, points)

    def rms(x):
        return float(np.sqrt(np.mean(np.square(x))))

    on_grid = {m: np.array([np.interp(grid, e, sd) for e, sd in c]) for m, c in curves.items()}
    scatter = {m: rms(g[0] - g[1]) for m, g in on_grid.items()}
    between = rms(on_grid["patch"].mean(axis=0) - on_grid["particle"].mean(axis=0))
    verdict = "within" if between <= max(scatter.values()) else "OUTSIDE"
    return [f"  sigma_d to {100 * top:.1f} % strain, rms over strain: seed scatter "
            + ", ".join(f"{m} {v / 1e3:.1f} kPa ({len(on_grid[m])} runs)" for m, v in scatter.items())
            + f"; patch mean - particle mean {between / 1e3:.1f} kPa: {verdict} the scatter"]


def plot_case(path: Path, runs: dict[str, dict], case: str) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {"patch": "-", "particle": "--"}
    for name, run in runs.items():
        shear = run["phase"] >= 1
        style = next((v for k, v in styles.items() if f"_{k}_" in name), "-")
        a.plot(100 * run["strain"][shear], run["sigma_d"][shear] / 1e3, style, label=name)
        b.plot(100 * run["strain"][shear], 100 * run["volumetric_strain"][shear], style, label=name)
    a.set_xlabel("axial strain ln(h0/h) (%)")
    a.set_ylabel("deviatoric stress sigma_d (kPa)")
    b.set_xlabel("axial strain ln(h0/h) (%)")
    b.set_ylabel("volumetric strain (%, compression > 0)")
    a.set_title(f"triaxial test, case {case}: MSS_patch (solid), MSS_particle (dashed)")
    for ax in (a, b):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    """Rewrite a run's CSV and its case's summary and plots from the run's HDF5 file: what a
    run on several ranks that broke down leaves to do (every rank ended at once)."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m ecs_dem.run.triaxial.report",
                                 description=main.__doc__.split(":")[0])
    ap.add_argument("h5", type=Path, help="output/triaxial/<case>_<model>_seed<seed>.h5")
    ap.add_argument("--sigma-c", type=float, default=1e5, help="confining stress (Pa)")
    args = ap.parse_args(argv)
    if not args.h5.is_file():
        print(f"error: no file {args.h5}", file=sys.stderr)
        return 2
    try:
        print(write_run_csv(args.h5, args.h5.with_suffix(".csv")))
    except OSError as exc:
        print(f"error: {args.h5} cannot be read as HDF5 ({exc})", file=sys.stderr)
        return 2
    except ValueError as exc:  # another driver's output or a checkpoint
        print(f"error: {args.h5}: {exc}", file=sys.stderr)
        return 2
    for line in write_case_report(args.h5.parent, args.h5.stem.split("_")[0], args.sigma_c):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
