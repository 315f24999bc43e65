"""Simulation box, periodic wrapping, spatial sorting and ghost layers.

The domain implements the engine's halo vocabulary on whole tables (DESIGN.md,
Systems): ``rebuild_ghosts``, ``forward``, ``reverse`` (and, with several
ranks, ``migrate``). On one rank a periodic axis is a rank talking to itself:
rows within ``ghost_width`` of a periodic face are copied, shifted by the box
length, to ghost rows, so systems see periodic images as ordinary ghost rows
and never special-case periodicity.

Ghosts are built in three stages, x then y then z, each stage also copying the
ghosts made by the previous ones, so edge and corner images appear without a
26-neighbour enumeration. Each stage records its source rows (the "send list")
so ``forward`` and ``reverse`` replay the same mapping until the next rebuild.

Pair rule (applied by pair systems, stated here because ghosts create it):
a pair of an owned row and a ghost row is evaluated only when the owned row
has the lower gid; two ghost rows are never paired. Every pair is thus
evaluated exactly once globally, also across ranks, and forces put on ghost
rows come home through ``reverse``.

Non-periodic box faces are not walls: a particle that crosses one keeps going
(add a wall system to confine it); the box only bounds the cell grid and,
with several ranks, the decomposition. A particle outside the box at set-up
is an input error.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import halo_kernels as hk
from .errors import InputError, StateError
from .table import Halo, Table


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


@dataclass
class _GhostStage:
    table: str
    src_rows: np.ndarray  # int64 rows copied (owned or earlier ghosts)
    dst_start: int  # first ghost row of this stage
    shift: np.ndarray  # added to positions


class Domain:
    """Box, ghost layers and rebuild bookkeeping for the spatial tables.

    A spatial table is one with a ``position`` field of shape (3,). Its
    ghosts are rebuilt at every rebuild; its ``FORWARD`` fields are copied to
    ghosts by :meth:`forward`, its ``REVERSE`` fields summed back by
    :meth:`reverse`.
    """

    def __init__(self, box: Box, skin: float, sort_every_rebuild: bool = True):
        if skin < 0:
            raise InputError(f"skin must be >= 0 (got {skin})")
        self.box = box
        self.skin = float(skin)
        self.ghost_width = 0.0
        self.sort_every_rebuild = sort_every_rebuild
        self._stages: dict[str, list[_GhostStage]] = {}
        self._reference: dict[str, np.ndarray] = {}
        self.rebuild_count = 0

    # ---------------------------------------------------------------- checks
    def check_inside(self, table: Table) -> None:
        """Input check: every owned position lies in the box on non-periodic axes."""
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

    def needs_rebuild(self, table: Table) -> bool:
        """True when some owned row moved more than half the skin since the last rebuild.

        Raises :class:`StateError` naming the first row whose position is not finite.
        """
        ref = self._reference.get(table.name)
        if ref is None or ref.shape[0] != table.n_owned:
            return True
        worst, bad = hk.max_displacement_sq(table.position, ref)
        if bad >= 0:
            raise StateError(
                f"{table.name}: gid {int(table.gid[bad])} has a non-finite position "
                f"{table.position[bad].tolist()} at this step: the time step is too large for "
                "the contact stiffness, or the initial state is invalid")
        return worst > 0.25 * self.skin * self.skin

    # --------------------------------------------------------------- rebuild
    def rebuild(self, table: Table) -> None:
        """Wrap, optionally sort by cell, and rebuild the ghost layer of a spatial table."""
        table.clear_ghosts()
        pos = table.position
        hk.wrap_periodic(pos, self.box.lo, self.box.length, self.box.periodic_mask)
        if self.sort_every_rebuild and table.n_owned > 1:
            self._sort(table)
        self.rebuild_ghosts(table)
        self._reference[table.name] = table.position.copy()
        self.rebuild_count += 1

    def _sort(self, table: Table) -> None:
        cell = max(self.ghost_width, 1e-300)
        dims = np.maximum(np.floor(self.box.length / cell), 1).astype(np.int64)
        dims = np.minimum(dims, 1 << 20)
        cell_used = float(np.max(self.box.length / dims))
        keys = hk.spatial_sort_keys(table.position, self.box.lo, cell_used, dims)
        order = np.argsort(keys, kind="stable")
        if np.any(order != np.arange(order.size)):
            table.permute(order)

    def rebuild_ghosts(self, table: Table) -> None:
        """Create ghost rows: periodic images of rows within ghost_width of a periodic face.

        Preconditions: owned rows wrapped into the box; no ghost rows.
        Postconditions: ghost rows hold copies of every FORWARD field (positions
        shifted); the send lists for forward/reverse are recorded.
        """
        stages: list[_GhostStage] = []
        w = self.ghost_width
        L = self.box.length
        if w > 0.5 * float(np.min(np.where(self.box.periodic_mask, L, np.inf))):
            raise InputError(
                f"the interaction range plus skin ({w:g} m) exceeds half the periodic box "
                f"length {L.tolist()}: enlarge the box or reduce the skin")
        for axis in range(3):
            if not self.box.periodic[axis]:
                continue
            n_now = table.n
            low, high = hk.rows_near_faces(
                table.column("position"), n_now, axis,
                self.box.lo[axis] + w, self.box.hi[axis] - w)
            for rows, sign in ((low, 1.0), (high, -1.0)):
                if rows.size == 0:
                    continue
                shift = np.zeros(3)
                shift[axis] = sign * L[axis]
                start = table.n
                table.resize_ghosts(table.n_ghost + rows.size)
                stage = _GhostStage(table.name, rows, start, shift)
                self._fill_stage(table, stage, None)
                stages.append(stage)
        self._stages[table.name] = stages

    def _fill_stage(self, table: Table, stage: _GhostStage, names) -> None:
        for name, f in table.fields.items():
            if names is None:
                if f.halo is Halo.REVERSE:
                    table.column(name)[stage.dst_start:stage.dst_start + stage.src_rows.size] = 0
                    continue
                if f.halo is not Halo.FORWARD and name != "gid":
                    continue
            elif name not in names:
                continue
            col = table.column(name)
            if name == "position":
                hk.copy_rows_shifted(col, stage.src_rows, stage.dst_start, stage.shift)
            else:
                hk.copy_rows(col, stage.src_rows, stage.dst_start)

    # ------------------------------------------------------------ halo verbs
    def forward(self, table: Table, names) -> None:
        """Copy owner values of the given FORWARD fields to the ghost rows.

        Preconditions: ghosts built by :meth:`rebuild_ghosts` since the last
        structural change. Postconditions: ghost rows equal their sources
        (positions shifted by the periodic image).
        """
        names = tuple(names)
        for stage in self._stages.get(table.name, ()):
            self._fill_stage(table, stage, names)

    def reverse(self, table: Table, names) -> None:
        """Sum ghost-row values of REVERSE fields into their owners, then zero the ghosts.

        Stages run in reverse order, so a ghost of a ghost first adds into its
        source ghost, which then adds into its owner.
        """
        stages = self._stages.get(table.name, ())
        for stage in reversed(stages):
            for name in names:
                hk.add_rows_back(table.column(name), stage.src_rows, stage.dst_start)

    def has_ghost_stages(self, table: Table) -> bool:
        return bool(self._stages.get(table.name))
