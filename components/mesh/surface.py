"""Triangle surface meshes: the input of membranes (vertices and triangles, nothing else).

A :class:`Mesh` is plain geometry: ``vertices`` (n, 3) float64 in metres and
``triangles`` (m, 3) int64 indices into them. Winding: counter-clockwise seen
from the side the mesh calls outside (for a closed mesh, its exterior), so
the normal (x1 - x0) x (x2 - x0) points outward (docs/physics.md,
Confining stress and Membrane bending).

Sources: ``components.mesh.generators`` (flat sheet, cylinder, icosphere),
``components.mesh.io`` (STL, OBJ and the other formats meshio reads),
``components.mesh.validation`` (merging, manifold and winding checks, before a
mesh becomes a membrane).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecs_dem.errors import InputError


@dataclass(frozen=True)
class Mesh:
    """Vertices (n, 3) [m] and triangles (m, 3) (vertex indices, outward winding)."""

    vertices: np.ndarray
    triangles: np.ndarray

    def __post_init__(self):
        v = np.ascontiguousarray(self.vertices, dtype=np.float64)
        t = np.ascontiguousarray(self.triangles, dtype=np.int64)
        if v.ndim != 2 or v.shape[1] != 3:
            raise InputError(f"mesh vertices must have shape (n, 3), got {v.shape}")
        if t.ndim != 2 or t.shape[1] != 3:
            raise InputError(f"mesh triangles must have shape (m, 3), got {t.shape}")
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "triangles", t)

    @property
    def normals(self) -> np.ndarray:
        """Un-normalised triangle normals (x1 - x0) x (x2 - x0), |n| = 2 area."""
        x = self.vertices[self.triangles]
        return np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])

    @property
    def areas(self) -> np.ndarray:
        return 0.5 * np.linalg.norm(self.normals, axis=1)

    def signed_volume(self) -> float:
        """Volume enclosed by a closed mesh (positive for outward winding), m^3."""
        x = self.vertices[self.triangles]
        return float(np.einsum("ij,ij->i", x[:, 0], np.cross(x[:, 1], x[:, 2])).sum() / 6.0)

    def translated(self, shift) -> "Mesh":
        return Mesh(self.vertices + np.asarray(shift, dtype=np.float64), self.triangles)

    def scaled(self, factor: float) -> "Mesh":
        return Mesh(self.vertices * float(factor), self.triangles)


__all__ = ["Mesh"]
