"""Debug mode: a system that changes data it did not declare, or reads ghost rows it did
not declare, fails at once.

Declarations are the only way the scheduler knows what a system needs
(``ecs_dem.system``); a write it does not know of is a silent bug on many
ranks (a stale ghost, a missed reverse reduction). In debug mode
(``World(debug=True)``, or ``ECS_DEM_DEBUG=1`` in the environment; the test
suite runs in it) the World wraps every ``System.run``:

* before: a byte copy of every column (owned and ghost rows) of every table
  the system may not change; then the ghost rows of every field the system
  may not read there are poisoned: all but its ``reads_ghosts``, its writes
  and accumulations, a table it ``builds``, and the identity fields a ghost
  rebuild sets (``gid``, an anchored table's gid references and their rows).
  A float gets a quiet NaN whose payload carries the field's number, an
  integer its type's minimum plus the number (bools have no poison);
* run; then the system's outputs (the fields it writes or accumulates, the
  tables it builds) are searched for poison: a NaN with the payload, or an
  integer marker that was not there before (or the integer minimum, which is
  what a NaN converted to an integer gives). Poison there means the system
  read a ghost row it did not declare: :class:`DeclarationError` names the
  system, the field read (from the payload), where the poison went, and the
  fix (declare it in ``reads_ghosts``; for a field that is not FORWARD, make
  it so or read owned rows only). Whatever happens, the poison is then
  replaced by the original bits wherever it still is;
* after: any column that differs, or a table whose structure changed (rows
  added, removed, re-ordered, ghosts resized) that the system does not list
  in ``builds``, raises :class:`DeclarationError` naming the system, the
  field and the declaration to add.

Poison is found only where it propagates into an output table: a read whose
value only steers a branch (a comparison with NaN is false), or ends in a
Python attribute or a file, passes unseen, and an undeclared integer read
used as an index may end the process (numba does not check bounds) instead
of raising. Arithmetic on a NaN keeps its payload on x86 and ARM; an
operation that returns a default NaN instead hides the read too. (Running the
system twice, with and without poison, would see more, but a system's run has
side effects: history, files, collectives.)

Worlds created without ``debug`` take ``ECS_DEM_DEBUG`` from the environment,
else the module's ``DEFAULT``.

Which calls are checked: a misdeclaration is a property of a system's code path, so the
guard checks the calls where new paths are taken and samples the rest, which keeps long runs
in debug mode two to three times, not ten times, slower than plain ones. A system's call is
checked when it is one of the system's first :data:`FIRST_CALLS` calls in the World, when
any table's structure changed (its ``epoch``: rebuilds, migration, sorting, ghost resizes)
since the system's last checked call, and on every :data:`STRIDE`-th call (a prime, so that
systems acting every 10, 50 or 100 steps are met on their acting steps too). The other calls
run unguarded. ``ECS_DEM_DEBUG=all`` checks every call.

A system may change a field it ``writes`` (any row) or accumulates into
(``accumulates``: any row; ``accumulates_owned``:
owned rows only, its ghost rows are compared as well; ``assigns_owned`` is a
subset of it), and anything in a
table it ``builds``. Reads of owned rows are not checked. A SUM field the world summed over
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

#: every call of a system is checked up to this many calls in a World (module docstring)
FIRST_CALLS = 20
#: and after that every STRIDE-th call, and any call after a structural change of a table
STRIDE = 7


def every_call_from_environment() -> bool:
    """``ECS_DEM_DEBUG=all``: the guard checks every call of every system."""
    return os.environ.get("ECS_DEM_DEBUG", "").strip().lower() == "all"


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


# Poison of ghost rows (module docstring). A float field gets a quiet NaN whose payload
# carries a tag and the field's number (arithmetic on x86 and ARM keeps the payload of a
# NaN operand); an integer field its type's minimum plus the number (the minimum itself is
# what a NaN converted to an integer gives, so it stands for "some float poison").
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_NAN_TAG = {8: (0x7FF8DEAD00000000, 0x7FFFFFFF00000000, 0xFFFFFFFF),
            4: (0x7FED0000, 0x7FFF0000, 0xFFFF)}  # itemsize: (tag bits, tag mask, id mask)


def _poison_value(dtype: np.dtype, number: int):
    """The bits (as the unsigned type of the field's size) that poison a field, or None for
    a dtype without a poison (bool, complex, structured)."""
    if dtype.kind == "f" and dtype.itemsize in _NAN_TAG:
        tag, _, id_mask = _NAN_TAG[dtype.itemsize]
        return _UINT[dtype.itemsize](tag | (number & id_mask))
    if dtype.kind == "i" and dtype.itemsize in _UINT:
        low = int(np.iinfo(dtype).min)
        return np.array(low + min(number, 2 ** (8 * dtype.itemsize - 2)), dtype).view(
            _UINT[dtype.itemsize])
    if dtype.kind == "u" and dtype.itemsize in _UINT:
        return _UINT[dtype.itemsize](np.iinfo(dtype).max - min(number, 2 ** (8 * dtype.itemsize - 2)))
    return None


def _identity_fields(table) -> set[str]:
    """Fields whose ghost rows are always current: the gid, and an anchored table's gid
    references and the local rows resolved from them (set at every ghost rebuild)."""
    names = {"gid"} | set(table.references) | set(table.references.values())
    if table.anchor:
        names.add(table.anchor[1])
    return names


class _Poisoned:
    """One poisoned ghost block: its field, number, poison bits and original bits."""

    __slots__ = ("table", "field", "number", "bits", "original", "shape")

    def __init__(self, table, field: str, number: int, bits):
        self.table, self.field, self.number, self.bits = table, field, number, bits
        self.shape = (table.epoch, table.n_owned, table.n)
        block = self.block()
        self.original = block.copy()
        block[...] = bits

    def block(self) -> np.ndarray:
        column = self.table.with_ghosts(self.field)[self.shape[1]:self.shape[2]]
        return column.view(_UINT[column.dtype.itemsize])

    def restore(self) -> None:
        """Put the original bits back where the poison still is (a system's undeclared write
        into a ghost row stays, for ``after`` to report; a forward it caused put the
        owners' values, which equal the original)."""
        if (self.table.epoch, self.table.n_owned, self.table.n) != self.shape:
            return  # the rows changed: the guard reports it
        block = self.block()
        still = block == self.bits
        block[still] = self.original[still]


class _GhostReads:
    """The poisoned ghost blocks of one run of a system, and the check of its outputs."""

    def __init__(self, system, tables: dict, allowed: dict[str, set[str]], builds: set[str]):
        self.system = system
        self.blocks: list[_Poisoned] = []
        for tname, table in tables.items():
            if tname in builds or table.n_ghost == 0:
                continue
            exempt = (set(system.reads_ghosts.get(tname, ())) | allowed.get(tname, set())
                      | _identity_fields(table))
            for f, field in table.fields.items():
                if f in exempt:
                    continue
                bits = _poison_value(np.dtype(field.np_dtype), len(self.blocks) + 1)
                if bits is not None:
                    self.blocks.append(_Poisoned(table, f, len(self.blocks) + 1, bits))
        self.outputs = []
        if self.blocks:
            self.outputs = [(tname, f, False) for tname, names in allowed.items()
                            if tname in tables and tname not in builds for f in sorted(names)]
            self.outputs += [(tname, f, True) for tname in sorted(builds) if tname in tables
                             for f in tables[tname].fields]
            self._int_markers = self._integer_markers()
            self._before = {(t, f): self._found(tables[t], f)[1] for t, f, built in self.outputs
                            if not built}

    def _integer_markers(self) -> dict[int, tuple[int, ...]]:
        """Integer value -> numbers of the poisoned fields it stands for (0: some float
        field's NaN converted to an integer)."""
        markers: dict[int, tuple[int, ...]] = {int(np.iinfo(t).min): (0,)
                                               for t in (np.int8, np.int16, np.int32, np.int64)}
        for b in self.blocks:
            dtype = b.table.fields[b.field].np_dtype
            if np.dtype(dtype).kind in "iu":
                value = int(np.array(b.bits).view(dtype))
                markers[value] = markers.get(value, ()) + (b.number,)
        return markers

    def _found(self, table, f: str) -> tuple[set[int], int]:
        """(numbers of the poisoned fields whose poison is in column `f`, how many of its
        values carry poison)."""
        column = table.with_ghosts(f)
        kind, size = column.dtype.kind, column.dtype.itemsize
        if column.size == 0:
            return set(), 0
        if kind == "f" and size in _NAN_TAG:
            tag, mask, id_mask = _NAN_TAG[size]
            bits = np.ascontiguousarray(column).view(_UINT[size])
            hits = bits[(bits & _UINT[size](mask)) == _UINT[size](tag)]
            return {int(v) for v in np.unique(hits & _UINT[size](id_mask))}, int(hits.size)
        if kind in "iu":
            info = np.iinfo(column.dtype)
            values = [v for v in self._int_markers if info.min <= v <= info.max]
            if not values:
                return set(), 0
            hit = np.isin(column, np.array(values, dtype=column.dtype))
            found = {n for v in np.unique(column[hit]) for n in self._int_markers[int(v)]}
            return found, int(np.count_nonzero(hit))
        return set(), 0

    def check(self, tables: dict) -> None:
        """Fail if poison reached one of the system's outputs (module docstring)."""
        for tname, f, built in self.outputs:
            found, count = self._found(tables[tname], f)
            if not count or (not built and count <= self._before[(tname, f)]):
                continue
            name = self.system.name
            where = f"(a poisoned ghost value reached '{tname}.{f}')"
            read = [b for b in self.blocks if b.number in found]
            if not read or found == {0}:
                floats = [f"'{b.table.name}.{b.field}'" for b in self.blocks
                          if b.table.fields[b.field].np_dtype.kind == "f"] or ["?"]
                raise DeclarationError(
                    f"system {name} reads ghost rows of a field it does not declare {where}, "
                    f"one of {', '.join(floats)}: declare it in {name}.reads_ghosts")
            b = read[0]
            halo = b.table.fields[b.field].halo
            fix = (f"declare it in {name}.reads_ghosts" if halo.value == "forward" else
                   f"its ghost rows hold no current value ({halo.value}): make the field "
                   f"forward and declare it in {name}.reads_ghosts, or read owned rows only")
            raise DeclarationError(
                f"system {name} reads ghost rows of '{b.table.name}.{b.field}' without "
                f"declaring it {where}: {fix}")

    def restore(self) -> None:
        for b in self.blocks:
            b.restore()


class DeclarationGuard:
    """Snapshot before a system runs, compare after (module docstring)."""

    def __init__(self, tables: dict, every_call: bool | None = None):
        self.tables = tables
        self._summed: set[tuple[str, str]] = set()
        self.every_call = every_call_from_environment() if every_call is None else every_call
        self._calls: dict[int, int] = {}  # id(system) -> calls so far
        self._epochs: dict[int, tuple] = {}  # id(system) -> table epochs at its last check
        #: calls checked and calls run unguarded (for the record; tests read them)
        self.checked = self.skipped = 0

    def due(self, system) -> bool:
        """Whether this call of `system` is checked (module docstring: which calls)."""
        key = id(system)
        calls = self._calls.get(key, 0)
        self._calls[key] = calls + 1
        epochs = tuple(t.epoch for t in self.tables.values())
        if (self.every_call or calls < FIRST_CALLS or calls % STRIDE == 0
                or self._epochs.get(key) != epochs):
            self._epochs[key] = epochs
            return True
        return False

    def summed(self, keys) -> None:
        """The world summed these SUM fields over ranks during the running system."""
        self._summed.update(keys)

    def run(self, system, world) -> None:
        """Run `system` once under the guard: snapshot, poison of the ghost rows it may not
        read, run, check of its outputs for poison, restore, comparison; or just run it, on
        a call that is not checked."""
        if not self.due(system):
            self.skipped += 1
            system.run(world)
            return
        self.checked += 1
        saved = self.before(system)
        reads = _GhostReads(system, self.tables, _allowed(system), set(system.builds))
        try:
            system.run(world)
            if reads.blocks:
                reads.check(self.tables)
        finally:
            reads.restore()
        self.after(system, saved)

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
