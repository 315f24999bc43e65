"""Membrane benchmarks: force cost per vertex-step, 2-rank efficiency, grain-patch contact cost.

    python bench/membrane.py                 # both parts (a few minutes)
    python bench/membrane.py --quick         # smaller and shorter
    python bench/membrane.py --json out.json

1. A closed icosphere of about 10^5 vertices (level 7, 163,842 vertices) with
   stretching, bending and an internal pressure, no grains: the time of the
   three membrane force systems per vertex-step on one rank, and the run's
   rate and parallel efficiency on 2 ranks (a fresh process each, under
   ``mpiexec.mpich``).
2. Grains resting on a clamped patch membrane (run/membrane_drop.py's set-up,
   more grains, settled first): the time of ``PatchContacts`` per touching
   grain-patch candidate and per selected contact, against ``ContactForces``
   per touching grain-grain pair, in the same run; and the wall time of
   run/membrane_drop.py with its defaults.

Timings come from the world's own timers (``World.timers``). This machine's
speed swings by up to 2x from outside: repeat and compare medians.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from worker_result import print_result, run_for_result, timed_run  # noqa: E402

MEMBRANE_SYSTEMS = ("SpringForces", "MembraneBending", "MembranePressure")


def sphere_world(level: int, comm=None):
    from ecs_dem import Box, World
    from ecs_dem.components.membranes import add_membrane, set_stress
    from ecs_dem.components.mesh.generators import icosphere
    from ecs_dem.components.particles import create_particle_table
    from ecs_dem.systems.membrane.systems import membrane_systems
    from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

    R = 0.05
    world = World(Box((-2 * R,) * 3, (2 * R,) * 3), dt=1e-7, skin=1e-5, comm=comm)
    create_particle_table(world)
    add_membrane(world, icosphere(R, level, relax=0), youngs_modulus=1e6, thickness=5e-4,
                 density=1000.0, damping_ratio=0.1, bending_stiffness=1e-4, bending_damping=1e-7)
    set_stress(world, 0, -500.0)
    first, second = velocity_verlet()
    world.add_system(first)
    for s in membrane_systems():
        world.add_system(s)
    world.add_system(second)
    return world


def sphere_worker(level: int, steps: int) -> None:
    world = sphere_world(level)
    r = timed_run(world, steps, warmup=20)
    by_rank = [{k: ranks.get(k, 0.0) for k in MEMBRANE_SYSTEMS} for ranks in r["ms_per_step_by_rank"]]
    slowest = max(sum(ms.values()) for ms in by_rank)  # ms per step of the busiest rank
    n = r["particles"]
    if world.comm.rank == 0:
        print_result({"ranks": r["ranks"], "vertices": n, "steps": steps, "seconds": r["seconds"],
                      "rate": r["rate"],
                      "force_ns_per_vertex_step": 1e6 * slowest * r["ranks"] / n,
                      "by_system_ms_per_step": by_rank[0]})


def patch_worker(grains: int, steps: int) -> None:
    from ecs_dem.run import membrane_drop

    cfg = dict(membrane_drop.DEFAULTS, grains=grains, snapshot_every=0, diagnostics_every=10**9)
    world = membrane_drop.build_world(cfg)
    world.run(int(0.5 / world.dt))  # settle
    world.timers.clear()
    pc = next(s for s in world.systems if type(s).__name__ == "PatchContacts")
    cf = next(s for s in world.systems if type(s).__name__ == "ContactForces")
    touching = {"patch": 0, "selected": 0, "pairs": 0}
    for _ in range(steps):
        world.step_once()
        touching["patch"] += pc.touching
        touching["selected"] += int(pc.selected.sum())
        touching["pairs"] += cf.touching
    t_patch = world.timers[pc.name]
    t_pair = world.timers[cf.name]
    print_result({"grains": grains, "steps": steps,
                  "patch_ns_per_touching_candidate": 1e9 * t_patch / max(touching["patch"], 1),
                  "patch_ns_per_selected_contact": 1e9 * t_patch / max(touching["selected"], 1),
                  "pair_ns_per_touching_pair": 1e9 * t_pair / max(touching["pairs"], 1),
                  "touching_per_step": {k: v / steps for k, v in touching.items()},
                  "patch_search_ms": 1e3 * world.timers.get("PatchSearch", 0.0) / steps,
                  "neighbor_search_ms": 1e3 * world.timers.get("NeighborSearch", 0.0) / steps})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=("sphere", "patch"))
    ap.add_argument("--level", type=int, default=7)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--grains", type=int, default=600)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.worker == "sphere":
        sphere_worker(args.level, args.steps)
        return 0
    if args.worker == "patch":
        patch_worker(args.grains, args.steps)
        return 0
    level, steps = (6, 100) if args.quick else (7, 200)
    results = {"sphere": [], "patch": None, "membrane_drop_seconds": None}
    print(f"1. closed sphere, icosphere level {level}: membrane forces per vertex-step")
    base = None
    for ranks in (1, 2):
        r = run_for_result(["mpiexec.mpich", "-n", str(ranks), sys.executable, __file__,
                            "--worker", "sphere", "--level", str(level), "--steps", str(steps)])
        base = base or r["rate"]
        r["efficiency"] = r["rate"] / (ranks * base)
        results["sphere"].append(r)
        parts = ", ".join(f"{k} {v:.2f}" for k, v in r["by_system_ms_per_step"].items())
        print(f"   {ranks} rank(s): {r['vertices']} vertices, {r['rate'] / 1e6:.2f} M vertex-steps/s, "
              f"membrane forces {r['force_ns_per_vertex_step']:.1f} ns per vertex-step "
              f"(ms/step: {parts}), efficiency {r['efficiency']:.2f}", flush=True)
    grains = 300 if args.quick else 600
    print(f"2. {grains} grains resting on a clamped patch membrane (run/membrane_drop.py set-up)")
    r = run_for_result([sys.executable, __file__, "--worker", "patch", "--grains", str(grains),
                        "--steps", str(500 if args.quick else 2000)])
    results["patch"] = r
    t = r["touching_per_step"]
    print(f"   per touching candidate {r['patch_ns_per_touching_candidate']:.0f} ns, per selected "
          f"contact {r['patch_ns_per_selected_contact']:.0f} ns; grain-grain "
          f"{r['pair_ns_per_touching_pair']:.0f} ns per touching pair "
          f"(ratio {r['patch_ns_per_selected_contact'] / r['pair_ns_per_touching_pair']:.1f}); "
          f"per step {t['patch']:.0f} touching candidates, {t['selected']:.0f} selected, "
          f"{t['pairs']:.0f} touching pairs", flush=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(REPO / "run" / "membrane_drop.py"), "--set",
                    "output=/tmp/ecs_dem_bench_drop.h5"], check=True, capture_output=True)
    results["membrane_drop_seconds"] = time.perf_counter() - t0
    print(f"3. run/membrane_drop.py (defaults, with start-up): {results['membrane_drop_seconds']:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
