"""The World: tables, the domain, time, and the scheduler that runs systems.

One time step (``World.step``), with the halo operations the scheduler
inserts from the systems' declarations::

    step += 1
    INTEGRATE_FIRST systems            half kick + drift (owned rows)
    domain: if some row moved > skin/2 since the last rebuild (or NaN: error)
        reverse pending accumulators, wrap periodic positions, sort by cell,
        rebuild ghost rows, run NEIGHBORS systems
    FORCES systems                     before each: forward stale FORWARD fields
                                       it reads on ghosts; zero a REVERSE field
                                       before its first accumulation this step
    INTEGRATE_SECOND systems           before each: reverse accumulated fields
                                       it reads on owners
    time += dt
    OUTPUT systems whose ``every`` divides the step

``World.setup`` (run once, implicitly by the first ``run``) validates the
declarations, sets the ghost width to the largest ``interaction_range`` plus
the skin, calls every ``System.setup``, rebuilds the domain, runs NEIGHBORS,
evaluates forces once with ``setup_phase = True`` (contact history is not
advanced, as in LAMMPS's setup) and runs the OUTPUT systems for step 0.
``World.describe_schedule()`` prints the resulting plan. The operations are
derived once per (systems, halo state) and replayed on later steps
(``World._run_systems``).
"""
from __future__ import annotations

import time as _time
from collections import defaultdict

import numpy as np

from .comm import default_comm
from .soft_kill import SoftKill
from .domain import Box, Domain
from .errors import InputError
from .system import Stage, System
from .table import Halo, Table


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
        Re-order owned rows by cell at each rebuild, for memory locality.
    balance_every : int
        With several ranks, move the subdomain boundaries to even out the
        particles per rank at the first rebuild after this many steps (0: never).
    seed : int
        Seed of ``world.rng`` (saved in checkpoints).
    """

    def __init__(self, box: Box, dt: float, skin: float = 0.0, comm=None, sort: bool = True,
                 balance_every: int = 1000, seed: int = 0):
        if not (dt > 0 and np.isfinite(dt)):
            raise InputError(f"time step dt must be positive and finite (got {dt})")
        self.box = box
        self.dt = float(dt)
        self.comm = comm if comm is not None else default_comm()
        self.domain = Domain(box, skin, self.comm, sort_every_rebuild=sort,
                             balance_every=balance_every)
        self.tables: dict[str, Table] = {}
        self.systems: list[System] = []
        self.step = 0
        self.time = 0.0
        self.setup_phase = False
        self.rebuilt_this_step = False
        self.timers: dict[str, float] = defaultdict(float)
        self._is_setup = False
        self._is_prepared = False
        self.stop_requested = None  # signal number that stopped the last run (soft kill)
        self.run_end_step = None  # last step of the current run (progress, ETA)
        self._kill = None  # the SoftKill of the current run
        self._stop_signal = 0
        self.rng = np.random.default_rng(seed)  # for systems that need randomness; checkpointed
        # halo state between systems, as (table, field) pairs: FORWARD fields whose ghosts are
        # stale, REVERSE fields with ghost contributions not yet summed, REVERSE fields zeroed
        # in this force pass. Frozen sets: they key the memo of compiled system runs.
        self._stale: frozenset = frozenset()
        self._pending_reverse: frozenset = frozenset()
        self._zeroed: frozenset = frozenset()
        self._programs: dict = {}
        self._by_stage: dict = {}

    # ------------------------------------------------------------- building
    @property
    def skin(self) -> float:
        return self.domain.skin

    def add_table(self, table: Table) -> Table:
        if table.name in self.tables:
            raise InputError(f"world already has a table named '{table.name}'")
        self.tables[table.name] = table
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

    def add_system(self, system: System) -> System:
        if not isinstance(system, System):
            raise InputError(f"{system!r} is not an ecs_dem System")
        if self._is_setup:
            system.setup(self)
            self._validate(system)
        self.systems.append(system)
        self._by_stage = {}
        self._programs = {}
        return system

    def systems_in(self, stage: Stage) -> tuple[System, ...]:
        systems = self._by_stage.get(stage)
        if systems is None:
            systems = self._by_stage[stage] = tuple(s for s in self.systems if s.stage == stage)
        return systems

    def spatial_tables(self) -> list[Table]:
        return [t for t in self.tables.values()
                if t.has_field("position") and t.fields["position"].shape == (3,)]

    # ----------------------------------------------------------- validation
    def _validate(self, s: System) -> None:
        for label in ("reads", "reads_ghosts", "writes", "accumulates"):
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
                    if label == "accumulates" and halo is not Halo.REVERSE:
                        raise InputError(
                            f"system {s.name} accumulates into '{tname}.{f}', whose halo policy "
                            f"is {halo.value}: only REVERSE fields can be accumulated")

    # ------------------------------------------------------------ scheduling
    def _halo_ops_before(self, s: System, stale, pending, zeroed) -> list[tuple[str, str, str]]:
        """Halo operations needed before `s` runs; updates the three state sets."""
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
        for tname, names in s.accumulates.items():
            for f in names:
                if (tname, f) not in zeroed:
                    ops.append(("zero", tname, f))
                    zeroed.add((tname, f))
                pending.add((tname, f))
        return ops

    def _mark_written(self, s: System, stale) -> None:
        for tname, names in s.writes.items():
            t = self.tables[tname]
            for f in names:
                if t.fields[f].halo is Halo.FORWARD:
                    stale.add((tname, f))

    @staticmethod
    def _batches(ops: list[tuple[str, str, str]]) -> list[tuple[str, str, list[str]]]:
        """Group halo operations into one message per verb and table (fields batched)."""
        batches: dict[tuple[str, str], list[str]] = {}
        for verb, tname, f in ops:
            batches.setdefault((verb, tname), []).append(f)
        return [(verb, tname, names) for (verb, tname), names in batches.items()]

    def _apply_batches(self, batches: list[tuple[str, str, list[str]]]) -> None:
        for verb, tname, names in batches:
            t = self.tables[tname]
            t0 = _time.perf_counter()
            if verb == "forward":
                self.domain.forward(t, names)
            elif verb == "reverse":
                self.domain.reverse(t, names)
            else:
                for f in names:
                    t.with_ghosts(f)[...] = 0
            self.timers[f"halo:{verb}"] += _time.perf_counter() - t0

    def _apply_batch(self, ops: list[tuple[str, str, str]]) -> None:
        """Run halo operations, one message per verb and table (fields batched)."""
        self._apply_batches(self._batches(ops))

    def _compile(self, systems: tuple) -> tuple:
        """The halo operations before each of `systems`, from the current halo state.

        Returns ([(system, its timer name, its batched halo ops)], stale, pending, zeroed
        after the last system). The result depends only on the systems and the
        state at the start, so ``_run_systems`` memoises it: in the steady state a
        step replays a few compiled runs instead of re-deriving them.
        """
        stale, pending, zeroed = set(self._stale), set(self._pending_reverse), set(self._zeroed)
        runs = []
        for s in systems:
            ops = self._halo_ops_before(s, stale, pending, zeroed)
            self._mark_written(s, stale)
            runs.append((s, s.name, self._batches(ops)))
        return runs, frozenset(stale), frozenset(pending), frozenset(zeroed)

    def _run_systems(self, systems: tuple) -> None:
        """Run `systems` in order, each after the halo operations its declarations need."""
        key = (systems, self._stale, self._pending_reverse, self._zeroed)
        program = self._programs.get(key)
        if program is None:
            program = self._programs[key] = self._compile(systems)
        runs, self._stale, self._pending_reverse, self._zeroed = program
        timers = self.timers
        for s, name, batches in runs:
            if batches:
                self._apply_batches(batches)
            t0 = _time.perf_counter()
            s.run(self)
            timers[name] += _time.perf_counter() - t0

    def anchored_tables(self, table: Table) -> list[Table]:
        return [t for t in self.tables.values() if t.anchor and t.anchor[0] == table.name]

    def _rebuild_domain(self, initial: bool = False) -> None:
        t0 = _time.perf_counter()
        for t in self.spatial_tables():
            pending = sorted(p for p in self._pending_reverse if p[0] == t.name)
            if pending:
                self._apply_batch([("reverse",) + op for op in pending])
                self._pending_reverse = self._pending_reverse.difference(pending)
            self.domain.rebuild(t, self.anchored_tables(t), initial=initial)
            self._stale = frozenset(p for p in self._stale if p[0] != t.name)
        self.timers["domain:rebuild"] += _time.perf_counter() - t0
        self._run_systems(self.systems_in(Stage.NEIGHBORS))
        # tables anchored to particles (per-pair data) get ghost rows once they are rebuilt,
        # if some system reads their ghosts or accumulates into them
        needed = {t for s in self.systems for decl in (s.reads_ghosts, s.accumulates) for t in decl}
        for t in self.spatial_tables():
            for dep in self.anchored_tables(t):
                if dep.name in needed:
                    self.domain.rebuild_anchored_ghosts(t, dep)
                    self._stale = frozenset(p for p in self._stale if p[0] != dep.name)
        self.rebuilt_this_step = True

    def _forces(self) -> None:
        self._zeroed = frozenset()
        self._run_systems(self.systems_in(Stage.FORCES))

    # ------------------------------------------------------------------ run
    def prepare(self) -> None:
        """First half of set-up: system set-up, validation, ghost width (no data moves).

        ``setup`` continues from here for a fresh run; ``io.checkpoint.restart``
        continues from here by loading the saved state instead.
        """
        if self._is_prepared:
            return
        for s in self.systems:
            s.setup(self)
        for s in self.systems:
            self._validate(s)
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
        self.setup_phase = True
        try:
            self._forces()
        finally:
            self.setup_phase = False
        self._output()
        self._flush_reverse()

    def mark_restarted(self) -> None:
        """State was loaded from a checkpoint: ghosts and forces are current, nothing pending."""
        self._stale = frozenset()
        self._pending_reverse = frozenset()
        self._is_setup = True

    def _output(self) -> None:
        due = tuple(s for s in self.systems_in(Stage.OUTPUT)
                    if self.step % max(int(s.every), 1) == 0)
        if due:
            self._run_systems(due)

    def step_once(self) -> None:
        """Advance one time step (module docstring gives the order)."""
        if not self._is_setup:
            self.setup()
        self.step += 1
        self.rebuilt_this_step = False
        self._run_systems(self.systems_in(Stage.INTEGRATE_FIRST))
        t0 = _time.perf_counter()
        rebuild = any([self.domain.needs_rebuild(t) for t in self.spatial_tables()])
        stop = self._kill.signal or 0 if self._kill is not None else 0
        if self.comm.size > 1:  # one reduction answers both: rebuild anywhere? stop anywhere?
            agreed = self.comm.max(np.array([int(rebuild), stop], dtype=np.float64))
            rebuild, stop = bool(agreed[0]), int(agreed[1])
        self._stop_signal = stop
        self.timers["domain:check"] += _time.perf_counter() - t0
        if rebuild:
            self._rebuild_domain()
        self._forces()
        self._run_systems(self.systems_in(Stage.INTEGRATE_SECOND))
        self.time += self.dt
        self._output()
        self._flush_reverse()

    def _flush_reverse(self) -> None:
        """Reduce accumulators nobody has read yet, so owners hold complete values between steps."""
        if self._pending_reverse:
            self._apply_batch([("reverse",) + op for op in sorted(self._pending_reverse)])
            self._pending_reverse = frozenset()

    def run(self, steps: int) -> None:
        """Advance `steps` time steps (sets up first if needed).

        Soft kill: a first SIGINT or SIGTERM (on any rank) lets the current
        step finish; every rank then calls its systems' ``on_stop`` (the
        checkpoint writer saves the state) and ``run`` returns with
        ``stop_requested`` set to the signal number. A second signal ends the
        process at once.
        """
        self.setup()
        self.stop_requested = None
        self.run_end_step = self.step + int(steps)
        with SoftKill() as kill:
            self._kill = kill
            try:
                for _ in range(int(steps)):
                    self.step_once()
                    if self._stop_signal:  # agreed by all ranks during the step
                        self.stop_requested = self._stop_signal
                        for s in self.systems:
                            s.on_stop(self)
                        break
            finally:
                self._kill = None

    # ------------------------------------------------------------- reporting
    def describe_schedule(self) -> str:
        """The per-step plan: systems in order with the halo operations inserted."""
        lines = ["one time step:"]
        stale = {(t.name, f) for t in self.spatial_tables() for f, fd in t.fields.items()
                 if fd.halo is Halo.FORWARD}
        pending: set = set()
        for _pass in range(2):  # second pass shows the steady state
            lines = ["one time step (steady state):"] if _pass else lines
            zeroed: set = set()
            for stage in Stage:
                if stage == Stage.NEIGHBORS:
                    lines.append("  domain: if a row moved > skin/2: wrap, migrate, sort, rebuild ghosts "
                                 "(every forward field fresh), then:")
                for s in self.systems_in(stage):
                    if stage == Stage.NEIGHBORS:  # runs only right after a rebuild
                        lines.append(f"    {s.describe()}")
                        continue
                    for verb, tname, f in self._halo_ops_before(s, stale, pending, zeroed):
                        lines.append(f"    {verb} {tname}.{f}")
                    lines.append(f"  {s.describe()}" + (f" every {s.every}" if s.every != 1 else ""))
                    self._mark_written(s, stale)
            if pending:
                lines.append("  end of step: " + ", ".join(f"reverse {t}.{f}" for t, f in sorted(pending)))
                pending = set()
        return "\n".join(lines)

    def timing_report(self) -> str:
        total = sum(self.timers.values()) or 1.0
        rows = sorted(self.timers.items(), key=lambda kv: -kv[1])
        return "\n".join(f"  {k:32s} {v:9.3f} s {100 * v / total:5.1f} %" for k, v in rows)
