"""Triaxial test: the 2-rank curve against the 1-rank curve, and a run stopped by SIGTERM
mid-shear and restarted against the uninterrupted run (bit for bit, same rank count).

    python bench/triaxial_reproducibility.py                  # small case, MSS_patch, to 3 %
    python bench/triaxial_reproducibility.py --max-strain 0.15 --model particle

Runs the triaxial test (``python -m ecs_dem.run.triaxial``) in fresh processes
(``mpiexec.mpich``), each
in its own directory under ``--out`` with the same cached packing:

- ``ranks1``: 1 rank, uninterrupted (the reference);
- ``ranks2``: 2 ranks, uninterrupted; the membrane and the sample cross the
  rank boundary (the decomposition cuts the longest axis, the height);
- ``ranks1_killed`` and ``ranks2_killed``: as above, stopped by SIGTERM as soon
  as the driver reports ``--kill-at`` axial strain, then restarted from the
  checkpoint the soft kill wrote.

- ``perturbed``: 1 rank, one grain moved by ``--perturb`` (1e-12 m) before
  the start: the yardstick for how far round-off alone carries a run.

Printed: for each killed run, the step it stopped at and whether every
record of its time series (HDF5, all columns) equals the uninterrupted run's
bit for bit; for 2 ranks against 1, and for the perturbed run against 1
rank, each run's stresses at its own equilibrium, then the largest and rms
difference of sigma_d at equal axial strain, relative to the peak, where the
two curves part by more than 1e-6 of the peak, and eps_v at the last common
strain. Contact
forces summed in another order differ in the last bit, and a granular
packing amplifies that over the tens of thousands of steps of confinement:
2 ranks agree with 1 as a perturbed run does, not to round-off.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DRIVER = ["-m", "ecs_dem.run.triaxial"]


def command(ranks: int, directory: Path, args: argparse.Namespace, *extra: str) -> list[str]:
    cmd = ["mpiexec.mpich", "-n", str(ranks)] if ranks > 1 else []
    settings = [f"output_dir={directory}", f"max_strain={args.max_strain}", f"seed={args.seed}",
                "snapshot_every=0", "checkpoint_every=0", "progress=false", *args.set, *extra]
    out = [*cmd, sys.executable, *DRIVER, "--case", args.case, "--model", args.model]
    for s in settings:
        out += ["--set", s]
    return out


def run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stdout}\n{res.stderr}")
    return time.perf_counter() - t0


def run_killed(ranks: int, directory: Path, args: argparse.Namespace) -> int:
    """Start, SIGTERM once the driver reports the kill strain, restart; the step it stopped at."""
    proc = subprocess.Popen(command(ranks, directory, args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})  # lines as they come
    for line in proc.stdout:
        if line.strip().startswith("strain") and float(line.split()[1]) >= 100 * args.kill_at:
            proc.send_signal(signal.SIGTERM)
            break
    else:
        raise SystemExit(f"the run ended before {args.kill_at} strain: {proc.stderr.read()}")
    out, err = proc.communicate()
    if proc.returncode != 0 or "stopped by SIGTERM" not in out:
        raise SystemExit(f"the soft kill failed ({proc.returncode}):\n{out}\n{err}")
    checkpoint = directory / f"{run_name(args)}.checkpoint.h5"
    import h5py

    with h5py.File(checkpoint, "r") as f:
        step = int(f.attrs["step"])
    run(command(ranks, directory, args, f"restart={checkpoint}"))
    return step


def run_name(args: argparse.Namespace) -> str:
    return f"{args.case}_{args.model}_seed{args.seed}"


def series(directory: Path, args: argparse.Namespace) -> dict[str, np.ndarray]:
    import h5py

    with h5py.File(directory / f"{run_name(args)}.h5", "r") as f:
        return {k: np.asarray(v) for k, v in f["timeseries"].items()}


def identical(a: dict, b: dict) -> tuple[bool, str]:
    if sorted(a) != sorted(b):
        return False, f"columns differ: {sorted(set(a) ^ set(b))}"
    for k in a:
        if a[k].shape != b[k].shape:
            return False, f"{k}: {a[k].shape[0]} records against {b[k].shape[0]}"
        if not np.array_equal(a[k], b[k], equal_nan=True):
            first = int(np.argmax(a[k] != b[k]))
            return False, f"{k} differs first at record {first} (step {a['step'][first]})"
    return True, f"{a['step'].size} records, {len(a)} columns"


def compare_curves(one: dict, two: dict, labels: str = "1 rank / 2 ranks") -> str:
    """Each run's equilibrium (its first loading record), then sigma_d and eps_v against axial
    strain: two runs reach equilibrium at different steps, so their curves are compared at
    equal strain (the second interpolated linearly onto the first's records; the strain grows
    monotonically under the platen's constant speed), over the strain both reached."""
    shear = [run["phase"] >= 1 for run in (one, two)]
    starts = [int(np.argmax(s)) for s in shear]
    conf = {k: (one[k][starts[0]], two[k][starts[1]])
            for k in ("sigma_top", "sigma_bottom", "sigma_felt")}
    e1, e2 = one["strain"][shear[0]], two["strain"][shear[1]]
    common = e1 <= e2[-1]
    eps = e1[common]
    peak = float(np.max(np.abs(one["sigma_d"][shear[0]])))
    diff = np.abs(one["sigma_d"][shear[0]][common]
                  - np.interp(eps, e2, two["sigma_d"][shear[1]])) / peak
    parted = np.flatnonzero(diff > 1e-6)
    where = f"{100 * eps[parted[0]]:.2f} %" if parted.size else "never"
    ev1 = one["volumetric_strain"][shear[0]][common][-1]
    ev2 = float(np.interp(eps[-1], e2, two["volumetric_strain"][shear[1]]))
    lines = [f"confinement end ({labels}, kPa; steps {one['step'][starts[0]]} / "
             f"{two['step'][starts[1]]}): " + ", ".join(
                 f"{k} {a / 1e3:.3f} / {b / 1e3:.3f}" for k, (a, b) in conf.items()),
             f"sigma_d against strain (to {100 * eps[-1]:.2f} %): largest difference "
             f"{100 * diff.max():.3g} % of the peak ({peak / 1e3:.2f} kPa), rms "
             f"{100 * np.sqrt(np.mean(diff ** 2)):.3g} %, at the end {100 * diff[-1]:.3g} %; "
             f"the curves part by more than 1e-6 of the peak at {where}",
             f"eps_v at {100 * eps[-1]:.2f} % strain: {100 * ev1:.4f} % / {100 * ev2:.4f} %"]
    return "\n  ".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="small", choices=("small", "1", "2"))
    ap.add_argument("--model", default="patch", choices=("patch", "particle"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-strain", type=float, default=0.03)
    ap.add_argument("--kill-at", type=float, default=0.01, help="axial strain of the SIGTERM")
    ap.add_argument("--out", type=Path, default=REPO / "output" / "triaxial_reproducibility")
    ap.add_argument("--perturb", type=float, default=1e-12, help="m, one grain's shift")
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE for the triaxial test")
    args = ap.parse_args(argv)
    if not 0 < args.kill_at < args.max_strain:
        ap.error("--kill-at must lie between 0 and --max-strain")
    runs = {name: args.out / name
            for name in ("ranks1", "ranks2", "ranks1_killed", "ranks2_killed", "perturbed")}
    for d in runs.values():
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    print(f"triaxial reproducibility: case {args.case}, MSS_{args.model}, seed {args.seed}, "
          f"to {100 * args.max_strain:g} % strain, SIGTERM at {100 * args.kill_at:g} %")
    seconds = run(command(1, runs["ranks1"], args))
    print(f"  1 rank: {seconds:.0f} s")
    packing = runs["ranks1"] / f"{args.case}_seed{args.seed}_packing.npz"
    for d in list(runs.values())[1:]:
        shutil.copy(packing, d)
    with np.load(packing) as f:
        moved = {k: f[k] for k in f.files}
    moved["position"] = moved["position"].copy()
    moved["position"][0, 0] += args.perturb
    np.savez(runs["perturbed"] / packing.name, **moved)
    seconds = run(command(2, runs["ranks2"], args))
    print(f"  2 ranks: {seconds:.0f} s")
    seconds = run(command(1, runs["perturbed"], args))
    print(f"  1 rank, one grain moved by {args.perturb:g} m: {seconds:.0f} s")
    ok = True
    for ranks in (1, 2):
        step = run_killed(ranks, runs[f"ranks{ranks}_killed"], args)
        same, detail = identical(series(runs[f"ranks{ranks}"], args),
                                 series(runs[f"ranks{ranks}_killed"], args))
        ok &= same
        print(f"  {ranks} rank(s), SIGTERM at step {step} and restart: "
              f"{'bit for bit' if same else 'DIFFERS'} ({detail})")
    reference = series(runs["ranks1"], args)
    print("  2 ranks against 1 rank:\n  " + compare_curves(reference, series(runs["ranks2"], args)))
    print(f"  1 rank with one grain moved by {args.perturb:g} m against 1 rank:\n  "
          + compare_curves(reference, series(runs["perturbed"], args), "1 rank / moved"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
