"""Membrane meshes made here: flat sheet, cylinder, icosphere (outward winding, nearly equilateral).

* ``flat_sheet``: an equilateral triangular lattice in the x-y plane (normal +z);
  a rectangle, or a disc built from concentric rings (ring k at radius k a holds
  6 k vertices), so its rim is exactly the circle and its triangles are nearly
  equilateral;
* ``cylinder``: rings of vertices about the z axis spaced about a sqrt(3)/2 in z,
  alternate rings turned by half a segment, the first and last ring exactly at the
  ends (they attach to the platens of a triaxial test); open, or closed by two
  ring-built caps;
* ``icosphere``: an icosahedron subdivided ``level`` times, on the sphere, then
  relaxed on the sphere towards equal edge lengths (the plain subdivision keeps
  edge lengths varying by about 10 % at every level, which makes the spring
  lattice about 1 % softer than the sheet it stands for; relaxed, about 4 %).

Every triangle is wound counter-clockwise seen from outside (normal outward, +z
for the sheet), as ``components.mesh`` requires. Units: metres.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError

from .mesh import Mesh


def _positive(name, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"mesh generator: {name} must be a positive length in metres (got {value})")
    return value


def _orient(vertices, triangles, outward) -> np.ndarray:
    """Flip the triangles whose normal points against outward(centroids) (n, 3)."""
    x = vertices[triangles]
    n = np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])
    flip = np.einsum("ij,ij->i", n, outward(x.mean(axis=1))) < 0
    triangles = triangles.copy()
    triangles[flip] = triangles[flip][:, ::-1]
    return triangles


def _ring_strip(lower, upper, lower_angle, upper_angle) -> list:
    """Triangles between two closed vertex rings (index arrays with their angles in [0, 2 pi)),
    marching around by angle: each step joins the next vertex of the ring that comes first."""
    n, m = len(lower), len(upper)
    lo0 = int(np.argmin(lower_angle))
    up0 = int(np.argmin(upper_angle))
    la = np.unwrap(np.roll(lower_angle, -lo0))
    ua = np.unwrap(np.roll(upper_angle, -up0))
    lower, upper = np.roll(lower, -lo0), np.roll(upper, -up0)
    la = np.append(la, la[0] + 2 * np.pi)
    ua = np.append(ua, ua[0] + 2 * np.pi)
    tris = []
    i = j = 0
    while i < n or j < m:
        if j >= m or (i < n and la[i + 1] <= ua[j + 1]):
            tris.append((lower[i % n], lower[(i + 1) % n], upper[j % m]))
            i += 1
        else:
            tris.append((lower[i % n], upper[(j + 1) % m], upper[j % m]))
            j += 1
    return tris


def _disc(radius, edge):
    """Concentric-ring disc in the x-y plane: (vertices (n, 2), triangles, outer ring indices)."""
    rings = max(int(round(radius / edge)), 1)
    points = [np.zeros((1, 2))]
    index = [np.array([0])]
    angles = [np.zeros(1)]
    start = 1
    for k in range(1, rings + 1):
        count = 6 * k
        angle = 2 * np.pi * (np.arange(count) + 0.5 * (k % 2)) / count
        r = radius * k / rings
        points.append(np.stack([r * np.cos(angle), r * np.sin(angle)], axis=1))
        index.append(np.arange(start, start + count))
        angles.append(angle % (2 * np.pi))
        start += count
    tris = [(0, int(index[1][q]), int(index[1][(q + 1) % 6])) for q in range(6)]
    for k in range(1, rings):
        tris += _ring_strip(index[k], index[k + 1], angles[k], angles[k + 1])
    return np.concatenate(points), np.array(tris, dtype=np.int64), index[-1]


def flat_sheet(edge_length, *, width=None, height=None, radius=None, center=(0.0, 0.0, 0.0)) -> Mesh:
    """A flat sheet of nearly equilateral triangles of side `edge_length`, normal +z.

    Give `width` and `height` (a rectangle, x by y, centred on `center`) or `radius`
    (a disc of concentric rings; its rim is the circle of that radius).
    """
    a = _positive("edge_length", edge_length)
    c = np.asarray(center, dtype=np.float64)
    if radius is not None:
        if width is not None or height is not None:
            raise InputError("flat_sheet: give either radius or width and height, not both")
        R = _positive("radius", radius)
        if R < a:
            raise InputError(f"flat_sheet: radius {R} m is smaller than the edge length {a} m")
        xy, tri, _ = _disc(R, a)
        v = np.column_stack([xy, np.zeros(len(xy))]) + c
        return Mesh(v, _orient(v, tri, lambda x: np.tile([0.0, 0.0, 1.0], (len(x), 1))))
    if width is None or height is None:
        raise InputError("flat_sheet: give width and height (a rectangle) or radius (a disc)")
    W, H = _positive("width", width), _positive("height", height)
    h = a * math.sqrt(3) / 2
    nx = max(int(round(W / a)), 1)
    ny = max(int(round(H / h)), 1)
    j, i = np.meshgrid(np.arange(ny + 1), np.arange(nx + 1), indexing="ij")
    x = (i + 0.5 * (j % 2)) * a
    y = j * h
    v = np.column_stack([x.ravel(), y.ravel(), np.zeros(x.size)])
    v[:, :2] -= v[:, :2].mean(axis=0)
    v += c
    tris = []
    for jj in range(ny):
        for ii in range(nx):
            p = jj * (nx + 1) + ii
            q = p + nx + 1  # the row above
            if jj % 2 == 0:
                tris += [(p, p + 1, q), (p + 1, q + 1, q)]
            else:
                tris += [(p, p + 1, q + 1), (p, q + 1, q)]
    tri = np.array(tris, dtype=np.int64)
    return Mesh(v, _orient(v, tri, lambda x: np.tile([0.0, 0.0, 1.0], (len(x), 1))))


def cylinder(radius, height, edge_length, *, caps=False, center=(0.0, 0.0, 0.0)) -> Mesh:
    """A cylinder about z from center z to center z + height (module docstring).

    With `caps` the ends are closed by concentric-ring discs, and the number of
    vertices around is rounded to a multiple of 6 so that they fit.
    """
    R = _positive("radius", radius)
    Hc = _positive("height", height)
    a = _positive("edge_length", edge_length)
    c = np.asarray(center, dtype=np.float64)
    n_around = max(int(round(2 * np.pi * R / a)), 3)
    if caps:
        n_rings_cap = max(int(round(n_around / 6)), 1)
        n_around = 6 * n_rings_cap
    n_rows = max(int(round(Hc / (a * math.sqrt(3) / 2))), 1) + 1
    z = np.linspace(0.0, Hc, n_rows)
    vertices, rings, angles = [], [], []
    for j in range(n_rows):
        angle = 2 * np.pi * (np.arange(n_around) + 0.5 * (j % 2)) / n_around
        rings.append(np.arange(j * n_around, (j + 1) * n_around))
        angles.append(angle % (2 * np.pi))
        vertices.append(np.stack([R * np.cos(angle), R * np.sin(angle), np.full(n_around, z[j])],
                                 axis=1))
    v = np.concatenate(vertices)
    tris = []
    for j in range(n_rows - 1):
        tris += _ring_strip(rings[j], rings[j + 1], angles[j], angles[j + 1])
    tri = np.array(tris, dtype=np.int64)
    if caps:
        xy, disc, outer = _disc(R, R / n_rings_cap)
        inner = np.setdiff1d(np.arange(len(xy)), outer)
        for k, zc in ((0, 0.0), (n_rows - 1, Hc)):
            # the disc's outer ring is the cylinder's end ring, turned to match its phase
            phase = 2 * np.pi * 0.5 * (k % 2) / n_around
            rot = np.array([[math.cos(phase), -math.sin(phase)], [math.sin(phase), math.cos(phase)]])
            offset = len(v)
            new = np.column_stack([xy[inner] @ rot.T, np.full(inner.size, zc)])
            v = np.concatenate([v, new])
            mapping = np.empty(len(xy), dtype=np.int64)
            mapping[inner] = offset + np.arange(inner.size)
            # outer ring vertex q of the disc sits at the angle of the end ring's vertex q
            ring_angles = np.arctan2(xy[outer, 1], xy[outer, 0]) + phase
            end_angles = np.arctan2(v[rings[k], 1], v[rings[k], 0])
            diff = np.abs(np.angle(np.exp(1j * (ring_angles[:, None] - end_angles[None, :]))))
            mapping[outer] = rings[k][np.argmin(diff, axis=1)]
            tri = np.concatenate([tri, mapping[disc]])
    v = v + c

    def outward(x):
        radial = np.column_stack([x[:, 0] - c[0], x[:, 1] - c[1], np.zeros(len(x))])
        if caps:
            z_rel = x[:, 2] - c[2]
            on_bottom = np.isclose(z_rel, 0.0, atol=1e-12 * Hc)
            on_top = np.isclose(z_rel, Hc, atol=1e-12 * Hc)
            radial[on_bottom] = (0.0, 0.0, -1.0)
            radial[on_top] = (0.0, 0.0, 1.0)
        return radial
    return Mesh(v, _orient(v, tri, outward))


def icosphere(radius, level, center=(0.0, 0.0, 0.0), relax: int = 400) -> Mesh:
    """An icosahedron subdivided `level` times (each triangle into four), on the sphere,
    relaxed `relax` iterations towards equal edge lengths (0: the plain subdivision)."""
    R = _positive("radius", radius)
    level = int(level)
    if level < 0:
        raise InputError(f"icosphere: level must be >= 0 (got {level})")
    p = (1 + 5**0.5) / 2
    v = [np.array(x, dtype=float) for x in
         ([-1, p, 0], [1, p, 0], [-1, -p, 0], [1, -p, 0], [0, -1, p], [0, 1, p], [0, -1, -p],
          [0, 1, -p], [p, 0, -1], [p, 0, 1], [-p, 0, -1], [-p, 0, 1])]
    tris = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
            (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
            (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    v = [x / np.linalg.norm(x) for x in v]
    for _ in range(level):
        midpoint = {}

        def mid(i, j):
            key = (min(i, j), max(i, j))
            if key not in midpoint:
                m = v[i] + v[j]
                v.append(m / np.linalg.norm(m))
                midpoint[key] = len(v) - 1
            return midpoint[key]
        tris = [t for a, b, c in tris for t in ((a, mid(a, b), mid(c, a)), (b, mid(b, c), mid(a, b)),
                                                (c, mid(c, a), mid(b, c)), (mid(a, b), mid(b, c),
                                                                            mid(c, a)))]
    x = np.array(v)
    tri = np.array(tris, dtype=np.int64)
    edges = np.unique(np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]),
                              axis=1), axis=0)
    for _ in range(int(relax)):  # springs of the mean length, projected back onto the sphere
        d = x[edges[:, 1]] - x[edges[:, 0]]
        length = np.linalg.norm(d, axis=1)
        f = ((length - length.mean()) / length)[:, None] * d
        step = np.zeros_like(x)
        np.add.at(step, edges[:, 0], f)
        np.add.at(step, edges[:, 1], -f)
        x += 0.2 * step
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    c = np.asarray(center, dtype=np.float64)
    vertices = R * x + c
    return Mesh(vertices, _orient(vertices, tri, lambda x: x - c))


__all__ = ["flat_sheet", "cylinder", "icosphere"]
