"""The run loop every driver shares: set-up or restart, run, soft kill, checkpoints, progress.

A driver adds ``RUN_DEFAULTS`` to its own defaults, opens its HDF5 file with
``open_output(path, cfg, comm)`` (continued, not overwritten, on a restart)
and calls ``run_world(world, cfg, total_steps)`` after building its world::

    checkpoint        path of the checkpoint file ("" : <output>.checkpoint.h5 or none)
    checkpoint_every  steps between checkpoints (0: only on SIGINT/SIGTERM and at the end)
    restart           checkpoint to continue from ("" : fresh start)
    progress          report steps/s and ETA on rank 0

``total_steps`` is the step the run ends at, so a restarted run stops at the
same step as an uninterrupted one.

A driver without checkpoints that runs in chunks (a preparation, a sweep of
short runs) calls ``run_or_stop(world, steps)`` for each chunk inside a
soft-kill block (``with SoftKill():`` around its main, or
``world.soft_kill()``): the first signal then ends the driver (``RunStopped``)
instead of only the chunk it arrived in.

A restart compares the configuration with the one saved in the checkpoint
(``restart_departures``): keys the driver names as its run's ``identity``
(its sample, its seed) must agree, else the run stops with an error before it
writes anything; any other key that differs is printed (the continuation
departs from the uninterrupted run, e.g. after lowering a time step).
"""
from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from .comm import launch_rank
from .errors import ConfigValueError, InputError, RunStopped
from .io.checkpoint import Checkpointer, checkpoint_step, read_config, restart, write_checkpoint
from .io.hdf5_output import Hdf5Output
from .io.paths import unwritable
from .progress import Progress
from .world import STATE_ERROR_EXIT_CODE

RUN_DEFAULTS = {
    "checkpoint": "",
    "checkpoint_every": 0,
    "restart": "",
    "progress": True,
}


def error_exit(exc: Exception) -> int:
    """Print a driver's error without a traceback and return its exit code: 2 for bad input
    (InputError), ``STATE_ERROR_EXIT_CODE`` (3) for a run that broke down (StateError, an
    OutputError among them) or results it could not write (an OSError, given with its file
    and reason). A driver catches the kinds it expects, and lets any other be a traceback.
    A ConfigValueError, which every rank raises alike, is printed by rank 0 only."""
    if isinstance(exc, OSError):
        text = f"cannot write {exc.filename or 'the results'}: {exc.strerror or exc}"
    else:
        text = str(exc)
    if not isinstance(exc, ConfigValueError) or launch_rank() == 0:  # every rank has that one
        print(f"error: {text}", file=sys.stderr)
    return 2 if isinstance(exc, InputError) else STATE_ERROR_EXIT_CODE


def open_output(path, cfg: dict, comm=None) -> Hdf5Output:
    """The driver's HDF5 output: a new file for a fresh run; with ``cfg["restart"]`` the
    existing file continued from the checkpoint's step (what was written up to it is kept,
    later records and snapshots are dropped, as the restarted run writes them again).
    A checkpoint path that names the output file is an InputError: a checkpoint replaces
    its file, and would replace the output with it."""
    if cfg["checkpoint"] and Path(cfg["checkpoint"]).resolve() == Path(path).resolve():
        raise InputError(f"checkpoint {cfg['checkpoint']} is the output file: writing the "
                         "checkpoint would replace the output; give the checkpoint another "
                         f"name, such as {Path(path).with_suffix('.checkpoint.h5')}")
    resume = checkpoint_step(cfg["restart"]) if cfg["restart"] else None
    return Hdf5Output(path, cfg, comm, resume_step=resume)


def restart_departures(saved: dict, cfg: dict) -> dict:
    """{key: (checkpoint's value, this run's value)} for every key of `cfg` but the run
    keys (``RUN_DEFAULTS``) whose value differs from the one saved in the checkpoint (as
    JSON, the way it was saved); empty when the checkpoint saved no configuration."""
    if not saved:
        return {}
    now = json.loads(json.dumps(cfg, default=str))
    missing = object()
    return {k: (saved.get(k, "(not saved)"), now[k]) for k in sorted(now)
            if k not in RUN_DEFAULTS and saved.get(k, missing) != now[k]}


def check_restart(path, cfg: dict, identity=(), log=print) -> None:
    """Stop with an InputError when the checkpoint at `path` was written by a run whose
    `identity` keys differ from `cfg`'s (another sample, seed, case); print the other keys
    that differ (module docstring). Reads the checkpoint's attributes only."""
    departures = restart_departures(read_config(path), cfg)
    wrong = {k: v for k, v in departures.items() if k in identity}
    if wrong:
        listed = "; ".join(f"{k} = {a!r} there, {b!r} here" for k, (a, b) in wrong.items())
        raise InputError(f"checkpoint {path} belongs to another run ({listed}): restart it "
                         "with its own settings, or start afresh without restart")
    if departures:
        log("  the restart departs from the checkpoint's configuration: " + ", ".join(
            f"{k} {a!r} -> {b!r}" for k, (a, b) in departures.items()))


def install_run_systems(world, cfg: dict) -> Checkpointer | None:
    """Add the checkpoint writer and the progress reporter (call before set-up)."""
    checkpointer = None
    if cfg["checkpoint"]:
        checkpointer = world.add_system(Checkpointer(cfg["checkpoint"], cfg["checkpoint_every"], cfg))
    if cfg["progress"]:
        world.add_system(Progress())
    return checkpointer


def run_or_stop(world, steps: int, where: str = "") -> None:
    """``world.run(steps)``; raises RunStopped when a soft kill stopped it.

    For drivers that run in chunks without a checkpoint to continue from (a preparation,
    a sweep of short runs): ``World.run`` returns on a signal with ``stop_requested`` set,
    and a loop that called it again would run on as if nothing had happened. `where`
    says what was stopped, for the message."""
    world.run(steps)
    if world.stop_requested:
        raise RunStopped(world.stop_requested, where)


def run_until(world, total_steps: int, until, check_every: int) -> None:
    """Run in chunks that end on multiples of `check_every` (so a restarted run asks `until`
    at the same steps) until `until(world)`, a stop, or `total_steps`."""
    world.horizon_step = int(total_steps)
    try:
        while world.step < total_steps and not world.stop_requested and not until(world):
            chunk = int(check_every) - world.step % int(check_every)
            world.run(min(chunk, int(total_steps) - world.step))
    finally:
        world.horizon_step = None


def run_world(world, cfg: dict, total_steps: int, until=None, check_every: int = 1000,
              identity=()) -> int:
    """Set up (or restart), run to `total_steps`; returns the process exit status (0 on soft kill).

    ``world.first_step`` is the step the run started from (0, or the checkpoint's). A
    restart keeps the checkpoint's time step unless the world was built with another one
    (a configuration that lowers dt after a stability error continues at the lower dt).
    `until` (optional): a function of the world, asked every `check_every` steps, that ends
    the run early when it returns True (an experiment that ends on a condition, e.g. a
    strain reached); it must give the same answer on every rank (read replicated state).
    It is asked at steps that are multiples of `check_every`, so a restarted run ends at
    the same step as an uninterrupted one. `identity`: the configuration keys a restart
    must share with the checkpoint (``check_restart``). A run with nothing to do (ending
    at or before its first step) and a checkpoint path that cannot be written are
    InputErrors, raised before the set-up writes anything.
    """
    start = checkpoint_step(cfg["restart"]) if cfg["restart"] else world.step
    if cfg["restart"]:
        check_restart(cfg["restart"], cfg, identity,
                      log=print if world.comm.rank == 0 else (lambda *a, **k: None))
    if not int(total_steps) > start:  # before set-up, which writes the first records
        raise InputError(
            f"nothing to run: the run ends at step {total_steps} and would start at step "
            f"{start}" + (" (the checkpoint's)" if cfg["restart"] else "") + ": give it a "
            "positive length (steps, duration), longer than the checkpoint's on a restart")
    problem = unwritable(cfg["checkpoint"], "checkpoint") if cfg["checkpoint"] else None
    if problem:
        raise InputError(problem)
    # one soft-kill block from the set-up to the last checkpoint: a signal there stops the
    # run after its next step instead of ending the process in the middle of the first
    # records of the output (a restart's file holds the earlier run's) or of a checkpoint
    with world.soft_kill():
        checkpointer = install_run_systems(world, cfg)
        if cfg["restart"]:
            configured_dt = world.dt
            restart(world, cfg["restart"])
            if world.comm.rank == 0:
                print(f"restarted from {cfg['restart']} at step {world.step} (t = {world.time:.6g} s)")
            if configured_dt != world.dt:  # the configuration changed what sets the time step
                if world.comm.rank == 0:
                    print(f"  time step {configured_dt:.4g} s from the configuration, not the "
                          f"checkpoint's {world.dt:.4g} s (the run departs from the uninterrupted one)")
                world.dt = configured_dt
        else:
            world.setup()
        world.first_step = world.step
        if until is None:
            world.run(max(int(total_steps) - world.step, 0))
        else:
            run_until(world, total_steps, until, check_every)
        if world.stop_requested:
            if world.comm.rank == 0:
                name = signal.Signals(world.stop_requested).name
                where = (f"checkpoint {cfg['checkpoint']}; continue with --set "
                         f"restart={cfg['checkpoint']}" if checkpointer
                         else "no checkpoint (set checkpoint=PATH to keep the state)")
                print(f"stopped by {name} at step {world.step}: {where}", flush=True)
            return 0
        if checkpointer is not None and checkpointer.last_written != world.step:
            with world.writing("the checkpoint"):
                write_checkpoint(world, cfg["checkpoint"], cfg)
    sys.stdout.flush()
    return 0
