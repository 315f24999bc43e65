"""The World: tables, the domain, time, and the scheduler that runs systems.

One time step (``World.step_once``), with the halo operations the scheduler
inserts from the systems' declarations::

    step += 1
    INTEGRATE_FIRST systems            half kick + drift (owned rows)
    time += dt                         (force systems see the time of the positions)
    domain: if some row moved > skin/2 since the last rebuild (or NaN: error;
        measured by the last system that moved the rows where it reports it,
        ``System.reports_displacement``, else by a pass over them),
        or an anchored table changed structurally, or a system asked for it
        (``request_rebuild``):
        reverse pending accumulators, wrap periodic positions and fix each
        row's destination rank (``Domain.plan_rebuild``),
        ``System.before_rebuild``, migrate, sort
        by cell, rebuild ghost rows; element tables (anchored) get ghost rows
        where a system uses them and their row references
        (``ecs_dem.references``); run NEIGHBORS systems; then the same for
        the tables those systems build (the neighbour list)
    FORCES systems (``every`` divides the step)
                                       before each: forward stale FORWARD fields
                                       it reads on ghosts; zero a REVERSE field
                                       before its first accumulation this step
                                       (or with its table's first zero, when no
                                       system between declares it)
    INTEGRATE_SECOND systems           before each: reverse accumulated fields
                                       it reads on owners
    OUTPUT systems whose ``every`` divides the step
    end of step: reverse accumulators nobody has read yet

SUM fields (``Halo.SUM``: a table every rank holds whole, such as the walls,
into which each rank accumulates its share) are zeroed like REVERSE fields
and summed over ranks (one allreduce per table) only when something reads
them: before a system that declares them in ``reads`` or ``writes``, at the
end of ``run``, ``setup`` and ``step_once``, before a checkpoint, and on
``complete_sums`` (a system whose need depends on replicated data, such as
a servo wall, calls it). A sum nobody reads costs no message: the wall
forces of a packing with fixed walls are never summed between two outputs.

``World.setup`` (run once, implicitly by the first ``run``) calls every
``System.setup`` (a system may add others there), validates the
declarations, sets the ghost width to the largest ``interaction_range`` plus
the skin, rebuilds the domain, evaluates forces once with
``setup_phase = True`` (contact history is not advanced, as in LAMMPS's
setup) and runs the OUTPUT systems for step 0.

The halo operations of a run of systems depend only on the systems and the
halo state before them (stale, pending and zeroed fields): ``_compile``
derives them, ``_run_systems`` memoises and replays them, and
``describe_schedule`` prints the same compiled plan.
"""
from __future__ import annotations

import contextlib
import os
import re
import time as _time
from collections import defaultdict
from typing import NamedTuple

import numpy as np

from .comm import default_comm
from .declaration_guard import DeclarationGuard, debug_from_environment
from .domain import Box, Domain
from .errors import InputError, OutputError, StateError
from .references import incidence, resolve_references
from .soft_kill import SoftKill
from .system import ACCUMULATIONS, DECLARATIONS, Stage, System
from .system import declare_and_freeze, set_up
from .table import Halo, Table

#: exit code of a multi-rank run ended by a StateError (World.run); drivers use it too
STATE_ERROR_EXIT_CODE = 3
#: World.timers' names of the halo verbs
_HALO_TIMERS = {verb: f"halo:{verb}" for verb in ("forward", "reverse", "reverse_local", "zero")}
_HALO_TIMERS["zero_shares"] = "halo:zero"
_HALO_TIMERS["sum"] = "halo:sum"


class HaloState(NamedTuple):
    """Halo state between systems, as frozen sets of (table, field).

    stale: FORWARD fields whose ghost rows lag their owners; pending: REVERSE
    fields with ghost contributions not yet summed into owners; pending_local:
    REVERSE fields whose only ghost contributions sit in this rank's own
    periodic images (``accumulates_on_rank``: reduced without a message);
    zeroed: REVERSE fields zeroed in this force pass. Hashable: it keys the
    memo of compiled runs.
    """

    stale: frozenset = frozenset()
    pending: frozenset = frozenset()
    zeroed: frozenset = frozenset()
    pending_local: frozenset = frozenset()


class World:
    """Container of tables, systems, domain and clock.

    Parameters
    ----------
    box : Box
        Simulation box (m), periodic per axis.
    dt : float
        Time step (s).
    skin : float
        Neighbour skin (m): lists and ghosts are rebuilt once some row moved
        more than half of it.
    comm : communicator, optional
        By default an MPI communicator when launched by mpiexec with several
        ranks, else serial: drivers need no change to run in parallel.
    sort : bool
        Re-order owned rows by cell, for memory locality, at a rebuild once
        more than 5 % of them are out of cell order (``Domain``).
    balance_every : int
        With several ranks, move the subdomain boundaries to even out the
        particles per rank at the first rebuild after this many steps (0: never).
    seed : int
        Seed of ``world.rng`` (saved in checkpoints).
    debug : bool, optional
        Check every system against its declarations
        (``ecs_dem.declaration_guard``); default from ``ECS_DEM_DEBUG``.

    A World's attributes are the engine's: setting a new one is an error
    (keep a system's state on the system).
    """

    def __init__(self, box: Box, dt: float, skin: float = 0.0, comm=None, sort: bool = True,
                 balance_every: int = 1000, seed: int = 0, debug: bool | None = None):
        if not (dt > 0 and np.isfinite(dt)):
            raise InputError(f"time step dt must be positive and finite (got {dt})")
        self.box = box
        self.dt = float(dt)
        self.comm = comm if comm is not None else default_comm()
        self.domain = Domain(box, skin, self.comm, sort=sort,
                             balance_every=balance_every)
        self.tables: dict[str, Table] = {}
        self.systems: list[System] = []
        self.step = 0
        self.time = 0.0
        self.first_step = 0  # step the current run started from (0, or a checkpoint's)
        self.setup_phase = False
        self.rebuilt_this_step = False
        self.timers: dict[str, float] = defaultdict(float)
        self.stop_requested = None  # signal number that stopped the last run (soft kill)
        self.run_end_step = None  # last step of the current run (progress, ETA)
        # last step a driver's chunked run may reach (runner.run_until): progress and its ETA
        # count to it, not to each chunk's end
        self.horizon_step = None
        self.rng = np.random.default_rng(seed)  # for systems that need randomness; checkpointed
        self.debug = debug_from_environment() if debug is None else bool(debug)
        self._guard = DeclarationGuard(self.tables) if self.debug else None
        self._is_setup = False
        self._is_prepared = False
        self._kill = None  # the SoftKill of the current run
        self._stop_signal = 0
        self._halo = HaloState()
        self._programs: dict = {}
        self._assigning_seen: dict[int, frozenset] = {}  # id(system) -> its first choice
        self._adds_always: set[int] = set()  # systems whose choice differed between schedules
        self._by_stage: dict = {}
        self._resolved: dict[str, tuple[int, int]] = {}  # anchored table -> (its, anchor's epoch)
        self._incidence: dict[str, tuple] = {}
        self._rebuild_requested = False
        self._spatial = (None, ())  # (structure key, spatial tables): asked every step
        self._references_checked = None  # (structure key) when no reference was stale
        self._zeroed_cleared: dict = {}  # halo state -> the same with no field zeroed
        self._unsummed: set[tuple[str, str]] = set()  # SUM fields holding this rank's share
        self._frozen = True

    def __setattr__(self, name, value):
        if self.__dict__.get("_frozen") and name not in self.__dict__:
            raise AttributeError(
                f"World has no attribute '{name}': a system keeps its own state (World "
                "attributes belong to the engine)")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------- building
    @property
    def skin(self) -> float:
        return self.domain.skin

    @property
    def is_setup(self) -> bool:
        """True once the first step (or a restart) has set the world up."""
        return self._is_setup

    def add_table(self, table: Table) -> Table:
        if table.name in self.tables:
            raise InputError(f"world already has a table named '{table.name}'")
        if table.anchor and table.anchor[0] not in self.tables:
            raise InputError(f"table '{table.name}' is anchored to '{table.anchor[0]}', which the "
                             "world does not have yet: add that table first")
        self.tables[table.name] = table
        if not hasattr(type(self), table.name) and table.name not in self.__dict__:
            # world.particles as a plain attribute: __getattr__ costs 0.4 us a call
            object.__setattr__(self, table.name, table)
        return table

    def table(self, name: str) -> Table:
        try:
            return self.tables[name]
        except KeyError:
            raise InputError(f"no table '{name}' in the world; tables: {sorted(self.tables)}") from None

    def __getattr__(self, name: str):
        tables = self.__dict__.get("tables")
        if tables is not None and name in tables:
            return tables[name]
        raise AttributeError(name)

    def add_system(self, system: System, before=None) -> System:
        """Add a system at the end, or just before the first system that is `before` (a system,
        or an instance of `before` if it is a class). Order within a stage is list order."""
        if not isinstance(system, System):
            raise InputError(f"{system!r} is not an ecs_dem System")
        if self._is_prepared:  # set up, declared, validated and frozen now (ecs_dem.system)
            set_up(system, self)
            declare_and_freeze(system, self, self._validate)
        at = len(self.systems)
        if before is not None:
            match = (lambda s: isinstance(s, before)) if isinstance(before, type) else (
                lambda s: s is before)
            at = next((k for k, s in enumerate(self.systems) if match(s)), at)
        self.systems.insert(at, system)
        self._by_stage = {}
        self._programs = {}
        self._assigning_seen = {}
        self._adds_always = set()
        return system

    def has_system(self, kind: type) -> bool:
        """Whether a system of this class (or a subclass) is in the world."""
        return any(isinstance(s, kind) for s in self.systems)

    def systems_in(self, stage: Stage) -> tuple[System, ...]:
        return self._stage_systems(stage)[0]

    def _stage_systems(self, stage: Stage) -> tuple:
        """(the systems of `stage` in order, those of them with ``every`` > 1 and its value),
        kept until the system list changes."""
        got = self._by_stage.get(stage)
        if got is None:
            systems = tuple(s for s in self.systems if s.stage == stage)
            got = self._by_stage[stage] = (systems, tuple(
                (s, int(s.every)) for s in systems if int(s.every) > 1))
        return got

    def _reported_tables(self) -> frozenset:
        """Tables whose rebuild check the last INTEGRATE_FIRST system that writes their
        ``position`` reports (``System.reports_displacement``), kept until the system list
        changes: a system after the reporter that moved rows would make the report stale."""
        got = self._by_stage.get("reported")
        if got is None:
            last_writer = {}
            for s in self.systems_in(Stage.INTEGRATE_FIRST):
                for table, fields in s.writes.items():
                    if "position" in fields:
                        last_writer[table] = s
            got = self._by_stage["reported"] = frozenset(
                table for table, s in last_writer.items() if table in s.reports_displacement)
        return got

    def spatial_tables(self) -> tuple[Table, ...]:
        """Tables with a 3-vector ``position`` (decomposed by the domain); asked every step,
        so kept until a table is added or some table changes (``Table.structure_version``)."""
        key = (Table.structure_version, len(self.tables))
        if self._spatial[0] != key:
            self._spatial = (key, tuple(t for t in self.tables.values() if t.has_field("position")
                                        and t.fields["position"].shape == (3,)))
        return self._spatial[1]

    def anchored_tables(self, table: Table) -> list[Table]:
        return [t for t in self.tables.values() if t.anchor and t.anchor[0] == table.name]

    def request_rebuild(self) -> None:
        """Rebuild the domain (and run the NEIGHBORS systems) at this step's check, as if a
        particle had moved half the skin: for a system that changes what the neighbour
        lists depend on other than positions (radii that grow, a contact range that widens).
        Call it from a system in INTEGRATE_FIRST; any rank's request rebuilds every rank."""
        self._rebuild_requested = True

    # ------------------------------------------------------ element lookups
    def incident_rows(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """For every row of the anchor table (owned and ghost), the rows of table `name` that
        refer to it: CSR ``(start, items)`` (``ecs_dem.references.incidence``).

        The pairs of particle row r are ``items[start[r]:start[r + 1]]``, owned
        and ghost pair rows alike. Cached until either table changes structurally.
        """
        table = self.table(name)
        if not table.references:
            raise InputError(f"table '{name}' declares no references to another table's rows")
        anchor = self.table(table.anchor[0])
        key = (table.epoch, anchor.epoch)
        cached = self._incidence.get(name)
        if cached is None or cached[0] != key:
            cached = self._incidence[name] = (key, incidence(table, anchor.n))
        return cached[1]

    def _resolve_references(self, anchor: Table, table: Table, built: bool = False) -> None:
        """Row fields of `table`; `built`: its owned rows were just written by their builder."""
        first = table.n_owned if built else 0
        if table.references and first < table.n:
            rows = self.domain.anchor_rows(anchor, table)
            resolve_references(anchor, table, rows, self.domain.ghost_width, first)
        self._resolved[table.name] = (table.epoch, anchor.epoch)

    def _references_stale(self) -> bool:
        """An anchored table changed structurally since its references were resolved."""
        key = (Table.structure_version, len(self.tables))
        if self._references_checked == key:
            return False  # no table changed or came since the last check found nothing stale
        for t in self.tables.values():
            if t.anchor and self._resolved.get(t.name) != (t.epoch, self.tables[t.anchor[0]].epoch):
                return True
        self._references_checked = key
        return False

    # ----------------------------------------------------------- validation
    def _validate(self, s: System) -> None:
        for label in DECLARATIONS:
            for tname, names in getattr(s, label).items():
                if tname not in self.tables:
                    raise InputError(
                        f"system {s.name} declares {label} on table '{tname}', which the world "
                        f"does not have; tables: {sorted(self.tables)}")
                t = self.tables[tname]
                for f in names:
                    if not t.has_field(f):
                        raise InputError(
                            f"system {s.name} declares {label} on '{tname}.{f}', which is not a "
                            f"field; fields: {sorted(t.fields)}")
                    halo = t.fields[f].halo
                    if label == "reads_ghosts" and halo is not Halo.FORWARD and f != "gid":
                        raise InputError(
                            f"system {s.name} reads ghosts of '{tname}.{f}', whose halo policy is "
                            f"{halo.value}: declare the field FORWARD or read owned rows only")
                    if label.startswith("accumulates") and halo not in (Halo.REVERSE, Halo.SUM):
                        raise InputError(
                            f"system {s.name} accumulates into '{tname}.{f}', whose halo policy "
                            f"is {halo.value}: only REVERSE and SUM fields can be accumulated")
                    if halo is Halo.SUM and label.startswith("accumulates") and (
                            label != "accumulates" or t in self.spatial_tables()):
                        raise InputError(
                            f"system {s.name} declares {label} on the SUM field '{tname}.{f}': "
                            "a SUM field belongs to a table every rank holds whole (no position "
                            "column) and is declared in accumulates")
        for tname, names in s.assigns_owned.items():
            extra = set(names) - set(s.accumulates_owned.get(tname, ()))
            if extra or s.stage is not Stage.FORCES:
                raise InputError(
                    f"system {s.name} declares assigns_owned on {tname}.{sorted(names)}: a FORCES "
                    "system may set only fields it also declares in accumulates_owned (it adds "
                    "into them where it is not their first contribution)")
        for tname in s.builds:
            if tname not in self.tables:
                raise InputError(f"system {s.name} builds table '{tname}', which the world does "
                                 f"not have; tables: {sorted(self.tables)}")

    # ------------------------------------------------------------ scheduling
    def _halo_ops_before(self, s: System, stale, pending, zeroed, pending_local,
                         also_zero=()) -> list[tuple[str, str, str]]:
        """Halo operations needed before `s` runs; updates the four state sets.

        ``also_zero``: (table, field) pairs of later accumulators to zero here as well
        (``_hoisted_zeros``)."""
        ops = []
        for tname, names in s.reads_ghosts.items():
            for f in names:
                if (tname, f) in stale:
                    ops.append(("forward", tname, f))
                    stale.discard((tname, f))
        for decl in (s.reads, s.writes):
            for tname, names in decl.items():
                for f in names:
                    if (tname, f) in pending:  # the full reverse also covers local images
                        ops.append(("reverse", tname, f))
                        pending.discard((tname, f))
                        pending_local.discard((tname, f))
                    elif (tname, f) in pending_local:
                        ops.append(("reverse_local", tname, f))
                        pending_local.discard((tname, f))
        for decl, reach in ((s.accumulates, "all"), (s.accumulates_on_rank, "local"),
                            (s.accumulates_owned, "owned")):
            for tname, names in decl.items():
                for f in names:
                    if (tname, f) not in zeroed:
                        ops.append((self._zero_verb(tname, f), tname, f))
                        zeroed.add((tname, f))
                    if reach == "owned" or self._is_sum(tname, f):  # no ghost rows to bring home
                        continue
                    if reach == "all":
                        pending.add((tname, f))
                        pending_local.discard((tname, f))
                    elif (tname, f) not in pending:
                        pending_local.add((tname, f))
        for key in also_zero:
            if key not in zeroed:
                ops.append((self._zero_verb(*key),) + key)
                zeroed.add(key)
        return ops

    def _is_sum(self, tname: str, f: str) -> bool:
        return self.tables[tname].fields[f].halo is Halo.SUM

    def _zero_verb(self, tname: str, f: str) -> str:
        return "zero_shares" if self._is_sum(tname, f) else "zero"

    def _sums_of(self, s: System) -> tuple[tuple, tuple]:
        """(SUM fields `s` reads or writes: summed before it if they hold shares, SUM fields
        it accumulates its share into); both empty on one rank, where a share is the sum."""
        if self.comm.size == 1:
            return (), ()
        read = tuple((t, f) for decl in (s.reads, s.writes) for t, names in decl.items()
                     for f in names if self._is_sum(t, f))
        shared = tuple((t, f) for decl in (getattr(s, label) for label in ACCUMULATIONS)
                       for t, names in decl.items() for f in names if self._is_sum(t, f))
        return read, shared

    def _assignments(self, systems: tuple, zeroed) -> set[tuple[str, str]]:
        """REVERSE fields whose zeroing the pass skips because a system sets them
        (``System.assigns_owned``), and each such system's ``assigning``.

        A system sets a field where it is the pass's first system to declare it and no
        system of the pass adds into its ghost rows (``accumulates``,
        ``accumulates_on_rank``): its owned rows then hold exactly what a zero followed by
        its addition would (ghost rows are never read). A system whose choice differs
        between two schedules (systems with ``every`` > 1 around it) adds in all of them:
        the schedules compiled so far are dropped and compiled again."""
        skipped: set[tuple[str, str]] = set()
        for k, s in enumerate(systems):
            if not s.assigns_owned:
                continue
            mine = set()
            if id(s) not in self._adds_always:
                for tname, names in s.assigns_owned.items():
                    for f in names:
                        key = (tname, f)
                        earlier = any(f in getattr(o, label).get(tname, ())
                                      for o in systems[:k] for label in DECLARATIONS)
                        ghosts = any(f in o.accumulates.get(tname, ())
                                     or f in o.accumulates_on_rank.get(tname, ()) for o in systems)
                        if key not in zeroed and key not in skipped and not earlier and not ghosts:
                            mine.add(key)
            choice = frozenset(mine)
            seen = self._assigning_seen.setdefault(id(s), choice)
            if seen != choice:
                self._adds_always.add(id(s))
                self._programs.clear()
                choice = frozenset()
            if choice:
                skipped |= choice
            s.assigning = choice
        return skipped

    @staticmethod
    def _hoisted_zeros(systems: tuple, zeroed) -> dict[int, list[tuple[str, str]]]:
        """Index of a system -> REVERSE fields of later accumulators to zero before it.

        A table's REVERSE fields are zeroed before their first accumulation in a force pass;
        where several systems accumulate into one table (gravity into force, contacts into
        force and torque, the bending damper into its load), each would start a zeroing
        pass of its own. A field's zero moves back to the table's first zero of the pass
        when no system in between declares that field in any way or builds the table: no
        system can then tell the difference, and the table's fields are zeroed in one
        kernel call (``Domain.zero``).
        """
        first: dict[tuple[str, str], int] = {}
        for k, s in enumerate(systems):
            for decl in (getattr(s, label) for label in ACCUMULATIONS):
                for tname, names in decl.items():
                    for f in names:
                        if (tname, f) not in zeroed:
                            first.setdefault((tname, f), k)
        table_first: dict[str, int] = {}
        for (tname, _), k in first.items():
            table_first[tname] = min(k, table_first.get(tname, k))
        hoisted: dict[int, list[tuple[str, str]]] = defaultdict(list)
        for (tname, f), k in first.items():
            k0 = table_first[tname]
            if k > k0 and not any(
                    tname in s.builds or any(f in getattr(s, label).get(tname, ())
                                             for label in DECLARATIONS)
                    for s in systems[k0:k]):
                hoisted[k0].append((tname, f))
        return hoisted

    def _mark_written(self, s: System, stale) -> None:
        for tname, names in s.writes.items():
            t = self.tables[tname]
            for f in names:
                if t.fields[f].halo is Halo.FORWARD:
                    stale.add((tname, f))

    @staticmethod
    def _batches(ops: list[tuple[str, str, str]]) -> list[tuple[str, str, tuple[str, ...]]]:
        """Group halo operations into one message per verb and table (fields batched)."""
        batches: dict[tuple[str, str], list[str]] = {}
        for verb, tname, f in ops:
            batches.setdefault((verb, tname), []).append(f)
        return [(verb, tname, tuple(names)) for (verb, tname), names in batches.items()]

    def _apply_batches(self, batches: list[tuple[str, str, tuple[str, ...]]]) -> None:
        timers = self.timers
        for verb, tname, names in batches:
            t = self.tables[tname]
            t0 = _time.perf_counter()
            if verb == "forward":
                self.domain.forward(t, names)
            elif verb == "reverse":
                self.domain.reverse(t, names)
            elif verb == "reverse_local":
                self.domain.reverse(t, names, local_only=True)
            elif verb == "zero":
                self.domain.zero(t, names)
            else:  # zero_shares: a whole table's SUM fields, before this rank's shares
                for name in names:
                    t.column(name)[:t.n].fill(0.0)
            timers[_HALO_TIMERS[verb]] += _time.perf_counter() - t0

    def is_summed(self, table: str, field: str) -> bool:
        """Whether the SUM field holds the sum over ranks now (always on one rank)."""
        return (table, field) not in self._unsummed

    def complete_sums(self, fields=None) -> None:
        """Sum the shares of SUM fields over ranks now (all of them, or those of `fields`, an
        iterable of (table, field)); a field already summed is left alone. Collective: every
        rank calls it at the same point of the same step (a condition on replicated data)."""
        if not self._unsummed:
            return
        keys = sorted(self._unsummed if fields is None else self._unsummed.intersection(fields))
        if not keys:
            return
        t0 = _time.perf_counter()
        by_table: dict[str, list[str]] = {}
        for tname, f in keys:
            by_table.setdefault(tname, []).append(f)
        for tname, names in by_table.items():
            t = self.tables[tname]
            columns = [t.column(f)[:t.n].reshape(t.n, -1) for f in names]
            total = self.comm.sum(np.concatenate(columns, axis=1) if len(columns) > 1
                                  else columns[0])
            start = 0
            for column in columns:
                column[...] = total[:, start:start + column.shape[1]]
                start += column.shape[1]
        self._unsummed.difference_update(keys)
        if self._guard is not None:
            self._guard.summed(keys)
        self.timers["halo:sum"] += _time.perf_counter() - t0

    def _compile(self, systems: tuple, state: HaloState) -> tuple[list, HaloState]:
        """The halo operations before each of `systems`, starting from `state`.

        Returns ([(system, its timer name, its batched halo ops)], the state
        after the last system). A pure function of its arguments:
        ``_run_systems`` memoises it, ``describe_schedule`` prints it.
        """
        stale, pending, zeroed = set(state.stale), set(state.pending), set(state.zeroed)
        pending_local = set(state.pending_local)
        zeroed |= self._assignments(systems, zeroed)
        runs = []
        hoisted = self._hoisted_zeros(systems, zeroed)
        for k, s in enumerate(systems):
            ops = self._halo_ops_before(s, stale, pending, zeroed, pending_local,
                                        hoisted.get(k, ()))
            self._mark_written(s, stale)
            runs.append((s, s.name, self._batches(ops), *self._sums_of(s)))
        return runs, HaloState(frozenset(stale), frozenset(pending), frozenset(zeroed),
                               frozenset(pending_local))

    def _run_systems(self, systems: tuple) -> None:
        """Run `systems` in order, each after the halo operations its declarations need."""
        key = (systems, self._halo)
        program = self._programs.get(key)
        if program is None:
            program = self._programs[key] = self._compile(systems, self._halo)
        runs, halo = program
        # the attributes of the hot path are set through __dict__: they exist, and the frozen
        # World's __setattr__ costs about 0.4 us a call, a few times a step
        self.__dict__["_halo"] = halo
        timers = self.timers
        guard = self._guard
        for s, name, batches, sums_read, shares in runs:
            if batches:
                self._apply_batches(batches)
            if sums_read and self._unsummed:
                self.complete_sums(sums_read)
            t0 = _time.perf_counter()
            if guard is None:
                s.run(self)
            else:
                guard.run(s, self)  # debug mode (ecs_dem.declaration_guard)
            timers[name] += _time.perf_counter() - t0
            if shares:
                self._unsummed.update(shares)

    # ------------------------------------------------------ the step's phases
    def _ghost_users(self) -> set[str]:
        """Anchored tables whose ghost rows some system reads or accumulates into."""
        return {t for s in self.systems
                for decl in (s.reads_ghosts, s.accumulates, s.accumulates_on_rank) for t in decl}

    def _state_after_rebuild(self, state: HaloState) -> HaloState:
        """A rebuild first reverses everything pending, then refreshes every ghost row of the
        spatial tables and of the anchored tables that get ghosts."""
        users = self._ghost_users()
        rebuilt = {t.name for t in self.spatial_tables()}
        rebuilt |= {d.name for t in self.spatial_tables() for d in self.anchored_tables(t)
                    if d.name in users}
        return HaloState(frozenset(p for p in state.stale if p[0] not in rebuilt),
                         frozenset(), state.zeroed, frozenset())

    def _rebuild_domain(self, initial: bool = False) -> None:
        """Migrate, sort and rebuild ghosts; element tables get their ghosts and rows before the
        NEIGHBORS systems (which may search them), the tables those systems build after."""
        t0 = _time.perf_counter()
        self._rebuild_requested = False
        self._flush_reverse()  # ghost rows are about to be replaced
        spatial = self.spatial_tables()
        for t in spatial:  # where each row goes (domain.destinations), for the hooks
            self.domain.plan_rebuild(t, initial=initial)
        for s in self.systems:  # e.g. per-contact data copied to rows that migrate elsewhere
            s.before_rebuild(self)
        for t in spatial:
            self.domain.rebuild(t, self.anchored_tables(t), initial=initial)
        names = {t.name for t in spatial}
        self._halo = self._halo._replace(
            stale=frozenset(p for p in self._halo.stale if p[0] not in names))
        built = {name for s in self.systems_in(Stage.NEIGHBORS) for name in s.builds}
        self._anchored_ghosts(spatial, lambda name: name not in built)
        self.timers["domain:rebuild"] += _time.perf_counter() - t0
        self._run_systems(self.systems_in(Stage.NEIGHBORS))
        t0 = _time.perf_counter()
        self._anchored_ghosts(spatial, lambda name: name in built, built=True)
        self._halo = self._state_after_rebuild(self._halo)
        self.timers["domain:rebuild"] += _time.perf_counter() - t0
        self.rebuilt_this_step = True

    def _anchored_ghosts(self, spatial, which, built: bool = False) -> None:
        """Ghost rows (where a system uses them) and row references of the anchored tables
        `which` selects; `built`: their owned rows were just written by their builder."""
        users = self._ghost_users()
        for t in spatial:
            for dep in self.anchored_tables(t):
                if which(dep.name):
                    if dep.name in users:
                        self.domain.rebuild_anchored_ghosts(t, dep)
                    self._resolve_references(t, dep, built=built)

    def _due(self, stage: Stage) -> tuple:
        """The systems of `stage` whose ``every`` divides this step (a probe that samples
        every 200 steps is left out of the other 199, with the halo operations only it
        needed: the schedule is compiled for each set of due systems). ``every`` is read
        when the system list changes (``add_system``)."""
        systems, sparse = self._stage_systems(stage)
        if not sparse:
            return systems
        step = self.step
        skipped = {id(s) for s, every in sparse if step % every}
        return tuple(s for s in systems if id(s) not in skipped) if skipped else systems

    def _forces(self) -> None:
        halo = self._halo
        cleared = self._zeroed_cleared.get(halo)
        if cleared is None:
            cleared = self._zeroed_cleared[halo] = halo._replace(zeroed=frozenset())
        self.__dict__["_halo"] = cleared
        self._run_systems(self._due(Stage.FORCES))

    def _output(self) -> None:
        due = self._due(Stage.OUTPUT)
        if due:
            with self.writing():
                self._run_systems(due)

    @contextlib.contextmanager
    def writing(self, what: str = "an output file"):
        """Turn an OSError of the block (a full disk, a quota, a file system gone) into an
        :class:`OutputError` that says what and where; the OUTPUT stage and ``on_stop`` run
        in it, and a driver's last checkpoint should too."""
        try:
            yield
        except OSError as exc:
            reason = (exc.strerror if exc.strerror and "\n" not in exc.strerror
                      else os.strerror(exc.errno) if exc.errno else str(exc).splitlines()[0])
            name = exc.filename
            if name is None:  # h5py names the file inside its message
                found = re.search(r"filename = '([^']*)'", str(exc))
                name = found.group(1) if found else None
            raise OutputError(
                f"step {self.step}: {what}{f' ({name})' if name else ''} could not be written: "
                f"{reason}. Free space or choose another path; the files written before stay "
                "as they were (continue from the last checkpoint with restart=)") from exc

    def _flush_reverse(self) -> None:
        """Reduce accumulators nobody has read yet, so owners hold complete values between steps."""
        if self._halo.pending or self._halo.pending_local:
            self._apply_batches(self._batches(
                [("reverse",) + op for op in sorted(self._halo.pending)]
                + [("reverse_local",) + op for op in sorted(self._halo.pending_local)]))
            self._halo = self._halo._replace(pending=frozenset(), pending_local=frozenset())

    # ------------------------------------------------------------------ run
    def prepare(self) -> None:
        """First half of set-up: system set-up, validation, ghost width (no data moves).

        ``setup`` continues from here for a fresh run; ``io.checkpoint.restart``
        continues from here by loading the saved state instead. A system may
        add further systems in its ``setup``; they are set up in turn.
        """
        if self._is_prepared:
            return
        done: set[int] = set()
        while len(done) < len(self.systems):
            for s in list(self.systems):
                if id(s) not in done:
                    done.add(id(s))
                    set_up(s, self)
        for s in self.systems:  # declarations final, validated, frozen (ecs_dem.system)
            declare_and_freeze(s, self, self._validate)
        ranges = [float(s.interaction_range(self)) for s in self.systems]
        self.domain.ghost_width = self.comm.max(max(ranges, default=0.0)) + self.domain.skin
        self.domain.check_ghost_width()
        self._is_prepared = True

    def setup(self) -> None:
        """Validate, build ghosts and neighbour lists, evaluate forces once (see module doc)."""
        if self._is_setup:
            return
        self.prepare()
        for t in self.spatial_tables():
            self.domain.check_inside(t)
            if self.comm.size > 1 and self.comm.max(t.n_owned) != self.comm.min(t.n_owned):
                raise InputError(
                    f"table '{t.name}' differs between ranks before set-up: every rank must build "
                    "the same initial state (same seed, same files); set-up then keeps each "
                    "rank's own rows")
        self._is_setup = True
        self._rebuild_domain(initial=True)
        self._compile_row_kernels()
        self.setup_phase = True
        try:
            self._forces()
        finally:
            self.setup_phase = False
        self._output()
        self._flush_reverse()
        self.complete_sums()

    def mark_restarted(self) -> None:
        """State was loaded from a checkpoint: ghosts and forces are current, nothing pending.

        Row references of anchored tables are resolved anew (ghost element rows
        were rebuilt by replaying the saved send lists), at the positions of the
        last rebuild, where the uninterrupted run resolved them: since then the
        rows have moved by up to half the skin each, and a pair listed within
        the cut-off plus the skin may now lie farther apart than the ghost width.
        """
        for t in self.spatial_tables():
            deps = self.anchored_tables(t)
            if deps:
                with self._positions_of_last_rebuild(t):
                    for dep in deps:
                        self._resolve_references(t, dep)
        self._halo = HaloState()
        self._unsummed.clear()
        self._is_setup = True
        self._compile_row_kernels()

    @contextlib.contextmanager
    def _positions_of_last_rebuild(self, table: Table):
        """Inside the block, `table`'s owned rows sit at the positions of the last rebuild
        (the domain's displacement reference) and its ghost rows at their images (one
        forward, collective); after it every row is back where it was, bit for bit. Without
        a reference on some rank (rows changed since), the positions stay as they are."""
        ref = self.domain.displacement_reference(table)
        have = int(ref is not None)
        if self.comm.size > 1:
            have = int(self.comm.min(have))
        if not have:
            yield
            return
        column = table.column("position")
        kept = column[:table.n].copy()
        column[:table.n_owned] = ref
        self.domain.forward(table, ("position",))
        try:
            yield
        finally:
            column[:table.n] = kept

    def _compile_row_kernels(self) -> None:
        """On several ranks, compile what migration and ghost rebuilds will move now: else
        the first migration would compile it mid-run (``Domain.compile_row_kernels``)."""
        if self.comm.size > 1:
            for t in self.spatial_tables():
                self.domain.compile_row_kernels(t, self.anchored_tables(t))

    def step_once(self) -> None:
        """Advance one time step (module docstring gives the order); SUM fields are summed."""
        self._advance()
        self.complete_sums()

    def _advance(self) -> None:
        """One time step of ``run``'s loop: SUM fields may hold this rank's share after it."""
        if not self._is_setup:
            self.setup()
        attributes = self.__dict__  # the hot path's attributes (see _run_systems)
        attributes["step"] += 1
        if self.rebuilt_this_step:
            self.rebuilt_this_step = False
        self._run_systems(self.systems_in(Stage.INTEGRATE_FIRST))
        attributes["time"] += self.dt  # the positions are now at the new time
        t0 = _time.perf_counter()
        reported = self._reported_tables()
        rebuild = any([self.domain.needs_rebuild(t, t.name in reported)
                       for t in self.spatial_tables()])
        rebuild = rebuild or self._references_stale() or self._rebuild_requested
        stop = self._kill.signal or 0 if self._kill is not None else 0
        if self.comm.size > 1:  # one reduction answers both: rebuild anywhere? stop anywhere?
            rebuild, stop = self.comm.max_of_two(float(rebuild), float(stop))
            rebuild, stop = bool(rebuild), int(stop)
        if stop != self._stop_signal:
            self._stop_signal = stop
        self.timers["domain:check"] += _time.perf_counter() - t0
        if rebuild:
            self._rebuild_domain()
        self._forces()
        self._run_systems(self.systems_in(Stage.INTEGRATE_SECOND))
        self._output()
        self._flush_reverse()

    def run(self, steps: int) -> None:
        """Advance `steps` time steps (sets up first if needed).

        Soft kill: a first SIGINT or SIGTERM (on any rank) lets the current
        step finish; every rank then calls its systems' ``on_stop`` (the
        checkpoint writer saves the state) and ``run`` returns with
        ``stop_requested`` set to the signal number. A signal that arrives
        during the last step counts too (one more vote at the end), so a
        driver that runs in chunks never loses it. A second signal ends the
        process at once.

        A :class:`StateError` (the run broke down) on a run of several ranks
        ends every rank with exit code ``STATE_ERROR_EXIT_CODE``, after the
        failing rank printed it: it is usually raised on some ranks only.
        On one rank it propagates to the driver.
        """
        try:
            self.setup()
            self.stop_requested = None
            self.run_end_step = self.step + int(steps)
            with self.soft_kill() as kill:
                self._steps(int(steps), kill)
        except StateError as exc:
            if self.comm.size > 1:
                # raised on some ranks only: the others would wait forever in their next
                # collective, and a driver's clean-up (closing the shared file) is one too.
                # Outputs are flushed after every write, so what was written stays.
                self.comm.abort_with(f"error: {exc}", STATE_ERROR_EXIT_CODE)
            raise

    def _steps(self, steps: int, kill) -> None:
        """The loop of :meth:`run`, inside its soft-kill block."""
        for _ in range(steps):
            self._advance()
            if self._stop_signal:  # agreed by all ranks during the step
                break
        else:  # a signal during the last step, after its vote, must not be lost
            late = kill.signal or 0
            self._stop_signal = (int(self.comm.max(np.array([late], dtype=np.float64))[0])
                                 if self.comm.size > 1 else late)
        self.complete_sums()
        if self._stop_signal:
            self.stop_requested = self._stop_signal
            with self.writing():
                for s in self.systems:
                    s.on_stop(self)

    @contextlib.contextmanager
    def soft_kill(self):
        """The soft-kill handlers (``ecs_dem.soft_kill``), kept across every ``run`` inside the
        block: a driver that runs in chunks (``runner.run_world``) wraps its loop in it, so a
        signal between two chunks is not the default handler's (which ends the process
        without a checkpoint) but stops the next step. Nested blocks share the outer one."""
        if self._kill is not None:
            yield self._kill
            return
        with SoftKill() as kill:
            self._kill = kill
            try:
                yield kill
            finally:
                self._kill = None

    # ------------------------------------------------------------- reporting
    def describe_schedule(self) -> str:
        """The per-step plan: systems in order with the halo operations the scheduler inserts.

        Compiled by the same ``_compile`` the scheduler runs, from the state
        after set-up; the first step, then the steady state (a step without a
        rebuild, every OUTPUT system due). NEIGHBORS systems run only after a
        rebuild.
        """
        def show(runs, indent="  "):
            for s, _, batches, sums_read, _ in runs:
                for verb, tname, names in batches:
                    out.append(f"{indent}  {verb} {tname}.{', '.join(names)}")
                if sums_read:
                    out.append(f"{indent}  sum over ranks, if it holds shares: "
                               + ", ".join(f"{t}.{f}" for t, f in sums_read))
                out.append(f"{indent}{s.describe()}" + (f" every {s.every}" if s.every != 1 else "")
                           + "".join(f" | sets {t}.{f} (its zero skipped)"
                                     for t, f in sorted(s.assigning)))

        out: list[str] = []
        state = HaloState()
        for title in ("one time step:", "one time step (steady state):"):
            out.append(title)
            runs, state = self._compile(self.systems_in(Stage.INTEGRATE_FIRST), state)
            show(runs)
            out.append("  domain: if a row moved > skin/2 (or an anchored table changed): reverse "
                       "pending, wrap, migrate, sort, rebuild ghosts, then:")
            runs, _ = self._compile(self.systems_in(Stage.NEIGHBORS),
                                    self._state_after_rebuild(state))
            show(runs, "    ")
            out.append("    ghosts of anchored tables some system reads; resolve row references")
            state = state._replace(zeroed=frozenset())
            for stage in (Stage.FORCES, Stage.INTEGRATE_SECOND, Stage.OUTPUT):
                runs, state = self._compile(self.systems_in(stage), state)
                show(runs)
            if state.pending or state.pending_local:
                out.append("  end of step: " + ", ".join(
                    [f"reverse {t}.{f}" for t, f in sorted(state.pending)]
                    + [f"reverse_local {t}.{f}" for t, f in sorted(state.pending_local)]))
                state = state._replace(pending=frozenset(), pending_local=frozenset())
        return "\n".join(out)

    def timing_report(self) -> str:
        total = sum(self.timers.values()) or 1.0
        rows = sorted(self.timers.items(), key=lambda kv: -kv[1])
        return "\n".join(f"  {k:32s} {v:9.3f} s {100 * v / total:5.1f} %" for k, v in rows)
