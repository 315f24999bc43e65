"""The system contract: declared data use plus one ``run``.

A system is a small class. Its class attributes declare which table fields it
touches; the World validates them before the first step and uses them to
insert halo operations (forward before a ghost read of a changed field,
reverse before an owner reads an accumulated field, zeroing before the first
accumulation of a step). Keep declarations honest: they are the only way the
engine knows what a system needs, on one rank and on many.

Declarations (all map a table name to a tuple of field names)::

    reads          fields read on owned rows
    reads_ghosts   fields read on owned *and* ghost rows (FORWARD fields only)
    writes         fields assigned on owned rows
    accumulates    REVERSE fields added into, on owned and ghost rows
    accumulates_owned
                   REVERSE fields added into owned rows only: a contribution meant for a
                   periodic image of an own row goes to that row directly
                   (Domain.home_rows). Zeroed before the first accumulation, never
                   reversed
    assigns_owned  fields of accumulates_owned that the system may set instead of add
                   to (a body force): where it is the first in its FORCES pass to
                   contribute to the field and no system of the pass adds into its ghost
                   rows, the world skips the field's zeroing and sets the system's
                   assigning (frozenset of (table, field)) to the fields whose every
                   owned row its run must set; elsewhere the field is zeroed as usual
                   and assigning is empty. The world sets assigning when it
                   compiles a schedule, before the system's first run with it

and ``builds``, a tuple of table names whose rows the system replaces
(the neighbour search builds ``pairs``). In debug mode
(``ecs_dem.declaration_guard``) a system that changes anything else fails.

``reports_displacement``, a tuple of spatial tables whose rebuild check an
INTEGRATE_FIRST system computes as it moves their rows: its ``run`` passes
``world.domain.report_displacement(table, worst_sq, bad)`` the largest squared
displacement of an owned row since ``world.domain.displacement_reference(table)``
and the first non-finite row (``halo_kernels.fold_displacement`` per row). When
it is the last INTEGRATE_FIRST system that writes the table's ``position``, the
world's rebuild check takes the report instead of a pass over the rows.

Declarations are set as class attributes, in ``__init__``, or, where they depend
on the world (the fields a law adds, the tables present), in ``declare(world)``,
which the world calls after every system's ``setup`` and before it validates and
plans. Then they freeze: each becomes a read-only mapping of tuples, and
changing one (an item, or the attribute) raises :class:`DeclarationFrozen`, as
does a ``setup`` that changes them (the plan would silently go stale).
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from .errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from .world import World


class Stage(enum.IntEnum):
    """Fixed phases of one time step, in order (DESIGN.md, One time step)."""

    INTEGRATE_FIRST = 1   # half kick + drift of owned rows
    NEIGHBORS = 2         # runs only when the domain rebuilt ghosts (and at set-up)
    FORCES = 3            # body forces, contacts, walls, bonded terms
    INTEGRATE_SECOND = 4  # second half kick
    OUTPUT = 5            # diagnostics and writers, at their own intervals


Declaration = dict[str, tuple[str, ...]]
#: the declaration attributes of a system, in the order ``describe`` prints them
DECLARATIONS = ("reads", "reads_ghosts", "writes", "accumulates", "accumulates_owned",
                "assigns_owned")
#: the declarations of REVERSE fields a system adds into
ACCUMULATIONS = ("accumulates", "accumulates_owned")
#: the attributes that freeze with the declarations
FROZEN = frozenset(DECLARATIONS + ("builds", "reports_displacement"))


class DeclarationFrozen(InputError):
    """A system's declarations were changed after the world planned with them."""


def _frozen_error(system_name: str, what: str) -> DeclarationFrozen:
    return DeclarationFrozen(
        f"{system_name}.{what}: a system's declarations are frozen once the world is set up "
        "(its halo plan is made from them); set them as class attributes, in __init__, or in "
        "the system's declare(world), which runs after every setup and before planning")


class FrozenDeclaration(Mapping):
    """A declaration after set-up: table name -> tuple of field names, read-only."""

    __slots__ = ("_items", "_where")

    def __init__(self, declaration, where: tuple[str, str]):
        self._items = {t: tuple(names) for t, names in declaration.items()}
        self._where = where  # (system name, declaration)

    def __getitem__(self, table):
        return self._items[table]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __repr__(self):
        return f"FrozenDeclaration({self._items!r})"

    def _refuse(self, *args, **kwargs):
        raise _frozen_error(*self._where)

    __setitem__ = __delitem__ = setdefault = update = pop = popitem = clear = _refuse


def declarations_of(system) -> tuple:
    """The system's declarations as plain data, to compare (``setup`` may not change them)."""
    return tuple((label, {t: tuple(f) for t, f in getattr(system, label).items()})
                 if label in DECLARATIONS else (label, tuple(getattr(system, label)))
                 for label in sorted(FROZEN))


def set_up(system, world) -> None:
    """Run ``system.setup(world)``; it may add fields, tables and systems, not declarations."""
    before = declarations_of(system)
    system.setup(world)
    after = declarations_of(system)
    if after != before:
        changed = [a[0] for a, b in zip(after, before) if a != b]
        raise _frozen_error(system.name, f"setup changed {', '.join(changed)}")


def declare_and_freeze(system, world, validate) -> None:
    """``system.declare(world)``, then ``validate(system)``, then its declarations freeze."""
    system.declare(world)
    validate(system)
    for label in DECLARATIONS:
        object.__setattr__(system, label, FrozenDeclaration(getattr(system, label),
                                                            (system.name, label)))
    for label in ("builds", "reports_displacement"):
        object.__setattr__(system, label, tuple(getattr(system, label)))
    object.__setattr__(system, "_declarations_frozen", True)


class System:
    """Base class of every system. Subclasses set ``stage`` and declarations."""

    stage: ClassVar[Stage] = Stage.FORCES
    reads: ClassVar[Declaration] = {}
    reads_ghosts: ClassVar[Declaration] = {}
    writes: ClassVar[Declaration] = {}
    accumulates: ClassVar[Declaration] = {}
    accumulates_owned: ClassVar[Declaration] = {}
    assigns_owned: ClassVar[Declaration] = {}
    #: the fields of ``assigns_owned`` this system sets on its runs (module docstring)
    assigning: frozenset = frozenset()
    builds: ClassVar[tuple[str, ...]] = ()
    #: spatial tables whose rebuild check this system reports (module docstring)
    reports_displacement: ClassVar[tuple[str, ...]] = ()
    #: run only on steps divisible by ``every`` (FORCES and OUTPUT systems); 1 = every step.
    #: Set it before the system is added (the world reads it when its system list changes)
    every: int = 1
    _declarations_frozen: bool = False

    def __setattr__(self, name: str, value) -> None:
        if name in FROZEN and self._declarations_frozen:
            raise _frozen_error(self.name, f"{name} = ...")
        object.__setattr__(self, name, value)

    @property
    def name(self) -> str:
        return type(self).__name__

    def interaction_range(self, world: "World") -> float:
        """Distance (m) over which this system couples rows; sets the ghost width.

        The world adds the skin. Pair systems return the largest contact
        distance; bonded systems the largest element extent.
        """
        return 0.0

    def setup(self, world: "World") -> None:
        """Called once before the first force evaluation: add fields, tables and systems,
        check input. Declarations are not changed here (``declare``)."""

    def declare(self, world: "World") -> None:
        """Called once after every system's ``setup``, before the world validates the
        declarations, plans and freezes them: set here the declarations that depend on the
        world (module docstring)."""

    def run(self, world: "World") -> None:  # pragma: no cover - interface
        raise NotImplementedError(f"{self.name}.run")

    def on_stop(self, world: "World") -> None:
        """Called on every rank when a run stops early on a signal (soft kill)."""

    def before_rebuild(self, world: "World") -> None:
        """Called at every domain rebuild, before rows migrate (structural changes allowed).

        ``world.domain.destinations(table)`` gives the rank each row of a
        spatial table is about to go to (fixed from the positions before
        this call: a hook must not move rows of a spatial table; rows it
        adds or removes are planned again). For data that must travel with
        another row than its own anchor: the neighbour search copies the
        per-contact data of the pairs that migration splits to rows anchored
        to the other particle, so both ranks keep it.
        """

    def describe(self) -> str:
        parts = []
        for label in DECLARATIONS:
            decl = getattr(self, label)
            if decl:
                txt = "; ".join(f"{t}.{{{', '.join(f)}}}" for t, f in decl.items())
                parts.append(f"{label} {txt}")
        if self.builds:
            parts.append(f"builds {', '.join(self.builds)}")
        if self.reports_displacement:
            parts.append(f"reports_displacement {', '.join(self.reports_displacement)}")
        return f"{self.name} [{self.stage.name}] " + " | ".join(parts)
