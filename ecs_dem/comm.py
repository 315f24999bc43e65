"""Communicator facade: the few global operations systems may ask for.

Systems never touch MPI. They call ``world.comm.sum`` / ``max`` for global
reductions (kinetic energy, wall forces, the rebuild decision); the serial
communicator below is the one-rank case. The MPI decomposition issue adds an
``MpiComm`` with the same interface.
"""
from __future__ import annotations

import numpy as np


class SerialComm:
    """One rank talking to itself."""

    rank = 0
    size = 1

    def sum(self, value):
        return np.array(value, dtype=np.float64, copy=True) if np.ndim(value) else float(value)

    def max(self, value):
        return np.array(value, copy=True) if np.ndim(value) else value

    def min(self, value):
        return np.array(value, copy=True) if np.ndim(value) else value

    def barrier(self) -> None:
        pass
