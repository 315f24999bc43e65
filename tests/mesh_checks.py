"""Mesh measures the mesh tests derive themselves, independent of components.mesh.validation.

Import as ``mesh_checks`` (tests/ is on the path).
"""
from __future__ import annotations

import numpy as np


def edge_lengths(mesh) -> np.ndarray:
    """(m, 3) lengths of edges v0v1, v1v2, v2v0 of every triangle."""
    x = mesh.vertices[mesh.triangles]
    return np.linalg.norm(np.roll(x, -1, axis=1) - x, axis=2)


def angles_deg(mesh) -> np.ndarray:
    """(m, 3) interior angles at v0, v1, v2 of every triangle, degrees (law of cosines)."""
    x = mesh.vertices[mesh.triangles]
    out = np.empty(mesh.triangles.shape)
    for k in range(3):
        u = x[:, (k + 1) % 3] - x[:, k]
        w = x[:, (k + 2) % 3] - x[:, k]
        cos = np.einsum("ij,ij->i", u, w) / np.linalg.norm(u, axis=1) / np.linalg.norm(w, axis=1)
        out[:, k] = np.degrees(np.arccos(np.clip(cos, -1, 1)))
    return out


def edge_use(mesh) -> dict:
    """{(low, high): number of triangles using that edge}."""
    count = {}
    for tri in mesh.triangles.tolist():
        for k in range(3):
            key = tuple(sorted((tri[k], tri[(k + 1) % 3])))
            count[key] = count.get(key, 0) + 1
    return count


def euler_characteristic(mesh) -> int:
    """V - E + F over the vertices the triangles use."""
    used = len(np.unique(mesh.triangles))
    return used - len(edge_use(mesh)) + len(mesh.triangles)


def open_edges(mesh) -> list:
    """Edges used by one triangle only (sorted vertex pairs)."""
    return [e for e, n in edge_use(mesh).items() if n == 1]


def unit_normals(mesh) -> np.ndarray:
    x = mesh.vertices[mesh.triangles]
    n = np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])
    return n / np.linalg.norm(n, axis=1)[:, None]


def cyclic(rows) -> set:
    """Triangles as a set of rotation-normalised tuples: equal sets = same triangles, same winding."""
    out = set()
    for tri in np.asarray(rows).tolist():
        k = tri.index(min(tri))
        out.add(tuple(tri[k:] + tri[:k]))
    return out
