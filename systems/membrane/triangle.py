"""A membrane triangle's normal, shared by the kernels that need its area or orientation."""
from __future__ import annotations

from ecs_dem.jit import inline


@inline
def triangle_normal(position, a, b, c):
    """N = (x_b - x_a) x (x_c - x_a) of triangle (a, b, c), as (N_x, N_y, N_z).

    |N| is twice the area (m^2); N points along the winding's normal (outward for a
    membrane's triangles, components.membranes).
    """
    p0 = position[b, 0] - position[a, 0]
    p1 = position[b, 1] - position[a, 1]
    p2 = position[b, 2] - position[a, 2]
    q0 = position[c, 0] - position[a, 0]
    q1 = position[c, 1] - position[a, 1]
    q2 = position[c, 2] - position[a, 2]
    return p1 * q2 - p2 * q1, p2 * q0 - p0 * q2, p0 * q1 - p1 * q0
