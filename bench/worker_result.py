"""Benchmarks run each measurement in a fresh process (often under mpiexec); the worker
prints one ``RESULT {json}`` line, which the parent reads back with ``run_for_result``."""
from __future__ import annotations

import json
import subprocess


def print_result(result: dict) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def run_for_result(cmd: list[str], timeout: float = 3600) -> dict:
    """Run `cmd` and return the JSON of its RESULT line; raise with its output if there is none."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{' '.join(map(str, cmd))} failed (exit {out.returncode}):\n"
                       f"{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
