"""The halo verbs on whole tables: ``forward``, ``reverse``, ``zero``.

``forward`` copies owner values of FORWARD fields to the ghost rows (positions
shifted by their periodic image); ``reverse`` sums ghost-row values of REVERSE
fields into their sources and zeroes the ghosts; ``zero`` zeroes REVERSE fields
on owned and ghost rows before a force pass adds into them. Each replays the
table's ghost stages (``ecs_dem.ghosts``): forward in build order, reverse in
the opposite order, so a ghost of a ghost first adds into its source ghost,
which then adds into its owner.

Two code paths: fields all float64 take the fast path (:class:`_FloatHaloPlan`:
the columns, message buffers and fused local copies of a field set, cached until
the table's next structural change; the stages where a rank talks to itself are
fused into one kernel call, so on one rank a verb is one call; both directions of
an axis to one rank travel in one message). Mixed dtypes move packed byte rows
(``ecs_dem.row_packing``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import halo_kernels as hk
from .ghosts import GhostLayers, copy_local, ghost_rows, shift_positions
from .row_packing import add_packed_into, pack_rows, unpack_rows
from .table import Table


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
            dst = np.concatenate([ghost_rows(st) for st in stages])
        return cls(np.asarray(np.concatenate([st.send_rows for st in stages]), dtype=np.int64),
                   dst, shift)


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


class HaloExchange:
    """The halo verbs of a domain, on the stages of its :class:`~ecs_dem.ghosts.GhostLayers`."""

    def __init__(self, ghosts: GhostLayers, comm):
        self.ghosts = ghosts
        self.comm = comm
        self._plans: dict[tuple, _FloatHaloPlan] = {}
        self._fused: dict[str, tuple] = {}  # table -> (its stages, forward, reverse steps)

    def forward(self, table: Table, names) -> None:
        """Copy owner values of the given FORWARD fields to the ghost rows.

        Preconditions: ghosts built (``GhostLayers.build``) since the last
        structural change. Postconditions: ghost rows equal their sources
        (positions shifted by the periodic image).
        """
        names = tuple(names)
        plan = self._float_plan(table, names)
        if plan is not None:
            self._forward_floats(table, names, plan)
            return
        for pair in self.ghosts.axis_pairs(table):  # mixed dtypes: packed byte rows
            remote = [st for st in pair if not st.local]
            received = self.comm.exchange_rows(
                [(pack_rows(table, names, st.send_rows), st.dest, st.source, st.recv_count)
                 for st in remote]) if remote else []
            for st in pair:
                if st.local:
                    copy_local(table, st, names)
                    continue
                unpack_rows(table, names, received[remote.index(st)], st.recv_start)
                if "position" in names:
                    shift_positions(table, st)

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
        pairs = self.ghosts.axis_pairs(table)
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
            {st: ghost_rows(st) for pair in pairs for st in pair}, merged,
            frozenset(st for st in remote if "position" in names and np.any(st.shift)))
        self._plans[(table.name, names)] = plan
        return plan

    def _fused_steps(self, table: Table, pairs) -> tuple[list, list]:
        """(forward, reverse) steps of the table's current stages (``_fuse_local``), made once
        per ghost rebuild and shared by every field set's plan."""
        stages = self.ghosts.stages.get(table.name)
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

    def _reverse_floats(self, table: Table, names, plan: _FloatHaloPlan) -> None:
        for pair in plan.reverse_steps:
            if type(pair) is _LocalRun:
                hk.add_rows_back_fused(plan.columns, pair.src, pair.dst)
                continue
            messages = []
            for st in pair:
                if st.local:
                    hk.add_rows_back_fused(plan.columns, st.send_rows, plan.ghost_rows[st])
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

    def reverse(self, table: Table, names) -> None:
        """Sum ghost-row values of REVERSE fields into their sources, then zero the ghosts.

        Stages run in reverse order, so a ghost of a ghost first adds into its
        source ghost, which then adds into its owner.
        """
        names = tuple(names)
        plan = self._float_plan(table, names)
        if plan is not None:
            self._reverse_floats(table, names, plan)
            return
        for pair in reversed(self.ghosts.axis_pairs(table)):  # mixed dtypes: packed byte rows
            remote = [st for st in pair if not st.local]
            returned = self.comm.exchange_rows(
                [(pack_rows(table, names, np.arange(st.recv_start, st.recv_start + st.recv_count)),
                  st.source, st.dest, st.send_rows.size) for st in remote]) if remote else []
            for st in pair:
                if st.local:
                    for name in names:
                        col = table.column(name)
                        hk.add_rows_back_fused((col.reshape(col.shape[0], -1),), st.send_rows,
                                               ghost_rows(st))
                    continue
                for name in names:
                    table.column(name)[st.recv_start:st.recv_start + st.recv_count] = 0
                got = returned[remote.index(st)]
                if got.shape[0]:
                    add_packed_into(table, names, got, st.send_rows)



__all__ = ["HaloExchange"]
