"""Mesh validation before a mesh becomes a membrane (minimal; being completed on branch mesh)."""
from __future__ import annotations

from ecs_dem.errors import InputError

from .membrane_topology import edge_map
from .mesh import Mesh


class MeshError(InputError):
    """A mesh that cannot become a membrane; the message names the defect and the fix."""


def validate_mesh(mesh: Mesh, merge_tolerance: float | None = None) -> Mesh:
    try:
        edge_map(mesh.triangles)
    except ValueError as exc:
        raise MeshError(f"mesh: {exc}") from None
    return mesh
