"""The frame every driver in ``run/`` shares: configuration, communicator, output, run, exit.

A driver is its ``DEFAULTS`` (every key with its default), its ``RANGES`` (the
values a run can use), a ``build_world(cfg, ...)``, and what it measures; its
``main`` is one call into the frame::

    def run(job):                       # the driver's work, on every rank
        with job.open_output(job.cfg["output"]) as output:
            world = build_world(job.cfg, output, job.comm)
            status = job.run_world(world, steps, identity=IDENTITY)
            if world.stop_requested:
                return status
            ke = kinetic_energy(world)  # collective: every rank calls it
        job.print(f"done in {job.elapsed:.1f} s, kinetic energy {ke:.3g} J")

    def main(argv=None) -> int:
        return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, run=run,
                          description=__doc__.splitlines()[0])

``run_driver`` reads the configuration (the defaults, a ``--config`` TOML
file, ``--set key=value`` overrides, ``--show-config``), checks the ranges and
the driver's own ``check(cfg)``, starts the communicator, calls ``run(job)``
and turns the errors a driver expects into a message and an exit code
(``runner.error_exit``): 2 for bad input, 3 for a run that broke down or
results that could not be written; a value out of range is printed once, by
rank 0. A driver that runs in chunks without a checkpoint (a preparation, a
sweep of short runs) passes ``soft_kill=True``: the first SIGINT or SIGTERM
then ends it with exit code 128 + the signal's number (``runner.run_or_stop``)
and the message its ``job.on_stop`` gives.

Every rank runs the same driver code. ``job.print`` and ``job.write`` act on
rank 0 only and are not collective; the measures (``ecs_dem.observe``,
``systems.diagnostics.kinetic_energy``) are collective, so a driver computes
them on every rank and then prints them.
"""
from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Callable

from .comm import default_comm
from .config import check_ranges, load_config
from .errors import InputError, RunStopped, StateError
from .io.paths import unwritable
from .runner import error_exit, open_output, run_world
from .soft_kill import SoftKill


class ResultsNotWritten(Exception):
    """``Job.write`` could not write its files (an OSError: no room, no permission): the
    frame reports the file and the reason and exits with 3 (``runner.error_exit``)."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


def write_csv(path, header, rows, float_format: str | None = None) -> Path:
    """A CSV file: the `header` row, then `rows`; floats formatted with `float_format`
    (e.g. ".6g") when given, else as Python writes them (every digit). Not collective: on
    several ranks call it through ``Job.write_csv`` (rank 0 writes)."""
    path = Path(path)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            if float_format is not None:
                row = [format(v, float_format) if isinstance(v, float) else v for v in row]
            w.writerow(row)
    return path


def on_rank_0(comm, action: Callable, *args, wait: bool = False, **kwargs):
    """Rank 0 of `comm` (a communicator or a World) calls ``action(*args, **kwargs)`` and
    gets its result; the other ranks skip it (it must not be collective) and get None. With
    `wait`, every rank then waits until rank 0 is done (a barrier: every rank calls this)."""
    comm = getattr(comm, "comm", comm)
    result = action(*args, **kwargs) if comm.rank == 0 else None
    if wait:
        comm.barrier()
    return result


class Job:
    """One run of a driver: its configuration ``cfg`` and communicator ``comm``, printing
    and writing on rank 0, its HDF5 output, the timed run.

    ``on_stop``: a function giving the note printed after "stopped by SIGTERM ..." when a
    soft kill ends a driver that runs in chunks (``soft_kill=True``), e.g. what was not
    written. ``on_breakdown``: a function the frame calls on every rank after it printed
    the error of a run that broke down (a StateError), to keep what can be kept."""

    def __init__(self, cfg: dict, comm):
        self.cfg = cfg
        self.comm = comm
        self.elapsed = 0.0
        self.on_stop: Callable[[], str] | None = None
        self.on_breakdown: Callable[[], None] | None = None

    @property
    def ranks(self) -> int:
        """How many ranks run the job."""
        return self.comm.size

    def print(self, *args, **kwargs) -> None:
        """``print`` on rank 0 (flushed at once), nothing on the other ranks."""
        if self.comm.rank == 0:
            print(*args, **{"flush": True, **kwargs})

    def write(self, write: Callable, *args, **kwargs):
        """Rank 0 calls ``write(*args, **kwargs)``, a function that writes files (it must not
        be collective: the other ranks skip it), and gets its result; the other ranks get
        None. An OSError it raises ends the driver with "error: cannot write FILE: reason"
        and exit code 3 on rank 0 (``ResultsNotWritten``)."""
        try:
            return on_rank_0(self.comm, write, *args, **kwargs)
        except OSError as exc:
            raise ResultsNotWritten(exc) from exc

    def write_csv(self, path, header, rows, float_format: str | None = None):
        """``write_csv`` on rank 0 (``write``); returns the path there, None elsewhere."""
        return self.write(write_csv, path, header, rows, float_format)

    def open_output(self, path, checkpoint_beside: bool = False):
        """The driver's HDF5 output at `path` (``runner.open_output``: continued on a
        restart). ``checkpoint_beside``: an empty ``checkpoint`` key becomes the output's
        name with ``.checkpoint.h5`` (two runs never share one); a path that cannot be a
        file is then refused first, before that name is made from it."""
        path = Path(path)
        if checkpoint_beside:
            problem = unwritable(path)
            if problem:
                raise InputError(problem)
            if not self.cfg["checkpoint"]:
                self.cfg["checkpoint"] = str(path.with_suffix(".checkpoint.h5"))
        return open_output(path, self.cfg, self.comm)

    def run_world(self, world, total_steps: int, **kwargs) -> int:
        """``runner.run_world(world, cfg, total_steps, **kwargs)``, timed: ``elapsed`` is
        its wall time (s). Returns its exit status."""
        t0 = time.perf_counter()
        try:
            return run_world(world, self.cfg, total_steps, **kwargs)
        finally:
            self.elapsed = time.perf_counter() - t0


def run_driver(argv, *, defaults, run: Callable[[Job], int | None], ranges=(),
               check: Callable[[dict], None] | None = None, description: str = "",
               soft_kill: bool = False, prog: str | None = None) -> int:
    """Run a driver; returns its exit status (module docstring).

    `defaults`: the configuration's defaults, or a function of the arguments returning
    (defaults, the arguments left for ``load_config``) when an argument chooses them (a
    case, a model). `ranges`: ``check_ranges``'s rows; `check(cfg)`: the driver's other
    checks of the configuration (relations between keys, counts that must fit in memory),
    raising an InputError. `run(job)` does the driver's work and returns its exit status
    (None: 0). `soft_kill`: a SoftKill block around it all, for drivers that stop on a
    signal (``runner.run_or_stop``). `prog`: the command ``--help`` shows (default: the
    script's file name; a driver run with ``python -m`` names its module)."""
    if soft_kill:
        with SoftKill():  # one block: a signal between two runs or two worlds is kept too
            return _run_driver(argv, defaults, run, ranges, check, description, prog)
    return _run_driver(argv, defaults, run, ranges, check, description, prog)


def _run_driver(argv, defaults, run, ranges, check, description, prog) -> int:
    job = None
    try:
        if callable(defaults):
            defaults, argv = defaults(argv)
        cfg = load_config(defaults, argv, description=description, prog=prog)
        check_ranges(cfg, ranges)
        if check is not None:
            check(cfg)
        job = Job(cfg, default_comm())
        status = run(job)
    except RunStopped as exc:  # a driver without a checkpoint: nothing to continue from
        if job is None:  # raised before the driver's run began: not from run_or_stop
            raise
        note = job.on_stop() if job.on_stop is not None else ""
        job.print(f"{exc}: {note}" if note else str(exc))
        return 128 + exc.signal
    except ResultsNotWritten as exc:
        return error_exit(exc.error)
    except (InputError, StateError) as exc:  # bad input; a breakdown (what was written stays)
        status = error_exit(exc)
        if isinstance(exc, StateError) and job is not None and job.on_breakdown is not None:
            job.on_breakdown()
        return status
    return 0 if status is None else int(status)


__all__ = ["Job", "ResultsNotWritten", "on_rank_0", "run_driver", "write_csv"]
