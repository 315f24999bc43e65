"""Unit quaternions (w, x, y, z) as scalars inside kernels: q maps body-frame vectors to the
space frame, R(q) v = v + 2 w (u x v) + 2 u x (u x v) with u = (x, y, z)."""
from __future__ import annotations

from ecs_dem.jit import inline


@inline
def rotate(w, x, y, z, v0, v1, v2):
    """R(q) v."""
    t0 = 2.0 * (y * v2 - z * v1)
    t1 = 2.0 * (z * v0 - x * v2)
    t2 = 2.0 * (x * v1 - y * v0)
    return (v0 + w * t0 + (y * t2 - z * t1),
            v1 + w * t1 + (z * t0 - x * t2),
            v2 + w * t2 + (x * t1 - y * t0))


@inline
def rotate_back(w, x, y, z, v0, v1, v2):
    """R(q)^T v (space frame -> body frame)."""
    return rotate(w, -x, -y, -z, v0, v1, v2)


@inline
def multiply(a0, a1, a2, a3, b0, b1, b2, b3):
    """The product a b (apply b first, then a)."""
    return (a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3,
            a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
            a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1,
            a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0)
