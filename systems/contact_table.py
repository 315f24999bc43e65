"""Rebuilding a contact table at every neighbour rebuild, with its per-contact data carried over.

A contact table (``pairs``: particle-particle; ``patch_pairs``: grain-triangle)
is rebuilt from scratch at each rebuild. Its rows are keyed by two gids
(``key_i``, ``key_j``); every field except the table's identity fields is
per-contact data (a law's history, a system's state, of any dtype and row
shape) and is carried from the old row with the same two gids; rows without
one get the field's default. Old rows whose data all equal their defaults
are skipped in the match (most pairs do not touch).
"""
from __future__ import annotations

import numpy as np

from . import neighbor_kernels as nk
from .contact_chunks import mark_nonzero


class ScratchArrays:
    """Named arrays of at least a given number of rows, grown geometrically, kept between calls."""

    def __init__(self):
        self._arrays: dict = {}

    def get(self, name, size, dtype, width=None):
        a = self._arrays.get(name)
        shape = (size,) if width is None else (size, width)
        if a is None or a.shape[0] < size or a.shape[1:] != shape[1:] or a.dtype != dtype:
            grown = max(size, int(1.25 * a.shape[0]) if a is not None else size)
            a = np.empty((grown,) + shape[1:], dtype=dtype)
            self._arrays[name] = a
        return a


def carried_fields(table, identity) -> list[str]:
    """The per-contact fields of a contact table: everything but its identity."""
    return [f for f in table.fields if f not in identity]


def _differs_from_default(table, names, flags: np.ndarray, rows: np.ndarray | None = None) -> None:
    """flags[k] = 1 where some field of old row k (of row rows[k], given `rows`) differs from
    its default."""
    m = table.n_owned
    for f in names:
        d = table.fields[f]
        col = table.owned(f).reshape(m, -1)
        if rows is not None:
            col = col[rows]
        if d.np_dtype == np.float64 and d.default == 0:
            mark_nonzero(col, flags)
        elif col.shape[0]:
            flags |= np.any(col != np.asarray(d.default, dtype=d.np_dtype), axis=1)


def rows_with_data(table, identity, among: np.ndarray | None = None) -> np.ndarray:
    """Owned rows of a contact table whose per-contact data differ from the defaults; only
    rows of `among` (increasing owned row indices) when given."""
    keep = np.zeros(table.n_owned if among is None else among.size, dtype=np.uint8)
    if keep.size:
        _differs_from_default(table, carried_fields(table, identity), keep, among)
    return np.flatnonzero(keep) if among is None else among[keep.astype(bool)]


def rebuild_contact_table(table, identity, key_i: str, key_j: str, values: dict,
                          scratch: ScratchArrays) -> None:
    """Replace the owned rows of `table` by the new rows in `values` (identity fields, including
    ``values[key_i]`` and ``values[key_j]``), carrying every other field over by key pair."""
    count = values[key_i].size
    if count == 0 and table.n_owned == 0:  # empty before and after (mirrors on one rank)
        table.clear_ghosts()
        return
    carried = carried_fields(table, identity)
    if count and carried:
        gi, gj = values[key_i], values[key_j]
        m = table.n_owned
        src = scratch.get("src", count, np.int64)[:count]
        if m:
            keep = scratch.get("keep", m, np.uint8)[:m]
            keep[:] = 0
            _differs_from_default(table, carried, keep)
            old_i = table.owned(key_i)
            nk.match_history(old_i, table.owned(key_j), keep, gi, gj, int(old_i.min()),
                             int(old_i.max()), src)
        else:
            src[:] = -1
        for f in carried:
            values[f] = _carry(table, f, src, count, m, scratch)
    table.replace(count, **values)


def _carry(table, name, src, count, m, scratch):
    """Values of field `name` for the new rows: the old row's where src >= 0, else the default."""
    d = table.fields[name]
    if d.np_dtype == np.float64 and d.default == 0:
        width = max(int(np.prod(d.shape)), 1)
        new = scratch.get(f"h:{name}", count, np.float64, width)[:count]
        nk.take_rows(src, table.owned(name).reshape(m, width), new)
        return new.reshape((count,) + d.shape)
    new = np.full((count,) + d.shape, d.default, dtype=d.np_dtype)
    found = src >= 0
    new[found] = table.owned(name)[src[found]]
    return new


__all__ = ["ScratchArrays", "carried_fields", "rebuild_contact_table", "rows_with_data"]
