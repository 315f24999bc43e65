"""Soft kill (MercuryDPM, Thornton et al. 2023 Sect. 11): stop cleanly on SIGINT/SIGTERM.

The first signal only sets a flag; ``World.run`` finishes the current step,
lets the systems react (the checkpoint writer saves the state) and returns.
A second signal ends the process at once (exit status 128 + signal), for
when a clean stop takes too long. Batch schedulers send SIGTERM before they
kill a job, so jobs can run in short queue slots and on preemptible machines.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SoftKill:
    """Context manager installing the two-stage handlers (main thread only)."""

    def __init__(self):
        self.signal = None
        self._previous = {}

    def _handle(self, signum, frame):
        if self.signal is not None:
            sys.stderr.write(f"second signal {signal.Signals(signum).name}: exiting now\n")
            sys.stderr.flush()
            os._exit(128 + signum)
        self.signal = signum
        sys.stderr.write(f"{signal.Signals(signum).name} received: finishing the current step, "
                         "then writing a checkpoint (send it again to exit at once)\n")
        sys.stderr.flush()

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False
