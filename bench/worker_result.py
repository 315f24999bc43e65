"""Benchmarks run each measurement in a fresh process (often under mpiexec); the worker
prints one ``RESULT {json}`` line, which the parent reads back with ``run_for_result``."""
from __future__ import annotations

import json
import subprocess
import time


def print_result(result: dict) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def run_for_result(cmd: list[str], timeout: float = 3600) -> dict:
    """Run `cmd` and return the JSON of its RESULT line; raise with its output if there is none."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            # the first JSON value only: another rank's output may follow on the same line
            return json.JSONDecoder().raw_decode(line[7:])[0]
    raise RuntimeError(f"{' '.join(map(str, cmd))} failed (exit {out.returncode}):\n"
                       f"{out.stdout[-2000:]}\n{out.stderr[-4000:]}")


def timed_run(world, steps: int, warmup: int) -> dict:
    """Set up `world`, run `warmup` steps, then time `steps` steps between barriers.

    Returns the fields every benchmark result shares: ranks, particles, steps, seconds, rate
    (particle-steps/s) and ms_per_step_by_rank (each rank's timers, ms per step).
    """
    world.setup()
    world.run(warmup)
    world.timers.clear()
    world.comm.barrier()
    t0 = time.perf_counter()
    world.run(steps)
    world.comm.barrier()
    elapsed = time.perf_counter() - t0
    n = world.comm.sum(world.particles.n_owned)
    return {"ranks": world.comm.size, "particles": int(n), "steps": steps, "seconds": elapsed,
            "rate": n * steps / elapsed,
            "ms_per_step_by_rank": world.comm.allgather_object(
                {k: 1e3 * v / max(steps, 1) for k, v in world.timers.items()})}
