"""Pack rows of a table into one contiguous byte matrix and back.

Migration and halo messages carry several fields of mixed dtypes; packing
them into a (rows, row_bytes) uint8 matrix lets one buffer-based MPI call
(upper-case mpi4py methods, no pickle) move them all.

A packed row holds first every field whose row is a whole number of 8-byte
words (float64, int64 and their vectors), then the others byte by byte,
padded to a multiple of 8. Each verb is one numba call per group: the
columns enter as a tuple of 2-D word (uint64) or byte (uint8) views of
their storage, so a table of twenty fields costs two kernel calls, not
twenty (migration, ghost rebuilds and ``Table.permute`` / ``remove`` run
through here at every rebuild). The views are cached per table, field list
and capacity (the storage is replaced only when the capacity grows).
"""
from __future__ import annotations

import math
import weakref
from typing import NamedTuple

import numpy as np

from . import halo_kernels as hk


class RowPacking(NamedTuple):
    """How the fields `names` of a table sit in a packed row, and views of their storage."""

    layout: tuple      # (field, byte offset, byte width) per field, in packed order
    width: int         # bytes per packed row, padded to a multiple of 8
    words: tuple       # (capacity, w) uint64 views of the 8-byte-multiple fields, in order
    word_count: int    # words of the packed row they fill (from its start)
    bytes_: tuple      # (capacity, w) uint8 views of the other fields, in order


_PACKINGS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _row_nbytes(table, name: str) -> int:
    f = table.fields[name]
    return f.np_dtype.itemsize * math.prod(f.shape)  # np.prod: 5 us per field


def _storage_view(column: np.ndarray, dtype) -> np.ndarray:
    """(capacity, row bytes / itemsize) view of a C-contiguous column."""
    elements = math.prod(column.shape[1:])
    return column.reshape(column.shape[0], elements).view(np.uint8).view(dtype)


def packing(table, names) -> RowPacking:
    """The packing of fields `names` of `table` (cached until the capacity changes)."""
    names = tuple(names)
    per_table = _PACKINGS.get(table)
    if per_table is None:
        per_table = _PACKINGS[table] = {}
    cached = per_table.get(names)
    if cached is not None and cached[0] == table.capacity:
        return cached[1]
    sizes = {name: _row_nbytes(table, name) for name in names}
    whole = [n for n in names if sizes[n] % 8 == 0]
    rest = [n for n in names if sizes[n] % 8]
    layout = []
    offset = 0
    for name in whole + rest:
        layout.append((name, offset, sizes[name]))
        offset += sizes[name]
    word_bytes = sum(sizes[n] for n in whole)
    made = RowPacking(
        tuple(layout), offset + (-offset) % 8,
        tuple(_storage_view(table.column(n), np.uint64) for n in whole if sizes[n]),
        word_bytes // 8,
        tuple(_storage_view(table.column(n), np.uint8) for n in rest))
    per_table[names] = (table.capacity, made)
    return made


def row_layout(table, names) -> list[tuple[str, int, int]]:
    """(field, byte offset, byte width) of each named field within a packed row."""
    return list(packing(table, names).layout)


def row_bytes(layout) -> int:
    """Bytes per packed row before padding."""
    return max((offset + width for _, offset, width in layout), default=0)


def pack_rows(table, names, rows: np.ndarray) -> np.ndarray:
    """Bytes of `rows` (owned or ghost) for the fields `names`: (len(rows), width) uint8."""
    p = packing(table, names)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    out = np.empty((rows.size, p.width), dtype=np.uint8)
    if rows.size:
        if p.words:
            hk.gather_rows_packed(p.words, rows, out.view(np.uint64), 0)
        if p.bytes_:
            hk.gather_rows_packed(p.bytes_, rows, out, 8 * p.word_count)
    return out


def unpack_rows(table, names, packed: np.ndarray, start: int) -> None:
    """Write packed rows (C-contiguous, at least the packing's width per row) into rows
    start, start + 1, ... of the table."""
    p = packing(table, names)
    if packed.shape[0]:
        if p.words:
            hk.scatter_rows_packed(p.words, start, packed.view(np.uint64), 0)
        if p.bytes_:
            hk.scatter_rows_packed(p.bytes_, start, packed, 8 * p.word_count)


def move_rows(table, src: np.ndarray, dst: np.ndarray, names=None) -> None:
    """Fields `names` (default: every field) of row src[k] into row dst[k], in k order (one
    call per word size)."""
    p = packing(table, tuple(table.fields) if names is None else names)
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    if src.size:
        if p.words:
            hk.move_rows(p.words, src, dst)
        if p.bytes_:
            hk.move_rows(p.bytes_, src, dst)


def compile_kernels(table, names) -> None:
    """Compile (or load from numba's cache) now what the verbs above need for fields `names`
    of `table`: each kernel is specialised on its tuple of columns, and a verb on zero rows
    compiles what its first real call would. World.setup calls it for what rebuilds move, so
    the first migration of a run does not stall for tens of milliseconds mid-run."""
    p = packing(table, names)
    rows = np.zeros(0, dtype=np.int64)
    for columns, dtype in ((p.words, np.uint64), (p.bytes_, np.uint8)):
        if columns:
            buf = np.empty((0, p.width // np.dtype(dtype).itemsize), dtype=dtype)
            hk.gather_rows_packed(columns, rows, buf, 0)
            hk.scatter_rows_packed(columns, 0, buf, 0)
            hk.move_rows(columns, rows, rows)
            hk.permute_columns(columns, rows, np.empty(0, dtype=dtype))


def permute_rows(table, order: np.ndarray) -> None:
    """Every field's rows 0 .. len(order) - 1 become its rows order[k] (one call per word
    size, column by column through a scratch column)."""
    p = packing(table, tuple(table.fields))
    order = np.ascontiguousarray(order, dtype=np.int64)
    for columns, dtype in ((p.words, np.uint64), (p.bytes_, np.uint8)):
        if columns and order.size:
            widest = max(c.shape[1] for c in columns)
            hk.permute_columns(columns, order, np.empty(order.size * widest, dtype=dtype))


def add_packed_into(table, names, packed: np.ndarray, rows: np.ndarray) -> None:
    """Scatter-add packed values into the given rows (rows may repeat); field by field, as
    the sum depends on the dtype (a rare path: REVERSE fields that are not all float64)."""
    m = packed.shape[0]
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    for name, offset, nbytes in packing(table, names).layout:
        f = table.fields[name]
        values = np.ascontiguousarray(packed[:, offset:offset + nbytes]).view(f.np_dtype)
        np.add.at(table.column(name), rows, values.reshape(m, *f.shape))
