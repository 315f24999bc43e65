"""Kinematics the contact laws share: the contact point's relative velocity and the tangent plane.

Every law receives the geometry tuple of ``systems.contact.law``; the laws
that put the contact point at mid-overlap (Hertz-Mindlin, saturated
friction) take its relative velocity from :func:`contact_point_velocity`, and
every law with a tangential spring turns it with the contact frame by
:func:`rotated_into_plane`.
"""
from __future__ import annotations

import math

from ecs_dem.jit import inline


@inline
def contact_point_velocity(g):
    """(nx, ny, nz, vx, vy, vz, ai, aj) of a contact with geometry tuple g
    (``systems.contact.law``): the unit normal n = d / |d| (from the partner to i), the
    velocity of i's contact point relative to the partner's, v_i - v_j - (a_i w_i +
    a_j w_j) x n (m/s), and the lever arms a_i = r_i - delta/2, a_j = r_j - delta/2 (m):
    the contact point at mid-overlap, a_i along -n from i's centre and a_j along +n from
    the partner's."""
    dx, dy, dz, rsq, delta, ri, rj, rstar, mstar, v0, v1, v2, wi0, wi1, wi2, wj0, wj1, wj2 = g
    r = math.sqrt(rsq)
    nx = dx / r
    ny = dy / r
    nz = dz / r
    ai = ri - 0.5 * delta
    aj = rj - 0.5 * delta
    cx = ai * wi0 + aj * wj0
    cy = ai * wi1 + aj * wj1
    cz = ai * wi2 + aj * wj2
    return (nx, ny, nz, v0 - (cy * nz - cz * ny), v1 - (cz * nx - cx * nz),
            v2 - (cx * ny - cy * nx), ai, aj)


@inline
def rotated_into_plane(s0, s1, s2, nx, ny, nz):
    """A history vector (three scalars) projected onto the plane normal to n, keeping its
    length; returns the new vector.

    The contact frame turns as the particles roll past each other; the
    tangential spring must follow it without changing its stored energy
    (Hertz-Mindlin's convention, docs: physics and conventions).
    """
    sn = s0 * nx + s1 * ny + s2 * nz
    if sn != 0.0:
        old2 = s0 * s0 + s1 * s1 + s2 * s2
        s0 -= sn * nx
        s1 -= sn * ny
        s2 -= sn * nz
        new2 = s0 * s0 + s1 * s1 + s2 * s2
        if new2 > 0.0:
            s = math.sqrt(old2 / new2)
            s0 *= s
            s1 *= s
            s2 *= s
    return s0, s1, s2
