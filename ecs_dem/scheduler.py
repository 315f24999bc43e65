"""The scheduler: runs systems in order, each after the halo operations its plan puts before it.

The plans come from ``ecs_dem.planner`` (a pure function of the declarations
and the tables' metadata); the scheduler keeps the halo state between runs
(:class:`~ecs_dem.planner.HaloState`), memoises the plan of each (systems,
state) pair and replays it, executes the halo operations on the domain, and
keeps the SUM fields that hold this rank's share until something reads them
(``World.complete_sums``).

Assignments (``System.assigns_owned``) must agree between the plans of one
system list: a system whose choice differs between two plans (systems with
``every`` > 1 around it) adds in all of them, and the plans made so far are
dropped. The choice is set on the system (``System.assigning``) when a plan is made.
"""
from __future__ import annotations

import time as _time
from typing import TYPE_CHECKING

import numpy as np

from . import planner
from .planner import HaloState, Plan
from .system import Stage
from .table import Table

if TYPE_CHECKING:  # pragma: no cover
    from .world import World

#: World.timers' names of the halo verbs
_HALO_TIMERS = {"forward": "halo:forward", "reverse": "halo:reverse", "zero": "halo:zero",
                "zero_shares": "halo:zero"}


class Scheduler:
    """The halo state, the memo of plans and their execution, for one World."""

    def __init__(self, world: "World"):
        self.world = world
        self.halo = HaloState()
        self._plans: dict = {}  # (systems, halo state) -> Plan
        self._assigning_seen: dict[int, frozenset] = {}  # id(system) -> its first choice
        self._adds_always: set[int] = set()  # systems whose choice differed between plans
        self._zeroed_cleared: dict = {}  # halo state -> the same with no field zeroed
        self.unsummed: set[tuple[str, str]] = set()  # SUM fields holding this rank's share
        self._tables = (None, {})  # (structure key, the planner's TableInfo of every table)
        self._by_stage: dict = {}  # stage -> (its systems, those with every > 1)

    def forget(self) -> None:
        """The system list changed: plans and assignment choices are made anew."""
        self._by_stage = {}
        self._plans = {}
        self._assigning_seen = {}
        self._adds_always = set()

    def reset(self) -> None:
        """State loaded from a checkpoint: ghosts current, nothing pending or unsummed."""
        self.halo = HaloState()
        self.unsummed.clear()

    # ------------------------------------------------------------- stages
    def stage_systems(self, stage: Stage) -> tuple:
        """(the systems of `stage` in order, those of them with ``every`` > 1 and its value),
        kept until the system list changes."""
        got = self._by_stage.get(stage)
        if got is None:
            systems = tuple(s for s in self.world.systems if s.stage == stage)
            got = self._by_stage[stage] = (systems, tuple(
                (s, int(s.every)) for s in systems if int(s.every) > 1))
        return got

    def due(self, stage: Stage) -> tuple:
        """The systems of `stage` whose ``every`` divides this step (a probe that samples
        every 200 steps is left out of the other 199, with the halo operations only it
        needed: each set of due systems has its plan). ``every`` is read when the system
        list changes (``World.add_system``)."""
        systems, sparse = self.stage_systems(stage)
        if not sparse:
            return systems
        step = self.world.step
        skipped = {id(s) for s, every in sparse if step % every}
        return tuple(s for s in systems if id(s) not in skipped) if skipped else systems

    # ------------------------------------------------------------- planning
    def tables(self) -> dict:
        """The planner's view of the world's tables, kept until a table is added or some
        table changes (``Table.structure_version``: a new field bumps it)."""
        world = self.world
        key = (Table.structure_version, len(world.tables))
        if self._tables[0] != key:
            self._tables = (key, planner.table_infos(world.tables, world.spatial_tables()))
        return self._tables[1]

    def plan(self, systems: tuple, state: HaloState) -> Plan:
        """``planner.plan_run`` with the world's tables, its assignment choices made to agree
        with the earlier plans (module docstring) and set on the systems."""
        tables = self.tables()
        while True:
            plan = planner.plan_run(systems, state, tables, self.world.comm.size,
                                    self._adds_always)
            differs = None
            for s, choice in zip(systems, plan.assigning):
                if s.assigns_owned and id(s) not in self._adds_always:
                    if self._assigning_seen.setdefault(id(s), choice) != choice:
                        differs = s
                        break
            if differs is None:
                break
            self._adds_always.add(id(differs))
            self._plans.clear()
        for s, choice in zip(systems, plan.assigning):
            if s.assigns_owned:
                s.assigning = choice
        return plan

    def step_plans(self) -> tuple[planner.StepPlan, planner.StepPlan]:
        """(the first step, the steady state) with every system due (``describe_schedule``)."""
        world = self.world
        stages = {stage: world.systems_in(stage) for stage in Stage}
        rebuilt = planner.rebuilt_tables(world.systems, self.tables())
        first = planner.plan_step(stages, rebuilt, self.plan)
        return first, planner.plan_step(stages, rebuilt, self.plan, first.after)

    # ------------------------------------------------------------ execution
    def run(self, systems: tuple) -> None:
        """Run `systems` in order, each after the halo operations its declarations need."""
        key = (systems, self.halo)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self.plan(systems, self.halo)
        self.halo = plan.after
        world = self.world
        timers = world.timers
        guard = world.guard
        for s, name, ops, sums_read, shares in plan.runs:
            if ops:
                self.apply(ops)
            if sums_read and self.unsummed:
                self.complete_sums(sums_read)
            t0 = _time.perf_counter()
            if guard is None:
                s.run(world)
            else:
                guard.run(s, world)  # debug mode (ecs_dem.declaration_guard)
            timers[name] += _time.perf_counter() - t0
            if shares:
                self.unsummed.update(shares)

    def forces(self, systems: tuple) -> None:
        """A force pass: every REVERSE and SUM field is zeroed anew before its first
        accumulation."""
        halo = self.halo
        cleared = self._zeroed_cleared.get(halo)
        if cleared is None:
            cleared = self._zeroed_cleared[halo] = halo._replace(zeroed=frozenset())
        self.halo = cleared
        self.run(systems)

    def apply(self, ops) -> None:
        """Execute halo operations (``planner.HaloOp``) on the world's domain."""
        world = self.world
        domain, tables, timers = world.domain, world.tables, world.timers
        for verb, tname, names in ops:
            t = tables[tname]
            t0 = _time.perf_counter()
            if verb == "forward":
                domain.forward(t, names)
            elif verb == "reverse":
                domain.reverse(t, names)
            elif verb == "zero":
                domain.zero(t, names)
            else:  # zero_shares: a whole table's SUM fields, before this rank's shares
                for name in names:
                    t.column(name)[:t.n].fill(0.0)
            timers[_HALO_TIMERS[verb]] += _time.perf_counter() - t0

    def flush_reverse(self) -> None:
        """Reduce accumulators nobody has read yet, so owners hold complete values between steps."""
        if self.halo.pending:
            ops, self.halo = planner.end_of_step(self.halo)
            self.apply(ops)

    def rebuilt(self, names) -> None:
        """The ghost rows of tables `names` were just rebuilt: their FORWARD fields are current."""
        self.halo = self.halo._replace(
            stale=frozenset(p for p in self.halo.stale if p[0] not in names))

    def ghost_users(self) -> set[str]:
        """Tables whose ghost rows some system uses (``planner.ghost_users``)."""
        return planner.ghost_users(self.world.systems)

    def after_rebuild(self) -> None:
        """The state after a rebuild and the NEIGHBORS systems (``planner.after_rebuild``)."""
        world = self.world
        self.halo = planner.after_rebuild(
            self.halo, planner.rebuilt_tables(world.systems, self.tables()))

    # ------------------------------------------------------------ SUM fields
    def complete_sums(self, fields=None) -> None:
        """``World.complete_sums``."""
        if not self.unsummed:
            return
        keys = sorted(self.unsummed if fields is None else self.unsummed.intersection(fields))
        if not keys:
            return
        world = self.world
        t0 = _time.perf_counter()
        by_table: dict[str, list[str]] = {}
        for tname, f in keys:
            by_table.setdefault(tname, []).append(f)
        for tname, names in by_table.items():
            t = world.tables[tname]
            columns = [t.column(f)[:t.n].reshape(t.n, -1) for f in names]
            total = world.comm.sum(np.concatenate(columns, axis=1) if len(columns) > 1
                                   else columns[0])
            start = 0
            for column in columns:
                column[...] = total[:, start:start + column.shape[1]]
                start += column.shape[1]
        self.unsummed.difference_update(keys)
        if world.guard is not None:
            world.guard.summed(keys)
        world.timers["halo:sum"] += _time.perf_counter() - t0


__all__ = ["Scheduler"]
