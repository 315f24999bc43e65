"""Row references of anchored tables, and incidence lists (which elements touch a row).

A table anchored to a spatial table (``Table(anchor=..., references=...)``)
holds gids of that table's rows: a pair its two particles, a spring its two
vertices, a triangle its three. Kernels need local rows, and those change at
every rebuild (sorting, migration, new ghost layers). The engine keeps every
declared *row field* equal to the local row of its *gid field*:

* owned element rows: the image nearest to the element's anchor row (its
  first gid, an owned row). It must lie closer than the ghost width (the
  largest interaction range plus the skin): that is what guarantees that it
  is present on any number of ranks, so an element that spans more is an
  error on every rank count, naming the element and the range to raise.
* ghost element rows (copies of elements anchored to ghost rows, built when a
  system reads their ghosts or accumulates into them): the image nearest to
  the ghost anchor, if closer than the ghost width; else -1 (that vertex is
  beyond this rank's halo; such a row is only useful for its other vertices).
* a negative gid (an unused slot) gives -1.

The ghost width is the largest reach the systems declare, so only the tables
some system uses are held to it: the hinges of a membrane run without
bending may span more than the springs' and the pressure's reach, and their
rows are then left -1 where the vertex is not here (nothing reads them).

The World resolves them after every rebuild and restart, and whenever the
anchored table changed structurally (rows appended), so systems read row
fields as current local indices and never sort gids themselves. A system
that builds a table at each rebuild (``System.builds``: the neighbour search
builds ``pairs``) knows the rows of what it builds and writes them for the
owned rows; the World then resolves its ghost rows only.

:func:`incidence` inverts the references: for every row of the anchor table,
the element rows that refer to it (CSR), e.g. the pairs of a particle,
owned and ghost pair rows alike (``World.incident_rows``).
"""
from __future__ import annotations

import numpy as np

from .errors import StateError
from .jit import kernel


def resolve_references(anchor_table, table, anchor_rows: np.ndarray, ghost_range: float,
                       first: int = 0, strict: bool = True) -> None:
    """Fill the row fields of `table`'s rows from `first` on (owned, then ghost rows); see the
    module docstring.

    `anchor_rows`: the anchor's local row of each of the table's rows (owned, then ghost).
    `strict`: an owned element reaching beyond the ghost width is an error; without it (a
    table no system uses, whose reach no system declares) the row field is left -1.
    """
    if not table.references or first >= table.n:
        return
    n, n_owned = table.n, table.n_owned
    lookup = anchor_table.lookup()
    position = anchor_table.column("position")
    for row_field, gid_field in table.references.items():
        width = max(int(np.prod(table.fields[gid_field].shape)), 1)
        gids = table.with_ghosts(gid_field).reshape(n, width)
        near = np.repeat(anchor_rows[:n], width)
        flat = np.ascontiguousarray(gids).ravel()
        start, split = first * width, max(n_owned, first) * width
        rows = table.with_ghosts(row_field).reshape(-1).astype(np.int64)
        rows[start:split] = lookup.nearest_rows(flat[start:split], near[start:split], position,
                                                ghost_range)
        rows[split:] = lookup.nearest_rows(flat[split:], near[split:], position, ghost_range)
        rows[start:][flat[start:] < 0] = -1
        missing = np.flatnonzero((rows[start:split] < 0) & (flat[start:split] >= 0)) + start
        if missing.size and strict:
            k = int(missing[0])
            raise StateError(
                f"table '{table.name}': element gid {int(table.gid[k // width])} reaches "
                f"{anchor_table.name} gid {int(flat[k])}, which is not within the ghost width "
                f"({ghost_range:.4g} m) of its anchor: the element spans more than its system's "
                "interaction_range declares. Either it stretched that far (raise the range its "
                "system takes, e.g. a membrane's max_stretch, or shorten the element) or the run "
                "blew up (lower the time step, or check the element's stiffness and load)")
        table.with_ghosts(row_field)[...] = rows.reshape(table.with_ghosts(row_field).shape)


@kernel
def _incidence(refs, n_targets):
    start = np.zeros(n_targets + 1, dtype=np.int64)
    n, width = refs.shape
    for s in range(n):
        for c in range(width):
            t = refs[s, c]
            if t >= 0:
                start[t + 1] += 1
    for t in range(n_targets):
        start[t + 1] += start[t]
    fill = start[:n_targets].copy()
    items = np.empty(start[n_targets], dtype=np.int64)
    for s in range(n):
        for c in range(width):
            t = refs[s, c]
            if t >= 0:
                items[fill[t]] = s
                fill[t] += 1
    return start, items


def incidence(table, n_targets: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of element rows by referenced row: rows ``items[start[r]:start[r + 1]]`` refer to r.

    Over owned and ghost rows of `table` and every row field it declares; an
    element appears once per reference (increasing element row within a list).
    """
    n = table.n
    cols = [table.with_ghosts(f).reshape(n, max(int(np.prod(table.fields[f].shape)), 1))
            for f in table.references]
    refs = np.ascontiguousarray(np.concatenate(cols, axis=1) if cols else np.zeros((n, 0), dtype=np.int64),
                                dtype=np.int64)
    return _incidence(refs, int(n_targets))


__all__ = ["resolve_references", "incidence"]
