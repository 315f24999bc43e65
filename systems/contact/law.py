"""The contact-law interface: one scalar function per law serves every contact geometry.

A contact law (``HertzMindlinLaw``, ``LinearSpringDashpotLaw``,
``SaturatedHertzLaw``, or a user's) is an object with

``name``
    a short identifier (``"hertz_mindlin"``);
``history``
    a tuple of :class:`~ecs_dem.table.Field`: the per-contact state the law
    keeps (any fixed row shape; float64, float32, an integer type or bool),
    e.g. the tangential spring. Contact systems add these fields to their
    contact table (``pairs`` for particle pairs, ``wall_<name>`` per particle
    and wall, ``patch_pairs`` for triangles);
``bind(species) -> BoundLaw``
    the law function to use with this species table, and its parameters;
``time_step_limit(world) -> (dt_max, advice)``
    the largest stable step, and what to tell a user who exceeds it.

A :class:`BoundLaw` holds a :class:`LawFunction` and two arrays:

* ``parameters`` (M + 1, M + 1, K) float64: the law's K per-material-pair
  parameters (E*, mu, ...). Materials 0..M-1 are the species rows;
  material M (``rigid_material``) is a rigid body, E -> infinity: a wall
  without a species. Mixing rules are the law's (documented there); a law
  with a pair table (``law.set_pair(a, b, **constants)``,
  ``systems.contact.pair_constants``) writes the given pairs over them.
* ``constants`` (C,) float64: parameters common to all contacts (LAMMPS's
  kn, kt, ...; a clamp flag).

The law function (``LawFunction.fn``, a numba ``@inline`` function) is the
whole physics of one contact, on scalars::

    fn(geometry, parameters, constants, history, inputs, update, dt)
    -> (fx, fy, fz, ti0, ti1, ti2, tj0, tj1, tj2, fn, *new_history)

where ``parameters``, ``constants``, ``history`` and ``inputs`` are tuples of
floats in the order the ``LawFunction`` names them (history fields
flattened; a history value of an integer or bool field arrives as a float
and is stored back exactly, for integers below 2^53), and ``geometry`` is the
tuple every contact geometry supplies,
``(dx, dy, dz, rsq, delta, ri, rj, rstar, mstar, v0, v1, v2, wi0, wi1, wi2,
wj0, wj1, wj2)``:

* ``d = (dx, dy, dz)``: from the partner's reference point to i's centre:
  x_i - x_j for a sphere j; h n for a plane or a triangle (n its unit
  normal toward i, h the distance of i's centre); ``rsq = |d|^2``;
* ``delta``: the overlap (m), (ri + rj) - |d| (corrected, for MC-DEM);
* ``ri``, ``rj``: radii (m); rj = 0 for a plane or triangle;
* ``rstar``: effective radius, ri rj / (ri + rj), or ri against a flat;
* ``mstar``: effective mass (kg), mi mj / (mi + mj); the free body's mass
  against a fixed particle, a wall or a triangle (see that geometry);
* ``v``: velocity of i's centre relative to the partner's material point
  (sphere centre, wall velocity, membrane velocity interpolated at the
  contact point) (m/s);
* ``wi``, ``wj``: angular velocities (rad/s); wj = 0 for walls and triangles;

``inputs``: the values of the particle fields the law names in
``LawFunction.inputs``, for i then for the partner (``(a_i, b_i, ..., a_j,
b_j, ...)``; 0 for a partner that is not a particle), so a law that needs a
per-particle quantity (a liquid film, a charge) reads it without any change
to the geometries; ``update`` (advance the history; False in the set-up
force pass) and ``dt`` (the time step, s). (Tuples rather than one argument
per value: CPython passes a call of 30 or more arguments as one packed tuple,
which numba cannot inline.)

It returns the force on i (N), the torques on i and on the partner about
their centres (N m; the partner's is dropped for walls and triangles), the
normal force magnitude fn (N, positive when repulsive) and the new history
values, in the order of ``LawFunction.history``.

How a law meets a geometry: ``systems.contact.pipeline`` holds the one
contact loop (selection, history flags, chunks, gather, vectorised law,
scatter); a geometry (``systems.contact.pair_geometry``, rigid objects,
membrane triangles) says how a candidate's inputs are gathered and its
forces scattered; :func:`law_source` generates, for one law function, the
helpers that read the law's parameter, history and input columns from the
scratch buffer at compile-time constant offsets (so the loop vectorises).
A new law is one scalar function and its parameter table; a new geometry is
one template module; neither copies the other.

A contact system binds its law to the world's species at set-up
(:class:`LawBinding`) and again whenever a species constant changes (or a
species is added) or the law's pair table changes, at the next step: a
friction lowered between two runs takes effect, and the time-step check runs
again.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecs_dem.components.species import species_version
from ecs_dem.systems.contact.pair_constants import needed_pairs

#: the arguments every law function receives first, in this order
GEOMETRY = ("dx", "dy", "dz", "rsq", "delta", "ri", "rj", "rstar", "mstar",
            "v0", "v1", "v2", "wi0", "wi1", "wi2", "wj0", "wj1", "wj2")
#: the outputs every law function returns first, in this order
OUTPUTS = ("fx", "fy", "fz", "ti0", "ti1", "ti2", "tj0", "tj1", "tj2", "fn")


@dataclass(frozen=True)
class LawFunction:
    """A scalar law function and the names of its parameters, constants, history and inputs.

    ``history`` names fields of the law's ``history``; their components are
    passed (and returned) flattened, in this order; ``history_dtypes`` gives
    each field's dtype (float64 where not given). ``inputs`` names particle
    fields (scalars, FORWARD) the law reads for both bodies of a contact.
    ``reach`` names the constant that holds the law's reach (m): the largest
    separation (negative overlap) at which it still acts, for every material
    pair (a liquid bridge's rupture distance); None (the default) for a law
    that acts only while the bodies overlap.
    """

    fn: object
    parameters: tuple[str, ...]
    constants: tuple[str, ...]
    history: tuple[str, ...]
    history_widths: tuple[int, ...]
    history_dtypes: tuple = ()
    inputs: tuple[str, ...] = ()
    reach: str | None = None

    @property
    def history_width(self) -> int:
        return sum(self.history_widths)

    @property
    def tag(self) -> str:
        return self.fn.__name__ if hasattr(self.fn, "__name__") else self.fn.py_func.__name__

    def dtype(self, field: int) -> np.dtype:
        return np.dtype(self.history_dtypes[field] if self.history_dtypes else np.float64)


@dataclass
class BoundLaw:
    """A law function with its material-pair parameter table and constants (module docstring)."""

    function: LawFunction
    parameters: np.ndarray
    constants: np.ndarray

    def __post_init__(self):
        self.parameters = np.ascontiguousarray(self.parameters, dtype=np.float64)
        self.constants = np.ascontiguousarray(self.constants, dtype=np.float64)
        k = len(self.function.parameters)
        if self.parameters.ndim != 3 or self.parameters.shape[2] != k:
            raise ValueError(f"law {self.function.tag}: parameter table must be (M+1, M+1, {k})")
        if self.constants.shape != (len(self.function.constants),):
            raise ValueError(f"law {self.function.tag}: {len(self.function.constants)} constants "
                             f"expected, got {self.constants.shape}")
        if self.function.reach is not None and self.function.reach not in self.function.constants:
            raise ValueError(f"law {self.function.tag}: its reach {self.function.reach!r} is not "
                             "one of its constants")

    @property
    def reach(self) -> float:
        """The largest separation at which the law acts (m); 0 for a law without a reach."""
        name = self.function.reach
        if name is None:
            return 0.0
        return float(self.constants[self.function.constants.index(name)])


def rigid_material(species_table) -> int:
    """Material index of a rigid body (a wall without species): one past the last species."""
    return species_table.n_owned if species_table is not None else 0


def _tuple(items) -> str:
    items = list(items)
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _stored(dtype: np.dtype, value: str) -> str:
    """`value` (a float of the buffer) converted for a history array of `dtype`."""
    if dtype.kind == "b":
        return f"{value} != 0.0"
    if dtype.kind in "iu":
        return f"np.{dtype.name}({value})"
    return value


def _zero(dtype: np.dtype) -> str:
    return "False" if dtype.kind == "b" else "0" if dtype.kind in "iu" else "0.0"


def law_source(function: LawFunction, first_column: int) -> str:
    """Source of the law's helpers for the contact pipeline (``systems.contact.pipeline``).

    Columns of the scratch buffer from `first_column` on: the inputs (i's,
    then the partner's), the parameters, the history. Defines ``N_PARAMS``,
    ``N_HISTORY``, ``N_INPUTS``, ``INP``, ``PAR``, ``HIS``, ``COLUMNS`` and
    ``LAW_REACH`` (the law has a reach) and the inline helpers ``load_constants``,
    ``law_reach``, ``evaluate_law``,
    ``gather_law_columns``, ``gather_inputs``, ``gather_history``,
    ``scatter_history``, ``reset_history``, ``copy_history``.
    """
    k, c, h = len(function.parameters), len(function.constants), function.history_width
    n_in = len(function.inputs)
    inp = first_column
    par = inp + 2 * n_in
    his = par + k
    reach = -1 if function.reach is None else function.constants.index(function.reach)
    lines = [
        f"LAW_REACH = {reach >= 0}",
        f"N_PARAMS = {k}",
        f"N_CONSTANTS = {c}",
        f"N_HISTORY = {h}",
        f"N_INPUTS = {n_in}",
        f"INP = {inp}",
        f"PAR = {par}",
        f"HIS = {his}",
        f"COLUMNS = {his + h}",
        "",
        "",
        "@inline",
        "def load_constants(consts):",
        f"    return {_tuple(f'consts[{q}]' for q in range(c))}",
        "",
        "",
        "@inline",
        "def law_reach(consts):",
        f"    return {f'consts[{reach}]' if reach >= 0 else '0.0'}",
        "",
        "",
        "@inline",
        "def evaluate_law(buf, t, k, g, update, dt):",
        "    C = CHUNK",
        f"    out = law(g, {_tuple(f'buf[{par + q} * C + t]' for q in range(k))}, k, "
        f"{_tuple(f'buf[{his + q} * C + t]' for q in range(h))}, "
        f"{_tuple(f'buf[{inp + q} * C + t]' for q in range(2 * n_in))}, update, dt)",
        *(f"    buf[{his + q} * C + t] = out[{len(OUTPUTS) + q}]" for q in range(h)),
        f"    return {', '.join(f'out[{q}]' for q in range(len(OUTPUTS)))}",
        "",
        "",
        "@inline",
        "def gather_inputs(buf, t, inputs, i, j):",
        "    C = CHUNK",
    ]
    for q in range(n_in):
        lines += [f"    buf[{inp + q} * C + t] = inputs[{q}][i]",
                  f"    buf[{inp + n_in + q} * C + t] = inputs[{q}][j] if j >= 0 else 0.0"]
    lines += ["    return"]
    # the history of contact k between its arrays and the buffer, component by component
    columns = [(f, a) for f, w in enumerate(function.history_widths) for a in range(w)]
    lines += ["", "", "@inline", "def gather_history(buf, t, history, k):", "    C = CHUNK"]
    lines += [f"    buf[{his + q} * C + t] = history[{f}][k, {a}]" for q, (f, a) in enumerate(columns)]
    lines += ["    return"]
    lines += ["", "", "@inline", "def scatter_history(buf, t, history, k):", "    C = CHUNK"]
    lines += [f"    history[{f}][k, {a}] = {_stored(function.dtype(f), f'buf[{his + q} * C + t]')}"
              for q, (f, a) in enumerate(columns)]
    lines += ["    return"]
    lines += ["", "", "@inline", "def reset_history(history, k):"]
    lines += [f"    history[{f}][k, {a}] = {_zero(function.dtype(f))}" for f, a in columns]
    lines += ["    return"]
    lines += ["", "", "@inline", "def copy_history(history, source, target):"]
    lines += [f"    history[{f}][target, {a}] = history[{f}][source, {a}]" for f, a in columns]
    lines += ["    return"]
    lines += ["", "", "@inline", "def gather_law_columns(buf, t, params, a, b, history, k):",
              "    C = CHUNK",
              "    for q in range(N_PARAMS):",
              "        buf[(PAR + q) * C + t] = params[a, b, q]",
              "    gather_history(buf, t, history, k)"]
    return "\n".join(lines)


class LawBinding:
    """A law bound to the world's species: at set-up, and again at the first step after a
    species constant changed or a species was added (module docstring).

    ``on_bind(bound)`` is called after every binding (a contact system generates its kernels
    and derives what depends on the materials there); ``check(world)`` is the time-step
    check, run again with the new constants.
    """

    def __init__(self, law, on_bind, check):
        self.law = law
        self.on_bind = on_bind
        self.check = check
        self.bound: BoundLaw | None = None
        self.version = None

    def bind(self, world) -> BoundLaw:
        self.check(world)
        pairs = getattr(self.law, "pairs", None)
        if pairs is not None and pairs.explicit:  # the pairs an explicit table must give
            pairs.needed = needed_pairs(world)
        self.bound = self.law.bind(world.tables.get("species"))
        self.version = self._version(world)
        self.on_bind(self.bound)
        return self.bound

    def _version(self, world) -> tuple:
        """The species' version and the law's pair table (``systems.contact.pair_constants``)
        with its version."""
        pairs = getattr(self.law, "pairs", None)
        return species_version(world), id(pairs), getattr(pairs, "version", 0)

    def current(self, world) -> BoundLaw:
        """The bound law, bound again first if the species or the law's pair table changed."""
        if self._version(world) != self.version:
            self.bind(world)
        return self.bound


__all__ = ["GEOMETRY", "OUTPUTS", "LawFunction", "BoundLaw", "rigid_material", "law_source",
           "LawBinding"]
