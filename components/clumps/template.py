"""Clump templates: the pebbles of a rigid grain in its body frame, and its mass properties.

A :class:`ClumpTemplate` holds the pebbles' centres (``offsets``, m) and
``radii`` in the *body frame*: origin at the centre of mass, axes the
principal axes of inertia (a right-handed frame, moments in increasing
order), and the shape's volume and principal second moments per unit
density, so that a body of density rho has mass rho V and principal moments
rho J. Materials come with the species when clumps are added
(``components.clumps.bodies.add_clumps``).

``clump_template`` builds one from pebble centres and radii given in any
frame, or from a closed surface (then the pebbles fill it:
``components.clumps.filling``); it moves them to the centre of mass and
rotates them onto the principal axes, and keeps that rotation
(``given_orientation``: the quaternion that puts the template back as it was
given). Quaternions are (w, x, y, z); q rotates body-frame vectors into the
space frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ecs_dem.errors import InputError

from ..mesh.surface import Mesh
from . import mass_properties as properties
from .filling import Filling, closed_mesh, fill_mesh

METHODS = ("spheres", "voxels", "surface")


def quaternion_from_matrix(m: np.ndarray) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of a proper rotation matrix (Shepperd's method)."""
    m = np.asarray(m, dtype=np.float64)
    t = np.trace(m)
    k = int(np.argmax([t, m[0, 0], m[1, 1], m[2, 2]]))
    if k == 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif k == 1:
        s = 2.0 * np.sqrt(1.0 + 2 * m[0, 0] - t)
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif k == 2:
        s = 2.0 * np.sqrt(1.0 + 2 * m[1, 1] - t)
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + 2 * m[2, 2] - t)
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    return q / np.linalg.norm(q) * (1.0 if q[0] >= 0 else -1.0)


def rotation_matrix(q) -> np.ndarray:
    """The rotation matrix of quaternions (..., 4) (w, x, y, z), normalised first: (..., 3, 3)."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def principal_frame(second_moment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Principal moments per unit density (increasing) and the right-handed rotation whose
    columns are the principal axes, from a second moment S about the centre."""
    inertia = np.trace(second_moment) * np.eye(3) - second_moment
    moments, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    return moments, axes


@dataclass(frozen=True)
class ClumpTemplate:
    """Pebbles in the body frame and the shape's mass properties per unit density."""

    name: str
    offsets: np.ndarray          # (n, 3) [m], body frame
    radii: np.ndarray            # (n,) [m]
    volume: float                # [m^3]
    moments: np.ndarray          # (3,) principal second moments per unit density [m^5]
    method: str                  # how the mass properties were found (METHODS)
    given_orientation: np.ndarray = field(default_factory=lambda: np.array([1.0, 0, 0, 0]))
    given_centre: np.ndarray = field(default_factory=lambda: np.zeros(3))
    filling: Filling | None = None

    @property
    def count(self) -> int:
        return int(self.radii.size)

    @property
    def anchor(self) -> int:
        """The pebble nearest the centre of mass (lowest index on a tie)."""
        return int(np.argmin(np.round((self.offsets**2).sum(axis=1), 14)))

    @property
    def reach(self) -> float:
        """The largest distance from the anchor pebble's centre to another's [m]."""
        return float(np.linalg.norm(self.offsets - self.offsets[self.anchor], axis=1).max())

    @property
    def extent(self) -> float:
        """The largest distance from the centre of mass to a pebble's surface [m]."""
        return float((np.linalg.norm(self.offsets, axis=1) + self.radii).max())

    def mass(self, density: float) -> float:
        return float(density) * self.volume

    def principal_moments(self, density: float) -> np.ndarray:
        return float(density) * self.moments


def clump_template(centres=None, radii=None, *, surface: Mesh | None = None,
                   mass_properties: str | None = None, voxel: float | None = None,
                   name: str = "clump", **fill) -> ClumpTemplate:
    """A template from pebbles or from a closed surface.

    Parameters
    ----------
    centres, radii : (n, 3), (n,) float [m]
        Pebbles in any frame.
    surface : Mesh
        A closed surface; without pebbles they fill it (``fill_mesh(surface, **fill)``
        with pebbles=, tolerance=, min_radius=, voxel=).
    mass_properties : str
        "spheres" (sum over non-overlapping pebbles, exact; the default for pebbles),
        "voxels" (the union of the pebbles on a grid of side `voxel`), or "surface" (the
        exact integrals of the closed surface; the default with a surface).
    """
    filling = None
    if surface is not None:
        surface = closed_mesh(surface)
        if centres is None:
            filling = fill_mesh(surface, voxel=voxel, **fill)
            centres, radii = filling.centres, filling.radii
    elif fill:
        raise InputError(f"clump: {sorted(fill)} apply to filling a surface; give surface=")
    if centres is None or radii is None:
        raise InputError("clump: give pebble centres and radii, or a closed surface to fill")
    method = mass_properties or ("surface" if surface is not None else "spheres")
    if method not in METHODS:
        raise InputError(f"clump: mass_properties '{method}' is not one of {METHODS}")
    if method == "spheres":
        shape = properties.of_spheres(centres, radii)
    elif method == "voxels":
        shape = properties.of_voxels(centres, radii, voxel)
    else:
        if surface is None:
            raise InputError("clump: mass_properties='surface' needs the closed surface "
                             "(surface=)")
        shape = properties.of_closed_surface(surface.vertices, surface.triangles)
    c, r = properties._pebbles(centres, radii)
    if not (np.isfinite(shape.volume) and shape.volume > 0):
        raise InputError(f"clump '{name}': the template has zero volume, hence zero mass; give "
                         "pebbles with positive radii or a closed surface enclosing a volume")
    moments, axes = principal_frame(shape.second_moment)
    if not np.all(moments > 0):
        raise InputError(f"clump '{name}': principal moments {moments.tolist()} are not all "
                         "positive")
    offsets = (c - shape.centre) @ axes
    return ClumpTemplate(name=name, offsets=offsets, radii=r, volume=shape.volume,
                         moments=moments, method=method,
                         given_orientation=quaternion_from_matrix(axes),
                         given_centre=np.asarray(shape.centre, dtype=np.float64),
                         filling=filling)


__all__ = ["ClumpTemplate", "clump_template", "principal_frame", "quaternion_from_matrix",
           "rotation_matrix", "METHODS"]
