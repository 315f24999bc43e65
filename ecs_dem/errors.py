"""Exceptions that name the problem and the fix.

Every error raised for bad user input derives from :class:`InputError`, so a
driver can catch one type and print the message without a traceback.
"""


class InputError(ValueError):
    """Bad input: a config key, an initial state, a parameter out of range."""


class ConfigError(InputError):
    """An unknown or malformed configuration key."""


class UnstableTimeStepError(InputError):
    """The time step exceeds the stability limit of the contact model."""


class StateError(RuntimeError):
    """The simulation state became invalid during a run (NaN, lost particle)."""
