"""Migration: every owned row moves to the rank that owns its position.

Rows of anchored tables (per-pair data, bonded elements) travel with their
anchor row. Every table moves in the same messages; a rank talks only to the
26 neighbours of its subdomain when every row goes no farther (one vote), else
to every rank. At set-up every rank holds the whole initial state and keeps its
own rows (no message).
"""
from __future__ import annotations

import numpy as np

from . import halo_kernels as hk
from .errors import StateError
from .row_packing import pack_rows
from .table import Table


def rows_leaving(owners: np.ndarray, rows: np.ndarray, here: int) -> np.ndarray:
    """Indices k (increasing) of `rows` whose owner is not rank `here`."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    out = np.empty(rows.size, dtype=np.int64)
    return out[:hk.rows_elsewhere(owners, rows, here, out)]


def anchors_leaving(table: Table, dep: Table, owners: np.ndarray,
                    here: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices k, increasing, of the owned rows of `dep` whose anchor row in `table` goes
    to another rank; those ranks). The anchors come from the table's anchor reference
    column while it is current (checked in the same pass), else by gid look-up."""
    gids = np.ascontiguousarray(dep.anchor_gids())
    ref = dep.anchor_reference
    if ref is not None:
        rows = dep.owned(ref)
        rows = np.ascontiguousarray(rows if rows.ndim == 1 else rows[:, 0])
        gone = np.empty(rows.size, dtype=np.int64)
        dest = np.empty(rows.size, dtype=np.int64)
        count = hk.anchors_elsewhere(rows, table.gid, gids, table.n_owned, owners, here,
                                     gone, dest)
        if count >= 0:
            return gone[:count], dest[:count]
    rows = table.lookup().rows(gids, owned_only=True)
    if np.any(rows < 0):
        raise StateError(f"table '{dep.name}': rows anchored to gids not owned here")
    gone = rows_leaving(owners, rows, here)
    return gone, owners[rows[gone]]


class Migration:
    """Migration of the rows of a domain's tables between ranks (module docstring)."""

    def __init__(self, decomposition, comm):
        self.decomposition = decomposition
        self.comm = comm
        self._neighbours = None  # (ranks, graph communicator, cut planes they hold for)

    def migrate(self, table: Table, anchored=(), initial: bool = False,
                owners: np.ndarray | None = None) -> None:
        """Move every owned row (all fields) to the rank that owns its position (or to
        `owners`, one rank per owned row, when given).

        Preconditions: no ghost rows; positions wrapped. Postconditions: every
        owned row lies in this rank's subdomain; rows of anchored tables sit
        on the rank of their anchor row; gids are unchanged and unique. Every
        table travels in the same messages (``alltoallv_tables``); each keeps
        its staying rows (the last ones fill the holes), then appends what it
        received in rank order.
        """
        me = self.comm.rank
        if owners is None:
            owners = self.decomposition.owner_ranks(table.position)
        tables, leaving, dests = [table], [], []
        gone = rows_leaving(owners, np.arange(table.n_owned), me)
        leaving.append(gone)
        dests.append(owners[gone])
        for dep in anchored:
            tables.append(dep)
            gone, dest = anchors_leaving(table, dep, owners, me)
            leaving.append(gone)
            dests.append(dest)
        if initial:  # every rank holds every row: keep its own
            for t, gone in zip(tables, leaving):
                if gone.size:
                    t.remove(gone, keep_order=False)
            return
        neighbours = self._neighbourhood(owners)
        peers, graph = neighbours if neighbours is not None else (None, None)
        sends = []
        for t, dest, gone in zip(tables, dests, leaving):
            order = np.argsort(dest, kind="stable")
            to = dest[order]
            counts = (np.bincount(to, minlength=self.comm.size) if peers is None else
                      np.bincount(np.searchsorted(peers, to), minlength=peers.size))
            sends.append((pack_rows(t, tuple(t.fields), gone[order]), counts))
        received = self.comm.alltoallv_tables(sends, peers, graph)
        for t, gone, got in zip(tables, leaving, received):
            if gone.size:
                t.remove(gone, keep_order=False)
            if got.shape[0]:
                t.append_packed(got)

    def _neighbourhood(self, owners: np.ndarray):
        """(ranks, graph) of the 26-cell neighbourhood if every row goes no farther on every
        rank (one reduction decides), else None: migration then talks to every rank."""
        dec = self.decomposition
        key = tuple(tuple(c) for c in dec.cuts)
        if self._neighbours is None or self._neighbours[2] != key:
            ranks = dec.neighbour_ranks()
            graph = self._neighbours[1] if self._neighbours is not None else None
            if graph is None:  # the neighbour ranks depend on the grid only, not on the planes
                graph = self.comm.neighbourhood(ranks)
            self._neighbours = (ranks, graph, key)
        ranks = self._neighbours[0]
        if dec.every_rank_adjacent:  # on every rank alike (no rank may skip the vote)
            return self._neighbours[:2]
        leaving = owners[owners != self.comm.rank]
        far = bool(np.any(ranks[np.minimum(np.searchsorted(ranks, leaving), ranks.size - 1)]
                          != leaving)) if leaving.size and ranks.size else bool(leaving.size)
        return None if self.comm.any(far) else self._neighbours[:2]



__all__ = ["Migration", "rows_leaving", "anchors_leaving"]
