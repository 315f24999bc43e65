"""Triaxial test: wall time for 20 ms of physical time, MSS_patch against MSS_particle.

    python bench/triaxial.py                    # case 1 on 2 ranks, both models, 1 repetition
    python bench/triaxial.py --case small --ranks 1 --repeats 3
    python bench/triaxial.py --physical-time 0.005 --json out.json
    python bench/triaxial.py --ranks 1 --physical-time 0.005 --particle-dt-fraction 0.016

The paper's Table 4 (MercuryDPM): case 1 about 32 min (MSS_particle) and
5 min (MSS_patch) for 20 ms; case 2 about 96 and 17 min; MSS_patch about 5
times faster. Each measurement is a fresh process (``mpiexec.mpich -n
RANKS``) that builds the triaxial test's world (``ecs_dem.run.triaxial``)
from the cached packing (the same for both models), runs a warm-up
(compilation, the first rebuilds), then times ``--physical-time`` of the
confinement phase (stress ramp, all contacts active) between barriers. Models are interleaved per repetition;
the table gives the median. This machine's speed swings by up to 2x from
outside: compare the two models within one run.

Both models take the grains' time step (run/triaxial/driver.py, Time step). There
MSS_patch's 4 mm mesh applies the paper's bending damper in full, while
MSS_particle's 1.33 mm mesh could not resolve it and applies a fraction
(systems/membrane/bending.py, Time step): the table's damping column gives
it, least and median over the hinges. ``--particle-dt-fraction F`` also
times MSS_particle at F times the grains' Rayleigh time, the step at which
it applies the paper's damper too (0.016 on case 1's undeformed mesh).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from worker_result import print_result, run_for_result, timed_run  # noqa: E402

PAPER_MINUTES = {("1", "particle"): 32.0, ("1", "patch"): 5.0,
                 ("2", "particle"): 96.0, ("2", "patch"): 17.0}


def damping_fraction(world) -> tuple[float, float]:
    """(least, median) over the membrane's hinges of s_h, the fraction of the paper's bending
    damper that MembraneBending applies at this time step (systems/membrane/bending.py, Time
    step: s_h = min(1, q / (dt max r_i)) over the hinge's vertices; 1 = the paper's damper)."""
    from ecs_dem.systems.membrane.bending import DAMPING_STEP_BOUND

    h, p = world.membrane_hinges, world.particles
    rates = p.with_ghosts("bending_damping_rate")[h.owned("rows")].max(axis=1)
    s_h = np.minimum(1.0, DAMPING_STEP_BOUND / np.maximum(world.dt * rates, 1e-300))
    every = np.concatenate(world.comm.allgather_object(s_h))
    return float(every.min()), float(np.median(every))


def worker(case: str, model: str, physical_time: float, warmup: int,
           particle_dt_fraction: float | None = None) -> None:
    from ecs_dem.comm import default_comm
    from ecs_dem.config import merge_config
    from ecs_dem.run.triaxial import driver as triaxial

    comm = default_comm()
    defaults, _ = triaxial.choose_case_and_model(["--case", case, "--model", model])
    overrides = {"snapshot_every": 0, "progress": False}
    if particle_dt_fraction is not None:
        overrides["particle_dt_fraction"] = particle_dt_fraction
    cfg = merge_config(defaults, overrides)
    pack = triaxial.packing(cfg, Path(cfg["output_dir"]) / f"{case}_seed{cfg['seed']}_packing.npz",
                            comm, log=lambda *a: None)
    world, _ = triaxial.build_world(cfg, pack, None, comm, log=lambda *a: None)
    steps = int(round(physical_time / world.dt))
    result = timed_run(world, steps, warmup)
    p = world.particles
    vertices = comm.sum(int((p.kind[:p.n_owned] == 1).sum()))
    least, median = damping_fraction(world)
    if comm.rank == 0:  # one RESULT line: two ranks' lines can interleave in mpiexec's output
        print_result({**result, "case": case, "model": model, "physical_time": physical_time,
                      "vertices": int(vertices), "grains": int(result["particles"] - vertices),
                      "dt": world.dt, "damping_least": least, "damping_median": median})


def print_profile(info: dict) -> None:
    """µs per step of each timer, the models side by side: where each model's step goes."""
    labels = list(info)
    timers = {label: r["ms_per_step_by_rank"][0] for label, r in info.items()}
    keys = sorted({k for t in timers.values() for k in t}, key=lambda k: -max(t.get(k, 0.0) for t in timers.values()))
    print(f"\nµs per step, rank 0, last repetition\n{'timer':48s}" + "".join(f"{m:>14s}" for m in labels))
    for key in keys:
        print(f"{key:48s}" + "".join(f"{1e3 * timers[m].get(key, 0.0):14.1f}" for m in labels))
    for label, model in (("sum of the timers", None), ("wall time per step", "wall")):
        row = ""
        for m in labels:
            value = (sum(timers[m].values()) if model is None
                     else info[m]["seconds"] / info[m]["steps"] * 1e3)
            row += f"{1e3 * value:14.1f}"
        print(f"{label:48s}{row}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="1", choices=("small", "1", "2"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--physical-time", type=float, default=0.02)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--profile", action="store_true",
                    help="also print µs per step by system and halo operation (last repetition, rank 0)")
    ap.add_argument("--particle-dt-fraction", type=float,
                    help="also time MSS_particle at this fraction of the grains' Rayleigh time "
                         "(0.016: the paper's bending damper in full on the undeformed mesh)")
    ap.add_argument("--worker", choices=("patch", "particle"))
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.case, args.worker, args.physical_time, args.warmup, args.particle_dt_fraction)
        return 0
    # the packing once, before any timing (both models start from it)
    subprocess.run(["mpiexec.mpich", "-n", str(args.ranks), sys.executable, __file__, "--worker",
                    "patch", "--case", args.case, "--physical-time", "0", "--warmup", "0"],
                   check=True, capture_output=True)
    runs = [("patch", "patch", None), ("particle", "particle", None)]
    if args.particle_dt_fraction is not None:
        runs.append((f"particle@{args.particle_dt_fraction:g}", "particle", args.particle_dt_fraction))
    times: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    info = {}
    for _ in range(args.repeats):
        for label, model, fraction in runs:
            cmd = ["mpiexec.mpich", "-n", str(args.ranks), sys.executable, __file__, "--worker",
                   model, "--case", args.case, "--physical-time", str(args.physical_time),
                   "--warmup", str(args.warmup)]
            if fraction is not None:
                cmd += ["--particle-dt-fraction", str(fraction)]
            r = run_for_result(cmd, timeout=7200)
            times[label].append(r["seconds"])
            info[label] = r
            print(f"  {label:14s} {r['seconds']:8.1f} s for {args.physical_time * 1e3:g} ms "
                  f"({r['steps']} steps of {r['dt']:.3g} s, {r['grains']} grains, "
                  f"{r['vertices']} vertices, {args.ranks} ranks)", flush=True)
    scale = 0.02 / args.physical_time
    print(f"\ncase {args.case}, {args.ranks} rank(s), median of {args.repeats}; wall time scaled to 20 ms;"
          "\ndamping: the bending damper applied, as a fraction of the paper's (least / median"
          " over the hinges, at the end)")
    print(f"{'model':16s}{'grains':>7s}{'vertices':>9s}{'dt (s)':>10s}{'steps':>8s}{'s':>9s}"
          f"{'min/20ms':>9s}{'paper min':>10s}{'paper/ours':>11s}{'damping':>13s}")
    summary = {}
    for label, model, _ in runs:
        s = statistics.median(times[label])
        minutes = s * scale / 60
        paper = PAPER_MINUTES.get((args.case, model))
        r = info[label]
        summary[label] = {"seconds": s, "minutes_per_20ms": minutes, "paper_minutes": paper,
                          "grains": r["grains"], "vertices": r["vertices"], "dt": r["dt"],
                          "steps": r["steps"], "runs": times[label],
                          "damping_least": r["damping_least"], "damping_median": r["damping_median"]}
        print(f"{label:16s}{r['grains']:7d}{r['vertices']:9d}{r['dt']:10.3g}{r['steps']:8d}{s:9.1f}"
              f"{minutes:9.2f}"
              + (f"{paper:10.0f}{paper / minutes:11.1f}" if paper else f"{'-':>10s}{'-':>11s}")
              + f"{r['damping_least']:7.2f} /{r['damping_median']:4.2f}")
    ratio = summary["particle"]["seconds"] / summary["patch"]["seconds"]
    print(f"MSS_particle / MSS_patch time: {ratio:.2f} (paper: about 6.4 for case 1, 5.6 for case 2;"
          " target at least 5)")
    full = None
    if args.particle_dt_fraction is not None:
        label = runs[-1][0]
        full = summary[label]["seconds"] / summary["patch"]["seconds"]
        print(f"{label} / MSS_patch time: {full:.2f} (MSS_particle at the smaller step, MSS_patch "
              "at the grains'; the damping column says how much of the paper's damper each applies)")
    if args.profile:
        print_profile(info)
    if args.json:
        args.json.write_text(json.dumps({"case": args.case, "ranks": args.ranks,
                                         "physical_time": args.physical_time, "ratio": ratio,
                                         "ratio_particle_dt_fraction": full,
                                         "models": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
