"""Pack rows of a table into one contiguous byte matrix and back.

Migration and halo messages carry several fields of mixed dtypes; packing
them into a (rows, row_bytes) uint8 matrix lets one buffer-based MPI call
(upper-case mpi4py methods, no pickle) move them all. float64 fields, the
ones moved every step (positions, velocities, forces), go through numba
gather/scatter kernels on a float64 view of the matrix; other dtypes (moved
only at rebuilds) through numpy.
"""
from __future__ import annotations

import math

import numpy as np

from . import halo_kernels as hk


def _as_2d(column: np.ndarray) -> np.ndarray:
    return column.reshape(column.shape[0], -1)


def _is_f64(table, name: str, offset: int) -> bool:
    return table.fields[name].np_dtype == np.float64 and offset % 8 == 0


def row_layout(table, names) -> list[tuple[str, int, int]]:
    """(field, byte offset, byte width) of each named field within a packed row."""
    layout = []
    offset = 0
    for name in names:
        f = table.fields[name]
        width = f.np_dtype.itemsize * math.prod(f.shape)  # np.prod: 5 us per field
        layout.append((name, offset, width))
        offset += width
    return layout


def row_bytes(layout) -> int:
    """Bytes per packed row (the matrix is padded to a multiple of 8)."""
    return layout[-1][1] + layout[-1][2] if layout else 0


def pack_rows(table, layout, rows: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Bytes of `rows` (owned or ghost) for the fields of `layout`: (len(rows), row_bytes)."""
    width = row_bytes(layout)
    if out is None:
        out = np.empty((rows.size, width + (-width) % 8), dtype=np.uint8)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    as_f64 = out.view(np.float64)
    for name, offset, nbytes in layout:
        col = table.column(name)
        if _is_f64(table, name, offset):
            hk.gather_f64(_as_2d(col), rows, as_f64, offset // 8)
        else:
            out[:, offset:offset + nbytes] = np.ascontiguousarray(col[rows]).view(np.uint8).reshape(rows.size, nbytes)
    return out


def unpack_rows(table, layout, packed: np.ndarray, start: int) -> None:
    """Write packed rows into rows start.. of the table."""
    m = packed.shape[0]
    as_f64 = packed.view(np.float64) if packed.shape[1] % 8 == 0 else None
    for name, offset, nbytes in layout:
        f = table.fields[name]
        col = table.column(name)
        if as_f64 is not None and _is_f64(table, name, offset):
            hk.scatter_f64(_as_2d(col), start, as_f64, offset // 8)
            continue
        values = np.ascontiguousarray(packed[:, offset:offset + nbytes]).view(f.np_dtype)
        col[start:start + m] = values.reshape(m, *f.shape)


def add_packed_into(table, layout, packed: np.ndarray, rows: np.ndarray) -> None:
    """Scatter-add packed values into the given rows (rows may repeat)."""
    m = packed.shape[0]
    as_f64 = packed.view(np.float64) if packed.shape[1] % 8 == 0 else None
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    for name, offset, nbytes in layout:
        f = table.fields[name]
        if as_f64 is not None and _is_f64(table, name, offset):
            hk.scatter_add_f64(_as_2d(table.column(name)), rows, as_f64, offset // 8)
            continue
        values = np.ascontiguousarray(packed[:, offset:offset + nbytes]).view(f.np_dtype)
        np.add.at(table.column(name), rows, values.reshape(m, *f.shape))
