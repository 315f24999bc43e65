"""The planner: from the systems' declarations to the halo operations of a step.

A pure function of its inputs (no World, no MPI, no data): the systems'
declarations (``ecs_dem.system``) and the tables' field metadata
(:class:`TableInfo`: each field's halo policy, whether the table is spatial,
which table it is anchored to) give, for a run of systems in order, the
operations before each system (:class:`Plan`). The scheduler
(``ecs_dem.scheduler``) executes plans and memoises them; ``World.describe_schedule``
prints the plan of a whole step (:func:`plan_step`, :func:`format_step`).

The rules, per (table, field), from the halo state before the run (:class:`HaloState`):

* forward: a FORWARD field that some system ``writes`` is stale on ghost rows
  until a system that ``reads_ghosts`` it; the forward goes right before that
  reader. A rebuild refreshes every ghost row of the tables it rebuilds.
* reverse: a REVERSE field that a system ``accumulates`` (owned and ghost rows)
  is pending until a system ``reads`` or ``writes`` it; the reverse goes right
  before that system, or to the end of the step (:func:`end_of_step`).
* zero: a REVERSE or SUM field is zeroed before its first accumulation of a force
  pass (verb ``zero``; ``zero_shares`` for a SUM field, which holds this rank's
  share until summed). Where several systems accumulate into one table, a later
  field's zero moves to the table's first zero when no system in between declares
  that field or builds the table (:func:`hoisted_zeros`): one kernel call zeroes them.
* assignments: a FORCES system that declares ``assigns_owned`` sets the field instead
  of adding to it where it is the run's first to declare it and no system of the run
  adds into its ghost rows; the field's zero is then skipped (:func:`assignments`).
* sums: on several ranks, a SUM field is summed over ranks (when it holds shares)
  before a system that ``reads`` or ``writes`` it; a system that accumulates into it
  leaves it holding shares.

Operations of one verb on one table before a system are batched into one
(:func:`batch`): one message carries every field.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

from .errors import InputError
from .system import ACCUMULATIONS, DECLARATIONS, Stage, System
from .table import Halo, Table


class TableInfo(NamedTuple):
    """What the planner knows of a table: its fields' halo policies, whether the domain
    decomposes it (``spatial``: a 3-vector ``position``), the table it is anchored to."""

    name: str
    halos: Mapping[str, Halo]
    spatial: bool = False
    anchor: str | None = None

    @classmethod
    def of(cls, table: Table, spatial: bool) -> "TableInfo":
        return cls(table.name, {f: d.halo for f, d in table.fields.items()}, spatial,
                   table.anchor[0] if table.anchor else None)


def table_infos(tables: Mapping[str, Table], spatial: Iterable[Table]) -> dict[str, TableInfo]:
    """The :class:`TableInfo` of every table; `spatial`: the tables the domain decomposes."""
    names = {t.name for t in spatial}
    return {name: TableInfo.of(t, name in names) for name, t in tables.items()}


class HaloState(NamedTuple):
    """Halo state between systems, as frozen sets of (table, field).

    stale: FORWARD fields whose ghost rows lag their owners; pending: REVERSE
    fields with ghost contributions not yet summed into owners; zeroed: REVERSE
    and SUM fields zeroed in this force pass. Hashable: it keys the memo of plans.
    """

    stale: frozenset = frozenset()
    pending: frozenset = frozenset()
    zeroed: frozenset = frozenset()


class HaloOp(NamedTuple):
    """One halo operation on some fields of one table: verb ``forward``, ``reverse``,
    ``zero`` or ``zero_shares`` (``ecs_dem.domain``)."""

    verb: str
    table: str
    fields: tuple[str, ...]


class Run(NamedTuple):
    """One system of a plan: the halo operations before it; the SUM fields to sum over
    ranks before it if they hold shares; the SUM fields it leaves holding shares."""

    system: System
    timer: str
    ops: tuple[HaloOp, ...]
    sums_read: tuple[tuple[str, str], ...]
    shares: tuple[tuple[str, str], ...]


class Plan(NamedTuple):
    """The runs of some systems in order, the halo state after them, and per system the
    fields of its ``assigns_owned`` it sets (``System.assigning``)."""

    runs: tuple[Run, ...]
    after: HaloState
    assigning: tuple[frozenset, ...]


# ------------------------------------------------------------------ validation
def validate(s: System, tables: Mapping[str, TableInfo]) -> None:
    """Raise :class:`InputError` naming the first declaration of `s` that the tables do
    not allow (an unknown table or field, a ghost read of a field ghosts do not carry
    forward, an accumulation into a field that is not REVERSE or SUM, ...)."""
    for label in DECLARATIONS:
        for tname, names in getattr(s, label).items():
            if tname not in tables:
                raise InputError(
                    f"system {s.name} declares {label} on table '{tname}', which the world "
                    f"does not have; tables: {sorted(tables)}")
            t = tables[tname]
            for f in names:
                if f not in t.halos:
                    raise InputError(
                        f"system {s.name} declares {label} on '{tname}.{f}', which is not a "
                        f"field; fields: {sorted(t.halos)}")
                halo = t.halos[f]
                if label == "reads_ghosts" and halo is not Halo.FORWARD and f != "gid":
                    raise InputError(
                        f"system {s.name} reads ghosts of '{tname}.{f}', whose halo policy is "
                        f"{halo.value}: declare the field FORWARD or read owned rows only")
                if label.startswith("accumulates") and halo not in (Halo.REVERSE, Halo.SUM):
                    raise InputError(
                        f"system {s.name} accumulates into '{tname}.{f}', whose halo policy "
                        f"is {halo.value}: only REVERSE and SUM fields can be accumulated")
                if halo is Halo.SUM and label.startswith("accumulates") and (
                        label != "accumulates" or t.spatial):
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
        if tname not in tables:
            raise InputError(f"system {s.name} builds table '{tname}', which the world does "
                             f"not have; tables: {sorted(tables)}")


# ------------------------------------------------------------------ planning
def _is_sum(tables: Mapping[str, TableInfo], tname: str, f: str) -> bool:
    return tables[tname].halos[f] is Halo.SUM


def _zero(tables: Mapping[str, TableInfo], tname: str, f: str) -> tuple[str, str, str]:
    return ("zero_shares" if _is_sum(tables, tname, f) else "zero", tname, f)


def ops_before(s: System, stale: set, pending: set, zeroed: set,
               tables: Mapping[str, TableInfo], also_zero=()) -> list[tuple[str, str, str]]:
    """(verb, table, field) operations needed before `s` runs; updates the three state sets.

    ``also_zero``: (table, field) pairs of later accumulators to zero here as well
    (:func:`hoisted_zeros`)."""
    ops = []
    for tname, names in s.reads_ghosts.items():
        for f in names:
            if (tname, f) in stale:
                ops.append(("forward", tname, f))
                stale.discard((tname, f))
    for decl in (s.reads, s.writes):
        for tname, names in decl.items():
            for f in names:
                if (tname, f) in pending:
                    ops.append(("reverse", tname, f))
                    pending.discard((tname, f))
    for decl, owned_only in ((s.accumulates, False), (s.accumulates_owned, True)):
        for tname, names in decl.items():
            for f in names:
                if (tname, f) not in zeroed:
                    ops.append(_zero(tables, tname, f))
                    zeroed.add((tname, f))
                if not owned_only and not _is_sum(tables, tname, f):
                    pending.add((tname, f))  # ghost rows to bring home
    for key in also_zero:
        if key not in zeroed:
            ops.append(_zero(tables, *key))
            zeroed.add(key)
    return ops


def sums_of(s: System, tables: Mapping[str, TableInfo], ranks: int) -> tuple[tuple, tuple]:
    """(SUM fields `s` reads or writes: summed before it if they hold shares, SUM fields
    it accumulates its share into); both empty on one rank, where a share is the sum."""
    if ranks == 1:
        return (), ()
    read = tuple((t, f) for decl in (s.reads, s.writes) for t, names in decl.items()
                 for f in names if _is_sum(tables, t, f))
    shared = tuple((t, f) for decl in (getattr(s, label) for label in ACCUMULATIONS)
                   for t, names in decl.items() for f in names if _is_sum(tables, t, f))
    return read, shared


def assignments(systems: Sequence[System], zeroed,
                adds_always=frozenset()) -> tuple[frozenset, ...]:
    """Per system, the fields of its ``assigns_owned`` it sets in this run (empty for the
    others): where it is the run's first system to declare the field, no system of the run
    adds into the field's ghost rows (``accumulates``: its owned rows then hold exactly
    what a zero followed by its addition would; ghost rows are never read), and the field
    was not zeroed before the run. Systems whose ids are in `adds_always` add."""
    skipped: set[tuple[str, str]] = set()
    choices = []
    for k, s in enumerate(systems):
        mine = set()
        if s.assigns_owned and id(s) not in adds_always:
            for tname, names in s.assigns_owned.items():
                for f in names:
                    key = (tname, f)
                    earlier = any(f in getattr(o, label).get(tname, ())
                                  for o in systems[:k] for label in DECLARATIONS)
                    ghosts = any(f in o.accumulates.get(tname, ()) for o in systems)
                    if key not in zeroed and key not in skipped and not earlier and not ghosts:
                        mine.add(key)
        skipped |= mine
        choices.append(frozenset(mine))
    return tuple(choices)


def hoisted_zeros(systems: Sequence[System], zeroed) -> dict[int, list[tuple[str, str]]]:
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


def batch(ops: Iterable[tuple[str, str, str]]) -> tuple[HaloOp, ...]:
    """Group (verb, table, field) operations into one per verb and table, in order of first
    appearance (the fields of one message)."""
    batches: dict[tuple[str, str], list[str]] = {}
    for verb, tname, f in ops:
        batches.setdefault((verb, tname), []).append(f)
    return tuple(HaloOp(verb, tname, tuple(names)) for (verb, tname), names in batches.items())


def plan_run(systems: Sequence[System], state: HaloState, tables: Mapping[str, TableInfo],
             ranks: int = 1, adds_always=frozenset()) -> Plan:
    """The plan of `systems` run in order from halo state `state` (module docstring); `ranks`:
    the number of ranks (SUM fields are summed only on several); `adds_always`: ids of
    systems of ``assigns_owned`` that add in every plan (:func:`assignments`)."""
    stale, pending, zeroed = set(state.stale), set(state.pending), set(state.zeroed)
    assigning = assignments(systems, zeroed, adds_always)
    for choice in assigning:
        zeroed |= choice
    hoisted = hoisted_zeros(systems, zeroed)
    runs = []
    for k, s in enumerate(systems):
        ops = ops_before(s, stale, pending, zeroed, tables, hoisted.get(k, ()))
        for tname, names in s.writes.items():
            stale.update((tname, f) for f in names if tables[tname].halos[f] is Halo.FORWARD)
        runs.append(Run(s, s.name, batch(ops), *sums_of(s, tables, ranks)))
    return Plan(tuple(runs), HaloState(frozenset(stale), frozenset(pending), frozenset(zeroed)),
                assigning)


def end_of_step(state: HaloState) -> tuple[tuple[HaloOp, ...], HaloState]:
    """The reverse of every pending field (owners hold complete values between steps), and
    the state after it."""
    ops = batch(("reverse",) + key for key in sorted(state.pending))
    return ops, state._replace(pending=frozenset())


# ------------------------------------------------------------------ rebuilds
def ghost_users(systems: Iterable[System]) -> set[str]:
    """Tables whose ghost rows some system reads or accumulates into (an anchored table
    gets ghost rows only then)."""
    return {t for s in systems for decl in (s.reads_ghosts, s.accumulates) for t in decl}


def rebuilt_tables(systems: Iterable[System], tables: Mapping[str, TableInfo]) -> frozenset:
    """Tables whose ghost rows a rebuild replaces: the spatial tables, and the tables
    anchored to them whose ghost rows some system uses."""
    users = ghost_users(systems)
    spatial = {name for name, t in tables.items() if t.spatial}
    return frozenset(spatial | {name for name, t in tables.items()
                                if t.anchor in spatial and name in users})


def after_rebuild(state: HaloState, rebuilt: frozenset) -> HaloState:
    """A rebuild first reverses everything pending, then refreshes every ghost row of the
    `rebuilt` tables (:func:`rebuilt_tables`)."""
    return HaloState(frozenset(p for p in state.stale if p[0] not in rebuilt),
                     frozenset(), state.zeroed)


# ------------------------------------------------------------------ a whole step
class StepPlan(NamedTuple):
    """The plans of one time step (``ecs_dem.world``), stage by stage; ``neighbors`` runs
    after a rebuild only; ``end_of_step`` reverses what nobody read."""

    integrate_first: Plan
    neighbors: Plan
    forces: Plan
    integrate_second: Plan
    output: Plan
    end_of_step: tuple[HaloOp, ...]
    after: HaloState


def plan_step(stages: Mapping[Stage, Sequence[System]], rebuilt: frozenset,
              plan: Callable[[Sequence[System], HaloState], Plan],
              state: HaloState = HaloState()) -> StepPlan:
    """The :class:`StepPlan` of one step with every system due, from `state`. `plan` makes
    the plan of a run of systems (:func:`plan_run` with the tables bound, or the
    scheduler's); `rebuilt`: :func:`rebuilt_tables`."""
    first = plan(tuple(stages.get(Stage.INTEGRATE_FIRST, ())), state)
    neighbors = plan(tuple(stages.get(Stage.NEIGHBORS, ())), after_rebuild(first.after, rebuilt))
    state = first.after._replace(zeroed=frozenset())
    plans = []
    for stage in (Stage.FORCES, Stage.INTEGRATE_SECOND, Stage.OUTPUT):
        plans.append(plan(tuple(stages.get(stage, ())), state))
        state = plans[-1].after
    ops, state = end_of_step(state)
    return StepPlan(first, neighbors, *plans, ops, state)


def format_step(step: StepPlan, title: str) -> list[str]:
    """The lines ``World.describe_schedule`` prints for one step."""
    out = [title]

    def show(plan: Plan, indent: str = "  ") -> None:
        for (s, _, ops, sums_read, _), assigning in zip(plan.runs, plan.assigning):
            for verb, tname, names in ops:
                out.append(f"{indent}  {verb} {tname}.{', '.join(names)}")
            if sums_read:
                out.append(f"{indent}  sum over ranks, if it holds shares: "
                           + ", ".join(f"{t}.{f}" for t, f in sums_read))
            out.append(f"{indent}{s.describe()}" + (f" every {s.every}" if s.every != 1 else "")
                       + "".join(f" | sets {t}.{f} (its zero skipped)"
                                 for t, f in sorted(assigning)))

    show(step.integrate_first)
    out.append("  domain: if a row moved > skin/2 (or an anchored table changed): reverse "
               "pending, wrap, migrate, sort, rebuild ghosts, then:")
    show(step.neighbors, "    ")
    out.append("    ghosts of anchored tables some system reads; resolve row references")
    for plan in (step.forces, step.integrate_second, step.output):
        show(plan)
    if step.end_of_step:
        out.append("  end of step: " + ", ".join(
            f"{verb} {tname}.{f}" for verb, tname, names in step.end_of_step for f in names))
    return out


__all__ = ["TableInfo", "table_infos", "HaloState", "HaloOp", "Run", "Plan", "StepPlan",
           "validate", "plan_run", "plan_step", "format_step", "end_of_step", "batch",
           "assignments", "hoisted_zeros", "ops_before", "sums_of", "ghost_users",
           "rebuilt_tables", "after_rebuild"]
