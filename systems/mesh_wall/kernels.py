"""Grain-mesh-wall contacts as a geometry of the contact pipeline (``systems.contact.pipeline``).

Compiled with any law by ``contact_kernels``, with the template module
``systems.contact.triangle_selection`` (the per-candidate geometry, the Table 1
selection, the hand-over of springs, ``touches``, ``bodies``, ``kinematics``
and most of ``gather``, which membrane patches use too):

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


from ecs_dem.generated_kernels import template
from ecs_dem.jit import row

from ecs_dem.systems.contact.chunks import CHUNK
from ecs_dem.systems.contact.triangle_selection import (  # noqa: F401 (the template's globals)
    GEOMETRY_COLUMNS, GEOMETRY_WIDTH, _DX, _DY, _DZ, _MSTAR, _V0, _V1, _V2, _WI0, _WI1, _WI2)

#: the partner is a rigid surface: no radius, no spin, no share of the force
PARTNER_IS_PARTICLE = False


@template("inline")
def gather(buf, t, q, c, G):
    """d, the overlap, the grain's radius and mass (M*), its velocity relative to the wall at
    the contact point and its spin into column t; returns the material pair (wall, grain)."""
    pair_i, pair_t, tri_rows, tri_wall, wall_material, geometry = G[:6]
    i = row(pair_i[c])
    tr = row(pair_t[c])
    gather_surface(buf, t, c, geometry, tri_rows, tr, i, G[8], G[9], G[10],  # noqa: F821
                   G[15])
    buf[_MSTAR * CHUNK + t] = G[11][i]
    return wall_material[tri_wall[tr]], G[12][i]


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
