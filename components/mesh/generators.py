"""Membrane surfaces made to measure: flat sheet (rectangle or disc), cylinder, icosphere.

Every generator returns a :class:`~ecs_dem.components.mesh.Mesh` in metres,
wound counter-clockwise seen from outside (normal (x1 - x0) x (x2 - x0)
outward: +z for a sheet, away from the axis for a cylinder, away from the
centre for a sphere), with nearly equilateral triangles of about the
requested ``edge_length``: the spring constant k = sqrt(3)/2 E d of
docs/physics.md (Membrane springs) holds for an equilateral lattice.
Bad arguments raise InputError naming the argument and the fix, and so does a
mesh too fine for the memory this process can have (``ecs_dem.memory``): the
count of vertices is estimated and checked before any array is made, since
Linux would let the arrays be allocated and then kill the process without a
word as they fill. Every rank generates the whole mesh, so the check takes
this rank's share of the node (the ranks ``ecs_dem.comm`` found on it).
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.memory import BYTES_PER_PARTICLE_FLOOR, check_fits
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.validation import boundary_loops, edges, triangle_neighbors

ROW = math.sqrt(3.0) / 2.0           # row spacing of an equilateral lattice, in edge lengths
# a rim edge of the disc shorter than this (in edge lengths) after projection onto the
# circle is collapsed: the sliver triangles it would leave drop the minimum angle to ~20 deg
RIM_COLLAPSE = 0.7
MAX_ICOSPHERE_LEVEL = 8              # 1,310,720 triangles
# what generating costs per lattice vertex (points, two triangles and the temporaries of
# building them), against the floor of what a vertex costs once it is a membrane's particle
GENERATION_BYTES_PER_VERTEX = 200


# ---------------------------------------------------------------------------- arguments

def _length(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{name} must be a positive, finite length in metres, got {value!r}")
    return float(value)


def _center(value) -> np.ndarray:
    try:
        c = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        c = None
    if c is None or c.shape != (3,) or not np.isfinite(c).all():
        raise InputError(f"center must be three finite coordinates (x, y, z) in metres, got {value!r}")
    return c


def _check_size(what: str, a: float, vertices: float, generated: float | None = None) -> None:
    """InputError when a mesh of about `vertices` vertices (`generated` lattice vertices while
    it is built, if more) cannot fit in the memory this process can have."""
    generated = vertices if generated is None else generated
    check_fits(max(vertices * BYTES_PER_PARTICLE_FLOOR, generated * GENERATION_BYTES_PER_VERTEX),
               f"{what} with edge_length = {a:g} m (about {vertices:.3g} vertices)",
               "use a larger edge_length")


def _at_least(name: str, value: float, other: str, minimum: float, fix: str) -> None:
    if value < minimum * (1 - 1e-12):
        raise InputError(f"{name} = {value:g} m is smaller than {other} = {minimum:g} m: {fix}")


# ---------------------------------------------------------------------------- flat sheet

def flat_sheet(edge_length: float, *, width: float | None = None, height: float | None = None,
               radius: float | None = None, center=(0.0, 0.0, 0.0)) -> Mesh:
    """An equilateral triangular lattice in the plane z = center z, normals +z.

    Rectangle: ``width`` (along x) by ``height`` (along y) [m], centred on
    ``center``. Rows run along x, about edge_length * sqrt(3)/2 apart, the
    spacings stretched slightly so that the first and last rows and columns lie
    exactly on the sides; every other row has a half triangle at each end, so
    the straight left and right sides carry right triangles (30-60-90 deg,
    edges edge_length/2 and edge_length*sqrt(3)/2).

    Disc: ``radius`` [m] around ``center``. The lattice (a vertex at the
    centre) is clipped to the triangles whose centroid lies inside the circle
    (less any triangle with two edges on the boundary, which would flatten on
    the circle), the boundary vertices are moved radially onto the circle, and
    rim edges shorter than 0.7 edge_length after that are collapsed into their
    midpoint on the circle. Every rim vertex is then exactly at ``radius``, the
    interior is the untouched lattice, and the triangles at the rim stay valid
    with a minimum angle of 30 deg or more (edges 0.6 to 1.65 edge_length
    there), wherever the circle cuts the lattice.
    """
    a = _length("edge_length", edge_length)
    c = _center(center)
    rectangle = width is not None or height is not None
    if rectangle == (radius is not None) or (rectangle and (width is None or height is None)):
        raise InputError("flat_sheet needs either width and height (a rectangle, x by y) or radius "
                         "(a disc), e.g. flat_sheet(0.002, width=0.1, height=0.05) or "
                         "flat_sheet(0.002, radius=0.05)")
    if rectangle:
        w, h = _length("width", width), _length("height", height)
        _at_least("width", w, "edge_length", a, "use a smaller edge_length or a wider sheet")
        _at_least("height", h, "edge_length", a, "use a smaller edge_length or a taller sheet")
        _check_size(f"a {w:g} m by {h:g} m sheet", a,
                    (round(w / a) + 1.5) * (round(h / (a * ROW)) + 1.0))
        vertices, triangles = _rectangle(w, h, a)
    else:
        r = _length("radius", radius)
        _at_least("radius", r, "edge_length", a, "use a smaller edge_length or a larger radius")
        _check_size(f"a disc of radius {r:g} m", a, math.pi * r * r / (a * a * ROW),
                    (2.0 * _disc_lattice_size(r, a) + 1.0) ** 2)
        vertices, triangles = _disc(r, a)
    xyz = np.zeros((len(vertices), 3))
    xyz[:, :2] = vertices
    return Mesh(xyz + c, triangles)


def _rectangle(width: float, height: float, a: float):
    nx = max(1, round(width / a))                    # intervals along x
    ny = max(1, round(height / (a * ROW)))           # rows - 1
    dx, dy = width / nx, height / ny
    points, rows = [], []
    for j in range(ny + 1):
        if j % 2 == 0:
            x = np.arange(nx + 1) * dx
        else:                                        # shifted row: ends on both sides
            x = np.concatenate([[0.0], (np.arange(nx) + 0.5) * dx, [width]])
        rows.append(np.arange(len(x)) + sum(len(p) for p in points))
        points.append(np.stack([x - width / 2, np.full(len(x), j * dy - height / 2)], axis=1))
    triangles = []
    for j in range(ny):
        lower, upper = rows[j], rows[j + 1]
        triangles.append(_strip(lower, upper) if j % 2 == 0 else _strip(upper, lower, below=False))
    return np.concatenate(points), np.concatenate(triangles)


def _strip(even: np.ndarray, odd: np.ndarray, below: bool = True) -> np.ndarray:
    """Triangles between an unshifted row (n+1 vertices) and a shifted one (n+2), counter-clockwise.

    ``below``: the unshifted row is the lower one. Shifted vertex k >= 1 sits
    half way between unshifted vertices k-1 and k; 0 and n+1 are the ends.
    """
    n = len(even) - 1
    i = np.arange(n)
    if below:
        tris = [[even[0], odd[1], odd[0]]]
        tris += np.stack([even[i], even[i + 1], odd[i + 1]], axis=1).tolist()
        tris += np.stack([even[i[:-1] + 1], odd[i[:-1] + 2], odd[i[:-1] + 1]], axis=1).tolist()
        tris += [[even[n], odd[n + 1], odd[n]]]
    else:                                            # shifted row below, unshifted above
        tris = [[odd[0], odd[1], even[0]]]
        tris += np.stack([odd[i + 1], even[i + 1], even[i]], axis=1).tolist()
        tris += np.stack([odd[i[:-1] + 1], odd[i[:-1] + 2], even[i[:-1] + 1]], axis=1).tolist()
        tris += [[odd[n], odd[n + 1], even[n]]]
    return np.array(tris, dtype=np.int64)


def _lattice(a: float, n: int):
    """Triangular lattice vertices (i + j/2, j sqrt3/2) a for |i|, |j| <= n, and its triangles (CCW)."""
    k = np.arange(-n, n + 1)
    i, j = (g.ravel() for g in np.meshgrid(k, k, indexing="ij"))
    points = np.stack([(i + j / 2) * a, j * ROW * a], axis=1)
    side = 2 * n + 1
    i0, j0 = (g.ravel() for g in np.meshgrid(np.arange(side - 1), np.arange(side - 1), indexing="ij"))
    at = lambda di, dj: (i0 + di) * side + (j0 + dj)    # noqa: E731
    up = np.stack([at(0, 0), at(1, 0), at(0, 1)], axis=1)
    down = np.stack([at(1, 0), at(1, 1), at(0, 1)], axis=1)
    return points, np.concatenate([up, down])


def _disc_lattice_size(radius: float, a: float) -> int:
    """n of the lattice ``_disc`` clips: (2 n + 1)^2 vertices."""
    return 2 * math.ceil(radius / a) + 2


def _disc(radius: float, a: float):
    n = _disc_lattice_size(radius, a)
    points, tri = _lattice(a, n)
    tri = tri[np.linalg.norm(points[tri].mean(axis=1), axis=1) < radius]
    tri = _without_ears(tri)
    (loop,) = boundary_loops(tri)                 # the clipped lattice is one disc
    points[loop] *= (radius / np.linalg.norm(points[loop], axis=1))[:, None]
    points, tri = _collapse_short_rim_edges(points, tri, radius, RIM_COLLAPSE * a)
    used = np.unique(tri)
    return points[used], np.searchsorted(used, tri)


def _without_ears(tri: np.ndarray) -> np.ndarray:
    """Drop, repeatedly, triangles with two boundary edges: on the circle they would be slivers."""
    while True:
        on_boundary = (triangle_neighbors(tri) < 0).sum(axis=1)
        if not (on_boundary >= 2).any():
            return tri
        tri = tri[on_boundary < 2]


def _collapse_short_rim_edges(points, tri, radius, shortest):
    """Merge the two ends of every rim edge shorter than `shortest` into their midpoint on the circle.

    Non-adjacent short edges are collapsed together, then the rim is measured
    again, until none is left (or the rim is down to six vertices).
    """
    while True:
        (loop,) = boundary_loops(tri)
        nxt = np.roll(loop, -1)
        length = np.linalg.norm(points[loop] - points[nxt], axis=1)
        short = np.flatnonzero(length < shortest)
        if len(short) == 0 or len(loop) <= 6:
            return points, tri
        taken = np.zeros(len(loop), dtype=bool)
        chosen = []
        for k in short[np.argsort(length[short])]:          # shortest first, no two adjacent
            if not (taken[k] or taken[k - 1] or taken[(k + 1) % len(loop)]):   # (k - 1 wraps)
                taken[k] = True
                chosen.append(k)
        u, v = loop[chosen], nxt[chosen]
        middle = points[u] + points[v]
        new_points = points.copy()
        new_points[u] = middle * (radius / np.linalg.norm(middle, axis=1))[:, None]
        # the rim triangle on edge (u, v): the one whose boundary half-edge runs u -> v
        half = np.stack([tri, np.roll(tri, -1, axis=1)], axis=2).reshape(-1, 2)
        rim = np.flatnonzero(triangle_neighbors(tri).reshape(-1) < 0)
        owner = dict(zip(map(tuple, half[rim].tolist()), (rim // 3).tolist()))
        gone = np.zeros(len(tri), dtype=bool)
        gone[[owner[(a, b)] for a, b in zip(u.tolist(), v.tolist())]] = True
        remap = np.arange(len(points))
        remap[v] = u
        new_tri = remap[tri[~gone]]
        if (_twice_area_z(new_points, new_tri) <= 0).any():   # never seen; keep the valid mesh
            return points, tri
        points, tri = new_points, new_tri


def _twice_area_z(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    x = p[t]
    return ((x[:, 1, 0] - x[:, 0, 0]) * (x[:, 2, 1] - x[:, 0, 1])
            - (x[:, 1, 1] - x[:, 0, 1]) * (x[:, 2, 0] - x[:, 0, 0]))


# ---------------------------------------------------------------------------- cylinder

def cylinder(radius: float, height: float, edge_length: float, *, caps: bool = False,
             center=(0.0, 0.0, 0.0)) -> Mesh:
    """The side of a cylinder of axis z from center z to center z + height, normals away from the axis.

    Rings of n = round(2 pi radius / edge_length) vertices on the radius,
    spaced height / round(height / (edge_length sqrt(3)/2)) in z (about
    edge_length sqrt(3)/2), every other ring rotated by half a segment, so the
    triangles are nearly equilateral; the first and last rings lie exactly at
    the two ends (to attach them to platens). Vertex order: ring by ring from
    the bottom, each ring counter-clockwise seen from +z starting nearest +x.

    ``caps=False``: open, two boundary loops (the end rings). ``caps=True``:
    closed by two flat discs of concentric rings (radii spaced about
    edge_length sqrt(3)/2, each with about 2 pi r / edge_length vertices, in
    proportion to the end ring's; a vertex on the axis; neighbouring rings
    joined by the shorter diagonals), normals -z at the bottom and +z at the
    top; their vertices follow the side's.
    """
    r = _length("radius", radius)
    h = _length("height", height)
    a = _length("edge_length", edge_length)
    c = _center(center)
    if not isinstance(caps, (bool, np.bool_)):
        raise InputError(f"caps must be True or False, got {caps!r}")
    segments = round(2 * math.pi * r / a)
    if segments < 3:
        raise InputError(f"radius = {r:g} m is too small for edge_length = {a:g} m: a ring needs at "
                         f"least 3 segments, so edge_length must be at most 2 pi radius / 3 = "
                         f"{2 * math.pi * r / 3:g} m")
    _at_least("height", h, "edge_length", a, "use a smaller edge_length or a taller cylinder")
    levels = max(1, round(h / (a * ROW)))
    cap_vertices = 2 * math.pi * r * r / (a * a * ROW) if caps else 0.0
    _check_size(f"a cylinder of radius {r:g} m and height {h:g} m", a,
                segments * (levels + 1.0) + cap_vertices)
    z = np.linspace(0.0, h, levels + 1)
    z[-1] = h
    rings, points = [], []
    for k in range(levels + 1):
        angle = 2 * math.pi * (np.arange(segments) + 0.5 * (k % 2)) / segments
        rings.append(np.arange(segments) + k * segments)
        points.append(np.stack([r * np.cos(angle), r * np.sin(angle), np.full(segments, z[k])], 1))
    triangles = [_ring_band(rings[k], rings[k + 1], k % 2) for k in range(levels)]
    points = np.concatenate(points)
    if caps:
        for ring, top in ((rings[0], False), (rings[-1], True)):
            offset = 0.5 * ((levels if top else 0) % 2)
            disc_points, disc_tri = _ring_disc(r, a, ring, offset, len(points))
            disc_points = np.column_stack([disc_points, np.full(len(disc_points), z[-1] if top else 0.0)])
            points = np.concatenate([points, disc_points])
            triangles.append(disc_tri if top else disc_tri[:, [0, 2, 1]])
    return Mesh(points + c, np.concatenate(triangles))


def _ring_band(lower: np.ndarray, upper: np.ndarray, lower_shifted: int) -> np.ndarray:
    """Triangles between two rings of equal size, the upper rotated half a segment against the lower."""
    i = np.arange(len(lower))
    j = (i + 1) % len(lower)
    if not lower_shifted:            # upper vertex i lies between lower i and i+1
        return np.concatenate([np.stack([lower[i], lower[j], upper[i]], 1),
                               np.stack([lower[j], upper[j], upper[i]], 1)])
    # lower vertex i lies between upper i and i+1
    return np.concatenate([np.stack([lower[i], lower[j], upper[j]], 1),
                           np.stack([lower[i], upper[j], upper[i]], 1)])


def _ring_disc(radius: float, a: float, rim: np.ndarray, rim_offset: float, first_index: int):
    """A disc of concentric rings inside the rim ring `rim` (its vertices at angles 2 pi (i + rim_offset) / n).

    Returns the new vertices (x, y) and the triangles (counter-clockwise seen
    from +z), numbered from `first_index`, the rim's vertices by `rim`.
    """
    levels = max(1, round(radius / (a * ROW)))
    angle = 2 * math.pi * (np.arange(len(rim)) + rim_offset) / len(rim)
    outer_index, outer_xy = rim, radius * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    points, triangles, count = [], [], first_index
    for q in range(levels - 1, 0, -1):
        rq = radius * q / levels
        n = max(3, math.floor(len(rim) * q / levels + 0.5))   # about 2 pi rq / a, in step with the rim
        # stagger against the ring outside: start half way between its first two vertices
        angle = angle[0] + math.pi / len(outer_index) + 2 * math.pi * np.arange(n) / n
        index = np.arange(n) + count
        count += n
        xy = rq * np.stack([np.cos(angle), np.sin(angle)], axis=1)
        points.append(xy)
        triangles.append(_zip_rings(outer_index, outer_xy, index, xy))
        outer_index, outer_xy = index, xy
    points.append(np.zeros((1, 2)))                          # the centre, and a fan to it
    i = np.arange(len(outer_index))
    triangles.append(np.stack([outer_index[i], outer_index[(i + 1) % len(i)],
                               np.full(len(i), count)], axis=1))
    return np.concatenate(points), np.concatenate(triangles)


def _zip_rings(outer: np.ndarray, outer_xy: np.ndarray, inner: np.ndarray,
               inner_xy: np.ndarray) -> np.ndarray:
    """Triangulate the band between two concentric rings (vertex indices and (x, y), counter-clockwise).

    Starting from the first outer vertex and the inner vertex just behind it,
    each step advances on the ring whose new edge across the band is shorter
    (the shorter diagonal of the next quad), giving triangle (o, o_next, i) or
    (o, i_next, i), counter-clockwise seen from +z. Every vertex is used once
    per ring, and no long thin triangles arise where the rings' vertices line up.
    """
    a0 = math.atan2(outer_xy[0, 1], outer_xy[0, 0])
    behind = np.mod(np.arctan2(inner_xy[:, 1], inner_xy[:, 0]) - a0, 2 * math.pi)
    start = int(np.argmax(behind))
    inner, inner_xy = np.roll(inner, -start), np.roll(inner_xy, -start, axis=0)
    no, ni = len(outer), len(inner)
    io = ii = 0
    triangles = []
    while io < no or ii < ni:
        o, i = io % no, ii % ni
        o_next, i_next = (io + 1) % no, (ii + 1) % ni
        if ii == ni or (io < no and np.linalg.norm(outer_xy[o_next] - inner_xy[i])
                        <= np.linalg.norm(outer_xy[o] - inner_xy[i_next])):
            triangles.append((outer[o], outer[o_next], inner[i]))
            io += 1
        else:
            triangles.append((outer[o], inner[i_next], inner[i]))
            ii += 1
    return np.array(triangles, dtype=np.int64)


# ---------------------------------------------------------------------------- icosphere

def icosphere(radius: float, level: int, center=(0.0, 0.0, 0.0), relax: int = 400) -> Mesh:
    """An icosahedron subdivided `level` times (each triangle into four), on a sphere of `radius` [m].

    10 * 4**level + 2 vertices, 20 * 4**level triangles, normals outward; the
    midpoints are projected onto the sphere after each subdivision. Then
    `relax` iterations move the vertices on the sphere towards equal edge
    lengths (springs of the mean length; 0 keeps the plain subdivision, whose
    edges vary by about +-10 % at every level and make the spring lattice about
    1 % softer than the sheet it stands for). Edge length about 1.2 radius /
    2**level from level 2 on (1.05 radius at level 0).
    """
    r = _length("radius", radius)
    c = _center(center)
    if isinstance(level, bool) or not isinstance(level, Integral) or not 0 <= level <= MAX_ICOSPHERE_LEVEL:
        raise InputError(f"level must be an integer from 0 (the icosahedron) to {MAX_ICOSPHERE_LEVEL} "
                         f"({20 * 4 ** MAX_ICOSPHERE_LEVEL:,} triangles), got {level!r}")
    if isinstance(relax, bool) or not isinstance(relax, Integral) or relax < 0:
        raise InputError(f"relax must be a number of iterations >= 0 (0: no relaxation), got {relax!r}")
    g = (1 + math.sqrt(5)) / 2
    points = np.array([[-1, g, 0], [1, g, 0], [-1, -g, 0], [1, -g, 0],
                       [0, -1, g], [0, 1, g], [0, -1, -g], [0, 1, -g],
                       [g, 0, -1], [g, 0, 1], [-g, 0, -1], [-g, 0, 1]], dtype=np.float64)
    tri = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11],
                    [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6], [7, 1, 8],
                    [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9],
                    [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]], dtype=np.int64)
    points /= np.linalg.norm(points, axis=1)[:, None]
    for _ in range(int(level)):
        points, tri = _subdivide(points, tri)
    points = _relax_on_sphere(points, edges(tri), int(relax))
    return Mesh(points * r + c, tri)


def _relax_on_sphere(x: np.ndarray, edge: np.ndarray, iterations: int) -> np.ndarray:
    """Move unit-sphere points along springs of the mean edge length, back onto the sphere each time."""
    i, j = edge[:, 0], edge[:, 1]
    for _ in range(iterations):
        d = x[j] - x[i]
        length = np.linalg.norm(d, axis=1)
        pull = ((length - length.mean()) / length)[:, None] * d    # towards i if too long
        step = np.stack([np.bincount(i, pull[:, k], len(x)) - np.bincount(j, pull[:, k], len(x))
                         for k in range(3)], axis=1)
        x = x + 0.2 * step
        x /= np.linalg.norm(x, axis=1)[:, None]
    return x


def _subdivide(points: np.ndarray, tri: np.ndarray):
    """Split every triangle into four at its edge midpoints, projected onto the unit sphere."""
    edge = edges(tri)
    half = np.sort(np.stack([tri, np.roll(tri, -1, axis=1)], axis=2).reshape(-1, 2), axis=1)
    ids = np.searchsorted(edge[:, 0] * len(points) + edge[:, 1], half[:, 0] * len(points) + half[:, 1])
    middle = points[edge].sum(axis=1)
    middle /= np.linalg.norm(middle, axis=1)[:, None]
    m01, m12, m20 = (ids.reshape(-1, 3) + len(points)).T      # midpoint of edge k of each triangle
    a, b, c = tri.T
    new = np.concatenate([np.stack([a, m01, m20], 1), np.stack([b, m12, m01], 1),
                          np.stack([c, m20, m12], 1), np.stack([m01, m12, m20], 1)])
    return np.concatenate([points, middle]), new


__all__ = ["flat_sheet", "cylinder", "icosphere"]
