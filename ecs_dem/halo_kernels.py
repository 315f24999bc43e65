"""Numba kernels behind the halo verbs: gather rows into ghosts, scatter-add back.

Pure functions over arrays; the domain decides which rows go where.
"""
import numpy as np

from .jit import kernel


@kernel
def copy_rows(column, src_rows, dst_start):
    """column[dst_start + k] = column[src_rows[k]] for every k (any row shape)."""
    for k in range(src_rows.size):
        column[dst_start + k] = column[src_rows[k]]


@kernel
def copy_rows_shifted(position, src_rows, dst_start, shift):
    """Ghost positions: position[dst_start + k] = position[src_rows[k]] + shift."""
    for k in range(src_rows.size):
        s = src_rows[k]
        d = dst_start + k
        for a in range(3):
            position[d, a] = position[s, a] + shift[a]


@kernel
def add_rows_back(column, src_rows, dst_start):
    """Reverse reduction: column[src_rows[k]] += column[dst_start + k], then zero the ghost."""
    for k in range(src_rows.size):
        column[src_rows[k]] += column[dst_start + k]
        column[dst_start + k] = 0


@kernel
def rows_near_faces(position, n, axis, lo_edge, hi_edge):
    """Rows with x[axis] < lo_edge (first array) and rows with x[axis] >= hi_edge."""
    low = np.empty(n, dtype=np.int64)
    high = np.empty(n, dtype=np.int64)
    nl = 0
    nh = 0
    for i in range(n):
        x = position[i, axis]
        if x < lo_edge:
            low[nl] = i
            nl += 1
        if x >= hi_edge:
            high[nh] = i
            nh += 1
    return low[:nl].copy(), high[:nh].copy()


@kernel
def wrap_periodic(position, lo, length, periodic):
    """Map positions on periodic axes back into [lo, lo + length)."""
    for i in range(position.shape[0]):
        for a in range(3):
            if periodic[a]:
                x = position[i, a]
                if x < lo[a] or x >= lo[a] + length[a]:
                    x = x - length[a] * np.floor((x - lo[a]) / length[a])
                    if x >= lo[a] + length[a]:  # round-off at the upper face
                        x -= length[a]
                    position[i, a] = x


@kernel
def max_displacement_sq(position, reference):
    """Largest squared displacement since `reference`, and the first non-finite row (-1 if none)."""
    worst = 0.0
    bad = -1
    for i in range(position.shape[0]):
        d2 = 0.0
        for a in range(3):
            d = position[i, a] - reference[i, a]
            d2 += d * d
        if not np.isfinite(d2):
            if bad < 0:
                bad = i
        elif d2 > worst:
            worst = d2
    return worst, bad


@kernel
def spatial_sort_keys(position, lo, cell, dims):
    """Linear cell index of each row, x fastest: sorting by it groups neighbours in memory."""
    n = position.shape[0]
    keys = np.empty(n, dtype=np.int64)
    for i in range(n):
        c = np.empty(3, dtype=np.int64)
        for a in range(3):
            k = int(np.floor((position[i, a] - lo[a]) / cell))
            if k < 0:
                k = 0
            elif k >= dims[a]:
                k = dims[a] - 1
            c[a] = k
        keys[i] = (c[2] * dims[1] + c[1]) * dims[0] + c[0]
    return keys
