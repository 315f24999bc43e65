"""Ghost layers: copies of the rows near a subdomain face, and the stages that made them.

Ghosts are built in three stages, x then y then z, two directions each; each
stage also sends the ghosts received in earlier stages, so edge and corner
images arrive without a 26-neighbour enumeration (LAMMPS's ``borders``). Each
stage records its send list (:class:`GhostStage`), so the halo verbs
(``ecs_dem.halo``) replay the same mapping until the next rebuild. One rank is
the same code talking to itself: along a periodic axis its neighbour is itself,
and rows within the ghost width of a periodic face become ghost rows shifted by
the box length (periodic images); a rank sending to itself copies rows directly.

Anchored tables (per-pair or bonded data) get ghost rows wherever their anchor
row travels as a ghost, by replaying the anchor table's stages
(:meth:`GhostLayers.build_anchored`).

:meth:`GhostLayers.own_images` and :meth:`GhostLayers.home_rows` tell periodic
images of a rank's own rows from copies of other ranks' rows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import halo_kernels as hk
from .row_packing import compile_kernels, move_rows, pack_rows, unpack_rows
from .table import Halo, Table


@dataclass(eq=False)
class GhostStage:
    """One direction of one axis of a ghost build: the rows sent and where the received
    ghost rows sit."""

    axis: int
    send_rows: np.ndarray  # int64 rows sent (owned or earlier ghosts)
    dest: int | None  # rank the rows go to
    source: int | None  # rank the ghosts of this stage come from
    local: bool  # dest and source are this rank: copy rows directly
    recv_start: int  # first ghost row of this stage
    recv_count: int
    shift: np.ndarray  # added to received positions (periodic image)



def ghost_rows(stage: GhostStage) -> np.ndarray:
    """The ghost row indices a stage received."""
    return np.arange(stage.recv_start, stage.recv_start + stage.recv_count)


def ghost_fields(table: Table) -> list[str]:
    """Fields a ghost row carries: FORWARD fields, gid, and (anchored tables) the gid fields
    of the anchor and of every reference (``ecs_dem.references``)."""
    extra = {"gid"}
    if table.anchor:
        extra.add(table.anchor[1])
        extra.update(table.references.values())
    return [f for f, d in table.fields.items() if d.halo is Halo.FORWARD or f in extra]



def compile_row_kernels(table: Table, anchored=()) -> None:
    """Compile the row-moving kernels that migration and ghost rebuilds of `table` and of
    its `anchored` tables will call (``row_packing.compile_kernels``)."""
    for t in (table, *anchored):
        compile_kernels(t, tuple(t.fields))
        compile_kernels(t, tuple(ghost_fields(t)))


class GhostLayers:
    """The ghost stages of every table (``stages``) and the anchor rows of anchored tables'
    ghost rows (``anchors``), rebuilt at every domain rebuild.

    Parameters: the box, the decomposition (subdomain bounds, rank grid) and the
    communicator.
    """

    def __init__(self, box, decomposition, comm):
        self.box = box
        self.decomposition = decomposition
        self.comm = comm
        #: table name -> its ghost stages, in build order
        self.stages: dict[str, list[GhostStage]] = {}
        #: anchored table name -> (its epoch, anchor row of each owned and ghost row)
        self.anchors: dict[str, tuple] = {}
        self._own_images: dict[str, tuple] = {}
        self._home_rows: dict[str, tuple] = {}

    def build(self, table: Table, width: float) -> None:
        """Create ghost rows: copies of rows within `width` of a subdomain face.

        Preconditions: owned rows wrapped and migrated; no ghost rows.
        Postconditions: ghost rows hold copies of every FORWARD field (positions
        shifted across periodic faces), REVERSE fields of ghosts are zero, and
        the send lists for forward/reverse are recorded.
        """
        stages: list[GhostStage] = []
        w = width
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
                pair.append(GhostStage(axis, rows if dest is not None else rows[:0], dest, source,
                                        local, 0, 0, vec))
            # both directions of an axis are local (a periodic axis along one rank: one copy)
            # or both go to other ranks (exchanged together: they are independent)
            if all(st.local for st in pair):
                copy_local_pair(table, pair, names)
                stages.extend(pair)
                continue
            received = self.comm.exchange_rows(
                [(pack_rows(table, names, st.send_rows), st.dest, st.source, None) for st in pair])
            for st, got in zip(pair, received):
                st.recv_start = table.n
                st.recv_count = got.shape[0]
                table.resize_ghosts(table.n_ghost + st.recv_count)
                unpack_rows(table, names, got, st.recv_start)
                shift_positions(table, st)
                stages.append(st)
        for f, d in table.fields.items():  # once for all stages: no stage copies these fields
            if d.halo is Halo.REVERSE:
                table.column(f)[table.n_owned:table.n] = 0
        self.stages[table.name] = stages


    def build_anchored(self, anchor_table: Table, table: Table) -> None:
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
        stages: list[GhostStage] = []
        for pair in self.axis_pairs(anchor_table):
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
                stages.append(GhostStage(st.axis, rows, st.dest, st.source, st.local, start, count,
                                          np.zeros(3)))
        self.stages[table.name] = stages
        self.anchors[table.name] = (table.epoch, anchor_row)

    def anchor_rows(self, anchor_table: Table, table: Table) -> np.ndarray:
        """Local row (in `anchor_table`) of the anchor of every owned and ghost row of `table`.

        Ghost rows exist only after :meth:`build_anchored`; without
        them (or after a structural change, which drops ghosts) the owned rows'
        anchors are looked up.
        """
        stored = self.anchors.get(table.name)
        if stored is not None and stored[0] == table.epoch:
            return stored[1]
        return anchor_table.rows_of(table.anchor_gids())


    def axis_pairs(self, table: Table) -> list[list[GhostStage]]:
        """Stages grouped by axis, in build order (the two directions of an axis are independent)."""
        pairs: list[list[GhostStage]] = []
        for st in self.stages.get(table.name, ()):
            if pairs and pairs[-1][0].axis == st.axis:
                pairs[-1].append(st)
            else:
                pairs.append([st])
        return pairs

    def own_images(self, table: Table) -> np.ndarray:
        """One byte per row (owned, then ghost): 1 for owned rows and for ghost rows that are
        periodic images of this rank's own rows, 0 for copies of other ranks' rows.

        The neighbour search uses it to tell the pairs whose lower-gid row is a copy
        of another rank's row (evaluated on both sides of a rank boundary).
        """
        key = (table.epoch, table.n)
        cached = self._own_images.get(table.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        flag = np.zeros(table.n, dtype=np.uint8)
        flag[:table.n_owned] = 1
        self._own_images[table.name] = (key, self.through_local_stages(table, flag))
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
        self._home_rows[table.name] = (key, self.through_local_stages(table, home))
        return home

    def through_local_stages(self, table: Table, values: np.ndarray) -> np.ndarray:
        """`values` (one per row, owned then ghost; the ghosts' still unset) with each periodic
        image of an own row given its source row's value, stage by stage (an image of an
        image too); copies of other ranks' rows keep theirs."""
        for st in self.stages.get(table.name, ()):
            if st.local and st.recv_count:
                values[st.recv_start:st.recv_start + st.recv_count] = values[st.send_rows]
        return values


def copy_local_pair(table: Table, pair, names) -> None:
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
            shift_positions(table, st)

def copy_local(table: Table, stage: GhostStage, names) -> None:
    move_rows(table, stage.send_rows, ghost_rows(stage), names)
    if "position" in names:
        shift_positions(table, stage)

def shift_positions(table: Table, stage: GhostStage) -> None:
    shift = stage.shift
    # three scalar tests: a numpy reduction costs microseconds, four times per rebuild
    if stage.recv_count and (shift[0] != 0.0 or shift[1] != 0.0 or shift[2] != 0.0):
        table.column("position")[stage.recv_start:stage.recv_start + stage.recv_count] += shift


__all__ = ["GhostStage", "GhostLayers", "ghost_fields", "ghost_rows", "compile_row_kernels",
           "copy_local", "shift_positions"]
