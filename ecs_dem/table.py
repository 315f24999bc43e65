"""Growable structure-of-arrays tables with global ids and declared halo policy.

A :class:`Table` is a set of equally long numpy arrays (one per :class:`Field`),
plus an ``int64`` ``gid`` column that identifies a row for the whole run,
whatever its local index. Rows are laid out as::

    [0, n_owned)                 rows this rank owns and integrates
    [n_owned, n_owned + n_ghost) ghost rows: copies of rows owned elsewhere
                                 (or periodic images of own rows), rebuilt
                                 wholesale by the domain at every rebuild
    [n, capacity)                free space; capacity grows geometrically

Structural changes (append, remove, permute, ghost resize) bump ``epoch``;
anything that caches local row indices stores the epoch it was built for.
They, a capacity growth and a new field also bump ``Table.structure_version``,
one counter for all tables of the process: a cache over several tables (a
kernel's argument tuple, the world's per-step look-ups) compares one integer
instead of each table's epoch, sizes and capacity.
Views (``table.position`` and friends) are taken per use and never stored
across a structural change (the table keeps its attribute views until the
next one, and drops them then).

Columns are allocated with staggered start addresses: large arrays that start
at the same offset within a 4 KiB page alias in the cache, and a loop touching
six of them at once runs five times slower without the stagger.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping

import numpy as np

from . import halo_kernels as hk
from .errors import InputError, StateError
from .gid_lookup import GidLookup
from .memory import check_fits
from .row_packing import move_rows, permute_rows, unpack_rows

_PAGE = 4096
_STAGGER = 320  # bytes between column start offsets within a page (5 cache lines)


class Halo(enum.Enum):
    """How a field crosses subdomain boundaries (docs/developer/architecture.md, Data).

    Its members::

        FORWARD  owner value copied to ghosts (position, velocity, radius, ...)
        REVERSE  ghost contributions summed into the owner (force, torque)
        LOCAL    owner only; still migrates with its row
        SUM      a field of a table every rank holds whole (not decomposed: the walls),
                 into which each rank accumulates its share; its value is the sum over
                 ranks, formed only when something reads it (World.complete_sums)
    """

    FORWARD = "forward"
    REVERSE = "reverse"
    LOCAL = "local"
    SUM = "sum"


@dataclass(frozen=True)
class Field:
    """Declaration of one column: dtype, per-row shape, halo policy, units.

    ``scratch``: a working value that a system recomputes every step before anything
    reads it (not state): checkpoints leave it out and a restart fills it with its
    default, so a checkpoint written before the field existed still restarts.
    """

    name: str
    dtype: type | np.dtype = np.float64
    shape: tuple[int, ...] = ()
    halo: Halo = Halo.LOCAL
    default: float | int = 0
    unit: str = ""
    doc: str = ""
    scratch: bool = False

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)


GID = Field("gid", np.int64, (), Halo.FORWARD, -1, "", "global id, unique for the run")


#: a table growth larger than this (bytes) is checked against the available memory first
#: (ecs_dem.memory: an allocation beyond it would end the process without a message)
CHECKED_ALLOCATION = 64 * 2**20


def _staggered_empty(shape: tuple[int, ...], dtype: np.dtype, slot: int) -> np.ndarray:
    """Zeroed C-contiguous array whose start sits `slot` steps into a page."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(nbytes + 2 * _PAGE, dtype=np.uint8)
    base = raw.ctypes.data
    offset = (-base) % _PAGE + (slot * _STAGGER) % _PAGE
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


@dataclass
class _Column:
    field: Field
    data: np.ndarray
    slot: int


class Table:
    """Structure-of-arrays storage for one kind of entity.

    Parameters
    ----------
    name : str
        Table name, a plural noun (``"particles"``, ``"walls"``).
    fields : iterable of Field
        Declared columns. ``gid`` is always added first.
    capacity : int
        Initial number of rows allocated.
    anchor : (table, field), optional
        The rows of this table belong with the row of ``table`` whose gid is
        in ``field`` (per-pair data with its lower-gid particle, a spring
        with its first vertex; for a field of shape (k,), its first entry):
        they migrate together between ranks.
    references : {row field: gid field}, optional
        Local-row fields that the engine keeps equal to the row, in the
        anchor's table, of the gid in the named gid field (same shape; int32
        or int64): for owned rows and ghost rows alike, the image nearest to
        the row's anchor (``ecs_dem.references``). ``pairs`` declares
        ``{"i": "gid_i", "j": "gid_j"}``, a triangle ``{"rows": "vertices"}``.
    """

    #: bumped by every structural change, capacity growth or new field of any table (module
    #: docstring): equal values mean no table changed shape or storage in between
    structure_version = 0

    def __init__(self, name: str, fields: Iterable[Field], capacity: int = 64,
                 anchor: tuple[str, str] | None = None,
                 references: Mapping[str, str] | None = None):
        self.name = name
        self.anchor = anchor
        self.references = dict(references or {})
        self._columns: dict[str, _Column] = {}
        self._fields: dict[str, Field] = {}
        self._fields_view = MappingProxyType(self._fields)
        self._capacity = max(int(capacity), 1)
        self.n_owned = 0
        self.n_ghost = 0
        self.epoch = 0
        self._attribute_views: list[str] = []  # column views cached as attributes (__getattr__)
        self._ghost_views: dict[str, np.ndarray] = {}  # with_ghosts, until the structure changes
        self.next_gid = 0
        self._lookup: GidLookup | None = None
        self._lookup_key = None
        self._views: dict = {}
        self._views_key = None
        self.add_field(GID)
        for f in fields:
            self.add_field(f)
        self._check_references()

    def _check_references(self) -> None:
        if self.references and not self.anchor:
            raise InputError(f"table '{self.name}': references need an anchor table")
        if self.anchor and self.anchor[1] not in self._fields:
            raise InputError(f"table '{self.name}': anchor field '{self.anchor[1]}' is not a field")
        for row_field, gid_field in self.references.items():
            for name in (row_field, gid_field):
                if name not in self._fields:
                    raise InputError(f"table '{self.name}': reference field '{name}' is not declared")
            r, g = self._fields[row_field], self._fields[gid_field]
            if r.shape != g.shape or r.np_dtype.kind != "i" or g.np_dtype != np.int64:
                raise InputError(
                    f"table '{self.name}': reference '{row_field}' -> '{gid_field}' needs an integer "
                    "row field of the same shape as its int64 gid field")

    # ------------------------------------------------------------------ schema
    @property
    def fields(self) -> Mapping[str, Field]:
        """Read-only mapping name -> Field, in declaration order."""
        return self._fields_view

    def has_field(self, name: str) -> bool:
        return name in self._columns

    def add_field(self, f: Field) -> None:
        """Declare a new column; existing rows get the field's default."""
        if f.name in self._columns:
            old = self._columns[f.name].field
            if old != f:
                raise InputError(
                    f"table '{self.name}': field '{f.name}' declared twice with "
                    f"different definitions ({old} vs {f})")
            return
        if not f.name.isidentifier() or f.name.startswith("_"):
            raise InputError(f"table '{self.name}': field name '{f.name}' must be a public identifier")
        slot = len(self._columns)
        data = _staggered_empty((self._capacity, *f.shape), f.np_dtype, slot)
        if f.default != 0:
            data[...] = f.default
        self._columns[f.name] = _Column(f, data, slot)
        self._fields[f.name] = f
        Table.structure_version += 1

    # ------------------------------------------------------------------- sizes
    @property
    def n(self) -> int:
        """Owned plus ghost rows."""
        return self.n_owned + self.n_ghost

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return self.n_owned

    def _reserve(self, rows: int) -> None:
        if rows <= self._capacity:
            return
        new_cap = max(rows, int(self._capacity * 1.5) + 8)
        nbytes = new_cap * sum(c.field.np_dtype.itemsize * int(np.prod(c.field.shape))
                               for c in self._columns.values())
        if nbytes > CHECKED_ALLOCATION:  # reading /proc/meminfo costs tens of microseconds
            check_fits(nbytes, f"table '{self.name}' with {rows:,} rows",
                       "use fewer particles (or elements) per rank: a smaller problem, or "
                       "more ranks or nodes")
        for col in self._columns.values():
            f = col.field
            data = _staggered_empty((new_cap, *f.shape), f.np_dtype, col.slot)
            data[: self.n] = col.data[: self.n]
            if f.default != 0:
                data[self.n:] = f.default
            col.data = data
        self._capacity = new_cap
        Table.structure_version += 1
        self._drop_attribute_views()

    def _touch(self) -> None:
        self.epoch += 1
        Table.structure_version += 1
        self._drop_attribute_views()

    def _drop_attribute_views(self) -> None:
        for name in self._attribute_views:
            self.__dict__.pop(name, None)
        self._attribute_views.clear()
        self._ghost_views.clear()

    # ------------------------------------------------------------------- views
    def column(self, name: str) -> np.ndarray:
        """The whole allocated column (capacity rows). For kernels that fill ghosts."""
        try:
            return self._columns[name].data
        except KeyError:
            raise AttributeError(
                f"table '{self.name}' has no field '{name}'; fields: {sorted(self._columns)}") from None

    def owned(self, name: str) -> np.ndarray:
        """View of the owned rows of a field."""
        return self.column(name)[: self.n_owned]

    def with_ghosts(self, name: str) -> np.ndarray:
        """View of owned and ghost rows of a field (kept until the structure changes)."""
        view = self._ghost_views.get(name)
        if view is None:
            view = self._ghost_views[name] = self.column(name)[: self.n]
        return view

    def views(self, names: tuple[str, ...], ghosts: bool = False) -> tuple[np.ndarray, ...]:
        """Views of the owned (or, with `ghosts`, owned and ghost) rows of the named fields,
        cached until some table's structure changes (``Table.structure_version``).

        For the systems that run every step: taking a view costs about half a
        microsecond in Python, and a step of a small subdomain (a few
        thousand rows) calls a dozen kernels with up to a dozen arrays each.
        Pass the same tuple object every call (a constant) for the fastest look-up.
        """
        key = Table.structure_version
        if key != self._views_key:
            self._views = {}
            self._views_key = key
        got = self._views.get((names, ghosts))
        if got is None:
            stop = self.n if ghosts else self.n_owned
            got = self._views[(names, ghosts)] = tuple(self.column(f)[:stop] for f in names)
        return got

    def __getattr__(self, name: str) -> np.ndarray:
        # Attribute access gives the owned view: table.position, table.velocity. The view is
        # kept as an instance attribute until the structure changes (_touch, _reserve), so the
        # next access skips this method (0.6 -> 0.05 us; systems take a dozen per step).
        cols = self.__dict__.get("_columns")
        if cols is not None and name in cols:
            view = cols[name].data[: self.__dict__["n_owned"]]
            self.__dict__[name] = view
            self._attribute_views.append(name)
            return view
        raise AttributeError(f"table '{self.__dict__.get('name', '?')}' has no field '{name}'")

    # ------------------------------------------------------------- structure
    def append(self, count: int, **values) -> slice:
        """Append `count` owned rows; unspecified fields get their defaults.

        Ghost rows are dropped first (they are rebuilt at the next domain
        rebuild). Returns the slice of the new rows. New rows receive fresh
        gids unless ``gid`` is given.
        """
        unknown = set(values) - set(self._columns)
        if unknown:
            raise InputError(
                f"table '{self.name}' has no field(s) {sorted(unknown)}; "
                f"fields: {sorted(self._columns)}")
        self.clear_ghosts()
        start = self.n_owned
        self._reserve(start + count)
        for name, col in self._columns.items():
            dst = col.data[start:start + count]
            if name in values:
                dst[...] = np.asarray(values[name], dtype=col.field.np_dtype)
            else:
                dst[...] = col.field.default
        if "gid" not in values:
            self.column("gid")[start:start + count] = np.arange(
                self.next_gid, self.next_gid + count, dtype=np.int64)
        self.n_owned += count
        gids = self.column("gid")[start:start + count]
        if count:
            self.next_gid = max(self.next_gid, int(gids.max()) + 1)
        self._touch()
        return slice(start, start + count)

    def replace(self, count: int, **values) -> None:
        """Replace every owned row by `count` new rows, as ``append`` after removing them all,
        in one structural change (a contact table rebuilt from scratch at every rebuild)."""
        self.clear_ghosts()
        self.n_owned = 0  # append's structural change drops the views of the old length
        self.append(count, **values)

    def reserve_rewrite(self, rows: int) -> None:
        """Before a builder writes `rows` new owned rows straight into the columns
        (``column(name)[:rows]``) and then calls ``commit_rewrite``: drops the ghost rows and
        makes room. For a table rebuilt from scratch (a contact table at every neighbour
        rebuild), which would otherwise build in scratch arrays and copy them in with
        ``replace``. The old owned rows stay as they are until the builder overwrites them:
        it must read what it keeps of them first. The column arrays may be reallocated:
        take ``column`` after this call."""
        self.clear_ghosts()
        self._reserve(rows)

    def commit_rewrite(self, count: int) -> None:
        """The builder wrote rows [0, count) of every field, gids included (after
        ``reserve_rewrite``): they become the owned rows, in one structural change (none when
        the table was empty and stays empty)."""
        if not 0 <= count <= self._capacity or self.n_ghost:
            raise StateError(f"table '{self.name}': commit_rewrite({count}) without "
                             f"reserve_rewrite of as many rows (capacity {self._capacity})")
        if count == 0 and self.n_owned == 0:
            return  # empty before and after: no change (caches over all tables stay valid)
        self.n_owned = count
        if count:
            self.next_gid = max(self.next_gid, int(self.column("gid")[:count].max()) + 1)
        self._touch()

    def append_packed(self, packed: np.ndarray) -> slice:
        """Append owned rows given as packed bytes of every field (``row_packing``, fields in
        declaration order, gids included): migration's arrivals, written once."""
        self.clear_ghosts()
        start, count = self.n_owned, packed.shape[0]
        self._reserve(start + count)
        unpack_rows(self, tuple(self._fields), packed, start)
        self.n_owned += count
        if count:
            self.next_gid = max(self.next_gid, int(self.column("gid")[start:start + count].max()) + 1)
        self._touch()
        return slice(start, start + count)

    def remove(self, rows: np.ndarray, keep_order: bool = True) -> None:
        """Remove owned rows (indices or boolean mask).

        ``keep_order=False`` fills the holes with the last rows instead of
        shifting everything (cheap when few rows go, as in migration).
        """
        self.clear_ghosts()
        rows = np.asarray(rows)
        plan = None
        if not keep_order and rows.dtype.kind == "i" and rows.ndim == 1:
            plan = self._holes_and_fillers(rows)  # None unless increasing, in range
        if plan is None:  # a mask, or rows unsorted, repeated or negative
            gone = np.zeros(self.n_owned, dtype=bool)
            gone[rows] = True
            if keep_order:
                self.permute(np.flatnonzero(~gone))
                return
            plan = self._holes_and_fillers(np.flatnonzero(gone))
        holes, fillers, removed = plan
        move_rows(self, fillers, holes)
        self.n_owned -= removed
        self._touch()

    def _holes_and_fillers(self, rows: np.ndarray):
        """(holes, fillers, rows removed) for removing increasing `rows` by filling the holes with
        the last rows (work on the k rows that go, not on all n), or None if `rows` is not
        strictly increasing within the owned rows."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        holes, fillers = np.empty(rows.size, np.int64), np.empty(rows.size, np.int64)
        count = hk.holes_and_fillers(rows, self.n_owned, holes, fillers)
        return None if count < 0 else (holes[:count], fillers[:count], rows.size)

    def permute(self, order: np.ndarray) -> None:
        """Re-order (or subset) owned rows: new row k is old row order[k]."""
        self.clear_ghosts()
        order = np.ascontiguousarray(order, dtype=np.int64)
        permute_rows(self, order)
        self.n_owned = order.size
        self._touch()

    def clear_ghosts(self) -> None:
        if self.n_ghost:
            self.n_ghost = 0
            self._touch()

    def resize_ghosts(self, n_ghost: int) -> None:
        """Make room for exactly `n_ghost` ghost rows after the owned ones."""
        self._reserve(self.n_owned + n_ghost)
        self.n_ghost = n_ghost
        self._touch()

    # --------------------------------------------------------------- gid map
    def lookup(self) -> GidLookup:
        """Local rows of gids over owned and ghost rows (``ecs_dem.gid_lookup``).

        Cached per structural epoch: ghost rows are rebuilt (and their gids
        written) only by structural operations.
        """
        key = (self.epoch, self.n_owned, self.n_ghost)
        if self._lookup is None or self._lookup_key != key:
            self._lookup = GidLookup(self.with_ghosts("gid"), self.n_owned)
            self._lookup_key = key
        return self._lookup

    def rows_of(self, gids: np.ndarray) -> np.ndarray:
        """Owned rows of the given gids; raises if a gid is not owned here."""
        gids = np.asarray(gids, dtype=np.int64)
        rows = self.lookup().rows(gids, owned_only=True)
        if np.any(rows < 0):
            missing = gids[rows < 0][:5]
            raise InputError(f"table '{self.name}': gid(s) {missing.tolist()} not found")
        return rows

    @property
    def anchor_reference(self) -> str | None:
        """The row field that references the anchor gid field (``references``), if any: it
        holds the anchor's local row wherever the references are current."""
        if self.anchor:
            for row_field, gid_field in self.references.items():
                if gid_field == self.anchor[1]:
                    return row_field
        return None

    def anchor_gids(self, n: int | None = None) -> np.ndarray:
        """Gids of the anchors of the first `n` rows (default: owned rows)."""
        col = self.column(self.anchor[1])[: self.n_owned if n is None else n]
        return col if col.ndim == 1 else col[:, 0]

    def describe(self) -> str:
        lines = [f"table {self.name}: {self.n_owned} owned, {self.n_ghost} ghost, capacity {self.capacity}"]
        for f in self.fields.values():
            shape = f"({', '.join(map(str, f.shape))})" if f.shape else "()"
            unit = f" [{f.unit}]" if f.unit else ""
            lines.append(f"  {f.name:24s} {f.np_dtype.name:8s} {shape:8s} {f.halo.value:8s}{unit} {f.doc}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, n_owned={self.n_owned}, n_ghost={self.n_ghost})"


def field(*args, **kwargs) -> Field:
    """Shorthand for :class:`Field`, for schema declarations."""
    return Field(*args, **kwargs)


__all__ = ["Halo", "Field", "Table", "field", "GID"]
