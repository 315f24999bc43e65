"""Simulation box, decomposition over ranks, migration and ghost layers.

The domain implements the engine's halo vocabulary on whole tables (DESIGN.md,
Systems): ``migrate``, ``rebuild_ghosts``, ``forward``, ``reverse``. One rank
is the same code talking to itself: along a periodic axis its neighbour is
itself, and rows within ``ghost_width`` of a periodic face become ghost rows
shifted by the box length (periodic images), so systems see periodic images as
ordinary ghost rows and never special-case periodicity or rank count.

Ghosts are built in three stages, x then y then z, two directions each; each
stage also sends the ghosts received in earlier stages, so edge and corner
images arrive without a 26-neighbour enumeration (LAMMPS's ``borders``). Each
stage records its send list, so ``forward`` and ``reverse`` replay the same
mapping until the next rebuild. Messages are packed byte matrices moved with
mpi4py's buffer methods; a rank sending to itself copies rows directly.

Pair rule (applied by pair systems, stated here because ghosts create it):
a pair of an owned row and a ghost row is listed only when the owned row
has the lower gid; two ghost rows are never paired. Every pair is thus
listed exactly once globally, across ranks and periodic images, by the
owner of its lower gid, and forces put on ghost rows come home through
``reverse``. Per-pair data (contact history) therefore lives with the lower-gid
particle and migrates with it. A pair system may in addition evaluate, on
the other rank, the pairs whose lower-gid row is a copy of another rank's
row (``own_images`` tells copies from periodic images of own rows) and add
forces to own rows only (LAMMPS's ``newton off``): its accumulation then
needs only ``reverse(local_only=True)``, without a message.

Anchored tables: a table whose ``anchor`` names a field holding gids of a
spatial table's rows (the pairs table: its ``gid`` column is gid_i; bonded
springs: their first vertex) migrates row by row with that anchor.

Set-up: every rank holds the same complete initial state (drivers run the same
code on every rank), and the first rebuild keeps each rank's own rows.

Non-periodic box faces are not walls: a particle that crosses one keeps going
(add a wall system to confine it); the outermost subdomains extend to
infinity. A particle outside the box at set-up is an input error.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import halo_kernels as hk
from .comm import SerialComm
from .decomposition import Decomposition
from .errors import InputError, StateError
from .row_packing import add_packed_into, compile_kernels, move_rows, pack_rows, unpack_rows
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


@dataclass(eq=False)
class _GhostStage:
    axis: int
    send_rows: np.ndarray  # int64 rows sent (owned or earlier ghosts)
    dest: int | None  # rank the rows go to
    source: int | None  # rank the ghosts of this stage come from
    local: bool  # dest and source are this rank: copy rows directly
    recv_start: int  # first ghost row of this stage
    recv_count: int
    shift: np.ndarray  # added to received positions (periodic image)


@dataclass(eq=False)
class _FloatHaloPlan:
    """Cached forward/reverse of a set of float64 fields: columns and buffers per stage.

    Valid while the table's epoch and capacity are unchanged (until the next rebuild).
    """

    key: tuple
    columns: tuple
    shift_column: int  # index of "position" in the columns (-1: none)
    forward_steps: list  # _LocalRun or a pair of stages with messages, in forward order
    reverse_steps: list  # the same in reverse order
    send: dict  # stage -> (rows, width) float64 buffer of the forward message
    recv: dict  # stage -> (recv_count, width) float64 buffer
    ghost_rows: dict  # stage -> its ghost row indices
    merged: dict  # (stage, stage) -> (send, dest, source, recv): both directions, one message
    shifted: frozenset  # remote stages whose ghost positions get a periodic shift


@dataclass(eq=False)
class _LocalRun:
    """Consecutive stages where a rank talks to itself, fused into one kernel call: row k
    copies ``src[k]`` to ghost row ``dst[k]`` (forward; positions + ``shift[k]``) or adds
    it back (reverse). On one rank every stage is local: a halo verb is then one call."""

    src: np.ndarray
    dst: np.ndarray
    shift: np.ndarray  # (rows, 3); (0, 3) for a reverse run, which shifts nothing

    @classmethod
    def of(cls, stages, reverse: bool = False) -> "_LocalRun":
        stages = [st for st in stages if st.recv_count]
        if not stages:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 3)))
        if reverse:
            shift = np.zeros((0, 3))
        else:
            shift = np.empty((sum(st.recv_count for st in stages), 3))
            start = 0
            for st in stages:  # a broadcast store per stage: np.tile costs more at rebuild rate
                shift[start:start + st.recv_count] = st.shift
                start += st.recv_count
        if all(a.recv_start + a.recv_count == b.recv_start for a, b in zip(stages, stages[1:])):
            dst = np.arange(stages[0].recv_start, stages[-1].recv_start + stages[-1].recv_count)
        else:  # the reverse order of stages
            dst = np.concatenate([_ghost_rows(st) for st in stages])
        return cls(np.asarray(np.concatenate([st.send_rows for st in stages]), dtype=np.int64),
                   dst, shift)


def _ghost_rows(stage) -> np.ndarray:
    return np.arange(stage.recv_start, stage.recv_start + stage.recv_count)


def _fuse_local(pairs, reverse: bool = False) -> list:
    """The pairs of stages with each maximal sequence of all-local pairs fused (_LocalRun;
    `reverse`: for the reverse verb, without the forward's position shifts)."""
    steps, local = [], []
    for pair in pairs:
        if all(st.local for st in pair):
            local.extend(pair)
            continue
        if local:
            steps.append(_LocalRun.of(local, reverse))
            local = []
        steps.append(pair)
    if local:
        steps.append(_LocalRun.of(local, reverse))
    return steps


def ghost_fields(table: Table) -> list[str]:
    """Fields a ghost row carries: FORWARD fields, gid, and (anchored tables) the gid fields
    of the anchor and of every reference (``ecs_dem.references``)."""
    extra = {"gid"}
    if table.anchor:
        extra.add(table.anchor[1])
        extra.update(table.references.values())
    return [f for f, d in table.fields.items() if d.halo is Halo.FORWARD or f in extra]


class Domain:
    """Box, decomposition, ghost layers and rebuild bookkeeping for the spatial tables.

    A spatial table is one with a ``position`` field of shape (3,). Its
    ghosts are rebuilt at every rebuild; its ``FORWARD`` fields are copied to
    ghosts by :meth:`forward`, its ``REVERSE`` fields summed back by
    :meth:`reverse`.

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
        self._checks_since_balance = 0
        self._stages: dict[str, list[_GhostStage]] = {}
        self._plans: dict[tuple, _FloatHaloPlan] = {}
        self._fused: dict[str, tuple] = {}  # table -> (its stages, forward, reverse steps)
        self._anchor_rows: dict[str, np.ndarray] = {}
        self._reference: dict[str, np.ndarray] = {}
        self._epoch: dict[str, int] = {}
        self._reports: dict[str, tuple] = {}  # table -> (epoch, n_owned, worst_sq, bad)
        self._own_images: dict[str, tuple] = {}
        self._home_rows: dict[str, tuple] = {}
        self._planned: dict[str, tuple] = {}  # table -> (epoch, owner rank per owned row)
        self._neighbours = None  # (ranks, graph communicator, cut planes they hold for)
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

    def needs_rebuild(self, table: Table, reported: bool = False) -> bool:
        """True when some owned row (on this rank) moved more than half the skin since the last
        rebuild, or the table changed structurally (rows added, removed, re-ordered).

        `reported`: the world knows that the last system to move the rows reports the check
        (``report_displacement``); its report of this step, if there is one, stands for the
        pass over the rows. A report is used by the next check only.
        Raises :class:`StateError` naming the first row whose position is not finite.
        The world combines the answers of all ranks.
        """
        self._checks_since_balance += 1
        self._planned.pop(table.name, None)  # a plan holds for the rebuild of its own step only
        report = self._reports.pop(table.name, None) if self._reports else None
        ref = self.displacement_reference(table)
        if ref is None:
            return True  # rows were added, removed or re-ordered since the last rebuild
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
        return self._through_local_stages(table, dest)

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

    # ------------------------------------------------------------- migrate
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
        gone = self._leaving(owners, np.arange(table.n_owned), me)
        leaving.append(gone)
        dests.append(owners[gone])
        for dep in anchored:
            tables.append(dep)
            gone, dest = self._anchors_leaving(table, dep, owners, me)
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

    @staticmethod
    def _leaving(owners: np.ndarray, rows: np.ndarray, here: int) -> np.ndarray:
        """Indices k (increasing) of `rows` whose owner is not rank `here`."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        out = np.empty(rows.size, dtype=np.int64)
        return out[:hk.rows_elsewhere(owners, rows, here, out)]

    @staticmethod
    def _anchors_leaving(table: Table, dep: Table, owners: np.ndarray,
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
        gone = Domain._leaving(owners, rows, here)
        return gone, owners[rows[gone]]

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

    # ------------------------------------------------------------- ghosts
    def rebuild_ghosts(self, table: Table) -> None:
        """Create ghost rows: copies of rows within ghost_width of a subdomain face.

        Preconditions: owned rows wrapped and migrated; no ghost rows.
        Postconditions: ghost rows hold copies of every FORWARD field (positions
        shifted across periodic faces), REVERSE fields of ghosts are zero, and
        the send lists for forward/reverse are recorded.
        """
        stages: list[_GhostStage] = []
        w = self.ghost_width
        dec = self.decomposition
        lo_sub, hi_sub = dec.lo, dec.hi
        L = self.box.length
        names = ghost_fields(table)
        for axis in range(3):
            periodic = self.box.periodic[axis]
            n_axis = dec.dims[axis]
            if n_axis == 1 and not periodic:
                continue
            lo_nb, hi_nb = self.comm.neighbours(axis, periodic)
            low, high = hk.rows_near_faces(table.column("position"), table.n, axis,
                                           lo_sub[axis] + w, hi_sub[axis] - w)
            coord = dec.coords[axis]
            down_shift = L[axis] if periodic and coord == n_axis - 1 else 0.0
            up_shift = -L[axis] if periodic and coord == 0 else 0.0
            pair = []
            for rows, dest, source, shift in ((low, lo_nb, hi_nb, down_shift),
                                              (high, hi_nb, lo_nb, up_shift)):
                vec = np.zeros(3)
                vec[axis] = shift
                local = dest == self.comm.rank and source == self.comm.rank
                pair.append(_GhostStage(axis, rows if dest is not None else rows[:0], dest, source,
                                        local, 0, 0, vec))
            # both directions of an axis are local (a periodic axis along one rank: one copy)
            # or both go to other ranks (exchanged together: they are independent)
            if all(st.local for st in pair):
                self._copy_local_pair(table, pair, names)
                stages.extend(pair)
                continue
            received = self.comm.exchange_rows(
                [(pack_rows(table, names, st.send_rows), st.dest, st.source, None) for st in pair])
            for st, got in zip(pair, received):
                st.recv_start = table.n
                st.recv_count = got.shape[0]
                table.resize_ghosts(table.n_ghost + st.recv_count)
                unpack_rows(table, names, got, st.recv_start)
                self._shift_positions(table, st)
                stages.append(st)
        for f, d in table.fields.items():  # once for all stages: no stage copies these fields
            if d.halo is Halo.REVERSE:
                table.column(f)[table.n_owned:table.n] = 0
        self._stages[table.name] = stages

    @staticmethod
    def compile_row_kernels(table: Table, anchored=()) -> None:
        """Compile the row-moving kernels that migration and ghost rebuilds of `table` and of
        its `anchored` tables will call (``row_packing.compile_kernels``)."""
        for t in (table, *anchored):
            compile_kernels(t, tuple(t.fields))
            compile_kernels(t, tuple(ghost_fields(t)))

    def rebuild_anchored_ghosts(self, anchor_table: Table, table: Table) -> None:
        """Ghost rows of a table anchored to a spatial table (per-pair or bonded data).

        A row travels, as a ghost, wherever its anchor row travels as a ghost,
        replaying the anchor table's stages; so a rank sees every row whose
        anchor it sees (the contacts of a particle it owns that another rank
        evaluates, say), and ``forward`` / ``reverse`` work on the table's
        declared fields like on particles.

        Preconditions: the anchor table's ghosts are built; `table` has
        owned rows only. Postconditions: ghost rows hold FORWARD fields, gid and
        the anchor field; REVERSE fields are zero; ``anchor_rows(table)`` maps
        every row to its anchor's row.
        """
        table.clear_ghosts()
        anchor_row = anchor_table.lookup().rows(table.anchor_gids(), owned_only=True)
        names = ghost_fields(table)
        stages: list[_GhostStage] = []
        for pair in self._axis_pairs(anchor_table):
            chosen = []
            for st in pair:
                where = np.full(anchor_table.n, -1, dtype=np.int64)
                where[st.send_rows] = np.arange(st.send_rows.size)
                index = where[anchor_row]
                rows = np.flatnonzero(index >= 0)
                chosen.append((st, rows, index[rows]))
            remote = [c for c in chosen if not c[0].local]
            messages = []
            for st, rows, index in remote:
                packed = pack_rows(table, names, rows)
                messages.append((np.concatenate([packed, index.view(np.uint8).reshape(-1, 8)], axis=1),
                                 st.dest, st.source, None))
            received = self.comm.exchange_rows(messages)
            for st, rows, index in chosen:
                start = table.n
                if st.local:
                    count = rows.size
                    table.resize_ghosts(table.n_ghost + count)
                    move_rows(table, rows, np.arange(start, start + count), names)
                    new_anchor = st.recv_start + index
                else:
                    got = received[[c[0] for c in remote].index(st)]
                    count = got.shape[0]
                    table.resize_ghosts(table.n_ghost + count)
                    unpack_rows(table, names, got, start)  # the anchor index follows
                    new_anchor = st.recv_start + np.ascontiguousarray(got[:, -8:]).view(np.int64).ravel()
                for f, d in table.fields.items():
                    if d.halo is Halo.REVERSE:
                        table.column(f)[start:start + count] = 0
                anchor_row = np.concatenate([anchor_row, new_anchor])
                stages.append(_GhostStage(st.axis, rows, st.dest, st.source, st.local, start, count,
                                          np.zeros(3)))
        self._stages[table.name] = stages
        self._anchor_rows[table.name] = (table.epoch, anchor_row)

    def anchor_rows(self, anchor_table: Table, table: Table) -> np.ndarray:
        """Local row (in `anchor_table`) of the anchor of every owned and ghost row of `table`.

        Ghost rows exist only after :meth:`rebuild_anchored_ghosts`; without
        them (or after a structural change, which drops ghosts) the owned rows'
        anchors are looked up.
        """
        stored = self._anchor_rows.get(table.name)
        if stored is not None and stored[0] == table.epoch:
            return stored[1]
        return anchor_table.rows_of(table.anchor_gids())

    @staticmethod
    def _copy_local_pair(table: Table, pair, names) -> None:
        """Both directions of an axis where this rank talks to itself, in one row move: the
        rows each sends were chosen before either direction's ghosts exist, so neither
        reads the other's."""
        start = first = table.n
        for st in pair:
            st.recv_start, st.recv_count = start, st.send_rows.size
            start += st.recv_count
        table.resize_ghosts(table.n_ghost + start - first)
        move_rows(table, np.concatenate([st.send_rows for st in pair]), np.arange(first, start),
                  names)
        if "position" in names:
            for st in pair:
                Domain._shift_positions(table, st)

    @staticmethod
    def _copy_local(table: Table, stage: _GhostStage, names) -> None:
        move_rows(table, stage.send_rows, _ghost_rows(stage), names)
        if "position" in names:
            Domain._shift_positions(table, stage)

    @staticmethod
    def _shift_positions(table: Table, stage: _GhostStage) -> None:
        shift = stage.shift
        # three scalar tests: a numpy reduction costs microseconds, four times per rebuild
        if stage.recv_count and (shift[0] != 0.0 or shift[1] != 0.0 or shift[2] != 0.0):
            table.column("position")[stage.recv_start:stage.recv_start + stage.recv_count] += shift

    # ------------------------------------------------------------ halo verbs
    def forward(self, table: Table, names) -> None:
        """Copy owner values of the given FORWARD fields to the ghost rows.

        Preconditions: ghosts built by :meth:`rebuild_ghosts` since the last
        structural change. Postconditions: ghost rows equal their sources
        (positions shifted by the periodic image).
        """
        names = tuple(names)
        plan = self._float_plan(table, names)
        if plan is not None:
            self._forward_floats(table, names, plan)
            return
        for pair in self._axis_pairs(table):  # mixed dtypes: packed byte rows
            remote = [st for st in pair if not st.local]
            received = self.comm.exchange_rows(
                [(pack_rows(table, names, st.send_rows), st.dest, st.source, st.recv_count)
                 for st in remote]) if remote else []
            for st in pair:
                if st.local:
                    self._copy_local(table, st, names)
                    continue
                unpack_rows(table, names, received[remote.index(st)], st.recv_start)
                if "position" in names:
                    self._shift_positions(table, st)

    def zero(self, table: Table, names) -> None:
        """Zero the given (REVERSE) fields on owned and ghost rows, before a force pass adds
        into them: float64 fields in one kernel call, on the columns of their halo plan."""
        names = tuple(names)
        plan = self._float_plan(table, names)  # mostly the reverse's: the same fields
        if plan is None:
            for name in names:
                table.with_ghosts(name)[...] = 0
        else:
            hk.zero_rows(plan.columns, 0, table.n)

    @staticmethod
    def _float_columns(table: Table, names):
        """The fields as a tuple of 2-D float64 columns (one fused kernel call), or None."""
        if all(table.fields[n].np_dtype == np.float64 for n in names):
            return tuple(table.column(n).reshape(table.capacity, -1) for n in names)
        return None

    def _float_plan(self, table: Table, names) -> _FloatHaloPlan | None:
        plan = self._plans.get((table.name, names))
        key = (table.epoch, table.capacity)
        if plan is not None and plan.key == key:
            return plan
        columns = self._float_columns(table, names)
        if columns is None:
            return None
        width = sum(c.shape[1] for c in columns)
        pairs = self._axis_pairs(table)
        forward_steps, reverse_steps = self._fused_steps(table, pairs)
        remote = [st for pair in pairs for st in pair if not st.local]
        send = {st: np.empty((st.send_rows.size, width)) for st in remote}
        recv = {st: np.empty((st.recv_count, width)) for st in remote}
        merged = {}
        for pair in pairs:
            # both directions of an axis to and from one rank (2 ranks along it): one
            # message of the two stages' rows, the same stage order on both sides
            if (len(pair) == 2 and not any(st.local for st in pair) and pair[0].dest is not None
                    and len({pair[0].dest, pair[0].source, pair[1].dest, pair[1].source}) == 1):
                a, b = pair
                both_send = np.empty((a.send_rows.size + b.send_rows.size, width))
                both_recv = np.empty((a.recv_count + b.recv_count, width))
                send[a], send[b] = both_send[:a.send_rows.size], both_send[a.send_rows.size:]
                recv[a], recv[b] = both_recv[:a.recv_count], both_recv[a.recv_count:]
                merged[a, b] = (both_send, a.dest, a.source, both_recv)
        plan = _FloatHaloPlan(
            key, columns, names.index("position") if "position" in names else -1,
            forward_steps, reverse_steps, send, recv,
            {st: _ghost_rows(st) for pair in pairs for st in pair}, merged,
            frozenset(st for st in remote if "position" in names and np.any(st.shift)))
        self._plans[(table.name, names)] = plan
        return plan

    def _fused_steps(self, table: Table, pairs) -> tuple[list, list]:
        """(forward, reverse) steps of the table's current stages (``_fuse_local``), made once
        per ghost rebuild and shared by every field set's plan."""
        stages = self._stages.get(table.name)
        cached = self._fused.get(table.name)
        if cached is None or cached[0] is not stages:
            cached = (stages, _fuse_local(pairs), _fuse_local(pairs[::-1], reverse=True))
            self._fused[table.name] = cached
        return cached[1], cached[2]

    def _forward_floats(self, table: Table, names, plan: _FloatHaloPlan) -> None:
        for pair in plan.forward_steps:
            if type(pair) is _LocalRun:
                hk.copy_rows_fused(plan.columns, pair.src, pair.dst, pair.shift,
                                   plan.shift_column)
                continue
            messages = []
            for st in pair:
                if st.local:
                    hk.copy_columns(plan.columns, st.send_rows, st.recv_start, st.shift,
                                    plan.shift_column)
                else:
                    hk.gather_rows_packed(plan.columns, st.send_rows, plan.send[st], 0)
                    messages.append((plan.send[st], st.dest, st.source, plan.recv[st]))
            if messages:
                both = plan.merged.get(tuple(pair))
                self.comm.exchange_into(messages if both is None else [both])
                for st in pair:
                    if st in plan.shifted:
                        hk.scatter_rows_shifted(plan.columns, st.recv_start, plan.recv[st],
                                                st.shift, plan.shift_column)
                    elif not st.local:
                        hk.scatter_rows_packed(plan.columns, st.recv_start, plan.recv[st], 0)

    def _reverse_floats(self, table: Table, names, plan: _FloatHaloPlan,
                        local_only: bool = False) -> None:
        for pair in plan.reverse_steps:
            if type(pair) is _LocalRun:
                hk.add_rows_back_fused(plan.columns, pair.src, pair.dst)
                continue
            messages = []
            for st in pair:
                if st.local:
                    hk.add_rows_back_fused(plan.columns, st.send_rows, plan.ghost_rows[st])
                elif local_only:
                    continue
                else:
                    # ghost values travel back to their source: the forward buffers, reversed
                    hk.gather_rows_packed(plan.columns, plan.ghost_rows[st], plan.recv[st], 0)
                    messages.append((plan.recv[st], st.source, st.dest, plan.send[st]))
            if messages:
                both = plan.merged.get(tuple(pair))
                self.comm.exchange_into(messages if both is None else
                                        [(both[3], both[2], both[1], both[0])])
                for st in pair:
                    if not st.local:
                        hk.zero_rows(plan.columns, st.recv_start, st.recv_count)
                        hk.scatter_add_columns(plan.columns, st.send_rows, plan.send[st])

    def _axis_pairs(self, table: Table) -> list[list[_GhostStage]]:
        """Stages grouped by axis, in build order (the two directions of an axis are independent)."""
        pairs: list[list[_GhostStage]] = []
        for st in self._stages.get(table.name, ()):
            if pairs and pairs[-1][0].axis == st.axis:
                pairs[-1].append(st)
            else:
                pairs.append([st])
        return pairs

    def own_images(self, table: Table) -> np.ndarray:
        """One byte per row (owned, then ghost): 1 for owned rows and for ghost rows that are
        periodic images of this rank's own rows, 0 for copies of other ranks' rows.

        A system that adds into rows marked 1 only declares
        ``accumulates_on_rank``: its ghost contributions come home by
        ``reverse(local_only=True)``, without a message (a pair across a rank
        boundary is then evaluated on both sides, each adding to its own rows).
        """
        key = (table.epoch, table.n)
        cached = self._own_images.get(table.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        flag = np.zeros(table.n, dtype=np.uint8)
        flag[:table.n_owned] = 1
        self._own_images[table.name] = (key, self._through_local_stages(table, flag))
        return flag

    def home_rows(self, table: Table) -> np.ndarray:
        """One int32 per row (owned, then ghost): the owned row a contribution to that row
        belongs to on this rank. An owned row is its own home; a ghost row that is a periodic
        image of an own row has that row (an image of an image too); a copy of another
        rank's row has -1.

        A system that adds its share for a row r into row ``home[r]`` when it is >= 0
        touches owned rows only and declares ``accumulates_owned``: nothing waits in
        ghost rows for a reverse (LAMMPS's ``newton off`` carried to periodic images of
        a rank's own rows, without evaluating their pairs twice).
        """
        key = (table.epoch, table.n)
        cached = self._home_rows.get(table.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        home = np.full(table.n, -1, dtype=np.int32)
        home[:table.n_owned] = np.arange(table.n_owned, dtype=np.int32)
        self._home_rows[table.name] = (key, self._through_local_stages(table, home))
        return home

    def _through_local_stages(self, table: Table, values: np.ndarray) -> np.ndarray:
        """`values` (one per row, owned then ghost; the ghosts' still unset) with each periodic
        image of an own row given its source row's value, stage by stage (an image of an
        image too); copies of other ranks' rows keep theirs."""
        for st in self._stages.get(table.name, ()):
            if st.local and st.recv_count:
                values[st.recv_start:st.recv_start + st.recv_count] = values[st.send_rows]
        return values

    def reverse(self, table: Table, names, local_only: bool = False) -> None:
        """Sum ghost-row values of REVERSE fields into their sources, then zero the ghosts.

        Stages run in reverse order, so a ghost of a ghost first adds into its
        source ghost, which then adds into its owner. `local_only`: only the
        stages where this rank talks to itself (periodic images of its own
        rows; no message), for fields no system added into copies of other
        ranks' rows (``System.accumulates_on_rank``).
        """
        names = tuple(names)
        plan = self._float_plan(table, names)
        if plan is not None:
            self._reverse_floats(table, names, plan, local_only)
            return
        for pair in reversed(self._axis_pairs(table)):  # mixed dtypes: packed byte rows
            if local_only:
                pair = [st for st in pair if st.local]
            remote = [st for st in pair if not st.local]
            returned = self.comm.exchange_rows(
                [(pack_rows(table, names, np.arange(st.recv_start, st.recv_start + st.recv_count)),
                  st.source, st.dest, st.send_rows.size) for st in remote]) if remote else []
            for st in pair:
                if st.local:
                    for name in names:
                        col = table.column(name)
                        hk.add_rows_back_fused((col.reshape(col.shape[0], -1),), st.send_rows,
                                               _ghost_rows(st))
                    continue
                for name in names:
                    table.column(name)[st.recv_start:st.recv_start + st.recv_count] = 0
                got = returned[remote.index(st)]
                if got.shape[0]:
                    add_packed_into(table, names, got, st.send_rows)

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
            stages = self._stages.get(name)
            if stages is None:
                continue
            ints += [k, table.n_ghost, len(stages)]
            for st in stages:
                ints += [st.axis, -1 if st.dest is None else st.dest,
                         -1 if st.source is None else st.source, int(st.local), st.recv_start,
                         st.recv_count, st.send_rows.size, *st.send_rows.tolist()]
                floats.append(st.shift)
            anchor = self._anchor_rows.get(name)
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
                stages.append(_GhostStage(axis, send, None if dest < 0 else dest,
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
            self._stages[table.name] = stages
            self.forward(table, ghost_fields(table))
            if anchor is not None:
                self._anchor_rows[table.name] = (table.epoch, anchor)
            if n_ref >= 0:
                self._reference[table.name] = floats[f:f + 3 * n_ref].reshape(n_ref, 3).copy()
                self._epoch[table.name] = table.epoch
                f += 3 * n_ref
