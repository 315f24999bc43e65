"""Progress of a long run on rank 0: steps/s, simulated time, ETA.

On a terminal the line is rewritten in place about once a second; otherwise
(batch jobs, pipes) a plain line is printed every ``log_interval`` seconds,
so job logs stay short and readable.
"""
from __future__ import annotations

import sys
import time

from .system import Stage, System


def _duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h:d}:{m:02d}:{s:02d}"


class Progress(System):
    """Report progress every step check; prints at most once per interval."""

    stage = Stage.OUTPUT

    def __init__(self, interval: float | None = None, log_interval: float = 30.0, stream=None):
        self.stream = stream or sys.stdout
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = interval if interval is not None else (1.0 if self.tty else log_interval)
        self._last = None
        self._start = None

    def run(self, world) -> None:
        if world.comm.rank != 0:
            return
        now = time.perf_counter()
        if self._start is None or world.step < self._start[1]:
            self._start = self._last = (now, world.step)
            return
        # a chunked run (runner.run_until) reports against its step limit, as one run: a line
        # per interval, not one at each chunk's end; it may end earlier, on its condition
        horizon = world.horizon_step
        end = horizon if horizon is not None else world.run_end_step
        finished = end is not None and world.step >= end
        if now - self._last[0] < self.interval and not finished:
            return
        rate = (world.step - self._last[1]) / max(now - self._last[0], 1e-9)
        self._last = (now, world.step)
        overall = (world.step - self._start[1]) / max(now - self._start[0], 1e-9)
        bound = " at most" if horizon is not None else ""
        eta = f" ETA{bound} {_duration((end - world.step) / overall)}" if end and overall > 0 else ""
        total = f"/{end}{bound}" if end else ""
        line = (f"step {world.step}{total}  t = {world.time:.6g} s  {rate:.1f} steps/s"
                f"  elapsed {_duration(now - self._start[0])}{eta}")
        if self.tty:
            self.stream.write("\r" + line + ("\n" if finished else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
