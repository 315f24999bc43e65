"""Triaxial test with spheres against clumps: peak friction angle and dilatancy (a comparison).

Reads the runs' CSVs (``run/triaxial``: ``<case>_patch_seed<seed>[_<shape>].csv``, from
finished runs, or from the HDF5 file of a run still going or stopped, written first with
``python -m ecs_dem.run.triaxial.report <run>.h5``) found in the given folders, cuts
every run at the smallest strain all of them reached (``--strain`` lower still), and
prints per run and per shape the peak deviatoric stress, the mobilised friction angle
asin(sigma_d / (sigma_d + 2 sigma_c)) at the peak, and the dilatancy angle there
(``report.summarise``); writes ``--out``.png (sigma_d and eps_v against eps) and .csv.

    python -m ecs_dem.run.triaxial --set seed=2 --set output_dir=out/spheres
    python -m ecs_dem.run.triaxial --set grain_shape=dimer --set seed=2 --set output_dir=out/dimer
    python bench/clumps_triaxial.py out/spheres out/dimer out/tetrahedron --out clumps_triaxial
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from ecs_dem.run.triaxial.report import read_run_csv, summarise


def shape_of(name: str) -> str:
    last = name.rsplit("_", 1)[-1]
    return "sphere" if last.startswith("seed") else last


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--case", default="small")
    ap.add_argument("--sigma-c", type=float, default=100e3)
    ap.add_argument("--strain", type=float, default=1.0, help="cut every run here at most")
    ap.add_argument("--out", default="clumps_triaxial")
    a = ap.parse_args(argv)
    runs = {p.stem: read_run_csv(p) for folder in a.folders
            for p in sorted(folder.glob(f"{a.case}_patch_seed*.csv"))}
    for name in [n for n, r in runs.items() if np.count_nonzero(r["phase"] >= 1) < 3]:
        print(f"  {name}: not loaded yet (still confining), left out")
        del runs[name]
    if not runs:
        ap.error("no run CSVs with a loading phase found in the folders")
    top = min(a.strain, *(float(r["strain"][r["phase"] >= 1].max()) for r in runs.values()))
    rows, by_shape = [], {}
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(6, 7), sharex=True)
    colours = {}
    for name, run in runs.items():
        keep = run["strain"] <= top
        cut = {k: v[keep] for k, v in run.items()}
        s = summarise(cut, a.sigma_c)
        shape = shape_of(name)
        rows.append([name, shape, s["peak_sigma_d"], s["strain_at_peak"], s["friction_angle"],
                     s["dilatancy_angle"], s["final_eps_v"]])
        by_shape.setdefault(shape, []).append((s["friction_angle"], s["dilatancy_angle"]))
        shear = cut["phase"] >= 1
        c = colours.setdefault(shape, f"C{len(colours)}")
        ax1.plot(100 * cut["strain"][shear], cut["sigma_d"][shear] / 1e3, color=c, lw=1,
                 label=shape if len(by_shape[shape]) == 1 else None)
        ax2.plot(100 * cut["strain"][shear], 100 * cut["volumetric_strain"][shear], color=c, lw=1)
    ax1.set_ylabel("sigma_d (kPa)")
    ax2.set_ylabel("eps_v (%, compression positive)")
    ax2.set_xlabel("axial strain (%)")
    ax1.legend()
    ax1.set_title(f"triaxial {a.case}, sigma_c {a.sigma_c / 1e3:g} kPa, to {100 * top:.1f} %")
    fig.tight_layout()
    fig.savefig(f"{a.out}.png", dpi=100)
    with open(f"{a.out}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "shape", "peak_sigma_d (Pa)", "strain_at_peak", "friction_angle (deg)",
                    "dilatancy_angle (deg)", "eps_v at the cut"])
        w.writerows([[r[0], r[1], *(f"{x:.4g}" for x in r[2:])] for r in rows])
    print(f"cut at {100 * top:.2f} % axial strain")
    for r in rows:
        print(f"  {r[0]:34s} peak {r[2] / 1e3:6.1f} kPa at {100 * r[3]:5.2f} %  phi {r[4]:5.1f}  "
              f"psi {r[5]:5.1f} deg")
    for shape, values in by_shape.items():
        phi, psi = np.mean(values, axis=0)
        print(f"  mean {shape:12s} phi {phi:5.1f} deg  psi {psi:5.1f} deg ({len(values)} runs)")
    print(f"{a.out}.png, {a.out}.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
