"""Hinges of a triangle mesh as the membrane's bending needs them, and their angles.

(Edges, neighbours and boundary loops of any mesh: components.mesh.validation.)

Pure functions of the triangle array (m, 3) (vertex indices, consistently
wound). Conventions of docs/physics.md (Membrane bending): a hinge
on an interior edge has wing vertices x1, x2 and the shared edge from x3 to
x4, ordered so that the first triangle is (x1, x3, x4) and the second
(x2, x4, x3) in their winding; then n1 = (x1 - x3) x (x1 - x4) and
n2 = (x2 - x4) x (x2 - x3) (Goetz & Poeschel Eqs. (8)-(9)) are the outward
normals of the two triangles.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EdgeMap:
    """The unique edges of a consistently wound triangle set and the triangles beside them.

    ``edges`` (k, 2): undirected edges (lo, hi), lo < hi; ``triangles`` (k, 2):
    the triangle that runs the edge as lo -> hi in its winding, and the one
    that runs it as hi -> lo (-1 where none); ``local`` (k, 2): the edge's
    position 0, 1, 2 (v0v1, v1v2, v2v0) in those triangles.
    """

    edges: np.ndarray
    triangles: np.ndarray
    local: np.ndarray


def edge_map(triangles: np.ndarray) -> EdgeMap:
    """Edges and the (at most two) triangles on each side of them.

    Raises ValueError for an edge used twice in the same direction (inconsistent
    winding) or by more than two triangles (non-manifold): validate meshes first
    (``components.mesh.validation``).
    """
    tri = np.asarray(triangles, dtype=np.int64)
    m = tri.shape[0]
    a = tri.ravel()
    b = np.roll(tri, -1, axis=1).ravel()  # edge k of triangle t: (v_k, v_{k+1})
    t = np.repeat(np.arange(m), 3)
    k = np.tile(np.arange(3), m)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    forward = a < b
    key = lo * (int(tri.max()) + 1 if m else 1) + hi
    order = np.lexsort((~forward, key))
    key, lo, hi, t, k, forward = key[order], lo[order], hi[order], t[order], k[order], forward[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    counts = np.diff(np.r_[first, key.size])
    if np.any(counts > 2):
        e = int(first[np.argmax(counts > 2)])
        raise ValueError(f"edge ({lo[e]}, {hi[e]}) is shared by more than two triangles")
    sides = np.full((first.size, 2), -1, dtype=np.int64)
    local = np.full((first.size, 2), -1, dtype=np.int64)
    for slot in range(2):
        rows = first + slot
        ok = rows < np.r_[first[1:], key.size]
        side = np.where(forward[rows[ok]], 0, 1)
        e = np.flatnonzero(ok)
        if np.any(sides[e, side] >= 0):
            bad = int(e[np.flatnonzero(sides[e, side] >= 0)[0]])
            raise ValueError(f"edge ({lo[first[bad]]}, {hi[first[bad]]}) is used twice in the same "
                             "direction: the winding is inconsistent")
        sides[e, side] = t[rows[ok]]
        local[e, side] = k[rows[ok]]
    return EdgeMap(np.stack([lo[first], hi[first]], axis=1), sides, local)


def hinges(triangles: np.ndarray, emap: EdgeMap | None = None) -> np.ndarray:
    """(h, 4) vertex indices (x1, x2, x3, x4) of every interior edge (module docstring)."""
    tri = np.asarray(triangles, dtype=np.int64)
    emap = emap or edge_map(tri)
    interior = np.all(emap.triangles >= 0, axis=1)
    e = emap.edges[interior]
    t_fwd, t_bwd = emap.triangles[interior, 0], emap.triangles[interior, 1]
    # triangle t_fwd runs the edge as (lo -> hi): it is (x1, x3, x4) with x3 = lo, x4 = hi
    x3, x4 = e[:, 0], e[:, 1]
    x1 = third_vertex(tri[t_fwd], x3, x4)
    x2 = third_vertex(tri[t_bwd], x3, x4)
    return np.stack([x1, x2, x3, x4], axis=1)


def third_vertex(tri: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The vertex of each triangle that is neither a nor b."""
    other = (tri != a[:, None]) & (tri != b[:, None])
    return tri[np.arange(tri.shape[0]), np.argmax(other, axis=1)]


def dihedral_angles(vertices: np.ndarray, quads: np.ndarray) -> np.ndarray:
    """Signed angle theta of each hinge (docs/physics.md, Membrane bending):
    theta = atan2((n1^ x n2^) . e^, n1^ . n2^), e = x4 - x3 (0 for a flat hinge)."""
    x1, x2, x3, x4 = (vertices[quads[:, k]] for k in range(4))
    n1 = np.cross(x1 - x3, x1 - x4)
    n2 = np.cross(x2 - x4, x2 - x3)
    n1 /= np.linalg.norm(n1, axis=1, keepdims=True)
    n2 /= np.linalg.norm(n2, axis=1, keepdims=True)
    e = x4 - x3
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    return np.arctan2(np.einsum("ij,ij->i", np.cross(n1, n2), e), np.einsum("ij,ij->i", n1, n2))


__all__ = ["EdgeMap", "edge_map", "hinges", "third_vertex", "dihedral_angles"]
