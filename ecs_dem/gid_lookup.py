"""Local rows of global ids, over owned *and* ghost rows, nearest image first.

A gid can sit in several local rows at once: the owned row and ghost copies
(periodic images on one rank, or copies arriving over several stages). A
:class:`GidLookup` answers "which local row holds gid g?" for every row of a
table, and, where a table has positions, picks the image nearest to a given
row (the element's anchor): that is how a bonded element or a pair finds its
partners whatever the rank count and periodicity (docs/developer/architecture.md, Data).

Two layouts, chosen by how densely the gids fill [0, max gid]:

* dense (particles: gids 0..N-1): ``head[g]`` is the lowest row holding g;
* sparse (pairs: ids of gid pairs, up to N^2/2): gids sorted once, a binary
  search finds the lowest row.

Either way ``next_row[r]`` chains the rows of one gid in increasing row
order, so owned rows (which come first) are met before ghosts. Built in
O(rows) (dense) or O(rows log rows) (sparse) once per structural epoch of the
table (``Table.lookup`` caches it).
"""
from __future__ import annotations

import numpy as np

from .jit import inline, kernel

#: a table whose largest gid exceeds DENSE_FACTOR x rows + DENSE_SLACK uses the sparse layout
DENSE_FACTOR = 8
DENSE_SLACK = 1024


@kernel
def _dense_chain(gids, size):
    """head[g] = lowest row with gid g (-1: none), next_row[r] = next higher row with the same gid."""
    head = np.full(size, -1, dtype=np.int64)
    next_row = np.full(gids.size, -1, dtype=np.int64)
    for r in range(gids.size - 1, -1, -1):
        g = gids[r]
        next_row[r] = head[g]
        head[g] = r
    return head, next_row


@kernel
def _sorted_chain(sorted_gids, order, n):
    """next_row for the sparse layout: consecutive equal gids in sorted order, by increasing row."""
    next_row = np.full(n, -1, dtype=np.int64)
    for k in range(sorted_gids.size - 1):
        if sorted_gids[k + 1] == sorted_gids[k]:
            next_row[order[k]] = order[k + 1]
    return next_row


@inline
def _first_row(g, dense, head, sorted_gids, order):
    if dense:
        if g < 0 or g >= head.size:
            return -1
        return head[g]
    k = np.searchsorted(sorted_gids, g)
    if k < sorted_gids.size and sorted_gids[k] == g:
        return order[k]
    return -1


@kernel
def _rows(query, dense, head, sorted_gids, order, limit):
    """Lowest row below `limit` of each queried gid (-1 where none)."""
    out = np.empty(query.size, dtype=np.int64)
    for q in range(query.size):
        r = _first_row(query[q], dense, head, sorted_gids, order)
        out[q] = r if r < limit else -1
    return out


@kernel
def _nearest_rows(query, near, position, dense, head, next_row, sorted_gids, order,
                  max_distance_sq):
    """Row of each queried gid nearest to position[near[q]] (-1: absent, or every image is
    at least sqrt(max_distance_sq) away; max_distance_sq < 0 means no limit)."""
    out = np.empty(query.size, dtype=np.int64)
    for q in range(query.size):
        r = _first_row(query[q], dense, head, sorted_gids, order)
        a = near[q]
        best = np.inf
        found = -1
        while r >= 0:
            d2 = 0.0
            for c in range(3):
                d = position[r, c] - position[a, c]
                d2 += d * d
            if d2 < best:
                best = d2
                found = r
            r = next_row[r]
        if max_distance_sq >= 0.0 and not best < max_distance_sq:
            found = -1
        out[q] = found
    return out


class GidLookup:
    """Local rows of gids over the first `n` rows of a gid column (owned, then ghosts).

    Built by ``Table.lookup()``; valid until the table's next structural change.
    """

    def __init__(self, gids: np.ndarray, n_owned: int):
        gids = np.ascontiguousarray(gids, dtype=np.int64)
        self.n = gids.size
        self.n_owned = int(n_owned)
        top = int(gids.max()) + 1 if gids.size else 0
        if gids.size and int(gids.min()) < 0:
            raise ValueError("gids must be >= 0")
        self.dense = top <= DENSE_FACTOR * gids.size + DENSE_SLACK
        if self.dense:
            self._head, self._next = _dense_chain(gids, top)
            self._sorted = np.zeros(0, dtype=np.int64)
            self._order = np.zeros(0, dtype=np.int64)
        else:
            self._order = np.argsort(gids, kind="stable")
            self._sorted = gids[self._order]
            self._next = _sorted_chain(self._sorted, self._order, gids.size)
            self._head = np.zeros(0, dtype=np.int64)

    def rows(self, gids, owned_only: bool = False) -> np.ndarray:
        """Lowest local row of each gid (the owned row where this rank owns it); -1 where absent.

        ``owned_only``: -1 unless the gid is owned here.
        """
        query = np.ascontiguousarray(gids, dtype=np.int64).ravel()
        limit = self.n_owned if owned_only else self.n
        out = _rows(query, self.dense, self._head, self._sorted, self._order, limit)
        return out.reshape(np.shape(gids))

    def nearest_rows(self, gids, near_rows, position, max_distance: float = np.inf) -> np.ndarray:
        """Row of each gid nearest to ``position[near_rows]`` (the periodic image an element needs).

        ``gids`` and ``near_rows`` are equally long. Images at ``max_distance``
        or farther do not count (-1 if no image is closer).
        """
        query = np.ascontiguousarray(gids, dtype=np.int64).ravel()
        near = np.ascontiguousarray(near_rows, dtype=np.int64).ravel()
        if near.size != query.size:
            raise ValueError("gids and near_rows must be equally long")
        limit = max_distance * max_distance if np.isfinite(max_distance) else -1.0
        out = _nearest_rows(query, near, position, self.dense, self._head, self._next,
                            self._sorted, self._order, limit)
        return out.reshape(np.shape(gids))


__all__ = ["GidLookup"]
