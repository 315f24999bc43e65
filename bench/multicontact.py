"""Cost of the multi-contact correction against plain Hertz, on one compressed packing, 1 and 2 ranks.

A benchmark, not a test. The packing is run/compression.py's (hydrogel spheres
in a square container, prepared the same way) with ``--particles`` grains
(default 4000, the container widened to keep its shape), compressed to the
experiment's 13.4 % strain with independent contacts and saved to
``output/bench_multicontact_<particles>.npz`` (made once, about two minutes).
Every variant starts from that same state, plate at rest, and runs the same
steps:

  plain   ContactForces + WallContacts with SaturatedHertzLaw (independent contacts)
  mc0     multicontact(SaturatedHertzLaw(), gamma=0): the MC-DEM systems, correction off
          (the same forces as plain, bit for bit)
  mc119   multicontact(SaturatedHertzLaw(), gamma=1.19): MC-DEM

Each measurement is ``mpiexec.mpich -n N python bench/multicontact.py --worker
VARIANT``; variants and rank counts are interleaved and repeated (this
machine's speed swings by 2x from outside), and the medians are printed:
particle-steps per second per core, and the time per step relative to plain
on the same number of ranks.

    python bench/multicontact.py                 # 3 repetitions, a few minutes after the packing
    python bench/multicontact.py --reps 5 --profile   # also ms per step by system, per rank
    python bench/multicontact.py --json out.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from worker_result import print_result, run_for_result, timed_run  # noqa: E402

VARIANTS = {"plain": None, "mc0": 0.0, "mc119": 1.19}


def settings(particles: int) -> dict:
    from ecs_dem.config import merge_config
    from ecs_dem.run import compression
    scale = (particles / compression.DEFAULTS["particles"]) ** (1.0 / 3.0)
    return merge_config(compression.DEFAULTS, {
        "particles": particles, "box_width": compression.DEFAULTS["box_width"] * scale,
        "box_depth": compression.DEFAULTS["box_depth"] * scale,
        "plate_speed": 0.01, "quiet": True})


def packing_path(particles: int) -> Path:
    return REPO / "output" / f"bench_multicontact_{particles}.npz"


def make_packing(particles: int) -> Path:
    """Prepare the packing as run/compression.py does and compress it to the maximum strain."""
    from ecs_dem.comm import SerialComm
    from ecs_dem.run import compression
    cfg = settings(particles)
    position, radius, h0, height = compression.prepare(cfg, SerialComm(), print)
    world, _, _ = compression.build_world(cfg, position, radius, height, h0, 0.0,
                                          comm=SerialComm())
    world.setup()
    walls = world.walls
    n = int(np.ceil(cfg["max_strain"] * h0 / (cfg["plate_speed"] * world.dt)))
    walls.velocity[compression.TOP] = (0.0, 0.0, -cfg["max_strain"] * h0 / (n * world.dt))
    world.run(n)
    walls.velocity[compression.TOP] = 0.0
    world.run(2000)
    position, radius = compression.gathered_state(world)
    path = packing_path(particles)
    path.parent.mkdir(parents=True, exist_ok=True)
    plate = float(walls.point[compression.TOP, 2])
    # the box ends a grain above the plate: ranks cut the packing, not the space above it
    np.savez(path, position=position, radius=radius, height=plate + cfg["diameter"], plate=plate)
    print(f"packing: {particles} grains at {100 * cfg['max_strain']:.1f} % strain, top-plate force "
          f"{walls.force[compression.TOP, 2]:.3g} N, saved to {path}", flush=True)
    return path


def worker(variant: str, particles: int, steps: int, warmup: int) -> None:
    from ecs_dem.comm import default_comm
    from ecs_dem.run import compression
    cfg = settings(particles)
    data = np.load(packing_path(particles))
    world, contacts, _ = compression.build_world(
        cfg, data["position"], data["radius"], float(data["height"]), float(data["plate"]),
        VARIANTS[variant], comm=default_comm())
    result = {"variant": variant, **timed_run(world, steps, warmup),
              "contacts": int(world.comm.sum(contacts.touching)),
              "pairs": int(world.comm.sum(world.pairs.n_owned))}
    if world.comm.rank == 0:
        print_result(result)


def launch(ranks: int, variant: str, particles: int, steps: int, warmup: int) -> dict:
    cmd = ["mpiexec.mpich", "-n", str(ranks), sys.executable, __file__, "--worker", variant,
           "--particles", str(particles), "--steps", str(steps), "--warmup", str(warmup)]
    return run_for_result(cmd, timeout=3600)


def print_profile(runs: list[dict]) -> None:
    """ms per step of each timer (median run of each variant and rank count), per rank."""
    columns = [(r["variant"], r["ranks"], k, t) for r in runs
               for k, t in enumerate(r["ms_per_step_by_rank"])]
    keys = sorted({key for *_, t in columns for key in t},
                  key=lambda key: -max(t.get(key, 0.0) for *_, t in columns))
    print("\nms per step " + "".join(f"{f'{v} {n}r/{k}':>14s}" for v, n, k, _ in columns))
    for key in keys:
        print(f"  {key[:44]:44s}" + "".join(f"{t.get(key, 0.0):14.3f}" for *_, t in columns))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=sorted(VARIANTS))
    ap.add_argument("--particles", type=int, default=4000)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.particles, args.steps, args.warmup)
        return 0
    if not packing_path(args.particles).is_file():
        make_packing(args.particles)
    ranks = [int(r) for r in args.ranks.split(",")]
    runs = []
    for rep in range(args.reps):  # interleaved: every variant on every rank count, then again
        for n in ranks:
            for variant in VARIANTS:
                r = launch(n, variant, args.particles, args.steps, args.warmup)
                runs.append(r)
                print(f"  rep {rep + 1}: {variant:6s} {n} rank(s): {r['rate'] / n / 1e6:.3f} M "
                      f"particle-steps/s per core", flush=True)
    print(f"\n{runs[0]['particles']} grains at 13.4 % strain, {runs[0]['contacts']} contacts "
          f"(pairs and walls), {args.steps} steps; medians of {args.reps} interleaved runs")
    print(f"{'variant':8s} {'ranks':>5s} {'M p-steps/s/core':>17s} {'ms/step':>8s} "
          f"{'vs plain':>9s} {'parallel eff.':>13s}")
    medians, chosen = {}, []
    for variant in VARIANTS:
        for n in ranks:
            mine = sorted((r for r in runs if r["variant"] == variant and r["ranks"] == n),
                          key=lambda r: r["rate"])
            medians[(variant, n)] = statistics.median(r["rate"] for r in mine)
            chosen.append(mine[len(mine) // 2])
    for variant in VARIANTS:
        for n in ranks:
            rate = medians[(variant, n)]
            ms = 1e3 * runs[0]["particles"] / rate
            print(f"{variant:8s} {n:5d} {rate / n / 1e6:17.3f} {ms:8.3f} "
                  f"{medians[('plain', n)] / rate:9.2f} {rate / (n * medians[(variant, ranks[0])]):13.2f}")
    if args.profile:
        print_profile(chosen)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
