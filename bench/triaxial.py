"""Triaxial test: wall time for 20 ms of physical time, MSS_patch against MSS_particle.

    python bench/triaxial.py                    # case 1 on 2 ranks, both models, 1 repetition
    python bench/triaxial.py --case small --ranks 1 --repeats 3
    python bench/triaxial.py --physical-time 0.005 --json out.json

The paper's Table 4 (MercuryDPM): case 1 about 32 min (MSS_particle) and
5 min (MSS_patch) for 20 ms; case 2 about 96 and 17 min; MSS_patch about 5
times faster. Each measurement is a fresh process (``mpiexec.mpich -n
RANKS``) that builds run/triaxial.py's world from the cached packing (the
same for both models), runs a warm-up (compilation, the first rebuilds),
then times ``--physical-time`` of the confinement phase (stress ramp, all
contacts active) between barriers. Models are interleaved per repetition;
the table gives the median. This machine's speed swings by up to 2x from
outside: compare the two models within one run.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "run"))
from worker_result import print_result, run_for_result, timed_run  # noqa: E402

PAPER_MINUTES = {("1", "particle"): 32.0, ("1", "patch"): 5.0,
                 ("2", "particle"): 96.0, ("2", "patch"): 17.0}


def worker(case: str, model: str, physical_time: float, warmup: int) -> None:
    from ecs_dem.comm import default_comm
    from ecs_dem.config import merge_config

    import triaxial

    comm = default_comm()
    defaults, _ = triaxial.choose_case_and_model(["--case", case, "--model", model])
    cfg = merge_config(defaults, {"snapshot_every": 0, "progress": False})
    pack = triaxial.packing(cfg, Path(cfg["output_dir"]) / f"{case}_seed{cfg['seed']}_packing.npz",
                            comm, log=lambda *a: None)
    world, _ = triaxial.build_world(cfg, pack, None, comm, log=lambda *a: None)
    steps = int(round(physical_time / world.dt))
    result = timed_run(world, steps, warmup)
    p = world.particles
    vertices = comm.sum(int((p.kind[:p.n_owned] == 1).sum()))
    if comm.rank == 0:  # one RESULT line: two ranks' lines can interleave in mpiexec's output
        print_result({**result, "case": case, "model": model, "physical_time": physical_time,
                      "vertices": int(vertices), "grains": int(result["particles"] - vertices)})


def print_profile(info: dict) -> None:
    """µs per step of each timer, both models side by side: where each model's step goes."""
    timers = {model: r["ms_per_step_by_rank"][0] for model, r in info.items()}
    keys = sorted({k for t in timers.values() for k in t}, key=lambda k: -max(t.get(k, 0.0) for t in timers.values()))
    print(f"\nµs per step, rank 0, last repetition\n{'timer':48s}{'patch':>10s}{'particle':>10s}")
    for key in keys:
        print(f"{key:48s}" + "".join(f"{1e3 * timers[m].get(key, 0.0):10.1f}" for m in ("patch", "particle")))
    for label, model in (("sum of the timers", None), ("wall time per step", "wall")):
        row = ""
        for m in ("patch", "particle"):
            value = (sum(timers[m].values()) if model is None
                     else info[m]["seconds"] / info[m]["steps"] * 1e3)
            row += f"{1e3 * value:10.1f}"
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
    ap.add_argument("--worker", choices=("patch", "particle"))
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.case, args.worker, args.physical_time, args.warmup)
        return 0
    # the packing once, before any timing (both models start from it)
    subprocess.run(["mpiexec.mpich", "-n", str(args.ranks), sys.executable, __file__, "--worker",
                    "patch", "--case", args.case, "--physical-time", "0", "--warmup", "0"],
                   check=True, capture_output=True)
    times: dict[str, list[float]] = {"patch": [], "particle": []}
    info = {}
    for _ in range(args.repeats):
        for model in ("patch", "particle"):
            r = run_for_result(["mpiexec.mpich", "-n", str(args.ranks), sys.executable, __file__,
                                "--worker", model, "--case", args.case, "--physical-time",
                                str(args.physical_time), "--warmup", str(args.warmup)], timeout=7200)
            times[model].append(r["seconds"])
            info[model] = r
            print(f"  {model:8s} {r['seconds']:8.1f} s for {args.physical_time * 1e3:g} ms "
                  f"({r['steps']} steps, {r['grains']} grains, {r['vertices']} vertices, "
                  f"{args.ranks} ranks)", flush=True)
    scale = 0.02 / args.physical_time
    print(f"\ncase {args.case}, {args.ranks} rank(s), median of {args.repeats}; wall time scaled to 20 ms")
    print(f"{'model':10s}{'grains':>8s}{'vertices':>10s}{'steps':>8s}{'s':>10s}{'min/20ms':>10s}"
          f"{'paper min':>11s}{'paper/ours':>11s}")
    summary = {}
    for model in ("patch", "particle"):
        s = statistics.median(times[model])
        minutes = s * scale / 60
        paper = PAPER_MINUTES.get((args.case, model))
        summary[model] = {"seconds": s, "minutes_per_20ms": minutes, "paper_minutes": paper,
                          "grains": info[model]["grains"], "vertices": info[model]["vertices"],
                          "steps": info[model]["steps"], "runs": times[model]}
        print(f"{model:10s}{info[model]['grains']:8d}{info[model]['vertices']:10d}"
              f"{info[model]['steps']:8d}{s:10.1f}{minutes:10.2f}"
              + (f"{paper:11.0f}{paper / minutes:11.1f}" if paper else f"{'-':>11s}{'-':>11s}"))
    ratio = summary["particle"]["seconds"] / summary["patch"]["seconds"]
    print(f"MSS_particle / MSS_patch time: {ratio:.2f} (paper: about 6.4 for case 1, 5.6 for case 2;"
          " target at least 5)")
    if args.profile:
        print_profile(info)
    if args.json:
        args.json.write_text(json.dumps({"case": args.case, "ranks": args.ranks,
                                         "physical_time": args.physical_time, "ratio": ratio,
                                         "models": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
