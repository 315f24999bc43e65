"""Parallel throughput and load balance on 1 and 2 ranks (a benchmark, not a test).

Problems:
* chute: LAMMPS's bench/in.chute, 32,000 spheres, gran/hooke/history;
* bed: the settled Hertz-Mindlin bed of hm_bed.data (bench/peer_data.py)
  tiled 2 x 2 in x and y (80,000 spheres, 0.28 m x 0.28 m, walls, gravity);
* pour: run/pour.py on 2 ranks with and without load balancing; the box is
  cut in z, the bed settles at the bottom, and without balancing the upper
  rank runs out of particles.

Each run is ``mpiexec.mpich -n N python bench/parallel.py --worker ...``;
the parent prints particle-steps per second, parallel efficiency
(rate_N / (N rate_1)) and max/mean particles per rank.

    python bench/parallel.py                 # about 5 minutes
    python bench/parallel.py --quick         # a quarter of the steps
    python bench/parallel.py --json out.json
    python bench/parallel.py --profile       # also ms per step by system and halo operation, per rank
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from worker_result import print_result, run_for_result, timed_run  # noqa: E402
from peer_data import BED, chute_setting, missing, peer_file  # noqa: E402


def worker(problem: str, steps: int, warmup: int, extra: list[str]) -> None:
    if problem == "chute":
        from ecs_dem.run import chute
        world = chute.build_world(dict(chute.DEFAULTS, data=chute_setting(), thermo_every=0))
    elif problem == "bed":
        sys.path.insert(0, str(REPO / "bench"))
        from one_rank import build_bed
        if peer_file(BED) is None:
            raise SystemExit(f"bed: {missing(BED)}")
        world = build_bed(peer_file(BED), tiles=2)
    elif problem == "pour":
        from ecs_dem.config import merge_config
        from ecs_dem.run import pour
        cfg = merge_config(pour.DEFAULTS, dict(kv.split("=", 1) for kv in extra))
        cfg.update(quiet=True, snapshot_every=0)
        world = pour.build_world(cfg)
        steps = int(round(cfg["duration"] / world.dt))
        warmup = 0
    else:
        raise SystemExit(f"unknown problem {problem}")
    result = {"problem": problem, **timed_run(world, steps, warmup),
              "dims": [int(d) for d in world.domain.decomposition.dims]}
    if problem == "pour":
        from ecs_dem.systems.diagnostics import Diagnostics
        rec = next(s for s in world.systems if isinstance(s, Diagnostics)).records
        ratios = [r["max_particles_per_rank"] * world.comm.size / r["particles"] for r in rec]
        result["max_over_mean_final"] = ratios[-1]
        result["max_over_mean_mean"] = float(np.mean(ratios))
        result["balances"] = world.domain.decomposition.balance_count
    if world.comm.rank == 0:
        print_result(result)


def print_profile(problem: str, runs: list[dict]) -> None:
    """ms per step of each timer, one column per (ranks, rank): where the parallel time goes."""
    columns = [(r["ranks"], k, t) for r in runs for k, t in enumerate(r["ms_per_step_by_rank"])]
    keys = sorted({key for _, _, t in columns for key in t},
                  key=lambda key: -max(t.get(key, 0.0) for _, _, t in columns))
    print(f"  {problem}: ms per step   " + " ".join(f"{f'{n}r/rank {k}':>12s}" for n, k, _ in columns))
    for key in keys:
        print(f"  {key:40s}" + " ".join(f"{t.get(key, 0.0):12.3f}" for _, _, t in columns))
    print(f"  {'sum of the timers':40s}" + " ".join(f"{sum(t.values()):12.3f}" for _, _, t in columns))


def launch(ranks: int, problem: str, steps: int, warmup: int, extra=()) -> dict:
    cmd = ["mpiexec.mpich", "-n", str(ranks), sys.executable, __file__, "--worker", problem,
           "--steps", str(steps), "--warmup", str(warmup), *extra]
    return run_for_result(cmd, timeout=3600)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--profile", action="store_true",
                    help="print ms per step by system and halo operation on each rank")
    args, extra = ap.parse_known_args(argv)
    if args.worker:
        worker(args.worker, args.steps, args.warmup, extra)
        return 0
    scale = 0.25 if args.quick else 1.0
    results = []
    print(f"{'problem':8s} {'ranks':>5s} {'grid':>7s} {'particles':>9s} {'steps':>6s} "
          f"{'M p-steps/s':>12s} {'efficiency':>10s}")
    for problem, steps, warmup in (("chute", 6000, 200), ("bed", 1500, 100)):
        steps = int(steps * scale)
        base = None
        for ranks in (1, 2):
            r = launch(ranks, problem, steps, warmup)
            base = base or r["rate"]
            r["efficiency"] = r["rate"] / (ranks * base)
            results.append(r)
            print(f"{problem:8s} {ranks:5d} {'x'.join(map(str, r['dims'])):>7s} {r['particles']:9d} "
                  f"{steps:6d} {r['rate'] / 1e6:12.2f} {r['efficiency']:10.2f}", flush=True)
        if args.profile:
            print_profile(problem, [r for r in results if r["problem"] == problem])
    print("\nload balance, run/pour.py on 2 ranks (box cut in z; ideal max/mean = 1):")
    duration = 0.5 * scale
    for every in (0, 1000):
        r = launch(2, "pour", 0, 0, [f"balance_every={every}", f"duration={duration}"])
        results.append(r)
        label = "off" if every == 0 else f"every {every} steps"
        print(f"  balancing {label:18s} max/mean particles per rank: final {r['max_over_mean_final']:.2f}, "
              f"run average {r['max_over_mean_mean']:.2f}; {r['rate'] / 1e6:.2f} M p-steps/s, "
              f"{r['seconds']:.1f} s", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
