"""Blocked and chunked evaluation of contacts: the layout that lets LLVM vectorise a law.

The contact pipeline (``systems.contact.pipeline``) walks its candidates (the
pairs of a Verlet list, a rigid object's near list, membrane patches) in
blocks of ``BLOCK`` and, for each block:

1. overlap test, then selection: the geometry's test decides (branch-free)
   whether each candidate of the block overlaps, into a scratch column (a loop
   without a dependence between pairs, so the loads of many pairs are in
   flight at once); then each pair is appended to ``sel`` (branch-free: the
   index is always written, the count grows by the test's 0 or 1), and one
   flag byte per pair ("history may be non-zero", see :class:`PairScratch`)
   finds the few pairs whose contact began or ended (a rarely taken branch:
   about 0.5 % of the pairs per step in LAMMPS's chute) and the kernel resets
   the history of those that separated, so the history of the many separated
   pairs is never read. (Two loops rather than one fused: with row indices read
   as unsigned, ``ecs_dem.jit.row``, they are 3-7 % faster on the chute's pairs.)
2. every full chunk of ``CHUNK`` selected pairs goes through gather (scalar:
   separation, velocities, radii, masses, history copied into one contiguous
   scratch column per quantity), compute (the contact law, vectorised: the
   columns sit at compile-time constant offsets ``q * CHUNK`` of one buffer,
   so LLVM proves that they do not overlap and emits SIMD code; with
   ``error_model='numpy'`` the branches of the law become selects) and
   scatter (scalar: forces, torques and history stored in pair order). The
   compute loop always runs over the whole chunk; lanes past the last
   selected pair hold stale but finite values and are never scattered.

Forces are accumulated in pair order and each contact's arithmetic is the
scalar law function, unchanged, so the results are identical bit for bit to a
plain loop over the list.

The kernels that use this layout are generated per geometry, model and law
(``systems.contact.pipeline``, ``ecs_dem.generated_kernels``); a change here
changes the hash in their source, so numba recompiles them instead of
loading stale machine code.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.jit import kernel

#: selected pairs per compute chunk: 64 x up to ~40 float64 columns stays inside L1
CHUNK = 64
#: pairs per overlap-test block
BLOCK = 256


@kernel
def mark_nonzero(history, flags):
    """flags[k] = 1 where some component of history[k] is non-zero (others left as they are).

    Without a branch per row: few contacts touch, and a branch on so rare an
    outcome mispredicts often enough to make the loop seven times slower
    (56,000 pairs of three components, 14 % non-zero)."""
    w = history.shape[1]
    if w == 3:  # the common history width (a tangential spring)
        for k in range(history.shape[0]):
            flags[k] |= (history[k, 0] != 0.0) | (history[k, 1] != 0.0) | (history[k, 2] != 0.0)
        return
    for k in range(history.shape[0]):
        nonzero = False
        for a in range(w):
            nonzero |= history[k, a] != 0.0
        flags[k] |= nonzero


@kernel
def flagged_rows(flags, out):
    """out[:count] = the indices k (increasing) where flags[k] != 0; returns count.

    Without a branch: the index is always stored, the count grows by the flag.
    ``np.flatnonzero`` branches per element and took 250 us on the 111,000 history
    flags of the chute's pair table (14 % set), this loop 30 us."""
    count = 0
    for k in range(flags.size):
        out[count] = k
        count += flags[k] != 0
    return count


class PairScratch:
    """Scratch of a chunked contact kernel: the buffer, the selection, the history flags.

    ``buf`` holds ``columns`` x CHUNK float64 values followed by BLOCK values
    (the overlap tests of a block: gaps of the wall kernels, 0/1 of the pair
    kernels); ``sel`` BLOCK + CHUNK contact indices.
    ``flags(table, fields, per_row)`` returns one byte per contact (per row of
    ``table``, shape (n,), or per row and wall with ``per_row`` walls: (n, per_row)),
    1 where the contact's history may be non-zero. The kernels keep the flags
    up to date (a flag is the contact's overlap at its last evaluation); they
    are rebuilt from the history fields whenever the table changed
    structurally (a new pair list, sorting, migration), which is the only way
    history enters a table otherwise (neighbour-list carry-over, restart).
    """

    def __init__(self, columns: int):
        self.buf = np.zeros(columns * CHUNK + BLOCK, dtype=np.float64)
        self.sel = np.zeros(BLOCK + CHUNK, dtype=np.int64)
        self._flags = np.zeros(0, dtype=np.uint8)
        self._key = None

    def flags(self, table, fields, per_row: int | None = None) -> np.ndarray:
        n = table.n_owned
        size = n * (per_row or 1)
        key = (id(table), table.epoch, n, per_row)
        if key != self._key:
            if self._flags.size < size:
                self._flags = np.zeros(max(size, int(1.25 * self._flags.size)), dtype=np.uint8)
            flags = self._flags[:size]
            flags[:] = 0
            if size:
                for f in fields:
                    mark_nonzero(table.owned(f).reshape(size, -1), flags)
            self._key = key
        if per_row is None:
            return self._flags[:size]
        return self._flags[:size].reshape(n, per_row)
