"""The World: the registry of tables and systems, the domain, time, and the run loop.

One time step (``World.step_once``)::

    step += 1
    INTEGRATE_FIRST systems            half kick + drift (owned rows)
    time += dt                         (force systems see the time of the positions)
    domain rebuild, when due           (``ecs_dem.rebuild``: migrate, sort, ghost rows,
                                        row references, NEIGHBORS systems)
    FORCES systems whose ``every`` divides the step
    INTEGRATE_SECOND systems
    OUTPUT systems whose ``every`` divides the step
    end of step: reverse accumulators nobody has read yet

Between systems go the halo operations (forward, reverse, zero) that the planner
(``ecs_dem.planner``, a pure function of the declarations) puts there and the
scheduler (``ecs_dem.scheduler``) executes; ``describe_schedule`` prints them.

SUM fields (``Halo.SUM``: a table every rank holds whole, such as the walls,
into which each rank accumulates its share) are summed over ranks (one
allreduce per table) only when something reads them: before a system that
declares them in ``reads`` or ``writes``, at the end of ``run``, ``setup`` and
``step_once``, before a checkpoint, and on ``complete_sums`` (a system whose need
depends on replicated data, such as a servo wall, calls it).

``World.setup`` (run once, implicitly by the first ``run``) calls every
``System.setup`` (a system may add others there), validates the declarations,
sets the ghost width to the largest ``interaction_range`` plus the skin,
rebuilds the domain, evaluates forces once with ``setup_phase = True``
(contact history is not advanced, as in LAMMPS's setup) and runs the OUTPUT
systems for step 0.

Force iterations (``add_force_iteration``): a model whose state is the fixed point of
its force systems (MC-DEM's lagged correction) may ask for extra force passes over those
systems before each step's force pass, at the step's positions, with
``iteration_pass = True``: like set-up, they do not advance contact history; the step's
own pass then starts from the state they leave. Each pass inserts its halo operations
like any other.
"""
from __future__ import annotations

import contextlib
from collections import defaultdict
import time as _time

import numpy as np

from . import planner
from .comm import default_comm
from .declaration_guard import DeclarationGuard, debug_from_environment
from .domain import Box, Domain
from .errors import InputError, OutputError, StateError
from .rebuild import Rebuilder
from .scheduler import Scheduler
from .soft_kill import SoftKill
from .system import Stage, System, declare_and_freeze, set_up
from .table import Table

#: exit code of a multi-rank run ended by a StateError (World.run); drivers use it too
STATE_ERROR_EXIT_CODE = 3


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
        #: True during the extra force passes of add_force_iteration (history not advanced)
        self.iteration_pass = False
        self._iterations: list[tuple[tuple[System, ...], int]] = []
        self.rebuilt_this_step = False
        self.timers: dict[str, float] = defaultdict(float)
        self.stop_requested = None  # signal number that stopped the last run (soft kill)
        self.run_end_step = None  # last step of the current run (progress, ETA)
        # last step a driver's chunked run may reach (runner.run_until): progress and its ETA
        # count to it, not to each chunk's end
        self.horizon_step = None
        self.rng = np.random.default_rng(seed)  # for systems that need randomness; checkpointed
        self.debug = debug_from_environment() if debug is None else bool(debug)
        #: the declaration guard of debug mode (``ecs_dem.declaration_guard``), else None
        self.guard = DeclarationGuard(self.tables) if self.debug else None
        #: runs systems after the halo operations of their plans (``ecs_dem.scheduler``)
        self.scheduler = Scheduler(self)
        #: decides and performs domain rebuilds (``ecs_dem.rebuild``)
        self.rebuilder = Rebuilder(self)
        self._is_setup = False
        self._is_prepared = False
        self._kill = None  # the SoftKill of the current run
        self._stop_signal = 0
        self._spatial = (None, ())  # (structure key, spatial tables): asked every step
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
            declare_and_freeze(system, self,
                               lambda s: planner.validate(s, self.scheduler.tables()))
        at = len(self.systems)
        if before is not None:
            match = (lambda s: isinstance(s, before)) if isinstance(before, type) else (
                lambda s: s is before)
            at = next((k for k, s in enumerate(self.systems) if match(s)), at)
        self.systems.insert(at, system)
        self.scheduler.forget()
        self.rebuilder.forget()
        return system

    def add_force_iteration(self, systems, passes: int) -> None:
        """Before each step's force pass, run `passes` extra force passes over `systems`
        (FORCES systems of this world, run in the world's order) with ``iteration_pass``
        set (module docstring). Calling it again for the same systems replaces the count."""
        systems = tuple(systems)
        if not (isinstance(passes, (int, np.integer)) and passes >= 0):
            raise InputError(f"force iteration: passes must be an integer >= 0 (got {passes!r})")
        for s in systems:
            if s not in self.systems or s.stage is not Stage.FORCES:
                raise InputError(f"force iteration: {s.name} is not a FORCES system of this "
                                 "world")
        self._iterations = [(k, n) for k, n in self._iterations
                            if set(k) != set(systems)]
        if passes:
            self._iterations.append((systems, int(passes)))

    def _iterate_forces(self) -> None:
        """The extra force passes of add_force_iteration."""
        attributes = self.__dict__
        attributes["iteration_pass"] = True
        try:
            for systems, passes in self._iterations:
                ordered = tuple(s for s in self.systems_in(Stage.FORCES) if s in systems)
                for _ in range(passes):
                    self.scheduler.forces(ordered)
        finally:
            attributes["iteration_pass"] = False

    def has_system(self, kind: type) -> bool:
        """Whether a system of this class (or a subclass) is in the world."""
        return any(isinstance(s, kind) for s in self.systems)

    def systems_in(self, stage: Stage) -> tuple[System, ...]:
        """The systems of `stage`, in order."""
        return self.scheduler.stage_systems(stage)[0]

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
        self.rebuilder.requested = True

    def incident_rows(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """For every row of the anchor table (owned and ghost), the rows of table `name` that
        refer to it: CSR ``(start, items)`` (``Rebuilder.incident_rows``). The pairs of
        particle row r are ``items[start[r]:start[r + 1]]``, owned and ghost pair rows alike."""
        return self.rebuilder.incident_rows(name)

    # ------------------------------------------------------------------ run
    def _output(self) -> None:
        due = self.scheduler.due(Stage.OUTPUT)
        if due:
            with self.writing():
                self.scheduler.run(due)

    @contextlib.contextmanager
    def writing(self, what: str = "an output file"):
        """Turn an OSError of the block (a full disk, a quota, a file system gone) into an
        :class:`OutputError` that says what and where; the OUTPUT stage and ``on_stop`` run
        in it, and a driver's last checkpoint should too."""
        try:
            yield
        except OSError as exc:
            raise OutputError.of(exc, self.step, what) from exc

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
        tables = self.scheduler.tables()
        for s in self.systems:  # declarations final, validated, frozen (ecs_dem.system)
            declare_and_freeze(s, self, lambda s: planner.validate(s, tables))
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
        self.rebuild_domain(initial=True)
        self.rebuilder.compile_row_kernels()
        self.setup_phase = True
        try:
            self.scheduler.forces(self.scheduler.due(Stage.FORCES))
        finally:
            self.setup_phase = False
        self._output()
        self.scheduler.flush_reverse()
        self.complete_sums()

    def mark_restarted(self) -> None:
        """State was loaded from a checkpoint: ghosts and forces are current, nothing pending;
        row references are resolved anew (``Rebuilder.restarted``)."""
        self.rebuilder.restarted()
        self.scheduler.reset()
        self._is_setup = True
        self.rebuilder.compile_row_kernels()

    def rebuild_domain(self, initial: bool = False) -> None:
        """Rebuild the domain now (``ecs_dem.rebuild``): migrate rows to their ranks, sort,
        build ghost rows and row references, run the NEIGHBORS systems. Collective.

        `initial`: every rank holds rows it may not own (the full initial state at set-up,
        or the rows a checkpoint written on another rank count gave it: ``io.checkpoint``);
        each keeps the rows its subdomain owns. Forces are not evaluated.
        """
        self.rebuilder.rebuild(initial=initial)

    def step_once(self) -> None:
        """Advance one time step (module docstring gives the order); SUM fields are summed."""
        self.rebuilder.check_static = True  # rows may have been moved by hand since
        self._advance()
        self.complete_sums()

    def _advance(self) -> None:
        """One time step of ``run``'s loop: SUM fields may hold this rank's share after it."""
        if not self._is_setup:
            self.setup()
        # the hot path's attributes are set through __dict__: they exist, and the frozen
        # World's __setattr__ costs about 0.4 us a call
        attributes = self.__dict__
        attributes["step"] += 1
        if self.rebuilt_this_step:
            self.rebuilt_this_step = False
        scheduler = self.scheduler
        scheduler.run(self.systems_in(Stage.INTEGRATE_FIRST))
        attributes["time"] += self.dt  # the positions are now at the new time
        t0 = _time.perf_counter()
        rebuild = self.rebuilder.due()
        stop = self._kill.signal or 0 if self._kill is not None else 0
        if self.comm.size > 1:  # one reduction answers both: rebuild anywhere? stop anywhere?
            rebuild, stop = self.comm.max_of_two(float(rebuild), float(stop))
            rebuild, stop = bool(rebuild), int(stop)
        if stop != self._stop_signal:
            self._stop_signal = stop
        self.timers["domain:check"] += _time.perf_counter() - t0
        if rebuild:
            self.rebuilder.rebuild()
        if self._iterations:
            self._iterate_forces()
        scheduler.forces(self.scheduler.due(Stage.FORCES))
        scheduler.run(self.systems_in(Stage.INTEGRATE_SECOND))
        self._output()
        scheduler.flush_reverse()

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
            self.rebuilder.check_static = True  # rows may have been moved by hand since
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

    # ---------------------------------------------------------- SUM fields
    def is_summed(self, table: str, field: str) -> bool:
        """Whether the SUM field holds the sum over ranks now (always on one rank)."""
        return (table, field) not in self.scheduler.unsummed

    def complete_sums(self, fields=None) -> None:
        """Sum the shares of SUM fields over ranks now (all of them, or those of `fields`, an
        iterable of (table, field)); a field already summed is left alone. Collective: every
        rank calls it at the same point of the same step (a condition on replicated data)."""
        if self.scheduler.unsummed:
            self.scheduler.complete_sums(fields)

    # ------------------------------------------------------------- reporting
    def describe_schedule(self) -> str:
        """The per-step plan: systems in order with the halo operations the planner inserts.

        The plans the scheduler runs (``ecs_dem.planner.plan_step``), from an empty halo
        state: the first step, then the steady state (a step without a rebuild, every
        OUTPUT system due). NEIGHBORS systems run only after a rebuild.
        """
        first, steady = self.scheduler.step_plans()
        return "\n".join(planner.format_step(first, "one time step:")
                         + planner.format_step(steady, "one time step (steady state):"))

    def timing_report(self) -> str:
        total = sum(self.timers.values()) or 1.0
        rows = sorted(self.timers.items(), key=lambda kv: -kv[1])
        return "\n".join(f"  {k:32s} {v:9.3f} s {100 * v / total:5.1f} %" for k, v in rows)
