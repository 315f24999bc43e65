"""Exceptions that name the problem and the fix.

Every error raised for bad user input derives from :class:`InputError`, so a
driver can catch one type and print the message without a traceback.
"""
import os
import re
import signal


class InputError(ValueError):
    """Bad input: a config key, an initial state, a parameter out of range."""


class ConfigError(InputError):
    """An unknown or malformed configuration key, or a configuration file that cannot be read."""


class ConfigValueError(ConfigError):
    """A key or value of the configuration itself (unknown key, wrong type, out of range).

    Every rank reads the same arguments and file, so every rank finds it alike: on many
    ranks only rank 0 prints it (``runner.error_exit``), not one copy per rank. A file that
    cannot be read stays a plain ConfigError, printed by every rank: a file present on one
    node may be missing on another."""


class UnstableTimeStepError(InputError):
    """The time step exceeds the stability limit of the contact model."""


class StateError(RuntimeError):
    """The simulation state became invalid during a run (NaN, lost particle)."""


class OutputError(StateError):
    """An output or checkpoint file could not be written during a run (no space left on the
    device, a quota, a file system gone): the run cannot go on, and ends as a StateError
    does (exit code 3 on every rank); the files written before stay as they were."""

    @classmethod
    def of(cls, exc: OSError, step: int, what: str) -> "OutputError":
        """The error for `exc`, raised while writing `what` at `step`: what, where, why."""
        reason = (exc.strerror if exc.strerror and "\n" not in exc.strerror
                  else os.strerror(exc.errno) if exc.errno else str(exc).splitlines()[0])
        name = exc.filename
        if name is None:  # h5py names the file inside its message
            found = re.search(r"filename = '([^']*)'", str(exc))
            name = found.group(1) if found else None
        return cls(f"step {step}: {what}{f' ({name})' if name else ''} could not be written: "
                   f"{reason}. Free space or choose another path; the files written before stay "
                   "as they were (continue from the last checkpoint with restart=)")


class RunStopped(Exception):
    """A soft kill (SIGINT or SIGTERM) stopped a run that its driver cannot continue.

    ``runner.run_or_stop`` raises it, so that a driver running in chunks ends on the
    first signal instead of going on with the next chunk; ``signal`` is its number.
    Not an error of the input or the state: a driver prints the message and exits
    with 128 + ``signal``, the shell's code for a process ended by that signal."""

    def __init__(self, signum: int, where: str = ""):
        self.signal = int(signum)
        name = signal.Signals(self.signal).name
        super().__init__(f"stopped by {name}" + (f" {where}" if where else ""))
