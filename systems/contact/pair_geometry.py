"""Particle pairs as a geometry of the contact pipeline (``systems.contact.pipeline``).

Candidates: the rows of a pair list (``pairs`` or ``pair_mirrors``); the
contact index is the pair row. ``G`` is the tuple::

    (pair_i, pair_j, position, velocity, angular_velocity, radius, mass, material, fixed,
     home, force, torque, zero_force, zero_torque)

Rows i, j of ``pair_i``, ``pair_j`` index the particle arrays (owned and
ghost rows); ``material`` (species per row) indexes the law's parameters.

Geometry given to the law (``systems.contact.law``): d = x_i - x_j,
delta = (r_i + r_j) - |d|, R* = r_i r_j / (r_i + r_j), M* = m_i m_j /
(m_i + m_j), or the free particle's mass against a fixed one; v = v_i - v_j.
Forces go to the rows ``home[i]`` and ``home[j]`` (``home``: one int32 per
particle row, -1 for a row that takes no share; ``Domain.home_rows``): the
force on i to home[i], its opposite and the partner's torque to home[j].
``begin`` sets the first ``zero_force`` (``zero_torque``) rows of ``force``
(``torque``) to zero: a system that sets those fields gives its owned row
count (``System.assigns_owned``), saving the scheduler's zeroing pass; 0 adds
to what is there.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.generated_kernels import template
from ecs_dem.jit import row

from ecs_dem.systems.contact.chunks import CHUNK

#: the partner is a particle: a radius, a spin, a share of the force and a surface of its own
PARTNER_IS_PARTICLE = True
# scratch columns of the gathered geometry
_DX, _DY, _DZ, _RI, _RJ, _V0, _V1, _V2 = 0, 1, 2, 3, 4, 5, 6, 7
_WI0, _WI1, _WI2, _WJ0, _WJ1, _WJ2, _MI, _MJ, _FI, _FJ = 8, 9, 10, 11, 12, 13, 14, 15, 16, 17
GEOMETRY_COLUMNS = 18


@template("inline")
def begin(G):
    force, torque, zero_force, zero_torque = G[10], G[11], G[12], G[13]
    force[:zero_force] = 0.0
    torque[:zero_torque] = 0.0


@template("inline")
def touches(q, c, G, reach):
    """1 if pair q overlaps, |x_i - x_j| < r_i + r_j (+ reach), else 0."""
    pair_i, pair_j, position, radius = G[0], G[1], G[2], G[5]
    i = row(pair_i[q])
    j = row(pair_j[q])
    dx = position[i, 0] - position[j, 0]
    dy = position[i, 1] - position[j, 1]
    dz = position[i, 2] - position[j, 2]
    rsum = radius[i] + radius[j]
    if EXTENDED_TEST:  # noqa: F821 (the pipeline's: a model's or the law's reach)
        rsum = rsum + reach
        return np.uint8(rsum > 0.0 and rsum * rsum > dx * dx + dy * dy + dz * dz)
    return np.uint8(rsum * rsum > dx * dx + dy * dy + dz * dz)


@template("inline")
def bodies(q, c, G):
    return np.int64(G[0][q]), np.int64(G[1][q])


@template("inline")
def gather(buf, t, q, c, G):
    """Separation, velocities, radii, masses and fixed flags of pair q into column t."""
    pair_i, pair_j, position, velocity, angular_velocity = G[0], G[1], G[2], G[3], G[4]
    radius, mass, material, fixed = G[5], G[6], G[7], G[8]
    C = CHUNK
    i = row(pair_i[q])
    j = row(pair_j[q])
    buf[_DX * C + t] = position[i, 0] - position[j, 0]
    buf[_DY * C + t] = position[i, 1] - position[j, 1]
    buf[_DZ * C + t] = position[i, 2] - position[j, 2]
    buf[_RI * C + t] = radius[i]
    buf[_RJ * C + t] = radius[j]
    buf[_V0 * C + t] = velocity[i, 0] - velocity[j, 0]
    buf[_V1 * C + t] = velocity[i, 1] - velocity[j, 1]
    buf[_V2 * C + t] = velocity[i, 2] - velocity[j, 2]
    buf[_WI0 * C + t] = angular_velocity[i, 0]
    buf[_WI1 * C + t] = angular_velocity[i, 1]
    buf[_WI2 * C + t] = angular_velocity[i, 2]
    buf[_WJ0 * C + t] = angular_velocity[j, 0]
    buf[_WJ1 * C + t] = angular_velocity[j, 1]
    buf[_WJ2 * C + t] = angular_velocity[j, 2]
    buf[_MI * C + t] = mass[i]
    buf[_MJ * C + t] = mass[j]
    buf[_FI * C + t] = 1.0 if fixed[i] else 0.0
    buf[_FJ * C + t] = 1.0 if fixed[j] else 0.0
    return material[i], material[j]


@template("inline")
def kinematics(buf, t):
    """The law's geometry of column t (module docstring)."""
    C = CHUNK
    dx = buf[_DX * C + t]
    dy = buf[_DY * C + t]
    dz = buf[_DZ * C + t]
    ri = buf[_RI * C + t]
    rj = buf[_RJ * C + t]
    rsq = dx * dx + dy * dy + dz * dz
    rsum = ri + rj
    mi = buf[_MI * C + t]
    mj = buf[_MJ * C + t]
    mstar = mi * mj / (mi + mj)
    if buf[_FJ * C + t] != 0.0:
        mstar = mi
    if buf[_FI * C + t] != 0.0:
        mstar = mj
    return (dx, dy, dz, rsq, rsum - math.sqrt(rsq), ri, rj, ri * rj / rsum, mstar,
            buf[_V0 * C + t], buf[_V1 * C + t], buf[_V2 * C + t],
            buf[_WI0 * C + t], buf[_WI1 * C + t], buf[_WI2 * C + t],
            buf[_WJ0 * C + t], buf[_WJ1 * C + t], buf[_WJ2 * C + t])


@template("inline")
def scatter(buf, t, q, c, G):
    """The force on i into row home[i], its opposite and j's torque into home[j].

    The arrays are indexed in G where they are written, not bound to names first: an
    array name alive across the branches costs an atomic reference count per contact
    (numba cannot prune it), which once took 60 % of this kernel's time
    (``bench/kernel_refcounts.py``)."""
    C = CHUNK
    i = row(G[0][q])
    j = row(G[1][q])
    hi = G[9][i]
    hj = G[9][j]
    fx = buf[_FX * C + t]  # noqa: F821 (the pipeline's columns)
    fy = buf[_FY * C + t]  # noqa: F821
    fz = buf[_FZ * C + t]  # noqa: F821
    if hi >= 0:
        h = row(hi)
        G[10][h, 0] += fx
        G[10][h, 1] += fy
        G[10][h, 2] += fz
        G[11][h, 0] += buf[_TI0 * C + t]  # noqa: F821
        G[11][h, 1] += buf[_TI1 * C + t]  # noqa: F821
        G[11][h, 2] += buf[_TI2 * C + t]  # noqa: F821
    if hj >= 0:
        h = row(hj)
        G[10][h, 0] -= fx
        G[10][h, 1] -= fy
        G[10][h, 2] -= fz
        G[11][h, 0] += buf[_TJ0 * C + t]  # noqa: F821
        G[11][h, 1] += buf[_TJ1 * C + t]  # noqa: F821
        G[11][h, 2] += buf[_TJ2 * C + t]  # noqa: F821
