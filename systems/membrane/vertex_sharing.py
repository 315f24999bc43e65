"""Which candidates of a grain lie on patches that share a vertex: the graph of Table 1's selection.

Goetz & Poeschel Table 1 (docs/physics.md, Grain-patch contacts) compares a
grain's contacts only among patches that share a vertex, and the spring's
hand-over (systems.membrane.patch_kernels) passes a spring only between such
patches. Which candidates share a vertex depends on the candidate list and
the mesh's connectivity alone, not on where the grain is: built once per
candidate list (``patch_pairs`` changes only at a rebuild), the step's
selection walks a grain's few sharing neighbours instead of comparing the
three vertices of every pair of its candidates. In case 1 of the triaxial
test late in confinement (3,733 candidates, about 7 per grain) the
comparisons were a third of PatchContacts' time.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.jit import inline, kernel


@inline
def share_vertex(tri_vertices, s, u):
    """Whether triangles (rows) s and u have a vertex (gid) in common."""
    for a in range(3):
        for b in range(3):
            if tri_vertices[s, a] == tri_vertices[u, b]:
                return True
    return False


@kernel
def vertex_sharing(pair_i, pair_t, tri_vertices):
    """The candidates sharing a vertex with each candidate, as (start, adjacent).

    pair_i: grain rows, candidates grouped by grain; pair_t: triangle rows; tri_vertices:
    (m, 3) vertex gids of the triangles. The candidates sharing a vertex with candidate c
    (same grain, another triangle) are adjacent[start[c]:start[c + 1]], in increasing order.
    """
    n = pair_i.size
    start = np.zeros(n + 1, dtype=np.int64)
    for fill in range(2):  # count (start[c + 1] = c's count, then summed), then write
        adjacent = np.empty(start[n], dtype=np.int64)
        lo = 0
        while lo < n:
            hi = lo + 1
            while hi < n and pair_i[hi] == pair_i[lo]:
                hi += 1
            for c in range(lo, hi):
                k = start[c] if fill else 0
                for c2 in range(lo, hi):
                    if c2 != c and share_vertex(tri_vertices, pair_t[c], pair_t[c2]):
                        if fill:
                            adjacent[k] = c2
                        k += 1
                if not fill:
                    start[c + 1] = k
            lo = hi
        if not fill:
            for c in range(n):
                start[c + 1] += start[c]
    return start, adjacent


__all__ = ["vertex_sharing", "share_vertex"]
