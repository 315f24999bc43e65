"""The contact pipeline: one loop over candidate contacts, for every geometry, model and law.

A contact kernel is made of four parts, each written once:

* this loop (a template module, ``ecs_dem.generated_kernels``): per block of
  ``BLOCK`` candidates, the overlap test (a loop without dependences, so the
  loads of many candidates are in flight at once), then the selection
  (branch-free append of the touching candidates to ``sel``; one flag byte
  per contact, 1 where its history may be non-zero, finds the few contacts
  that began or ended: the history of one that ended is reset, so the
  history of the many separated candidates is never read); then, per chunk
  of ``CHUNK`` selected contacts, gather (scalar: one contiguous scratch
  column per quantity), evaluate (the law on those columns at compile-time
  constant offsets: LLVM emits SIMD code; lanes past the last selected
  contact hold stale, finite values and are never scattered) and scatter
  (scalar, in candidate order, so every sum is accumulated as in a plain
  loop over the candidates: the results equal such a loop's bit for bit);
* a *geometry* (a template module: ``systems.contact.pair_geometry``,
  ``systems.contact.rigid_objects``, ``systems.membrane.patch_kernels``):
  which candidates there are, how one is tested, gathered (positions,
  velocities at the contact point, radii, masses, materials), turned into the
  law's geometry tuple (in the vectorised loop), and how its force and
  torques are scattered (particle rows, triangle vertices, a wall's total);
* a *model* (a template module: ``systems.contact.no_model``, or
  ``systems.multicontact.model``): what a contact model adds to every
  geometry, e.g. MC-DEM's surface displacements, which extend the reach of
  the overlap test, correct the overlap and radii the law sees, and record
  each contact's normal force;
* the *law* (``systems.contact.law``): one scalar function, with the helpers
  ``law_source`` generates for its parameters, history and inputs. A law that
  acts beyond contact (a liquid bridge) declares its reach
  (``LawFunction.reach``): the largest separation at which it acts; the
  overlap test then selects every candidate closer than that (its overlap
  may be negative) and the law decides what acts there.

:func:`contact_kernels` compiles the four together into one module (cached on
disk by numba like any other) and returns it; its kernel ``contacts`` is the
one entry point::

    touching, events = contacts(G, M, X, params, consts, history, flags, update, dt, buf, sel, R)

``G``: the geometry's arrays (a tuple, its own layout), ``M``: the model's,
``X``: the law's input columns (particle fields, owned and ghost rows),
``history``: the law's history arrays (2-D: contacts x components),
``flags``: one byte per contact (``PairScratch.flags``); ``buf``, ``sel``:
a ``PairScratch``'s; ``R``: ``()``, or, in kernels compiled with
``record=True``, the arrays that receive each touching contact's force and
contact point (``record_contact``; ``ContactSystem.record_contacts`` asks for
them on the steps a snapshot carries the contact network: the other steps
run the kernels without it, unchanged). Returns the number of touching
contacts and the number of events the model counted (MC-DEM: contacts from
deformation the neighbour list missed).

The geometry interface (``@template("inline")`` functions and constants)::

    GEOMETRY_COLUMNS           scratch columns its gather fills (0 .. GEOMETRY_COLUMNS - 1)
    PARTNER_IS_PARTICLE        the partner is a particle (has a radius, spin, surface)
    begin(G)                   once per call, before the loop (a pair kernel zeroes force rows)
    candidates(G)              the number of candidates
    contact_of(q, G)           the contact index of candidate q (rows of history, flags, model)
                               (these three default to: nothing, G[0].size, q)
    touches(q, c, G, reach)    1 if candidate q overlaps when its reach grows by reach (m);
                               reach is added only where EXTENDED_TEST (a model shifts
                               surfaces, or the law acts beyond contact: its reach)
    gather(buf, t, q, c, G)    fill column t; returns the material pair (a, b) of the law
    bodies(q, c, G)            the particle rows (i, j) of the contact, j = -1 for no particle
    kinematics(buf, t)         the law's geometry tuple from column t (systems.contact.law)
    scatter(buf, t, q, c, G)   apply the outputs of column t (_FX .. _FN;
                               add_to_particle adds the force and torque on i to a row)

The model interface: ``MODEL_OFFSETS`` (it shifts the surfaces), ``MODEL_COLUMNS``,
``model_reach(c, M)``, ``model_visit(c, M)`` (every candidate, every step, after its
flag), ``model_began(q, c, G, M)`` (a contact began; returns an event count),
``model_gather(buf, t, c, M)``, ``model_offsets(buf, t)`` -> (s_i, s_j),
``model_record(buf, t, c, M)``.
"""
from __future__ import annotations

import math
import sys
from types import ModuleType

import numpy as np

from ecs_dem.generated_kernels import specialised_module, template
from ecs_dem.jit import row

from ecs_dem.systems.contact import no_model
from ecs_dem.systems.contact.chunks import BLOCK, CHUNK
from ecs_dem.systems.contact.law import LawFunction, law_source


@template("inline")
def offset_geometry(g, si, sj):
    """The law's geometry with the surfaces moved out by si and sj (m): overlap + si + sj,
    radii ri + si and rj + sj (the lever arms r + s - delta/2 then put the contact point at
    the mean of the two displaced surfaces); R* stays the undisplaced spheres'."""
    return (g[0], g[1], g[2], g[3], g[4] + si + sj, g[5] + si, g[6] + sj, g[7], g[8],
            g[9], g[10], g[11], g[12], g[13], g[14], g[15], g[16], g[17])


@template("inline")
def begin(G):
    """Default: nothing before the loop."""
    return


@template("inline")
def candidates(G):
    """Default for a geometry whose candidates are the rows of a list ``G[0]``."""
    return G[0].size


@template("inline")
def contact_of(q, G):
    """Default: candidate q is contact q (a list of contacts)."""
    return q


@template("inline")
def add_to_particle(force, torque, i, buf, t):
    """Add the force on i and its torque of column t to row i of force and torque; returns
    the force (for the partner's share)."""
    C = CHUNK
    fx = buf[_FX * C + t]  # noqa: F821
    fy = buf[_FY * C + t]  # noqa: F821
    fz = buf[_FZ * C + t]  # noqa: F821
    force[i, 0] += fx
    force[i, 1] += fy
    force[i, 2] += fz
    torque[i, 0] += buf[_TI0 * C + t]  # noqa: F821
    torque[i, 1] += buf[_TI1 * C + t]  # noqa: F821
    torque[i, 2] += buf[_TI2 * C + t]  # noqa: F821
    return fx, fy, fz


@template("inline")
def store_outputs(buf, t, out):
    """The law's force on i, torques and normal force into column t."""
    C = CHUNK
    buf[_FX * C + t] = out[0]  # noqa: F821 (generated column numbers)
    buf[_FY * C + t] = out[1]  # noqa: F821
    buf[_FZ * C + t] = out[2]  # noqa: F821
    buf[_TI0 * C + t] = out[3]  # noqa: F821
    buf[_TI1 * C + t] = out[4]  # noqa: F821
    buf[_TI2 * C + t] = out[5]  # noqa: F821
    if PARTNER_IS_PARTICLE:  # noqa: F821 (the geometry's)
        buf[_TJ0 * C + t] = out[6]  # noqa: F821
        buf[_TJ1 * C + t] = out[7]  # noqa: F821
        buf[_TJ2 * C + t] = out[8]  # noqa: F821
    buf[_FN * C + t] = out[9]  # noqa: F821


@template("inline")
def record_contact(buf, t, c, R):
    """Contact c's force on i and its contact point (column t) into row c of R = (touched,
    values): touched[c] = 1; values[c] = (force on i, contact point - x_i). The contact point
    of a particle pair is the laws' (``kinematics.contact_point_velocity``): at mid-overlap,
    r_i - delta/2 from i's centre along -n (on the surfaces a model displaced); with a
    partner without a radius (a wall, a membrane patch, a mesh triangle) it is the point
    of the partner's surface the geometry measured the overlap from: x_i - d."""
    C = CHUNK
    g = kinematics(buf, t)  # noqa: F821 (the geometry's)
    if MODEL_OFFSETS:  # noqa: F821
        si, sj = model_offsets(buf, t)  # noqa: F821
        g = offset_geometry(g, si, sj)
    arm = 1.0
    if PARTNER_IS_PARTICLE:  # noqa: F821 (the geometry's)
        arm = (g[5] - 0.5 * g[4]) / math.sqrt(g[3])
    values = R[1]
    values[c, 0] = buf[_FX * C + t]  # noqa: F821
    values[c, 1] = buf[_FY * C + t]  # noqa: F821
    values[c, 2] = buf[_FZ * C + t]  # noqa: F821
    values[c, 3] = -arm * g[0]
    values[c, 4] = -arm * g[1]
    values[c, 5] = -arm * g[2]
    R[0][c] = 1


@template("inline")
def chunk(c0, count, sel, G, M, X, params, k, history, update, dt, buf, R):
    """Gather, evaluate (vectorised) and scatter the selected candidates sel[c0:c0 + count]."""
    C = CHUNK
    for t in range(count):
        q = row(sel[c0 + t])
        c = contact_of(q, G)  # noqa: F821 (the geometry's)
        a, b = gather(buf, t, q, c, G)  # noqa: F821
        gather_law_columns(buf, t, params, a, b, history, c)  # noqa: F821 (the law's)
        if MODEL_COLUMNS:  # noqa: F821 (the model's)
            model_gather(buf, t, c, M)  # noqa: F821
        if N_INPUTS:  # noqa: F821
            i, j = bodies(q, c, G)  # noqa: F821
            gather_inputs(buf, t, X, i, j)  # noqa: F821
    for t in range(C):
        g = kinematics(buf, t)  # noqa: F821
        if MODEL_OFFSETS:  # noqa: F821
            si, sj = model_offsets(buf, t)  # noqa: F821
            g = offset_geometry(g, si, sj)
        store_outputs(buf, t, evaluate_law(buf, t, k, g, update, dt))  # noqa: F821
    for t in range(count):
        q = row(sel[c0 + t])
        c = contact_of(q, G)  # noqa: F821
        scatter(buf, t, q, c, G)  # noqa: F821
        if MODEL_COLUMNS:  # noqa: F821
            model_record(buf, t, c, M)  # noqa: F821
        scatter_history(buf, t, history, c)  # noqa: F821
        if RECORD:  # noqa: F821 (generated: kernels that record the contacts)
            record_contact(buf, t, c, R)


@template("kernel")
def contacts(G, M, X, params, consts, history, flags, update, dt, buf, sel, R=()):
    """Every touching candidate's law, forces scattered in candidate order (module docstring).
    Returns (touching contacts, model events)."""
    C = CHUNK
    k = load_constants(consts)  # noqa: F821
    begin(G)  # noqa: F821
    n = candidates(G)  # noqa: F821
    touched = buf[COLUMNS * C:]  # noqa: F821
    touching = 0
    events = 0
    m = 0
    reach = law_reach(consts)  # noqa: F821 (the law's; 0 without a reach)
    for k0 in range(0, n, BLOCK):
        k1 = min(k0 + BLOCK, n)
        for q in range(k0, k1):  # no dependence between candidates: their loads overlap
            c = contact_of(q, G)  # noqa: F821
            if LAW_REACH:  # noqa: F821 (the law's)
                touched[q - k0] = touches(q, c, G, model_reach(c, M) + reach)  # noqa: F821
            else:
                touched[q - k0] = touches(q, c, G, model_reach(c, M))  # noqa: F821
        for q in range(k0, k1):
            c = contact_of(q, G)  # noqa: F821
            touch = np.uint8(touched[q - k0])
            if flags[c] != touch:  # few: a contact began or ended
                if touch == 0:
                    reset_history(history, c)  # noqa: F821
                else:
                    events += model_began(q, c, G, M)  # noqa: F821
                flags[c] = touch
            model_visit(c, M)  # noqa: F821
            sel[m] = q
            m += np.int64(touch)
        c0 = 0
        while m - c0 >= C or (k1 == n and m > c0):
            count = min(C, m - c0)
            chunk(c0, count, sel, G, M, X, params, k, history, update, dt, buf, R)
            c0 += count
            touching += count
        for t in range(m - c0):
            sel[t] = sel[c0 + t]
        m -= c0
    return touching, events


def _columns_source(geometry: ModuleType, model: ModuleType) -> tuple[str, int]:
    """The output and model column numbers after the geometry's columns; the law's first."""
    out = geometry.GEOMETRY_COLUMNS
    names = ("_FX", "_FY", "_FZ", "_TI0", "_TI1", "_TI2", "_TJ0", "_TJ1", "_TJ2", "_FN")
    lines = [f"{name} = {out + q}" for q, name in enumerate(names)]
    model_first = out + len(names)
    lines.append(f"MODEL_COLUMN = {model_first}")
    return "\n".join(lines), model_first + model.MODEL_COLUMNS


def _reach_source(model: ModuleType, function: LawFunction) -> str:
    """``EXTENDED_TEST``: the geometry's overlap test adds a reach (the model's, the law's)."""
    return f"EXTENDED_TEST = {bool(model.MODEL_OFFSETS or function.reach is not None)}"


def contact_kernels(geometry: ModuleType, function: LawFunction,
                    model: ModuleType | None = None, extra: tuple = (),
                    record: bool = False) -> ModuleType:
    """The pipeline compiled for a geometry, a law function and a model (module docstring).

    `geometry`, `model` (default: ``systems.contact.no_model``) and `extra` (further
    template modules the geometry builds on, e.g. a rigid object's shape) are template
    modules; their ``@template`` functions and this module's are compiled together with
    the law's generated helpers. `record`: the kernel writes each touching contact's force
    and contact point into its argument ``R`` (module docstring). Every call with the same
    arguments returns the same module; numba caches it on disk.
    """
    model = model or no_model
    columns, law_first = _columns_source(geometry, model)
    source = "\n\n".join([columns, _reach_source(model, function), f"RECORD = {bool(record)}",
                            law_source(function, law_first)])
    modules = (sys.modules[__name__], *extra, geometry, model)
    tag = "__".join([geometry.__name__.rsplit(".", 1)[-1],
                     *(m.__name__.rsplit(".", 1)[-1] for m in extra),
                     model.__name__.rsplit(".", 1)[-1], function.tag]
                    + (["record"] if record else []))
    return specialised_module(modules, tag, {"law": function.fn}, source)


__all__ = ["contact_kernels"]
