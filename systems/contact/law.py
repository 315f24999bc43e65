"""The contact-law interface: one scalar function per law serves every contact geometry.

A contact law (``HertzMindlinLaw``, ``LinearSpringDashpotLaw``, or a user's)
is an object with

``name``
    a short identifier (``"hertz_mindlin"``);
``history``
    a tuple of :class:`~ecs_dem.table.Field`: the per-contact state the law
    keeps (float64, default 0), e.g. the tangential spring. Contact systems
    add these fields to their contact table (``pairs`` for particle pairs,
    ``wall_<name>`` per particle and wall, a patch table for triangles);
``bind(species) -> BoundLaw``
    the law function to use with this species table, and its parameters;
``time_step_limit(world) -> (dt_max, advice)``
    the largest stable step, and what to tell a user who exceeds it.

A :class:`BoundLaw` holds a :class:`LawFunction` and two arrays:

* ``parameters`` (M + 1, M + 1, K) float64: the law's K per-material-pair
  parameters (E*, mu, ...). Materials 0..M-1 are the species rows;
  material M (``rigid_material``) is a rigid body, E -> infinity: a wall
  without a species. Mixing rules are the law's (documented there).
* ``constants`` (C,) float64: parameters common to all contacts (LAMMPS's
  kn, kt, ...; a clamp flag).

The law function (``LawFunction.fn``, a numba ``@inline`` function) is the
whole physics of one contact, on scalars::

    fn(geometry, parameters, constants, history, update, dt)
    -> (fx, fy, fz, ti0, ti1, ti2, tj0, tj1, tj2, fn, *new_history)

where ``parameters``, ``constants`` and ``history`` are tuples of floats in
the order the ``LawFunction`` names them (history fields flattened), and
``geometry`` is the tuple every kernel supplies,
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
and ``update`` (advance the history; False in the set-up force pass) and
``dt`` (the time step, s). (Tuples rather than one argument per value:
CPython passes a call of 30 or more arguments as one packed tuple, which
numba cannot inline.)

It returns the force on i (N), the torques on i and on the partner about
their centres (N m; the partner's is dropped for walls and triangles), the
normal force magnitude fn (N, positive when repulsive) and the new history
values, in the order of ``LawFunction.history``.

How a geometry plugs in: a *template module* (``systems/contact/kernels.py``
for particle pairs and walls) holds the loops, marked
``@template`` (``ecs_dem.generated_kernels``), gathers each contact's inputs
into a scratch buffer, calls ``evaluate_law`` and scatters the outputs.
:func:`law_kernels` generates, for one law function, ``evaluate_law`` (which
reads the law's parameter and history columns from the buffer at
compile-time constant offsets, so the loop vectorises) and compiles the
template's kernels with it. A new law is one scalar function and its
parameter table; a new geometry is one template module; neither copies the
other.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import numpy as np

from ecs_dem.generated_kernels import specialised_module

#: the arguments every law function receives first, in this order
GEOMETRY = ("dx", "dy", "dz", "rsq", "delta", "ri", "rj", "rstar", "mstar",
            "v0", "v1", "v2", "wi0", "wi1", "wi2", "wj0", "wj1", "wj2")
#: the outputs every law function returns first, in this order
OUTPUTS = ("fx", "fy", "fz", "ti0", "ti1", "ti2", "tj0", "tj1", "tj2", "fn")


@dataclass(frozen=True)
class LawFunction:
    """A scalar law function and the names of its parameters, constants and history fields.

    ``history`` names fields of the law's ``history``; their components are
    passed (and returned) flattened, in this order.
    """

    fn: object
    parameters: tuple[str, ...]
    constants: tuple[str, ...]
    history: tuple[str, ...]
    history_widths: tuple[int, ...]

    @property
    def history_width(self) -> int:
        return sum(self.history_widths)

    @property
    def tag(self) -> str:
        return self.fn.__name__ if hasattr(self.fn, "__name__") else self.fn.py_func.__name__


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


def rigid_material(species_table) -> int:
    """Material index of a rigid body (a wall without species): one past the last species."""
    return species_table.n_owned


def _tuple(items) -> str:
    items = list(items)
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _evaluate_law_source(function: LawFunction, first_column: int) -> str:
    """Source of ``load_constants`` and ``evaluate_law`` for one law function."""
    k, c, h = len(function.parameters), len(function.constants), function.history_width
    par, his = first_column, first_column + k
    lines = [
        f"N_PARAMS = {k}",
        f"N_CONSTANTS = {c}",
        f"N_HISTORY = {h}",
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
        "def evaluate_law(buf, t, k, g, update, dt):",
        "    C = CHUNK",
        f"    out = law(g, {_tuple(f'buf[{par + q} * C + t]' for q in range(k))}, k, "
        f"{_tuple(f'buf[{his + q} * C + t]' for q in range(h))}, update, dt)",
        *(f"    buf[{his + q} * C + t] = out[{len(OUTPUTS) + q}]" for q in range(h)),
        f"    return {', '.join(f'out[{q}]' for q in range(len(OUTPUTS)))}",
    ]
    # history of contact k between its arrays and the buffer, unrolled component by component
    columns = [(f, c) for f, w in enumerate(function.history_widths) for c in range(w)]
    lines += ["", "", "@inline", "def gather_history(buf, t, history, k):", "    C = CHUNK"]
    lines += [f"    buf[{his + q} * C + t] = history[{f}][k, {c}]" for q, (f, c) in enumerate(columns)]
    lines += ["", "", "@inline", "def scatter_history(buf, t, history, k):", "    C = CHUNK"]
    lines += [f"    history[{f}][k, {c}] = buf[{his + q} * C + t]" for q, (f, c) in enumerate(columns)]
    lines += ["", "", "@inline", "def reset_history(history, k):"]
    lines += [f"    history[{f}][k, {c}] = 0.0" for f, c in columns] or ["    pass"]
    lines += ["", "", "@inline", "def copy_history(history, source, target):"]
    lines += [f"    history[{f}][target, {c}] = history[{f}][source, {c}]"
              for f, c in columns] or ["    pass"]
    return "\n".join(lines)


def law_kernels(template_module: ModuleType, function: LawFunction) -> ModuleType:
    """The template module's kernels compiled with `function` (module docstring).

    The template module defines ``LAW_COLUMN``, the first scratch column
    after its own, and uses ``evaluate_law``, ``load_constants``,
    ``gather_history``, ``scatter_history``, ``reset_history``, ``copy_history``, ``N_PARAMS``,
    ``N_HISTORY``, ``PAR``, ``HIS`` and ``COLUMNS``.
    """
    source = _evaluate_law_source(function, template_module.LAW_COLUMN)
    tag = f"{template_module.__name__.rsplit('.', 1)[-1]}__{function.tag}"
    return specialised_module(template_module, tag, {"law": function.fn}, source)


__all__ = ["GEOMETRY", "OUTPUTS", "LawFunction", "BoundLaw", "rigid_material", "law_kernels"]
