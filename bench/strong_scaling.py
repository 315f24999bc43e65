"""Strong scaling, ecs_dem side by side with LAMMPS: time per step as particles per rank fall.

On a cluster a problem is spread until each rank holds a few thousand
particles; there the fixed cost of a step (Python scheduling, message
latency, the rebuild vote) decides the speed, not the kernels. This machine
has two cores, so the benchmark reaches small loads per rank the other way:
it shrinks the problem (``bench/shrunk_problems.py``) to about 16,000, 8,000,
4,000, 2,000 and 1,000 particles per rank and runs it on 1 and 2 ranks, for
both codes, interleaved, each run in a fresh process.

    python bench/strong_scaling.py              # 3 repetitions (about 25 minutes)
    python bench/strong_scaling.py --quick      # 1 repetition, fewer steps (under 5 minutes)
    python bench/strong_scaling.py --problems chute --per-rank 2000,1000 --json out.json

Per step and rank (medians over repetitions), in microseconds:

* ecs_dem, from the world's own timers (``World.timers``): *compute* = the
  systems' ``run`` (force kernels, neighbour build, integration) and the
  zeroing of accumulators; *comm* = halo forward and reverse, the domain
  rebuild (migration, sort, ghost layers) and the rebuild check (its
  displacement test and the one reduction per step that is the rebuild vote);
  *untimed* = the wall time outside every timer (the scheduler's Python).
* LAMMPS, from its timing breakdown: compute = Pair + Neigh + Modify, comm =
  Comm, other = Output + Other.
* fixed: the intercept of a least-squares line of the time per step against
  particles per rank (one line per code, problem and rank count): what a step
  costs however few particles a rank holds. Its Python part for ecs_dem is the
  untimed time plus the per-call overhead inside the timers.

Rates are particle-steps per second per core; "LMP/ours" is LAMMPS's time
per step over ours (above 1: we are faster). Launchers as in
``bench/vs_lammps.py``: LAMMPS under ``mpirun.openmpi``, ecs_dem under
``mpiexec.mpich``. This machine's speed swings by up to 2x from outside the
VM: compare the medians of interleaved runs only.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from peer_data import available_problems  # noqa: E402
from shrunk_problems import write_problem  # noqa: E402
from vs_lammps import find_lammps, run_lammps  # noqa: E402
from worker_result import print_result, run_for_result, timed_run  # noqa: E402

WARMUP = {"chute": 50, "bed": 200}
COMM_TIMERS = ("halo:forward", "halo:reverse", "domain:rebuild", "domain:check")


def ecs_worker(problem: str, data: str, steps: int, warmup: int) -> None:
    """Inside the launched process: build from `data`, warm up, time, report the timers."""
    if problem == "chute":
        from ecs_dem.run import chute
        world = chute.build_world(dict(chute.DEFAULTS, data=data, thermo_every=0))
    else:
        from one_rank import build_bed
        world = build_bed(Path(data))
    result = timed_run(world, steps, warmup)
    result["rebuilds"] = world.domain.rebuild_count
    if world.comm.rank == 0:
        print_result(result)


def split_ecs(r: dict) -> dict:
    """Microseconds per step and rank (mean over ranks): wall, compute, comm, untimed."""
    wall = 1e6 * r["seconds"] / r["steps"]
    parts = {"wall": wall, "compute": 0.0, "comm": 0.0, "untimed": 0.0}
    for timers in r["ms_per_step_by_rank"]:
        comm = sum(1e3 * v for k, v in timers.items() if k in COMM_TIMERS)
        compute = sum(1e3 * v for k, v in timers.items() if k not in COMM_TIMERS)
        parts["compute"] += compute / r["ranks"]
        parts["comm"] += comm / r["ranks"]
        parts["untimed"] += (wall - comm - compute) / r["ranks"]
    return parts


def split_lammps(r: dict) -> dict:
    """Microseconds per step and rank (LAMMPS's averages over ranks): wall, compute, comm, other."""
    s, per = r["sections"], 1e6 / r["steps"]
    return {"wall": per * r["seconds"],
            "compute": per * (s.get("Pair", 0) + s.get("Neigh", 0) + s.get("Modify", 0)),
            "comm": per * s.get("Comm", 0.0),
            "other": per * (s.get("Output", 0.0) + s.get("Other", 0.0))}


def run_ecs(problem: str, data: Path, ranks: int, steps: int, warmup: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", problem, "--data", str(data),
           "--steps", str(steps), "--warmup", str(warmup)]
    if ranks > 1:
        cmd = [shutil.which("mpiexec.mpich") or "mpiexec.mpich", "-n", str(ranks)] + cmd
    r = run_for_result(cmd, timeout=3600)
    if r["ranks"] != ranks:
        raise RuntimeError(f"asked for {ranks} ranks, ecs_dem ran on {r['ranks']}")
    return r


def fixed_cost(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(intercept us, slope us per particle) of the least-squares line through (n, t)."""
    if len(points) < 2:
        return float("nan"), float("nan")
    n, t = np.array(points).T
    slope, intercept = np.polyfit(n, t, 1)
    return float(intercept), float(slope)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 repetition, a sixth of the steps")
    ap.add_argument("--repeats", type=int, default=None, help="default 3 (1 with --quick)")
    ap.add_argument("--problems", default="chute,bed")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--per-rank", default="16000,8000,4000,2000,1000")
    ap.add_argument("--budget", type=float, default=None,
                    help="particle-steps per rank and run (default 1.2e7, 2e6 with --quick)")
    ap.add_argument("--no-lammps", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--warmup", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        ecs_worker(args.worker, args.data, args.steps, args.warmup)
        return 0

    repeats = args.repeats or (1 if args.quick else 3)
    budget = args.budget or (2e6 if args.quick else 1.2e7)
    problems = available_problems([p for p in args.problems.split(",") if p])
    ranks_list = [int(r) for r in args.ranks.split(",")]
    per_rank = [int(n) for n in args.per_rank.split(",")]
    lmp = None if args.no_lammps else find_lammps()
    print(f"LAMMPS: {lmp or 'not run'}; {repeats} repetition(s), {budget:.2g} particle-steps per "
          "rank and run", flush=True)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="strong_scaling_") as tmp:
        tmp = Path(tmp)
        files = {}
        for problem in problems:
            for ranks in ranks_list:
                for n in per_rank:
                    files[problem, ranks, n] = write_problem(problem, n * ranks, tmp)
        for rep in range(repeats):
            for problem in problems:
                for n in per_rank:
                    for ranks in ranks_list:
                        path, total, side = files[problem, ranks, n]
                        steps = max(int(budget / n), 100)
                        warmup = WARMUP[problem]
                        r = run_ecs(problem, path, ranks, steps, warmup)
                        r.update(code="ecs_dem", problem=problem, per_rank=n, parts=split_ecs(r))
                        runs.append(r)
                        msg = (f"  [{rep + 1}/{repeats}] {problem:5s} {n:6d}/rank {ranks} rank(s) "
                               f"{total:6d} particles {steps:6d} steps: ecs_dem "
                               f"{r['parts']['wall']:8.1f} us/step")
                        if lmp:
                            q = run_lammps(lmp, problem, ranks, steps, warmup, tmp, data=path,
                                           side=side)
                            q.update(problem=problem, per_rank=n, parts=split_lammps(q))
                            runs.append(q)
                            msg += f"  LAMMPS {q['parts']['wall']:8.1f} us/step"
                        print(msg, flush=True)
    table = summarise(runs, problems, ranks_list, per_rank)
    print_table(table, problems, ranks_list)
    if args.json:
        args.json.write_text(json.dumps({"table": table, "runs": runs}, indent=2))
    return 0


def summarise(runs, problems, ranks_list, per_rank) -> list[dict]:
    rows = []
    for problem in problems:
        for ranks in ranks_list:
            for n in per_rank:
                row = {"problem": problem, "ranks": ranks, "per_rank": n}
                for code in ("ecs_dem", "LAMMPS"):
                    mine = [r for r in runs if r["code"] == code and r["problem"] == problem
                            and r["ranks"] == ranks and r["per_rank"] == n]
                    if mine:
                        parts = {k: statistics.median(r["parts"][k] for r in mine)
                                 for k in mine[0]["parts"]}
                        parts["rate_per_core"] = statistics.median(r["rate"] / ranks for r in mine)
                        parts["particles"] = mine[0]["particles"]
                        row[code] = parts
                rows.append(row)
    return rows


def print_table(rows, problems, ranks_list) -> None:
    print("\nus per step and rank (medians); rate: M particle-steps/s per core; "
          "LMP/ours: LAMMPS's time per step over ours")
    head = (f"{'problem':7s} {'ranks':>5s} {'n/rank':>7s} | {'ours':>7s} {'compute':>7s} "
            f"{'comm':>6s} {'untimed':>7s} {'rate':>6s} | {'LAMMPS':>7s} {'compute':>7s} "
            f"{'comm':>6s} {'other':>6s} {'rate':>6s} | {'LMP/ours':>8s}")
    print(head)
    for row in rows:
        e, q = row.get("ecs_dem"), row.get("LAMMPS")
        line = f"{row['problem']:7s} {row['ranks']:5d} {row['per_rank']:7d} | "
        line += (f"{e['wall']:7.1f} {e['compute']:7.1f} {e['comm']:6.1f} {e['untimed']:7.1f} "
                 f"{e['rate_per_core'] / 1e6:6.2f} | ") if e else f"{'-':>39s} | "
        line += (f"{q['wall']:7.1f} {q['compute']:7.1f} {q['comm']:6.1f} {q['other']:6.1f} "
                 f"{q['rate_per_core'] / 1e6:6.2f} | ") if q else f"{'-':>38s} | "
        line += f"{q['wall'] / e['wall']:8.2f}" if e and q else f"{'-':>8s}"
        print(line)
    print("\nfixed cost per step (intercept of time per step against particles per rank) and "
          "marginal cost per particle:")
    for problem in problems:
        for ranks in ranks_list:
            for code in ("ecs_dem", "LAMMPS"):
                pts = [(r[code]["particles"] / ranks, r[code]["wall"]) for r in rows
                       if r["problem"] == problem and r["ranks"] == ranks and code in r]
                if len(pts) >= 2:
                    a, b = fixed_cost(pts)
                    print(f"  {problem:5s} {ranks} rank(s) {code:7s}: fixed {a:7.1f} us/step, "
                          f"{1e3 * b:6.1f} ns per particle-step")
    for problem in problems:
        for n in sorted({r["per_rank"] for r in rows}, reverse=True):
            one = next((r for r in rows if r["problem"] == problem and r["ranks"] == 1
                        and r["per_rank"] == n), None)
            for row in rows:
                if row["problem"] != problem or row["per_rank"] != n or row["ranks"] == 1 or not one:
                    continue
                effs = []
                for code in ("ecs_dem", "LAMMPS"):
                    if code in row and code in one:
                        effs.append(f"{code} {row[code]['rate_per_core'] / one[code]['rate_per_core']:.2f}")
                if effs:
                    print(f"  efficiency {problem:5s} {n:6d}/rank on {row['ranks']} ranks "
                          f"(per-core rate over 1 rank's at the same load): " + ", ".join(effs))


if __name__ == "__main__":
    sys.exit(main())
