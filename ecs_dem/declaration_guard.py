"""Debug mode: a system that changes data it did not declare fails at once.

Declarations are the only way the scheduler knows what a system needs
(``ecs_dem.system``); a write it does not know of is a silent bug on many
ranks (a stale ghost, a missed reverse reduction). In debug mode
(``World(debug=True)``, or ``ECS_DEM_DEBUG=1`` in the environment; the test
suite runs in it) the World wraps every ``System.run``:

* before: a byte copy of every column (owned and ghost rows) of every table
  the system may not change;
* after: any column that differs, or a table whose structure changed (rows
  added, removed, re-ordered, ghosts resized) that the system does not list
  in ``builds``, raises :class:`DeclarationError` naming the system, the
  field and the declaration to add.

Worlds created without ``debug`` take ``ECS_DEM_DEBUG`` from the environment,
else the module's ``DEFAULT``.

A system may change a field it ``writes`` (any row) or accumulates into
(``accumulates``: any row; ``accumulates_owned``:
owned rows only, its ghost rows are compared as well; ``assigns_owned`` is a
subset of it), and anything in a
table it ``builds``. Reads are not checked. A SUM field the world summed over
ranks while the system ran (``World.complete_sums``, called by a system whose
need depends on the data) is not compared. The copies make
a step several times slower: use it for tests and development, not
production runs.
"""
from __future__ import annotations

import os

import numpy as np

from .errors import StateError
from .system import ACCUMULATIONS


class DeclarationError(StateError):
    """A system changed a field or table it did not declare."""


#: debug mode of Worlds created without an explicit ``debug``, when ``ECS_DEM_DEBUG`` is unset
#: (the test suite sets it for its own process; drivers it starts run without)
DEFAULT = False


def debug_from_environment() -> bool:
    value = os.environ.get("ECS_DEM_DEBUG", "").strip().lower()
    if not value:
        return DEFAULT
    return value not in ("0", "false", "no")


def _allowed(system) -> dict[str, set[str]]:
    allowed: dict[str, set[str]] = {}
    for decl in [system.writes] + [getattr(system, label) for label in ACCUMULATIONS]:
        for tname, names in decl.items():
            allowed.setdefault(tname, set()).update(names)
    return allowed


class DeclarationGuard:
    """Snapshot before a system runs, compare after (module docstring)."""

    def __init__(self, tables: dict):
        self.tables = tables
        self._summed: set[tuple[str, str]] = set()

    def summed(self, keys) -> None:
        """The world summed these SUM fields over ranks during the running system."""
        self._summed.update(keys)

    def before(self, system):
        self._summed.clear()
        allowed = _allowed(system)
        builds = set(getattr(system, "builds", ()))
        saved = {}
        for tname, table in self.tables.items():
            if tname in builds:
                continue
            free = allowed.get(tname, set())
            columns = {f: table.with_ghosts(f).view(np.uint8).copy()
                       for f in table.fields if f not in free}
            owned_only = set(system.accumulates_owned.get(tname, ())) - {
                f for label in ("writes", "accumulates")
                for f in getattr(system, label).get(tname, ())}
            ghosts = {f: table.with_ghosts(f)[table.n_owned:].view(np.uint8).copy()
                      for f in owned_only}
            saved[tname] = (table.epoch, table.n_owned, table.n_ghost, columns, ghosts)
        return saved

    def after(self, system, saved) -> None:
        for tname, (epoch, n_owned, n_ghost, columns, ghosts) in saved.items():
            table = self.tables[tname]
            if (table.epoch, table.n_owned, table.n_ghost) != (epoch, n_owned, n_ghost):
                raise DeclarationError(
                    f"system {system.name} changed the rows of table '{tname}' (added, removed, "
                    f"re-ordered or ghosts resized) without declaring it: add '{tname}' to "
                    f"{system.name}.builds")
            for f, before in columns.items():
                if (tname, f) in self._summed:
                    continue
                now = table.with_ghosts(f).view(np.uint8)
                if not np.array_equal(now, before):
                    kind = "accumulates" if table.fields[f].halo.value == "reverse" else "writes"
                    raise DeclarationError(
                        f"system {system.name} changed '{tname}.{f}' without declaring it: add "
                        f"it to {system.name}.{kind}")
            for f, before in ghosts.items():
                if not np.array_equal(table.with_ghosts(f)[n_owned:].view(np.uint8), before):
                    raise DeclarationError(
                        f"system {system.name} added into ghost rows of '{tname}.{f}', which it "
                        "declares accumulates_owned (owned rows only): add a periodic image's "
                        "share to its own row (Domain.home_rows), or declare the field "
                        "accumulates")


__all__ = ["DeclarationGuard", "DeclarationError", "debug_from_environment"]
