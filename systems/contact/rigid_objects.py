"""Rigid objects (planes, cylinders, ...) as a geometry of the contact pipeline.

A rigid object is a surface every rank holds whole (a row of a small,
replicated table such as ``walls``), infinitely massive, moved by a
prescribed motion. What makes one object kind differ from another is only
its *shape* (a template module, e.g. ``systems.walls.plane``), which
supplies, for owned particle row i and object w of its table::

    shape_normal(i, w, position, O) -> (nx, ny, nz, h)

the unit normal of the surface at the point nearest i's centre, pointing
to the side where particles live, and h, the signed distance of the centre
from the surface along it (m); and::

    shape_velocity(i, w, position, O) -> (vx, vy, vz)

the velocity of the surface's material point there (m/s). ``O`` is the
shape's tuple of the object table's arrays. This module does the rest for
every shape: the near list, the candidates, the law's geometry, the
scatter, and the surface geometry MC-DEM needs (``separations``).

Geometry given to the law (``systems.contact.law``): the object is the
partner; d = h n from the surface to the centre, delta = r_i - h, r_j = 0,
R* = r_i, M* = m_i; v = v_i - the surface velocity; material pair
(the object's material, the particle's species). A centre on or behind the
surface (h <= 0, a particle pushed through) would make d vanish or point
the wrong way, and every law would then pull it further through (LAMMPS's
``fix wall/gran`` does): |d| is kept at least ``MIN_DISTANCE`` r_i along +n,
while delta keeps its true value, so such a particle is pushed back out
along +n by a force of its full overlap.

Candidates: the near list, built by ``build_near_list``: per object in
order, the owned rows (in row order) whose gap r_i - h exceeds ``-margin``
(``RigidObjectContacts`` keeps it valid: it is built again when a row or an
object has moved too far); contact c = row * n_objects + object (the rows of
the per-particle history fields). A row left out of the list is not
touching, and the build resets its history and flag, so the candidates
give the contacts a sweep over every row would, in the same order: the same
forces and history, bit for bit. A particle attached to an object
(``attached[i] == w``: a membrane's end ring on its platen) never touches it.

``G`` is the tuple::

    (near_rows, near_objects, count, n_objects, attached, position, velocity,
     angular_velocity, radius, mass, material, object_material, O, force, torque,
     object_force)

``object_force`` (n_objects, 3) receives the particles' force on each object.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.generated_kernels import template
from ecs_dem.jit import row

from ecs_dem.systems.contact.chunks import BLOCK, CHUNK

#: the partner is a rigid surface: no radius, no spin, no share of the force
PARTNER_IS_PARTICLE = False
#: a contact's |d| is at least this fraction of the particle's radius (module docstring)
MIN_DISTANCE = 1e-6
_DX, _DY, _DZ, _HH, _DELTA, _RI, _V0, _V1, _V2, _WI0, _WI1, _WI2, _MI = range(13)
GEOMETRY_COLUMNS = 13


@template("inline")
def candidates(G):
    return G[2]


@template("inline")
def contact_of(q, G):
    return row(G[0][q]) * row(G[3]) + row(G[1][q])


@template("inline")
def touches(q, c, G, reach):
    """1 if the particle of candidate q overlaps its object (r_i - h + reach > 0), else 0."""
    i = row(G[0][q])
    w = G[1][q]
    nx, ny, nz, h = shape_normal(i, w, G[5], G[12])  # noqa: F821 (the shape's)
    gap = G[8][i] - h
    if EXTENDED_TEST:  # noqa: F821 (the pipeline's: a model's or the law's reach)
        gap = gap + reach
    return np.uint8(gap > 0.0) & np.uint8(G[4][i] != w)


@template("inline")
def bodies(q, c, G):
    return np.int64(G[0][q]), np.int64(-1)


@template("inline")
def gather(buf, t, q, c, G):
    """d, |d|^2, the overlap, radius, relative velocity, spin and mass of candidate q into
    column t; returns the material pair (object, particle)."""
    position, velocity, angular_velocity, radius, mass = G[5], G[6], G[7], G[8], G[9]
    C = CHUNK
    i = row(G[0][q])
    w = G[1][q]
    nx, ny, nz, h = shape_normal(i, w, position, G[12])  # noqa: F821
    vx, vy, vz = shape_velocity(i, w, position, G[12])  # noqa: F821
    ri = radius[i]
    hd = max(h, MIN_DISTANCE * ri)
    buf[_DX * C + t] = hd * nx
    buf[_DY * C + t] = hd * ny
    buf[_DZ * C + t] = hd * nz
    buf[_HH * C + t] = hd * hd
    buf[_DELTA * C + t] = ri - h
    buf[_RI * C + t] = ri
    buf[_V0 * C + t] = velocity[i, 0] - vx
    buf[_V1 * C + t] = velocity[i, 1] - vy
    buf[_V2 * C + t] = velocity[i, 2] - vz
    buf[_WI0 * C + t] = angular_velocity[i, 0]
    buf[_WI1 * C + t] = angular_velocity[i, 1]
    buf[_WI2 * C + t] = angular_velocity[i, 2]
    buf[_MI * C + t] = mass[i]
    return G[11][w], G[10][i]


@template("inline")
def kinematics(buf, t):
    C = CHUNK
    ri = buf[_RI * C + t]
    return (buf[_DX * C + t], buf[_DY * C + t], buf[_DZ * C + t], buf[_HH * C + t],
            buf[_DELTA * C + t], ri, 0.0, ri, buf[_MI * C + t],
            buf[_V0 * C + t], buf[_V1 * C + t], buf[_V2 * C + t],
            buf[_WI0 * C + t], buf[_WI1 * C + t], buf[_WI2 * C + t], 0.0, 0.0, 0.0)


@template("inline")
def scatter(buf, t, q, c, G):
    """The force and torque on the particle into its row, the opposite force into its
    object's total."""
    force, torque, object_force = G[13], G[14], G[15]
    i = row(G[0][q])
    w = row(G[1][q])
    fx, fy, fz = add_to_particle(force, torque, i, buf, t)  # noqa: F821 (the pipeline's)
    object_force[w, 0] -= fx
    object_force[w, 1] -= fy
    object_force[w, 2] -= fz


@template("kernel")
def build_near_list(G, history, flags, margin, near_rows, near_objects):
    """The candidates (module docstring): per object, the owned rows whose gap r_i - h
    exceeds -margin (m), into near_rows, near_objects (capacity n_owned x n_objects); the
    history and flag of every contact left out are reset. Returns the count."""
    n_objects = G[3]
    position, radius, O = G[5], G[8], G[12]
    n = radius.shape[0]
    gap = np.empty(BLOCK)
    count = 0
    for w in range(n_objects):
        for i0 in range(0, n, BLOCK):
            i1 = min(i0 + BLOCK, n)
            for i in range(i0, i1):
                gap[i - i0] = radius[i] - shape_normal(i, w, position, O)[3]  # noqa: F821
            for i in range(i0, i1):  # branch-free append
                near = gap[i - i0] > -margin
                near_rows[count] = i
                near_objects[count] = w
                count += np.int64(near)
                c = i * n_objects + w
                if not near and flags[c]:
                    reset_history(history, c)  # noqa: F821 (the law's)
                    flags[c] = 0
    return count


@template("kernel")
def separations(G, normal, distance):
    """For every owned row i and object w: the unit vector from i's centre toward the
    surface (-n, into normal[i, w]) and the distance h of the centre from it (into
    distance[i, w]), m. MC-DEM's Eq. (1) places the contact points with them."""
    position, radius, O = G[5], G[8], G[12]
    for i in range(radius.shape[0]):
        for w in range(G[3]):
            nx, ny, nz, h = shape_normal(i, w, position, O)  # noqa: F821
            normal[i, w, 0] = -nx
            normal[i, w, 1] = -ny
            normal[i, w, 2] = -nz
            distance[i, w] = h
