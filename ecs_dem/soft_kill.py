"""Soft kill (MercuryDPM, Thornton et al. 2023 Sect. 11): stop cleanly on SIGINT/SIGTERM.

The first signal only sets a flag; ``World.run`` finishes the current step,
lets the systems react (the checkpoint writer saves the state) and returns.
A second signal ends the process at once (exit status 128 + signal), for
when a clean stop takes too long. Batch schedulers send SIGTERM before they
kill a job, so jobs can run in short queue slots and on preemptible machines.
A driver without a checkpoint to continue from ends on the first signal with
``runner.run_or_stop`` (``RunStopped``).
"""
from __future__ import annotations

import os
import signal
import sys
import threading

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


_active = None  # the outermost SoftKill block of this process, while it is open


class SoftKill:
    """Context manager installing the two-stage handlers (main thread only).

    Blocks nest: an inner block (``World.run`` inside a driver's block) yields the
    outermost one, so a signal that arrives anywhere in a driver's block, between
    two runs or between two worlds, is seen by the next step of any world."""

    def __init__(self):
        self.signal = None
        self._previous = {}
        self._shared = None

    def _handle(self, signum, frame):
        if self.signal is not None:
            sys.stderr.write(f"second signal {signal.Signals(signum).name}: exiting now\n")
            sys.stderr.flush()
            os._exit(128 + signum)
        self.signal = signum
        sys.stderr.write(f"{signal.Signals(signum).name} received: finishing the current step, "
                         "then stopping (send it again to exit at once)\n")
        sys.stderr.flush()

    def __enter__(self):
        global _active
        if _active is not None:
            self._shared = _active
            return _active
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
            _active = self
        return self

    def __exit__(self, *exc):
        global _active
        if self._shared is not None:
            self._shared = None
            return False
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}
        if _active is self:
            _active = None
        return False
