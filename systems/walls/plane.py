"""The plane, as the shape of a rigid object (``systems.contact.rigid_objects``).

A wall is the plane through ``point`` with unit ``normal`` pointing into the
particle region (``components.walls``); it translates at ``velocity``. ``O``
is ``(point, normal, velocity)`` of the walls table. For particle row i and
wall w: n = normal[w], h = (x_i - point[w]) . n, and the surface moves at
velocity[w] everywhere.
"""
from __future__ import annotations

from ecs_dem.generated_kernels import template
from ecs_dem.jit import kernel

#: the wall table's fields the shape reads, in the order of ``O``
FIELDS = ("point", "normal", "velocity")


@template("inline")
def shape_normal(i, w, position, O):
    point, normal = O[0], O[1]
    nx = normal[w, 0]
    ny = normal[w, 1]
    nz = normal[w, 2]
    h = ((position[i, 0] - point[w, 0]) * nx + (position[i, 1] - point[w, 1]) * ny
         + (position[i, 2] - point[w, 2]) * nz)
    return nx, ny, nz, h


@template("inline")
def shape_velocity(i, w, position, O):
    velocity = O[2]
    return velocity[w, 0], velocity[w, 1], velocity[w, 2]


@kernel
def moved_within(O, then, limit):
    """Whether every wall is within `limit` (m) of where it was, along its normal, and has not
    turned: `then` holds the arrays of ``O`` at that time (a point's move along the plane
    changes no distance)."""
    point, normal = O[0], O[1]
    for w in range(point.shape[0]):
        moved = 0.0
        for a in range(3):
            if normal[w, a] != then[1][w, a]:
                return False
            moved += (point[w, a] - then[0][w, a]) * normal[w, a]
        if not abs(moved) <= limit:
            return False
    return True
