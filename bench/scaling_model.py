"""A model of the time per step on 8 to 1,024 ranks of a cluster, from measured parts.

    python bench/scaling_model.py strong.json            # strong.json: bench/strong_scaling.py --json
    python bench/scaling_model.py strong.json --latency 1.5e-6 --bandwidth 10e9 --particles 1e6

This machine has two cores, so the cluster is a model (docs/performance.md):

    t(P) = fixed + c (n + kappa g) + forward + vote + rebuild / R

with n = N / P particles and g ghost rows per rank. Measured here (the
JSON of ``bench/strong_scaling.py``, 1-rank runs, medians): ``fixed`` and
``c``, the intercept and slope of the time per step against particles per
rank, for both codes; the cost of one rebuild per particle (ecs_dem's
domain rebuild and neighbour search timers) and the steps between rebuilds.
Taken from the code (a small world of each problem is built and asked):
the fields a step forwards to ghost rows and their bytes, the bytes of a
ghost row at a rebuild and of a migrating row, the ghost width. Geometry:
the chute is a layer (columns of square cross-section, cut in x and y), the
bed a 3-D block (cubes); the density is that of the data file.
Assumed (options): the network's latency alpha and bandwidth beta (1.5 us,
10 GB/s: InfiniBand EDR between nodes), kappa = 0.5 (a ghost row costs half
an owned one: it is binned and searched, and half its pairs are evaluated
on both sides); migration: ecs_dem's two neighbourhood collectives over the
up to 26 adjacent ranks after one reduction, LAMMPS's staged exchange (two
rounds per cut axis). The measured 1-rank curve includes the Python fixed
cost, the kernels and the rank's own rebuild work. Messages per step:
one exchange per cut axis (two directions at once), three rounds in 3-D,
plus one reduction (the rebuild vote), 2 log2 P latencies. The wall forces
are summed over ranks only when something reads them (a servo wall, an
output; ``Halo.SUM``): the bed's fixed walls add no reduction per step. No
reverse of forces (newton off, both codes).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from peer_data import BED, chute_data, chute_setting, missing, peer_file  # noqa: E402

REBUILD_TIMERS = ("domain:rebuild", "NeighborSearch")


def code_facts(problem: str) -> dict:
    """From a world of the problem: ghost width, bytes forwarded per ghost row and step, bytes
    of a ghost row at a rebuild and of a migrating row, and the particle density."""
    from ecs_dem.domain import ghost_fields
    from ecs_dem.io.lammps_data import read_sphere_data
    from ecs_dem.row_packing import row_bytes, row_layout
    if problem == "chute":
        from ecs_dem.run import chute
        world = chute.build_world(dict(chute.DEFAULTS, data=chute_setting(), thermo_every=0))
        d = chute_data()
    else:
        from one_rank import build_bed
        if peer_file(BED) is None:
            raise SystemExit(f"bed: {missing(BED)}")
        world = build_bed(peer_file(BED))
        d = read_sphere_data(peer_file(BED))
    world.prepare()
    p = world.particles
    steady = world.describe_schedule().split("(steady state):")[1]
    forwarded = sorted({f.strip() for line in steady.splitlines() if "forward particles." in line
                        for f in line.split("forward particles.")[1].split(",")})
    z = d.position[:, 2]
    height = float(np.percentile(z, 99.5) - z.min() + d.diameter.max())
    area = float(np.prod(d.box_hi[:2] - d.box_lo[:2]))
    return {"ghost_width": world.domain.ghost_width, "forwarded": forwarded,
            "forward_bytes": sum(p.fields[f].np_dtype.itemsize * max(int(np.prod(p.fields[f].shape)), 1)
                                 for f in forwarded),
            "ghost_row_bytes": row_bytes(row_layout(p, ghost_fields(p))),
            "migrate_row_bytes": row_bytes(row_layout(p, list(p.fields))),
            "density": d.id.size / (area * height), "height": height}


def one_rank_curve(runs: list[dict], problem: str, code: str) -> list[tuple[float, float]]:
    """(particles, median us per step) of the 1-rank runs, by size."""
    by_n: dict = {}
    for r in runs:
        if r["code"] == code and r["problem"] == problem and r["ranks"] == 1:
            by_n.setdefault(r["particles"], []).append(1e6 * r["seconds"] / r["steps"])
    return sorted((n, statistics.median(t)) for n, t in by_n.items())


def per_step(curve, n: float) -> float:
    """The measured 1-rank time per step at n particles: linear between the measured sizes,
    extended beyond them along the end segments."""
    xs, ts = zip(*curve)
    k = min(max(int(np.searchsorted(xs, n)) - 1, 0), len(xs) - 2)
    return ts[k] + (ts[k + 1] - ts[k]) * (n - xs[k]) / (xs[k + 1] - xs[k])


def fixed_cost(curve) -> float:
    """Time per step at no particles: the line through the two smallest sizes (at least 0)."""
    return max(per_step(curve, 0.0), 0.0)


def rebuild_interval(runs: list[dict], problem: str) -> float:
    """Median steps between rebuilds of ecs_dem's 1-rank runs (inf when none happened)."""
    steps = [r["steps"] * (1 + 200 / r["steps"]) / r["rebuilds"] for r in runs
             if r["code"] == "ecs_dem" and r["problem"] == problem and r.get("rebuilds", 0) > 1]
    return statistics.median(steps) if steps else math.inf


def ghosts(problem: str, n: float, f: dict) -> list[float]:
    """Ghost rows per stage (one direction) of a subdomain holding n particles."""
    w, rho = f["ghost_width"], f["density"]
    if problem == "chute":  # a layer: square columns of height H, cut in x and y
        s = math.sqrt(n / (rho * f["height"]))
        return [rho * w * s * f["height"], rho * w * (s + 2 * w) * f["height"]]
    s = (n / rho) ** (1 / 3)  # a 3-D block: cubes
    return [rho * w * s * s, rho * w * s * (s + 2 * w), rho * w * (s + 2 * w) ** 2]


def model(problem: str, ranks: int, total: float, f: dict, curve, interval: float, code: str,
          alpha: float, beta: float, kappa: float) -> dict:
    """Microseconds per step of each part on `ranks` ranks for `total` particles."""
    n = total / ranks
    stages = ghosts(problem, n, f)
    g = 2 * sum(stages)
    us = 1e6
    compute = per_step(curve, n + kappa * g)  # measured: kernels, Python, own rebuild work
    forward = sum(alpha + st * f["forward_bytes"] / beta for st in stages) * us
    reductions = 2 * math.log2(ranks) * alpha * us  # the rebuild vote
    ghost_messages = sum(2 * alpha + st * f["ghost_row_bytes"] / beta for st in stages) * us
    # ecs_dem: the counts and the rows to the (up to 26) neighbour ranks, two rounds, after a
    # reduction that checks no row goes farther; LAMMPS: its staged exchange, 2 per axis
    migrate_rounds = 2 + 2 * math.log2(ranks) if code == "ecs_dem" else 2 * len(stages)
    migrate = migrate_rounds * alpha * us
    rebuild = (ghost_messages + migrate) / interval
    parts = {"n": n, "ghosts": g, "compute": compute, "forward": forward,
             "reductions": reductions, "rebuild": rebuild}
    parts["total"] = compute + forward + reductions + rebuild
    return parts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", type=Path, help="output of bench/strong_scaling.py --json")
    ap.add_argument("--latency", type=float, default=1.5e-6, help="alpha, s (default 1.5 us)")
    ap.add_argument("--bandwidth", type=float, default=10e9, help="beta, bytes/s (default 10 GB/s)")
    ap.add_argument("--kappa", type=float, default=0.5, help="cost of a ghost row / owned row")
    ap.add_argument("--particles", type=float, default=1e6, help="problem size N (default 1e6)")
    ap.add_argument("--ranks", default="8,16,32,64,128,256,512,1024")
    args = ap.parse_args(argv)
    runs = json.loads(args.json.read_text())["runs"]
    for problem in ("chute", "bed"):
        if not any(r["problem"] == problem for r in runs):
            continue
        f = code_facts(problem)
        curves = {code: one_rank_curve(runs, problem, code) for code in ("ecs_dem", "LAMMPS")}
        curves = {code: c for code, c in curves.items() if len(c) >= 2}
        interval = rebuild_interval(runs, problem)
        print(f"\n{problem}: ghost width {f['ghost_width']:.4g}, density {f['density']:.4g} per "
              f"unit volume, forwarded each step: {', '.join(f['forwarded'])} "
              f"({f['forward_bytes']} B per ghost row); ghost row at a rebuild "
              f"{f['ghost_row_bytes']} B, migrating row {f['migrate_row_bytes']} B; a rebuild "
              f"every {interval:.0f} steps")
        for code, c in curves.items():
            print(f"  measured {code:7s} on 1 rank, us per step: "
                  + ", ".join(f"{t:.1f} at {n:.0f}" for n, t in c)
                  + f"; fixed cost (at no particles) {fixed_cost(c):.1f}")
        print(f"  {'ranks':>5s} {'n/rank':>8s} {'ghosts':>7s} | {'compute':>8s} {'forward':>7s} "
              f"{'reduce':>6s} {'rebuild':>7s} {'total':>8s} {'eff':>5s} | {'LAMMPS':>8s} "
              f"{'eff':>5s} {'LMP/ours':>8s}")
        base = {}
        for ranks in (int(r) for r in args.ranks.split(",")):
            row = model(problem, ranks, args.particles, f, curves["ecs_dem"], interval, "ecs_dem",
                        args.latency, args.bandwidth, args.kappa)
            base.setdefault("ecs", (ranks, row["total"]))
            eff = base["ecs"][1] * base["ecs"][0] / (row["total"] * ranks)
            line = (f"  {ranks:5d} {row['n']:8.0f} {row['ghosts']:7.0f} | {row['compute']:8.1f} "
                    f"{row['forward']:7.1f} {row['reductions']:6.1f} {row['rebuild']:7.1f} "
                    f"{row['total']:8.1f} {eff:5.2f} | ")
            if "LAMMPS" in curves:
                lmp = model(problem, ranks, args.particles, f, curves["LAMMPS"], interval,
                            "LAMMPS", args.latency, args.bandwidth, args.kappa)
                base.setdefault("lmp", (ranks, lmp["total"]))
                leff = base["lmp"][1] * base["lmp"][0] / (lmp["total"] * ranks)
                line += f"{lmp['total']:8.1f} {leff:5.2f} {lmp['total'] / row['total']:8.2f}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
