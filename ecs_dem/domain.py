"""Simulation box, decomposition over ranks, and the domain that keeps the spatial tables.

The domain implements the engine's halo vocabulary on whole tables (DESIGN.md,
Systems): ``migrate``, ``rebuild_ghosts``, ``forward``, ``reverse`` (and ``zero``).
:class:`Domain` is the facade; the jobs live in their own modules:

* this module: the box, the rebuild decision (``needs_rebuild``: a row moved
  more than half the skin since the last rebuild), the rebuild itself (wrap,
  balance, destinations, migrate, sort by cell, ghosts) and the checkpoint state;
* ``ecs_dem.migration``: rows to the ranks that own their positions, rows of
  anchored tables (a table whose ``anchor`` names a field holding gids of a
  spatial table's rows: pairs, bonded springs) with their anchor rows;
* ``ecs_dem.ghosts``: ghost layers, their stages, periodic images (one rank is
  the same code talking to itself: systems never special-case periodicity or
  rank count);
* ``ecs_dem.halo``: forward, reverse and zero on the ghost stages (the float fast path).

Pair rule (applied by pair systems, stated here because ghosts create it):
a pair of an owned row and a ghost row is listed only when the owned row
has the lower gid; two ghost rows are never paired. Every pair is thus
listed exactly once globally, across ranks and periodic images, by the
owner of its lower gid, and forces put on ghost rows come home through
``reverse``. Per-pair data (contact history) therefore lives with the lower-gid
particle and migrates with it. A pair system may instead evaluate, on both
sides of a rank boundary, the pairs whose lower-gid row is a copy of another
rank's row (``own_images`` tells copies from periodic images of own rows) and
add forces to own rows only (LAMMPS's ``newton off``): it then declares
``accumulates_owned`` and adds a periodic image's share to its own row
(``home_rows``), with no reverse at all.

Set-up: every rank holds the same complete initial state, and the first
rebuild keeps each rank's own rows. Non-periodic box faces are not walls: a
particle that crosses one keeps going (add a wall system to confine it); the
outermost subdomains extend to infinity. A particle outside the box at set-up
is an input error.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import halo_kernels as hk
from .comm import SerialComm
from .decomposition import Decomposition
from .errors import InputError, StateError
from .ghosts import GhostLayers, GhostStage, compile_row_kernels, ghost_fields
from .halo import HaloExchange
from .migration import Migration
from .table import Halo, Table


SORT_DISORDER = 0.05  # fraction of rows out of cell order that triggers a sort (Domain)


@dataclass
class Box:
    """Axis-aligned box [lo, hi) in metres, periodic per axis."""

    lo: np.ndarray
    hi: np.ndarray
    periodic: tuple[bool, bool, bool] = (False, False, False)

    def __post_init__(self):
        self.lo = np.asarray(self.lo, dtype=np.float64).reshape(3)
        self.hi = np.asarray(self.hi, dtype=np.float64).reshape(3)
        self.periodic = tuple(bool(p) for p in self.periodic)
        if len(self.periodic) != 3:
            raise InputError("box: 'periodic' needs three flags (x, y, z)")
        if not np.all(self.hi > self.lo):
            raise InputError(f"box: every hi must exceed lo (lo={self.lo}, hi={self.hi})")

    @property
    def length(self) -> np.ndarray:
        return self.hi - self.lo

    @property
    def periodic_mask(self) -> np.ndarray:
        return np.array(self.periodic, dtype=np.bool_)



class Domain:
    """Box, decomposition, rebuild decision and the facade of migration, ghosts and halo.

    A spatial table is one with a ``position`` field of shape (3,). Its
    ghosts are rebuilt at every rebuild; its ``FORWARD`` fields are copied to
    ghosts by :meth:`forward`, its ``REVERSE`` fields summed back by
    :meth:`reverse` (module docstring: which module does what).

    Parameters
    ----------
    box : Box
    skin : float
        Verlet skin (m): rebuild once a row moved more than skin / 2.
    comm : SerialComm or MpiComm
    sort : bool
        Re-order owned rows by cell (memory locality) at a rebuild once more
        than ``SORT_DISORDER`` of them are out of cell order. Rows that moved
        to a neighbouring cell since the last sort cost little locality; a
        flowing chute reaches the threshold every 5-10 rebuilds (LAMMPS sorts
        every 1,000 steps). The decision depends on positions only, so a
        restart repeats it.
    balance_every : int
        Move the cut planes to even out rows per rank at the first rebuild
        at least this many rebuild checks after the last balance (0: never).
    """

    def __init__(self, box: Box, skin: float, comm=None, sort: bool = True,
                 balance_every: int = 0):
        if not (skin >= 0 and math.isfinite(skin)):
            raise InputError(f"skin must be finite and >= 0 (got {skin})")
        self.box = box
        self.skin = float(skin)
        self.comm = comm if comm is not None else SerialComm()
        self.decomposition = Decomposition(box, self.comm)
        self.ghost_width = 0.0
        self.sort = sort
        self.balance_every = int(balance_every)
        self._ghosts = GhostLayers(box, self.decomposition, self.comm)
        self._halo = HaloExchange(self._ghosts, self.comm)
        self._migration = Migration(self.decomposition, self.comm)
        self._checks_since_balance = 0
        self._reference: dict[str, np.ndarray] = {}
        self._epoch: dict[str, int] = {}
        self._reports: dict[str, tuple] = {}  # table -> (epoch, n_owned, worst_sq, bad)
        self._planned: dict[str, tuple] = {}  # table -> (epoch, owner rank per owned row)
        self._sort_grid_cache = None  # (subdomain and ghost width, the sort's grid)
        self.rebuild_count = 0

    # ---------------------------------------------------------------- checks
    def check_inside(self, table: Table) -> None:
        """Input check: every owned position is finite and in the box on non-periodic axes."""
        x = table.position
        if x.shape[0] == 0:
            return
        if not np.all(np.isfinite(x)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(x), axis=1))[0])
            raise InputError(f"{table.name}: gid {int(table.gid[bad])} has a non-finite position {x[bad]}")
        for a in range(3):
            if self.box.periodic[a]:
                continue
            out = (x[:, a] < self.box.lo[a]) | (x[:, a] > self.box.hi[a])
            if np.any(out):
                i = int(np.flatnonzero(out)[0])
                raise InputError(
                    f"{table.name}: gid {int(table.gid[i])} at {x[i].tolist()} lies outside the "
                    f"domain on axis {'xyz'[a]} [{self.box.lo[a]}, {self.box.hi[a]}]; "
                    "enlarge the box or move the particle")

    def check_ghost_width(self) -> None:
        w = self.ghost_width
        L = self.box.length
        for a in range(3):
            if self.box.periodic[a] and self.decomposition.dims[a] == 1 and w > 0.5 * L[a]:
                raise InputError(
                    f"the interaction range plus skin ({w:g} m) exceeds half the periodic box "
                    f"length along {'xyz'[a]} ({L[a]:g} m): enlarge the box or reduce the skin")
        self.decomposition.check_width(w)

    def displacement_reference(self, table: Table) -> np.ndarray | None:
        """The owned rows' positions at the last rebuild, for a system that moves them and
        reports the rebuild check on the way (``report_displacement``); None when the table
        changed structurally since (rows added, removed, re-ordered: a rebuild is due)."""
        ref = self._reference.get(table.name)
        if ref is None or ref.shape[0] != table.n_owned or self._epoch.get(table.name) != table.epoch:
            return None
        return ref

    def report_displacement(self, table: Table, worst_sq: float, bad: int) -> None:
        """The rebuild check of this step, computed by the system that moved the rows
        (``System.reports_displacement``): the largest squared displacement of an owned row
        since ``displacement_reference`` and the first non-finite row (-1 if none), as
        ``halo_kernels.fold_displacement`` folds them. ``needs_rebuild(table, reported=True)``
        takes it instead of its own pass over the rows (one pass less over the positions)."""
        self._reports[table.name] = (table.epoch, table.n_owned, worst_sq, bad)

    def needs_rebuild(self, table: Table, reported: bool = False, static: bool = False) -> bool:
        """True when some owned row (on this rank) moved more than half the skin since the last
        rebuild, or the table changed structurally (rows added, removed, re-ordered).

        `reported`: the world knows that the last system to move the rows reports the check
        (``report_displacement``); its report of this step, if there is one, stands for the
        pass over the rows. A report is used by the next check only.
        `static`: no system writes the rows' positions (``Rebuilder.static_tables``): only the
        structural change is checked, not the displacement (a fixed mesh wall of 10^6
        triangles would cost a pass over its vertices every step).
        Raises :class:`StateError` naming the first row whose position is not finite.
        The world combines the answers of all ranks.
        """
        self._checks_since_balance += 1
        self._planned.pop(table.name, None)  # a plan holds for the rebuild of its own step only
        report = self._reports.pop(table.name, None) if self._reports else None
        ref = self.displacement_reference(table)
        if ref is None:
            return True  # rows were added, removed or re-ordered since the last rebuild
        if static:
            return False
        if reported and report is not None and report[:2] == (table.epoch, ref.shape[0]):
            worst, bad = report[2], report[3]
        else:
            worst, bad = hk.max_displacement_sq(table.position, ref)
        if bad >= 0:
            raise StateError(
                f"{table.name}: gid {int(table.gid[bad])} has a non-finite position "
                f"{table.position[bad].tolist()} at this step: the time step is too large for "
                "the contact stiffness, or the initial state is invalid")
        return worst > 0.25 * self.skin * self.skin

    # --------------------------------------------------------------- rebuild
    def plan_rebuild(self, table: Table, initial: bool = False) -> None:
        """The first half of a rebuild, before rows move: wrap owned positions on periodic
        axes, move the cut planes when a balance is due, and fix the rank every owned row
        goes to (``destinations``). ``rebuild`` then migrates to those ranks; it plans by
        itself when not planned, or when the table's rows changed since."""
        hk.wrap_periodic(table.position, self.box.lo, self.box.length, self.box.periodic_mask)
        owners = None
        if self.comm.size > 1:
            if (self.balance_every > 0 and not initial
                    and self._checks_since_balance >= self.balance_every):
                self.decomposition.balance(table.position, self.ghost_width)
                self.decomposition.check_width(self.ghost_width)
                self._checks_since_balance = 0
            owners = self.decomposition.owner_ranks(table.position)
        self._planned[table.name] = (table.epoch, owners)

    def destinations(self, table: Table) -> np.ndarray:
        """Between ``plan_rebuild`` and ``rebuild``: per row, owned then ghost, the rank the
        row goes to at this rebuild, for owned rows and periodic images of them (an image
        goes where its row goes); -1 for copies of other ranks' rows."""
        plan = self._planned.get(table.name)
        if plan is None or plan[0] != table.epoch:
            raise StateError(f"{table.name}: destinations are known only between "
                             "plan_rebuild and rebuild")
        dest = np.full(table.n, -1, dtype=np.int64)
        dest[:table.n_owned] = self.comm.rank if plan[1] is None else plan[1]
        return self._ghosts.through_local_stages(table, dest)

    def rebuild(self, table: Table, anchored=(), initial: bool = False) -> None:
        """Migrate (to the ranks ``plan_rebuild`` fixed), sort by cell, and rebuild the ghost
        layer of a spatial table.

        `anchored` are tables whose rows migrate with their anchor rows of `table`.
        `initial`: every rank holds the full initial state; keep own rows only.
        """
        plan = self._planned.pop(table.name, None)
        if plan is None or plan[0] != table.epoch:  # not planned, or rows changed since
            self.plan_rebuild(table, initial)
            plan = self._planned.pop(table.name)
        table.clear_ghosts()
        if self.comm.size > 1:
            self.migrate(table, anchored, initial, plan[1])
        if self.sort and table.n_owned > 1:
            self._sort(table)
        self.rebuild_ghosts(table)
        self._reference[table.name] = table.position.copy()
        self._epoch[table.name] = table.epoch
        self.rebuild_count += 1

    def _sort(self, table: Table) -> None:
        lo, cell_used, dims = self._sort_grid()
        keys = hk.spatial_sort_keys(table.position, lo, cell_used, dims)
        if hk.count_descents(keys) <= SORT_DISORDER * keys.size:
            return
        table.permute(np.argsort(keys, kind="stable"))

    def _sort_grid(self) -> tuple[np.ndarray, float, np.ndarray]:
        """(lo, cell, dims) of the sort's grid over this subdomain: cells of the ghost width;
        kept while the subdomain and the ghost width stay (a dozen numpy calls on 3-vectors
        less per rebuild)."""
        lo, hi = self.decomposition.lo, self.decomposition.hi
        key = (lo.tobytes(), hi.tobytes(), self.ghost_width)
        if self._sort_grid_cache is not None and self._sort_grid_cache[0] == key:
            return self._sort_grid_cache[1]
        lo = np.where(np.isfinite(lo), lo, self.box.lo)
        hi = np.where(np.isfinite(hi), hi, self.box.hi)
        cell = self.ghost_width if self.ghost_width > 0 else float(np.max(hi - lo))
        dims = np.maximum(np.floor((hi - lo) / cell), 1).astype(np.int64)
        dims = np.minimum(dims, 1 << 20)
        grid = (lo, float(np.max((hi - lo) / dims)), dims)
        self._sort_grid_cache = (key, grid)
        return grid

    # ------------------------------------------------- migration, ghosts, halo
    def migrate(self, table: Table, anchored=(), initial: bool = False,
                owners: np.ndarray | None = None) -> None:
        """Every owned row to the rank owning its position, or to `owners` (one rank per
        owned row), anchored rows with it (``Migration.migrate``)."""
        self._migration.migrate(table, anchored, initial, owners)

    def rebuild_ghosts(self, table: Table) -> None:
        """Ghost rows of a spatial table within ``ghost_width`` of a subdomain face
        (``GhostLayers.build``). Preconditions: owned rows wrapped and migrated; no ghosts."""
        self._ghosts.build(table, self.ghost_width)

    def rebuild_anchored_ghosts(self, anchor_table: Table, table: Table) -> None:
        """Ghost rows of `table` wherever its anchor rows in `anchor_table` are ghosts
        (``GhostLayers.build_anchored``)."""
        self._ghosts.build_anchored(anchor_table, table)

    def anchor_rows(self, anchor_table: Table, table: Table) -> np.ndarray:
        """Per row of `table`, its anchor's row in `anchor_table` (``GhostLayers.anchor_rows``)."""
        return self._ghosts.anchor_rows(anchor_table, table)

    compile_row_kernels = staticmethod(compile_row_kernels)

    def own_images(self, table: Table) -> np.ndarray:
        """Per row: 1 if owned or an image of an owned row (``GhostLayers.own_images``)."""
        return self._ghosts.own_images(table)

    def home_rows(self, table: Table) -> np.ndarray:
        """Per row: the owned row its share belongs to, or -1 (``GhostLayers.home_rows``)."""
        return self._ghosts.home_rows(table)

    def forward(self, table: Table, names) -> None:
        """Copy owner values of the given FORWARD fields to the ghost rows (``ecs_dem.halo``)."""
        self._halo.forward(table, names)

    def reverse(self, table: Table, names) -> None:
        """Sum ghost-row values of REVERSE fields into their sources (``ecs_dem.halo``)."""
        self._halo.reverse(table, names)

    def zero(self, table: Table, names) -> None:
        """Zero the given REVERSE fields on owned and ghost rows (``ecs_dem.halo``)."""
        self._halo.zero(table, names)

    # ------------------------------------------------------------ checkpoints
    def export_state(self, tables: dict) -> tuple[np.ndarray, np.ndarray]:
        """This rank's ghost stages, anchor rows, rebuild references and counters, flattened.

        With the tables' owned rows and the cut planes this is what a
        bit-identical continuation on the same rank count needs
        (``io.checkpoint``); :meth:`restore_state` reads it back. `tables`:
        the world's tables, in the same order on both sides.
        """
        ints: list[int] = [self._checks_since_balance, self.rebuild_count]
        floats: list[np.ndarray] = []
        for k, (name, table) in enumerate(tables.items()):
            stages = self._ghosts.stages.get(name)
            if stages is None:
                continue
            ints += [k, table.n_ghost, len(stages)]
            for st in stages:
                ints += [st.axis, -1 if st.dest is None else st.dest,
                         -1 if st.source is None else st.source, int(st.local), st.recv_start,
                         st.recv_count, st.send_rows.size, *st.send_rows.tolist()]
                floats.append(st.shift)
            anchor = self._ghosts.anchors.get(name)
            anchor = None if anchor is None or anchor[0] != table.epoch else anchor[1]
            ints += [-1] if anchor is None else [anchor.size, *anchor.tolist()]
            ref = self._reference.get(name)
            ints += [-1] if ref is None else [ref.shape[0]]
            if ref is not None:
                floats.append(ref.ravel())
        ints.append(-2)  # end marker
        return (np.array(ints, dtype=np.int64),
                np.concatenate(floats) if floats else np.zeros(0))

    def restore_state(self, tables: dict, ints: np.ndarray, floats: np.ndarray) -> None:
        """Inverse of :meth:`export_state`, after the owned rows were restored in saved order.

        Ghost rows are copies of their sources, so replaying the saved send
        lists rebuilds them exactly.
        """
        names = list(tables)
        self._checks_since_balance, self.rebuild_count = int(ints[0]), int(ints[1])
        i, f = 2, 0
        while ints[i] != -2:
            table = tables[names[ints[i]]]
            n_ghost, n_stages = int(ints[i + 1]), int(ints[i + 2])
            i += 3
            stages = []
            for _ in range(n_stages):
                axis, dest, source, local, start, count, n_send = (int(v) for v in ints[i:i + 7])
                send = ints[i + 7:i + 7 + n_send].copy()
                i += 7 + n_send
                stages.append(GhostStage(axis, send, None if dest < 0 else dest,
                                          None if source < 0 else source, bool(local), start,
                                          count, floats[f:f + 3].copy()))
                f += 3
            n_anchor = int(ints[i])
            i += 1
            anchor = None
            if n_anchor >= 0:
                anchor = ints[i:i + n_anchor].copy()
                i += n_anchor
            n_ref = int(ints[i])
            i += 1
            table.resize_ghosts(n_ghost)
            for fname, fd in table.fields.items():
                if fd.halo is Halo.REVERSE:
                    table.with_ghosts(fname)[table.n_owned:] = 0
            self._ghosts.stages[table.name] = stages
            self.forward(table, ghost_fields(table))
            if anchor is not None:
                self._ghosts.anchors[table.name] = (table.epoch, anchor)
            if n_ref >= 0:
                self._reference[table.name] = floats[f:f + 3 * n_ref].reshape(n_ref, 3).copy()
                self._epoch[table.name] = table.epoch
                f += 3 * n_ref


__all__ = ["Box", "Domain", "SORT_DISORDER", "ghost_fields"]
