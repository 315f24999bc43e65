"""Grain-mesh-wall contacts as a geometry of the contact pipeline (``systems.contact.pipeline``).

Compiled with any law by ``contact_kernels``, with the template module
``systems.contact.triangle_selection`` (the per-candidate geometry, the Table 1
selection and the hand-over of springs that membrane patches use too):

* contact point q: the point of the triangle closest to the grain's centre,
  barycentric weights w_k; d = x_grain - q, delta = r - |d|, normal d^ (a
  grain on either side of the surface is pushed away from it); rj = 0,
  R* = r, and the lever radius r - delta/2 so that a law placing the
  contact at mid-overlap (Hertz-Mindlin) acts at q itself;
* the wall is rigid and infinitely massive: M* = m_grain; material pair
  (the wall's species, or the rigid material for -1, the grain's species);
* the wall's velocity at q: the vertices' velocities interpolated with the
  w_k (exact for a rigid motion, which is linear in position);
* the reaction -F goes to the wall's ``force`` and its moment (q - c) x (-F)
  about the wall's reference point c to its ``torque``; the triangle gets
  one contact, |F_n v_n| dt and |F_t . v_t| dt (v: the grain's surface
  point relative to the wall at q; J) in its ``step_contacts``,
  ``step_normal_work`` and ``step_friction_work`` (owned or ghost rows,
  summed onto the owner by the engine), when the step advances history.

``G`` is::

    (pair_i, pair_t, tri_rows, tri_wall, wall_material, geometry, selected, position,
     velocity, angular_velocity, radius, mass, species, force, torque, vertex_velocity,
     wall_force, wall_torque, reference, step_contacts, step_normal_work,
     step_friction_work, work_dt)

``work_dt`` is the time step when history advances, else 0 (the set-up pass
does no work).
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.generated_kernels import template
from ecs_dem.jit import row

from ecs_dem.systems.contact.chunks import CHUNK
from ecs_dem.systems.contact.triangle_selection import (  # noqa: F401 (the template's globals)
    GEOMETRY_WIDTH, _GW0, _GW1, _GW2, _GX, _GY, _GZ, _GDELTA)

#: the partner is a rigid surface: no radius, no spin, no share of the force
PARTNER_IS_PARTICLE = False
# scratch columns of a chunk
_DX, _DY, _DZ, _DELTA, _RI, _MI, _V0, _V1, _V2, _WI0, _WI1, _WI2 = range(12)
GEOMETRY_COLUMNS = 12


@template("inline")
def touches(q, c, G, reach):
    """The selection of ``prepare``: a selected candidate is a contact."""
    return G[6][q]


@template("inline")
def bodies(q, c, G):
    return np.int64(G[0][q]), np.int64(-1)


@template("inline")
def gather(buf, t, q, c, G):
    """d, the overlap, the grain's radius and mass, its velocity relative to the wall at the
    contact point and its spin into column t; returns the material pair (wall, grain)."""
    pair_i, pair_t, tri_rows, tri_wall, wall_material, geometry = G[:6]
    velocity, angular_velocity, radius, mass, species = G[8], G[9], G[10], G[11], G[12]
    vertex_velocity = G[15]
    C = CHUNK
    i = row(pair_i[c])
    tr = row(pair_t[c])
    w0 = geometry[c, _GW0]
    w1 = geometry[c, _GW1]
    w2 = geometry[c, _GW2]
    a = row(tri_rows[tr, 0])
    b = row(tri_rows[tr, 1])
    d = row(tri_rows[tr, 2])
    buf[_DX * C + t] = geometry[c, _GX]
    buf[_DY * C + t] = geometry[c, _GY]
    buf[_DZ * C + t] = geometry[c, _GZ]
    buf[_DELTA * C + t] = geometry[c, _GDELTA]
    buf[_RI * C + t] = radius[i]
    buf[_MI * C + t] = mass[i]
    for ax in range(3):
        buf[(_V0 + ax) * C + t] = velocity[i, ax] - (
            w0 * vertex_velocity[a, ax] + w1 * vertex_velocity[b, ax]
            + w2 * vertex_velocity[d, ax])
        buf[(_WI0 + ax) * C + t] = angular_velocity[i, ax]
    return wall_material[tri_wall[tr]], species[i]


@template("inline")
def kinematics(buf, t):
    """The law's geometry of column t: a rigid partner (r_j = 0, M* = m_i), R* = r_i, lever
    radius r_i - delta/2 (the contact point at q)."""
    C = CHUNK
    delta = buf[_DELTA * C + t]
    ri = buf[_RI * C + t]
    x = buf[_DX * C + t]
    y = buf[_DY * C + t]
    z = buf[_DZ * C + t]
    return (x, y, z, x * x + y * y + z * z, delta, ri - 0.5 * delta, 0.0, ri,
            buf[_MI * C + t], buf[_V0 * C + t], buf[_V1 * C + t], buf[_V2 * C + t],
            buf[_WI0 * C + t], buf[_WI1 * C + t], buf[_WI2 * C + t], 0.0, 0.0, 0.0)


@template("inline")
def scatter(buf, t, q, c, G):
    """The force and torque on the grain; the reaction and its moment about the reference
    point into the wall's totals; the contact and its work into the triangle's row."""
    pair_i, pair_t, tri_wall, position = G[0], G[1], G[3], G[7]
    force, torque, wall_force, wall_torque, reference = G[13], G[14], G[16], G[17], G[18]
    C = CHUNK
    i = row(pair_i[c])
    tr = row(pair_t[c])
    w = row(tri_wall[tr])
    fx, fy, fz = add_to_particle(force, torque, i, buf, t)  # noqa: F821 (the pipeline's)
    dx = buf[_DX * C + t]
    dy = buf[_DY * C + t]
    dz = buf[_DZ * C + t]
    rx = position[i, 0] - dx - reference[w, 0]
    ry = position[i, 1] - dy - reference[w, 1]
    rz = position[i, 2] - dz - reference[w, 2]
    wall_force[w, 0] -= fx
    wall_force[w, 1] -= fy
    wall_force[w, 2] -= fz
    wall_torque[w, 0] -= ry * fz - rz * fy
    wall_torque[w, 1] -= rz * fx - rx * fz
    wall_torque[w, 2] -= rx * fy - ry * fx
    work_dt = G[22]
    if work_dt > 0.0:
        dist = math.sqrt(dx * dx + dy * dy + dz * dz)
        nx = dx / dist
        ny = dy / dist
        nz = dz / dist
        wx = buf[_WI0 * C + t]
        wy = buf[_WI1 * C + t]
        wz = buf[_WI2 * C + t]
        # the grain's surface point at q relative to the wall: v - |d| w x n
        vx = buf[_V0 * C + t] - dist * (wy * nz - wz * ny)
        vy = buf[_V1 * C + t] - dist * (wz * nx - wx * nz)
        vz = buf[_V2 * C + t] - dist * (wx * ny - wy * nx)
        fn = fx * nx + fy * ny + fz * nz
        vn = vx * nx + vy * ny + vz * nz
        ft = (fx - fn * nx) * (vx - vn * nx) + (fy - fn * ny) * (vy - vn * ny) + (
            fz - fn * nz) * (vz - vn * nz)
        G[19][tr] += 1.0
        G[20][tr] += abs(fn * vn) * work_dt
        G[21][tr] += abs(ft) * work_dt
