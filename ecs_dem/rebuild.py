"""The rebuild of a World's domain: when it is due, and what it does.

Due (:meth:`Rebuilder.due`, this rank's answer; the world combines the ranks'):
some row of a spatial table moved more than half the skin since the last
rebuild, or a position is not finite (``Domain.needs_rebuild``: measured by the
last INTEGRATE_FIRST system that moves the rows where it reports it,
``System.reports_displacement``, else by a pass over them); or an anchored
table changed structurally since its row references were resolved; or a system
asked for it (``World.request_rebuild``).

A rebuild (:meth:`Rebuilder.rebuild`): reverse pending accumulators (ghost
rows are about to be replaced); per spatial table, wrap periodic positions and
fix each row's destination rank (``Domain.plan_rebuild``); call every
``System.before_rebuild``; migrate, sort by cell and rebuild ghost rows
(``Domain.rebuild``); give the anchored tables that no NEIGHBORS system builds
their ghost rows (where some system uses them) and row references
(``ecs_dem.references``); run the NEIGHBORS systems; then the same for the
tables they build (the neighbour list).
"""
from __future__ import annotations

import contextlib
import time as _time
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError
from .references import incidence, resolve_references
from .system import Stage
from .table import Table

if TYPE_CHECKING:  # pragma: no cover
    from .world import World


class Rebuilder:
    """Rebuild bookkeeping of one World (module docstring)."""

    def __init__(self, world: "World"):
        self.world = world
        self.requested = False
        self._resolved: dict[str, tuple[int, int]] = {}  # anchored table -> (its, anchor's epoch)
        self._references_checked = None  # (structure key) when no reference was stale
        self._reported = None  # tables whose rebuild check is reported (reported_tables)
        self._static = None  # spatial tables whose position no system writes (static_tables)
        self.check_static = True  # the next check passes over static tables' rows too
        self._incidence: dict[str, tuple] = {}  # table -> (epochs, incident rows)

    def forget(self) -> None:
        """The system list changed."""
        self._reported = None
        self._static = None
        self.check_static = True

    # ----------------------------------------------------------- the decision
    def reported_tables(self) -> frozenset:
        """Tables whose rebuild check the last INTEGRATE_FIRST system that writes their
        ``position`` reports (``System.reports_displacement``), kept until the system list
        changes: a system after the reporter that moved rows would make the report stale."""
        if self._reported is None:
            last_writer = {}
            for s in self.world.systems_in(Stage.INTEGRATE_FIRST):
                for table, fields in s.writes.items():
                    if "position" in fields:
                        last_writer[table] = s
            self._reported = frozenset(
                table for table, s in last_writer.items() if table in s.reports_displacement)
        return self._reported

    def static_tables(self) -> frozenset:
        """Spatial tables whose ``position`` no system writes (a fixed mesh wall's vertices):
        their rows move only by a structural change, or by code outside the systems between
        two ``World.run`` calls, which the first check of each run catches
        (``check_static``); a system that moves them must declare it in ``writes``."""
        if self._static is None:
            written = {table for s in self.world.systems
                       for table, fields in s.writes.items() if "position" in fields}
            self._static = frozenset(t.name for t in self.world.spatial_tables()
                                     if t.name not in written)
        return self._static

    def due(self) -> bool:
        """This rank's answer: is a rebuild due at this step (module docstring)?"""
        domain = self.world.domain
        reported = self.reported_tables()
        static = () if self.check_static else self.static_tables()
        self.check_static = False
        rebuild = any([domain.needs_rebuild(t, t.name in reported, t.name in static)
                       for t in self.world.spatial_tables()])
        return rebuild or self.references_stale() or self.requested

    def references_stale(self) -> bool:
        """An anchored table changed structurally since its references were resolved."""
        tables = self.world.tables
        key = (Table.structure_version, len(tables))
        if self._references_checked == key:
            return False  # no table changed or came since the last check found nothing stale
        for t in tables.values():
            if t.anchor and self._resolved.get(t.name) != (t.epoch, tables[t.anchor[0]].epoch):
                return True
        self._references_checked = key
        return False

    # ------------------------------------------------------------ the rebuild
    def rebuild(self, initial: bool = False) -> None:
        """Migrate, sort and rebuild ghosts; element tables get their ghosts and rows before the
        NEIGHBORS systems (which may search them), the tables those systems build after."""
        world = self.world
        domain, scheduler = world.domain, world.scheduler
        t0 = _time.perf_counter()
        self.requested = False
        scheduler.flush_reverse()  # ghost rows are about to be replaced
        spatial = world.spatial_tables()
        for t in spatial:  # where each row goes (domain.destinations), for the hooks
            domain.plan_rebuild(t, initial=initial)
        for s in world.systems:  # e.g. per-contact data copied to rows that migrate elsewhere
            s.before_rebuild(world)
        for t in spatial:
            domain.rebuild(t, world.anchored_tables(t), initial=initial)
        scheduler.rebuilt({t.name for t in spatial})
        neighbors = world.systems_in(Stage.NEIGHBORS)
        built = {name for s in neighbors for name in s.builds}
        self._anchored_ghosts(spatial, lambda name: name not in built)
        world.timers["domain:rebuild"] += _time.perf_counter() - t0
        scheduler.run(neighbors)
        t0 = _time.perf_counter()
        self._anchored_ghosts(spatial, lambda name: name in built, built=True)
        scheduler.after_rebuild()
        world.timers["domain:rebuild"] += _time.perf_counter() - t0
        world.rebuilt_this_step = True

    def _anchored_ghosts(self, spatial, which, built: bool = False) -> None:
        """Ghost rows (where a system uses them) and row references of the anchored tables
        `which` selects; `built`: their owned rows were just written by their builder."""
        world = self.world
        users = world.scheduler.ghost_users()
        for t in spatial:
            for dep in world.anchored_tables(t):
                if which(dep.name):
                    if dep.name in users:
                        world.domain.rebuild_anchored_ghosts(t, dep)
                    self.resolve_references(t, dep, built=built)

    def used_tables(self) -> frozenset:
        """Tables some system declares (reads, writes, accumulates or builds)."""
        used = set()
        for s in self.world.systems:
            for d in (s.reads, s.reads_ghosts, s.writes, s.accumulates, s.accumulates_owned):
                used.update(d)
            used.update(s.builds)
        return frozenset(used)

    def resolve_references(self, anchor: Table, table: Table, built: bool = False) -> None:
        """Row fields of `table`; `built`: its owned rows were just written by their builder.
        Only a table some system uses must reach no farther than the ghost width
        (``ecs_dem.references``): the width is the reach its systems declare."""
        first = table.n_owned if built else 0
        if table.references and first < table.n:
            rows = self.world.domain.anchor_rows(anchor, table)
            resolve_references(anchor, table, rows, self.world.domain.ghost_width, first,
                               strict=table.name in self.used_tables())
        self._resolved[table.name] = (table.epoch, anchor.epoch)

    def incident_rows(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """For every row of the anchor table (owned and ghost), the rows of table `name` that
        refer to it: CSR ``(start, items)`` (``ecs_dem.references.incidence``), cached until
        either table changes structurally."""
        world = self.world
        table = world.table(name)
        if not table.references:
            raise InputError(f"table '{name}' declares no references to another table's rows")
        anchor = world.table(table.anchor[0])
        key = (table.epoch, anchor.epoch)
        cached = self._incidence.get(name)
        if cached is None or cached[0] != key:
            cached = self._incidence[name] = (key, incidence(table, anchor.n))
        return cached[1]

    # ------------------------------------------------------------ restarts
    def restarted(self) -> None:
        """Row references of anchored tables resolved anew after a checkpoint was loaded
        (``World.mark_restarted``; ghost element rows were rebuilt by replaying the saved
        send lists), at the positions of the last rebuild, where the uninterrupted run
        resolved them: since then the rows have moved by up to half the skin each, and a
        pair listed within the cut-off plus the skin may now lie farther apart than the
        ghost width."""
        world = self.world
        for t in world.spatial_tables():
            deps = world.anchored_tables(t)
            if deps:
                with self._positions_of_last_rebuild(t):
                    for dep in deps:
                        self.resolve_references(t, dep)

    @contextlib.contextmanager
    def _positions_of_last_rebuild(self, table: Table):
        """Inside the block, `table`'s owned rows sit at the positions of the last rebuild
        (the domain's displacement reference) and its ghost rows at their images (one
        forward, collective); after it every row is back where it was, bit for bit. Without
        a reference on some rank (rows changed since), the positions stay as they are."""
        domain, comm = self.world.domain, self.world.comm
        ref = domain.displacement_reference(table)
        have = int(ref is not None)
        if comm.size > 1:
            have = int(comm.min(have))
        if not have:
            yield
            return
        column = table.column("position")
        kept = column[:table.n].copy()
        column[:table.n_owned] = ref
        domain.forward(table, ("position",))
        try:
            yield
        finally:
            column[:table.n] = kept

    def compile_row_kernels(self) -> None:
        """On several ranks, compile what migration and ghost rebuilds will move now: else
        the first migration would compile it mid-run (``Domain.compile_row_kernels``)."""
        world = self.world
        if world.comm.size > 1:
            for t in world.spatial_tables():
                world.domain.compile_row_kernels(t, world.anchored_tables(t))


__all__ = ["Rebuilder"]
