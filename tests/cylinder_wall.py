"""A cylindrical wall as one more rigid-object kind: the contact pipeline's extension test.

Not a product feature: it shows that a new geometry is this module alone (a table,
a shape for ``systems.contact.rigid_objects``, a system class), with every law and
with MC-DEM, and no machinery copied. A cylinder is the surface at ``radius`` from
the axis through ``point`` along the unit ``axis``; particles live inside it
(``inside`` 1: a drum) or outside (0: a pillar). It translates at ``velocity`` and
spins about its axis at ``spin`` (rad/s, right-handed about ``axis``); its position
is not integrated here (a drum turning in place).
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ecs_dem.generated_kernels import template
from ecs_dem.jit import kernel
from ecs_dem.table import Field, Halo, Table
from ecs_dem.systems.contact.rigid_object_contacts import RigidObjectContacts

FIELDS = ("point", "axis", "radius", "inside", "velocity", "spin")
CYLINDER_FIELDS = (
    Field("point", np.float64, (3,), Halo.LOCAL, 0.0, "m", "a point on the axis"),
    Field("axis", np.float64, (3,), Halo.LOCAL, 0.0, "1", "unit axis"),
    Field("radius", np.float64, (), Halo.LOCAL, 0.0, "m", "radius of the surface"),
    Field("inside", np.int8, (), Halo.LOCAL, 1, "", "1: particles inside, 0: outside"),
    Field("velocity", np.float64, (3,), Halo.LOCAL, 0.0, "m/s", "translation velocity"),
    Field("spin", np.float64, (), Halo.LOCAL, 0.0, "rad/s", "angular velocity about the axis"),
    Field("species", np.int32, (), Halo.LOCAL, -1, "", "material, -1 for rigid"),
    Field("force", np.float64, (3,), Halo.SUM, 0.0, "N", "force of the particles on it"),
)


def add_cylinder(world, point, axis, radius, inside=True, velocity=(0.0, 0.0, 0.0), spin=0.0,
                 species=-1) -> int:
    """Add a cylinder (SI units); returns its row."""
    if "cylinders" not in world.tables:
        world.add_table(Table("cylinders", CYLINDER_FIELDS, capacity=4))
    axis = np.asarray(axis, dtype=np.float64)
    rows = world.cylinders.append(1, point=point, axis=axis / np.linalg.norm(axis),
                                  radius=radius, inside=int(inside), velocity=velocity,
                                  spin=spin, species=species)
    return rows.start


@template("inline")
def shape_normal(i, w, position, O):
    """The unit normal toward the particles at the surface point nearest row i's centre,
    and the centre's distance h from the surface along it (module docstring)."""
    point, axis, radius, inside = O[0], O[1], O[2], O[3]
    ax = axis[w, 0]
    ay = axis[w, 1]
    az = axis[w, 2]
    rx = position[i, 0] - point[w, 0]
    ry = position[i, 1] - point[w, 1]
    rz = position[i, 2] - point[w, 2]
    along = rx * ax + ry * ay + rz * az
    rx -= along * ax
    ry -= along * ay
    rz -= along * az
    rho = math.sqrt(rx * rx + ry * ry + rz * rz)
    if rho > 0.0:
        ux = rx / rho
        uy = ry / rho
        uz = rz / rho
    else:  # on the axis: any direction across it
        ux, uy, uz = (az, 0.0, -ax) if abs(ay) > 0.5 or abs(az) > 0.5 else (-ay, ax, 0.0)
        s = math.sqrt(ux * ux + uy * uy + uz * uz)
        ux /= s
        uy /= s
        uz /= s
    if inside[w]:
        return -ux, -uy, -uz, radius[w] - rho
    return ux, uy, uz, rho - radius[w]


@template("inline")
def shape_velocity(i, w, position, O):
    """Translation plus spin x (contact point - axis point) at the surface point."""
    point, axis, velocity, spin = O[0], O[1], O[4], O[5]
    nx, ny, nz, h = shape_normal(i, w, position, O)
    cx = position[i, 0] - h * nx - point[w, 0]
    cy = position[i, 1] - h * ny - point[w, 1]
    cz = position[i, 2] - h * nz - point[w, 2]
    s = spin[w]
    return (velocity[w, 0] + s * (axis[w, 1] * cz - axis[w, 2] * cy),
            velocity[w, 1] + s * (axis[w, 2] * cx - axis[w, 0] * cz),
            velocity[w, 2] + s * (axis[w, 0] * cy - axis[w, 1] * cx))


@kernel
def moved_within(O, then, limit):
    """Whether no surface point has moved more than `limit` (m) since `then` (same axis,
    radius and side; the axis shifted across itself by at most `limit`)."""
    point, axis, radius, inside = O[0], O[1], O[2], O[3]
    for w in range(point.shape[0]):
        if radius[w] != then[2][w] or inside[w] != then[3][w]:
            return False
        shift = 0.0
        along = 0.0
        for a in range(3):
            if axis[w, a] != then[1][w, a]:
                return False
            along += (point[w, a] - then[0][w, a]) * axis[w, a]
        for a in range(3):
            d = point[w, a] - then[0][w, a] - along * axis[w, a]
            shift += d * d
        if not math.sqrt(shift) <= limit:
            return False
    return True


class CylinderContacts(RigidObjectContacts):
    """Contacts of particles with the cylinders of the ``cylinders`` table."""

    shape = sys.modules[__name__]
    table_name = "cylinders"
    history_prefix = "cylinder_"
