"""Global measures over a table's rows on every rank: sums, extrema, counts, gathers by gid.

What a driver or an output system asks of the whole run, not of one rank: the
total mass, the highest particle, how many pairs carry a force, the value at
the row nearest an axis, the positions of every grain in gid order. Each
function takes the rows this rank owns (``table.<field>`` is the owned rows),
optionally a selection ``where`` over them (a boolean mask or an index
array), and the World (or a communicator) whose ranks hold the other rows.

Every function here is collective: every rank calls it, with its own rows (an
empty selection included), in the same order; the answer is the same on every
rank, except for gathers onto rank 0 (``root=0``), which give None elsewhere.
They use the communicator's reductions and gathers (``ecs_dem.comm``) and know
nothing of the physics. They are meant for measurements and output, not for
the time step: the gathers pickle or pack their rows at every call.

Sums over ranks add each rank's partial sum (numpy's sum over its rows) in the
order MPI reduces them: on one rank the result is numpy's sum, on several it
agrees with it to round-off. Gathers copy values, bit for bit.
"""
from __future__ import annotations

import math

import numpy as np


def communicator(world_or_comm):
    """The communicator of a World (``world.comm``), or the communicator itself."""
    return getattr(world_or_comm, "comm", world_or_comm)


def _selected(values, where):
    values = np.asarray(values)
    return values if where is None else values[where]


def sum_of(world, *numbers):
    """Each of `numbers` (this rank's part: a count, a partial sum) summed over the ranks, in
    one reduction. One number: an int for an int, else a float; several: a float64 array."""
    comm = communicator(world)
    if len(numbers) == 1:
        (number,) = numbers
        if isinstance(number, np.generic):
            number = number.item()
        return comm.sum(number)
    return comm.sum(np.array(numbers, dtype=np.float64))


def total(world, values, where=None):
    """Sum over the selected rows of every rank of `values` (one entry per owned row): a
    number for a column of numbers (int for integers), an array per component for a column
    of vectors ((n, 3) gives 3 sums)."""
    part = np.sum(_selected(values, where), axis=0)
    return communicator(world).sum(part.item() if np.ndim(part) == 0 else part)


def count(world, where) -> int:
    """How many rows `where` selects on all ranks together: a boolean mask over owned rows,
    an index array, or a Table (all its owned rows)."""
    if hasattr(where, "n_owned"):
        mine = int(where.n_owned)
    else:
        where = np.asarray(where)
        mine = int(np.count_nonzero(where)) if where.dtype == bool else int(where.size)
    return communicator(world).sum(mine)


def largest(world, values, where=None, empty: float = -math.inf) -> float:
    """The largest of the selected `values` over every rank; a rank without a selected row
    takes part with `empty` (so -inf when no rank has one, unless `empty` says otherwise)."""
    mine = _selected(values, where)
    return communicator(world).max(float(mine.max()) if mine.size else float(empty))


def smallest(world, values, where=None, empty: float = math.inf) -> float:
    """The smallest of the selected `values` over every rank; a rank without a selected row
    takes part with `empty` (+inf unless `empty` says otherwise)."""
    mine = _selected(values, where)
    return communicator(world).min(float(mine.min()) if mine.size else float(empty))


def at_smallest(world, key, values, where=None):
    """The entry of `values` at the row where `key` is smallest over every rank (the first
    such row on a rank; between ranks, the lowest rank's on a tie); None when no rank has
    a selected row. `values` may be a column of vectors: the row is returned as an array."""
    key, values = _selected(key, where), _selected(values, where)
    mine = None
    if key.size:
        k = int(np.argmin(key))
        mine = (float(key[k]), values[k].copy() if np.ndim(values[k]) else values[k].item())
    found = [(m[0], rank, m[1]) for rank, m in enumerate(communicator(world).allgather_object(mine))
             if m is not None]
    return min(found, key=lambda t: (t[0], t[1]))[2] if found else None


def _packed(columns: list[np.ndarray]) -> tuple[np.dtype, np.ndarray]:
    """The rows of `columns` (equally long) as one record per row, viewed as (n, width) bytes."""
    n = columns[0].shape[0] if columns else 0
    dtype = np.dtype([(f"c{k}", c.dtype, c.shape[1:]) for k, c in enumerate(columns)])
    records = np.empty(n, dtype=dtype)
    for k, c in enumerate(columns):
        records[f"c{k}"] = c
    return dtype, records.view(np.uint8).reshape(n, dtype.itemsize)


def concatenated(world, values, root: int | None = None):
    """Every rank's `values` (rows: an array whose first axis is the row) one after another
    in rank order: on every rank (``root=None``, the default) or on rank 0 only
    (``root=0``: None on the others). For rows without a gid (pairs): order by rank."""
    values = np.ascontiguousarray(values)
    comm = communicator(world)
    if root is None:
        return np.concatenate(comm.allgather_object(values))
    if root != 0:
        raise ValueError(f"gathers go to rank 0 or to every rank (root=None), not to {root}")
    dtype, rows = _packed([values])
    got = comm.gather_rows(rows)
    return None if got is None else np.ascontiguousarray(got).view(dtype).reshape(-1)["c0"].copy()


def gather_by_gid(world, table, columns, where=None, root: int | None = 0):
    """The owned rows of `table` (a Table, or its name in the world) that `where` selects,
    from every rank, ordered by gid: the column `columns` (a field name) as an array, or
    the columns (a tuple of names) as a tuple of arrays; ask for ``"gid"`` to get the gids.
    On rank 0 (``root=0``, the default; None on the other ranks) or on every rank
    (``root=None``). Values are copied bit for bit."""
    if isinstance(table, str):
        table = world.tables[table]
    names = (columns,) if isinstance(columns, str) else tuple(columns)
    gid = _selected(table.gid, where)
    picked = [gid] + [np.ascontiguousarray(_selected(getattr(table, name), where))
                      for name in names]
    comm = communicator(world)
    if root is None:
        parts = comm.allgather_object(tuple(c.copy() for c in picked))
        merged = [np.concatenate([p[k] for p in parts]) for k in range(len(picked))]
    elif root == 0:
        dtype, rows = _packed(picked)
        got = comm.gather_rows(rows)
        if got is None:
            return None
        records = np.ascontiguousarray(got).view(dtype).reshape(-1)
        merged = [records[f"c{k}"] for k in range(len(picked))]
    else:
        raise ValueError(f"gathers go to rank 0 or to every rank (root=None), not to {root}")
    order = np.argsort(merged[0], kind="stable")
    out = tuple(np.ascontiguousarray(c[order]) for c in merged[1:])
    return out[0] if isinstance(columns, str) else out


__all__ = ["communicator", "sum_of", "total", "count", "largest", "smallest", "at_smallest",
           "concatenated", "gather_by_gid"]
