"""Checks and repairs a triangle mesh before it becomes a membrane; its edge topology.

``validate_mesh`` takes a :class:`~ecs_dem.components.mesh.Mesh` as it comes
from a file or a generator and returns a clean one, or raises
:class:`MeshError` naming the offending triangle and vertex indices *of the
input mesh* and the fix. In order, it

1. merges vertices closer than a tolerance (STL stores each triangle's
   corners separately) and drops vertices no triangle uses;
2. refuses degenerate triangles (a repeated corner after merging, or a height
   below the tolerance: collinear corners), duplicate triangles (the same
   three vertices in any order), non-manifold edges (more than two triangles
   on one edge), vertices where separate sheets touch (a bow-tie) and
   non-orientable surfaces (a Moebius strip);
3. makes the winding consistent: within each edge-connected component the
   orientation is propagated across shared edges and triangles that disagree
   are flipped. A *closed* component is then turned outward (positive signed
   volume, ``Mesh.signed_volume``); an *open* component keeps the winding of
   its lowest-index triangle, so the input's winding of that one triangle
   decides which side of an open sheet is outside.
   Triangles that end up wound otherwise than in the input are reported in
   one :class:`MeshRepairWarning` (their count and the first input index).

Triangles keep their input order (none is removed or added); vertices keep
their input order with merged and unused ones left out.

Topology helpers for the membrane builder: ``edges`` (unique undirected
edges), ``triangle_neighbors`` (the triangle across each edge),
``boundary_edges`` and ``boundary_loops``. Edge k of a triangle (v0, v1, v2)
runs from v_k to v_(k+1): (v0, v1), (v1, v2), (v2, v0).
"""
from __future__ import annotations

import warnings

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.components.mesh.surface import Mesh

# default merge tolerance, as a fraction of the bounding-box diagonal: far below
# any meaningful feature, far above the round-off of coordinates written as text
MERGE_FRACTION = 1e-9
# a triangle is flat when its height is below this fraction of its longest edge
# (or below the merge tolerance), i.e. its corners are collinear to round-off
FLAT_FRACTION = 1e-10
REPAIR_HINT = "a mesh repair tool can do it (e.g. MeshLab: Filters > Cleaning and Repairing)"
# a unit vector along no lattice, grid or coordinate direction (vertex merging sorts along it)
SWEEP_DIRECTION = np.array([0.5897, 0.5459, 0.5951]) / np.linalg.norm([0.5897, 0.5459, 0.5951])


class MeshError(InputError):
    """A mesh that cannot be a membrane surface; the message names the culprit and the fix."""


class MeshRepairWarning(UserWarning):
    """``validate_mesh`` changed the winding of some input triangles (they were inconsistent,
    or a closed surface pointed inward); the mesh it returns is valid."""


# ---------------------------------------------------------------------------- topology

def _triangles(mesh_or_triangles) -> np.ndarray:
    t = mesh_or_triangles.triangles if isinstance(mesh_or_triangles, Mesh) else mesh_or_triangles
    return np.asarray(t, dtype=np.int64).reshape(-1, 3)


def _half_edges(triangles: np.ndarray) -> np.ndarray:
    """Directed edges (3m, 2): row 3 t + k runs from corner k to corner k + 1 of triangle t."""
    return np.stack([triangles, np.roll(triangles, -1, axis=1)], axis=2).reshape(-1, 2)


def _edge_ids(half: np.ndarray):
    """Undirected edge id of every half-edge, the unique edges (k, 2) sorted, and use counts."""
    lo, hi = half.min(axis=1), half.max(axis=1)
    span = int(hi.max()) + 1 if len(hi) else 1
    # one int64 key per edge: sorting integers is far faster than np.unique(axis=0)
    keys, ids, counts = np.unique(lo * span + hi, return_inverse=True, return_counts=True)
    return ids.reshape(-1), np.stack([keys // span, keys % span], axis=1), counts


def edges(mesh) -> np.ndarray:
    """Unique undirected edges (k, 2) int64: each row (low, high) vertex index, rows sorted."""
    t = _triangles(mesh)
    if len(t) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    return _edge_ids(_half_edges(t))[1].astype(np.int64)


def _twins(triangles: np.ndarray):
    """For every half-edge the other half-edge on the same edge (-1 on the boundary).

    Raises MeshError for an edge used by more than two triangles.
    """
    half = _half_edges(triangles)
    ids, unique, counts = _edge_ids(half)
    if (counts > 2).any():
        _raise_non_manifold_edge(triangles, ids, unique, counts)
    order = np.argsort(ids, kind="stable")
    shared = counts[ids[order]] == 2
    twin = np.full(len(half), -1, dtype=np.int64)
    # after a stable sort the two half-edges of a shared edge are adjacent
    first = order[shared][0::2]
    second = order[shared][1::2]
    twin[first], twin[second] = second, first
    return half, twin


def triangle_neighbors(mesh) -> np.ndarray:
    """(m, 3) int64: the triangle across edge (v0 v1), (v1 v2), (v2 v0) of each triangle; -1 on the boundary.

    Needs a manifold mesh (at most two triangles per edge; ``validate_mesh``
    ensures it), else MeshError.
    """
    t = _triangles(mesh)
    _, twin = _twins(t)
    return np.where(twin >= 0, twin // 3, -1).reshape(-1, 3)


def boundary_edges(mesh) -> np.ndarray:
    """(k, 2) int64: edges used by exactly one triangle, directed as in that triangle's winding.

    Rows follow the triangles' order (triangle, then edge k). With outward
    winding a boundary loop runs counter-clockwise seen from outside (for a
    flat sheet with normal +z: counter-clockwise seen from +z).
    """
    t = _triangles(mesh)
    if len(t) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    half = _half_edges(t)
    ids, _, counts = _edge_ids(half)
    return half[counts[ids] == 1].astype(np.int64)


def boundary_loops(mesh) -> list[np.ndarray]:
    """Ordered vertex loops of the boundary, one int64 array per loop (the last vertex links to the first).

    Each loop follows the winding of its triangles (``boundary_edges``), starts at
    its lowest vertex index, and the loops are sorted by that index. A closed
    mesh has none. MeshError if two boundary pieces meet at a vertex.
    """
    b = boundary_edges(mesh)
    if len(b) == 0:
        return []
    starts, counts = np.unique(b[:, 0], return_counts=True)
    if (counts > 1).any():
        v = int(starts[np.argmax(counts > 1)])
        raise MeshError(f"vertex {v} has {int(counts.max())} outgoing boundary edges: two boundary "
                        "loops touch there (or the winding is inconsistent); run validate_mesh first")
    following = dict(zip(b[:, 0].tolist(), b[:, 1].tolist()))
    loops, seen = [], set()
    for start in sorted(following):
        if start in seen:
            continue
        loop, v = [start], following[start]
        while v != start:
            if v in seen or v not in following:
                raise MeshError(f"the boundary through vertex {start} does not close into a loop; "
                                "run validate_mesh first")
            loop.append(v)
            seen.add(v)
            v = following[v]
        seen.add(start)
        loops.append(np.array(loop, dtype=np.int64))
    return loops


# ---------------------------------------------------------------------------- validation

def _listing(indices, limit: int = 5) -> str:
    indices = [int(i) for i in indices]
    text = ", ".join(map(str, indices[:limit]))
    return text + (f", ... ({len(indices)} in all)" if len(indices) > limit else "")


def _close_pairs(x: np.ndarray, tol: float) -> np.ndarray:
    """Index pairs (p, 2) of points of x closer than tol (x holds no exact duplicates).

    Points within tol have projections within tol on any direction: sort the
    projections on a direction no mesh is aligned with (a column of a grid
    would share its x) and compare each point with its successors while any
    projection gap is below tol, usually one or two passes.
    """
    projection = x @ SWEEP_DIRECTION
    order = np.argsort(projection, kind="stable")
    projection = projection[order]
    pairs = []
    for d in range(1, len(order)):
        near = np.flatnonzero(projection[d:] - projection[:-d] <= tol)
        if len(near) == 0:
            break
        i, j = order[near], order[near + d]
        close = np.linalg.norm(x[i] - x[j], axis=1) <= tol
        pairs.append(np.stack([i[close], j[close]], axis=1))
    return np.concatenate(pairs) if pairs else np.zeros((0, 2), dtype=np.int64)


def _lowest_labels(n: int, pairs: np.ndarray) -> np.ndarray:
    """Connected components of a graph given as index pairs: each node's lowest-index node.

    Union by hooking: every round hooks the larger of two linked roots under
    the smaller, then compresses every path to its root; a few rounds even for
    a large connected mesh.
    """
    label = np.arange(n, dtype=np.int64)
    if len(pairs) == 0:
        return label
    i, j = pairs[:, 0], pairs[:, 1]
    while True:
        li, lj = label[i], label[j]
        differ = li != lj
        if not differ.any():
            return label
        np.minimum.at(label, np.maximum(li, lj)[differ], np.minimum(li, lj)[differ])
        while True:                                  # labels only decrease: the root is the minimum
            up = label[label]
            if np.array_equal(up, label):
                break
            label = up


def _first_of_equal_rows(a: np.ndarray) -> np.ndarray:
    """For every row of a 2D array the lowest index of the rows equal to it.

    (A stable lexsort keeps equal rows in index order; much faster than
    np.unique(axis=0).)
    """
    order = np.lexsort(a.T[::-1])
    s = a[order]
    starts = np.concatenate([[True], (s[1:] != s[:-1]).any(axis=1)])
    first = np.empty(len(a), dtype=np.int64)
    first[order] = order[np.flatnonzero(starts)][np.cumsum(starts) - 1]
    return first


def _merge_representatives(x: np.ndarray, tol: float) -> np.ndarray:
    """For every vertex the lowest input index of the vertices within tol of it (chained)."""
    # exact duplicates first (every STL vertex appears about six times), so that the
    # tolerant pass compares distinct points only
    exact = _first_of_equal_rows(x)
    if tol <= 0:
        return exact
    distinct = np.unique(exact)             # ascending input indices
    label = _lowest_labels(len(distinct), _close_pairs(x[distinct], tol))
    return distinct[label][np.searchsorted(distinct, exact)]


def _check_input(v: np.ndarray, t: np.ndarray) -> None:
    if len(t) == 0:
        raise MeshError("the mesh has no triangles: a membrane needs at least one")
    out = np.flatnonzero(((t < 0) | (t >= len(v))).any(axis=1))
    if len(out):
        raise MeshError(f"triangle {out[0]} refers to vertex indices {t[out[0]].tolist()}, outside "
                        f"0..{len(v) - 1} (triangles {_listing(out)}): the file's connectivity "
                        "is broken; re-export the mesh")
    used = _used(t, len(v))
    bad = used[~np.isfinite(v[used]).all(axis=1)]     # unused vertices are dropped anyway
    if len(bad):
        raise MeshError(f"vertex {bad[0]} has a non-finite coordinate {v[bad[0]].tolist()} "
                        f"(vertices {_listing(bad)}): fix or remove it")


def _check_degenerate(t_in: np.ndarray, t: np.ndarray, v: np.ndarray, tol: float) -> None:
    """Repeated corners after merging, then flat triangles (collinear corners)."""
    repeated = np.flatnonzero((t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 2] == t[:, 0]))
    if len(repeated):
        k = repeated[0]
        if len(set(t_in[k].tolist())) < 3:
            same, extra = "a vertex twice", ""
        else:
            same = f"vertices that coincide within the merge tolerance {tol:.3g} m"
            extra = ", or pass a smaller merge_tolerance if the vertices are truly distinct"
        raise MeshError(f"triangle {k} (vertices {t_in[k].tolist()}) is degenerate: it uses {same} "
                        f"(degenerate triangles: {_listing(repeated)}). Remove it; {REPAIR_HINT}{extra}")
    x = v[t]
    twice_area = np.linalg.norm(np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]), axis=1)
    longest = np.linalg.norm(x - np.roll(x, -1, axis=1), axis=2).max(axis=1)
    height = twice_area / longest
    flat = np.flatnonzero(height <= np.maximum(tol, FLAT_FRACTION * longest))
    if len(flat):
        k = flat[0]
        raise MeshError(f"triangle {k} (vertices {t_in[k].tolist()}) has zero area: its corners are "
                        f"collinear (height {height[k]:.3g} m across an edge of {longest[k]:.3g} m; "
                        f"flat triangles: {_listing(flat)}). Remove it; {REPAIR_HINT}")


def _check_duplicates(t: np.ndarray) -> None:
    key = np.sort(t, axis=1)
    first = _first_of_equal_rows(key)
    dup = np.flatnonzero(np.bincount(first, minlength=len(t))[first] > 1)
    if len(dup):
        k = dup[0]
        group = np.flatnonzero(first == first[k])
        raise MeshError(f"triangles {_listing(group)} use the same vertices {key[k].tolist()}: "
                        f"a duplicate triangle ({len(dup)} triangles are duplicates). Delete all "
                        f"but one of them; {REPAIR_HINT}")


def _raise_non_manifold_edge(t, ids, unique, counts) -> None:
    e = int(np.argmax(counts > 2))
    tris = np.flatnonzero(ids == e) // 3
    n_bad = int((counts > 2).sum())
    a, b = (int(v) for v in unique[e])
    raise MeshError(f"the edge between vertices {a} and {b} is shared by {counts[e]} triangles "
                    f"({_listing(tris)}); a membrane surface allows at most two per edge "
                    f"({n_bad} such edges). Remove the extra triangles or split the surface there")


def _check_vertex_fans(t: np.ndarray, half: np.ndarray, twin: np.ndarray) -> None:
    """Refuse vertices whose triangles form more than one edge-connected fan (a bow-tie)."""
    # corner 3 t + k holds vertex t[k]; the corners of a vertex in two triangles that
    # share an edge through it are joined; a manifold vertex has one group of corners
    h = np.flatnonzero(twin > np.arange(len(twin)))      # each shared edge once
    g = twin[h]
    start_h, end_h = h, 3 * (h // 3) + (h + 1) % 3            # corners of half-edge h's ends
    start_g, end_g = g, 3 * (g // 3) + (g + 1) % 3
    flat = t.reshape(-1)
    # pair each end of h with the corner of the same vertex in g (twin may run either way)
    other_of_start = np.where(flat[start_g] == flat[start_h], start_g, end_g)
    other_of_end = np.where(flat[start_g] == flat[end_h], start_g, end_g)
    pairs = np.concatenate([np.stack([start_h, other_of_start], 1), np.stack([end_h, other_of_end], 1)])
    group = _lowest_labels(len(flat), pairs)
    fans = np.bincount(flat[group == np.arange(len(flat))])     # one root corner per fan
    if (fans > 1).any():
        v = int(np.argmax(fans > 1))
        raise MeshError(f"vertex {v} joins {int(fans[v])} separate fans of "
                        f"triangles ({_listing(np.flatnonzero((t == v).any(axis=1)))}) that share no "
                        "edge there: surfaces touch at a single vertex (a bow-tie). Split the vertex "
                        "into one per fan, or join the surfaces along an edge")


def _orientation(t: np.ndarray, half: np.ndarray, twin: np.ndarray):
    """Flip flags making the winding consistent, and each triangle's component.

    A component is named by its lowest-index triangle, which keeps its winding.
    Breadth-first from all those seeds at once, one whole front at a time (numpy
    per front, not per triangle). Two triangles sharing an edge agree when they
    run through it in opposite directions.
    """
    m = len(t)
    neighbour = np.where(twin >= 0, twin // 3, -1).reshape(m, 3)
    h = np.flatnonzero(twin > np.arange(len(twin)))
    component = _lowest_labels(m, np.stack([h // 3, twin[h] // 3], axis=1))
    has = twin >= 0
    same_direction = np.zeros(len(half), dtype=np.int8)
    same_direction[has] = half[has, 0] == half[twin[has], 0]
    same_direction = same_direction.reshape(m, 3)
    flip = np.full(m, -1, dtype=np.int8)
    front = np.unique(component)
    flip[front] = 0
    while len(front):
        nb = neighbour[front]
        want = flip[front][:, None] ^ same_direction[front]
        ok = nb >= 0
        source = np.repeat(front, 3)[ok.reshape(-1)]
        nb, want = nb[ok], want[ok]
        new = flip[nb] < 0
        flip[nb[new]] = want[new]
        clash = flip[nb] != want           # also catches two triangles of a front disagreeing
        if clash.any():
            a, b = int(source[clash][0]), int(nb[clash][0])
            shared = sorted(set(t[a].tolist()) & set(t[b].tolist()))
            raise MeshError(f"the surface is not orientable (like a Moebius strip): going round "
                            f"to triangle {b} from triangle {a} across the edge between vertices "
                            f"{shared[0]} and {shared[-1]}, the two cannot be wound consistently. "
                            "A membrane needs two sides; cut the surface or remesh it")
        front = np.unique(nb[new])
    return flip.astype(bool), component


def validate_mesh(mesh: Mesh, merge_tolerance: float | None = None) -> Mesh:
    """The cleaned, consistently and outward wound mesh, or MeshError naming the defect.

    merge_tolerance [m]: vertices closer than this are merged (chained); default
    1e-9 of the bounding-box diagonal; 0 merges exact duplicates only. Error
    messages give triangle and vertex indices of the *input* mesh (a merged
    vertex is named by its lowest input index). See the module docstring for
    the checks and the orientation rule (an open component keeps the winding
    of its lowest-index triangle).
    """
    v_in, t_in = mesh.vertices, mesh.triangles
    _check_input(v_in, t_in)
    if merge_tolerance is None:
        diagonal = float(np.linalg.norm(np.ptp(v_in[_used(t_in, len(v_in))], axis=0)))
        tol = MERGE_FRACTION * diagonal
    else:
        tol = float(merge_tolerance)
        if not np.isfinite(tol) or tol < 0:
            raise MeshError(f"merge_tolerance must be a length >= 0 in metres, got {merge_tolerance!r}")
    rep = _merge_representatives(v_in, tol)
    t = rep[t_in]                                  # input vertex indices of the representatives
    _check_degenerate(t_in, t, v_in, tol)
    _check_duplicates(t)
    half, twin = _twins(t)                         # refuses non-manifold edges
    _check_vertex_fans(t, half, twin)
    flip, component = _orientation(t, half, twin)
    t = np.where(flip[:, None], t[:, [0, 2, 1]], t)
    t, turned = _outward(v_in, t, component, twin)
    _report_rewinding(flip ^ turned)
    used = _used(t, len(v_in))                     # ascending: input order of the kept vertices
    new_index = np.cumsum(np.bincount(t.reshape(-1), minlength=len(v_in)) > 0) - 1
    return Mesh(v_in[used], new_index[t])


def _used(t: np.ndarray, n: int) -> np.ndarray:
    """Indices of the vertices the triangles use, ascending."""
    return np.flatnonzero(np.bincount(t.reshape(-1), minlength=n))


def _report_rewinding(changed: np.ndarray) -> None:
    """One MeshRepairWarning naming how many input triangles got the other winding."""
    if changed.any():
        warnings.warn(
            f"mesh: {int(changed.sum())} of {changed.size} triangles rewound (first: input "
            f"triangle {int(np.flatnonzero(changed)[0])}): their winding disagreed with their "
            "neighbours' or turned a closed surface inward. The membrane uses the repaired "
            "winding; fix the file to silence this", MeshRepairWarning, stacklevel=3)


def _outward(v: np.ndarray, t: np.ndarray, component: np.ndarray,
             twin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Turn every closed component with negative signed volume inside out; returns the
    triangles and which of them were turned."""
    seeds, comp = np.unique(component, return_inverse=True)
    comp = comp.reshape(-1)
    open_ = np.zeros(len(seeds), dtype=bool)
    open_[comp[np.flatnonzero((twin < 0).reshape(-1, 3).any(axis=1))]] = True
    # volume relative to each component's mean vertex: no cancellation of large offsets
    centre = np.zeros((len(seeds), 3))
    np.add.at(centre, comp, v[t].mean(axis=1))
    centre /= np.bincount(comp, minlength=len(seeds))[:, None]
    x = v[t] - centre[comp][:, None, :]
    volume = np.bincount(comp, np.einsum("ij,ij->i", x[:, 0], np.cross(x[:, 1], x[:, 2])),
                         minlength=len(seeds))
    turned = ((volume < 0) & ~open_)[comp]
    return np.where(turned[:, None], t[:, [0, 2, 1]], t), turned


__all__ = ["MeshError", "MeshRepairWarning", "validate_mesh", "edges", "triangle_neighbors",
           "boundary_edges", "boundary_loops"]
