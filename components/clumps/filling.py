"""Fill a closed surface with pebbles: the clump of a grain given as a mesh.

Algorithm (greedy largest inscribed spheres on a distance field):

1. A grid of cubes of side h over the mesh's bounding box; at every cube
   centre the distance D to the surface (closest point on each triangle,
   Ericson, Real-Time Collision Detection, 5.1.5) and whether it lies
   inside (generalised winding number: the solid angles of the triangles,
   van Oosterom & Strackee 1983, summed over 4 pi, above 1/2).
2. Repeat: among the inside centres not yet inside a pebble, take the one
   with the largest D and put there a pebble of radius D (the largest ball
   centred there that stays inside the surface, to within the grid's h).
   Stop when `pebbles` are placed, or when the surface error below is
   within `tolerance`, or when no uncovered centre has D of at least
   `min_radius`.

Surface error (``Filling.surface_error``): at sample points on the surface
(the vertices and the centroids of the triangles) the gap to the union of
the pebbles, max(0, min_k |s - c_k| - r_k), largest over the samples and
divided by the radius of the sphere of equal volume. Pebbles never reach
outside the surface by more than h (the grid), so the gap is the error that
matters: the clump is smaller than the grain. ``Filling.volume_fraction``
gives the union's volume on the same grid over the mesh's exact volume.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import inline, kernel

from ..mesh.surface import Mesh
from ..mesh.validation import boundary_edges, validate_mesh


@inline
def _dot(a0, a1, a2, b0, b1, b2):
    return a0 * b0 + a1 * b1 + a2 * b2


@inline
def closest_point_distance2(p0, p1, p2, a0, a1, a2, b0, b1, b2, c0, c1, c2):
    """Squared distance from p to triangle abc: the closest point by its Voronoi region
    (Ericson, Real-Time Collision Detection, 5.1.5)."""
    ab0, ab1, ab2 = b0 - a0, b1 - a1, b2 - a2
    ac0, ac1, ac2 = c0 - a0, c1 - a1, c2 - a2
    d1 = _dot(ab0, ab1, ab2, p0 - a0, p1 - a1, p2 - a2)
    d2 = _dot(ac0, ac1, ac2, p0 - a0, p1 - a1, p2 - a2)
    d3 = _dot(ab0, ab1, ab2, p0 - b0, p1 - b1, p2 - b2)
    d4 = _dot(ac0, ac1, ac2, p0 - b0, p1 - b1, p2 - b2)
    d5 = _dot(ab0, ab1, ab2, p0 - c0, p1 - c1, p2 - c2)
    d6 = _dot(ac0, ac1, ac2, p0 - c0, p1 - c1, p2 - c2)
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    # barycentric weights (u of b, w of c) of the closest point
    if d1 <= 0.0 and d2 <= 0.0:
        u, w = 0.0, 0.0
    elif d3 >= 0.0 and d4 <= d3:
        u, w = 1.0, 0.0
    elif d6 >= 0.0 and d5 <= d6:
        u, w = 0.0, 1.0
    elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        u, w = d1 / (d1 - d3), 0.0
    elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        u, w = 0.0, d2 / (d2 - d6)
    elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        u = 1.0 - w
    else:
        den = 1.0 / (va + vb + vc)
        u, w = vb * den, vc * den
    e0 = p0 - (a0 + u * ab0 + w * ac0)
    e1 = p1 - (a1 + u * ab1 + w * ac1)
    e2 = p2 - (a2 + u * ab2 + w * ac2)
    return e0 * e0 + e1 * e1 + e2 * e2


@kernel
def distance_and_winding(points, x, tri):
    """For every point: the distance [m] to the closest point of the triangles and the
    generalised winding number (1 inside a closed outward mesh, 0 outside)."""
    n = points.shape[0]
    dist = np.empty(n)
    wind = np.empty(n)
    for q in range(n):
        p0, p1, p2 = points[q, 0], points[q, 1], points[q, 2]
        best = np.inf
        omega = 0.0
        for t in range(tri.shape[0]):
            a, b, c = tri[t, 0], tri[t, 1], tri[t, 2]
            ra0, ra1, ra2 = x[a, 0] - p0, x[a, 1] - p1, x[a, 2] - p2
            rb0, rb1, rb2 = x[b, 0] - p0, x[b, 1] - p1, x[b, 2] - p2
            rc0, rc1, rc2 = x[c, 0] - p0, x[c, 1] - p1, x[c, 2] - p2
            dd = closest_point_distance2(0.0, 0.0, 0.0, ra0, ra1, ra2, rb0, rb1, rb2,
                                         rc0, rc1, rc2)
            best = min(best, dd)
            # solid angle of the triangle seen from p (van Oosterom & Strackee)
            la = np.sqrt(_dot(ra0, ra1, ra2, ra0, ra1, ra2))
            lb = np.sqrt(_dot(rb0, rb1, rb2, rb0, rb1, rb2))
            lc = np.sqrt(_dot(rc0, rc1, rc2, rc0, rc1, rc2))
            num = _dot(ra0, ra1, ra2, rb1 * rc2 - rb2 * rc1, rb2 * rc0 - rb0 * rc2,
                       rb0 * rc1 - rb1 * rc0)
            den = (la * lb * lc + _dot(ra0, ra1, ra2, rb0, rb1, rb2) * lc
                   + _dot(ra0, ra1, ra2, rc0, rc1, rc2) * lb
                   + _dot(rb0, rb1, rb2, rc0, rc1, rc2) * la)
            omega += 2.0 * np.arctan2(num, den)
        dist[q] = np.sqrt(best)
        wind[q] = omega / (4.0 * np.pi)
    return dist, wind


@dataclass(frozen=True)
class Filling:
    """Pebbles filling a closed mesh, and how well they match it (module docstring)."""

    centres: np.ndarray
    radii: np.ndarray
    surface_error: float    # largest surface gap / radius of the equal-volume sphere
    volume_fraction: float  # union of the pebbles on the grid / exact volume of the mesh
    voxel: float            # h [m]


def closed_mesh(mesh: Mesh) -> Mesh:
    """The mesh validated (merged, wound outward) and checked to be closed."""
    mesh = validate_mesh(mesh)
    open_edges = boundary_edges(mesh)
    if len(open_edges):
        e = np.asarray(open_edges)[:3].tolist()
        raise InputError(f"clump: the surface has {len(open_edges)} boundary edges (e.g. between "
                         f"vertices {e}), so it bounds no solid; close the mesh (fill its holes) "
                         "before filling it with pebbles or taking its mass properties")
    return mesh


def surface_samples(mesh: Mesh) -> np.ndarray:
    """The points the surface error is measured at: vertices and triangle centroids."""
    return np.concatenate([mesh.vertices, mesh.vertices[mesh.triangles].mean(axis=1)])


def surface_gap(samples, centres, radii) -> np.ndarray:
    """Distance from each sample to the union of the pebbles (0 inside one) [m]."""
    d = np.linalg.norm(samples[:, None] - centres[None], axis=2) - radii[None]
    return np.maximum(d.min(axis=1), 0.0)


def fill_mesh(mesh: Mesh, *, pebbles: int = 20, tolerance: float = 0.0,
              min_radius: float | None = None, voxel: float | None = None) -> Filling:
    """Pebbles inside a closed mesh by the greedy algorithm of the module docstring.

    pebbles: the most to place; tolerance: stop once the surface error (relative, as
    ``Filling.surface_error``) is at most this; min_radius [m]: the smallest pebble (default
    a tenth of the largest); voxel: the grid's h [m] (default 1/32 of the bounding box's
    longest side)."""
    mesh = closed_mesh(mesh)
    if int(pebbles) < 1:
        raise InputError(f"clump: fill_mesh needs at least one pebble (got {pebbles})")
    x = mesh.vertices
    lo, hi = x.min(axis=0), x.max(axis=0)
    h = float((hi - lo).max() / 32.0 if voxel is None else voxel)
    if not (np.isfinite(h) and h > 0):
        raise InputError(f"clump: voxel must be a positive length in metres (got {voxel})")
    counts = np.maximum(np.ceil((hi - lo) / h).astype(np.int64), 1)
    if int(np.prod(counts)) > 20_000_000:
        raise InputError(f"clump: a voxel of {h:.3g} m makes {int(np.prod(counts))} grid points; "
                         "give a larger voxel")
    axes = [lo[a] + (hi[a] - lo[a] - counts[a] * h) / 2 + h * (np.arange(counts[a]) + 0.5)
            for a in range(3)]
    pts = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    dist, wind = distance_and_winding(pts, x, mesh.triangles)
    inside = wind > 0.5
    if not inside.any():
        raise InputError(f"clump: no grid point of {h:.3g} m lies inside the surface; give a "
                         "smaller voxel")
    pts, dist = pts[inside], dist[inside]
    samples = surface_samples(mesh)
    r_eq = (3.0 * mesh.signed_volume() / (4.0 * np.pi)) ** (1.0 / 3.0)
    smallest = 0.1 * float(dist.max()) if min_radius is None else float(min_radius)
    covered = np.zeros(pts.shape[0], dtype=bool)
    centres, radii = [], []
    while len(centres) < int(pebbles):
        free = np.flatnonzero(~covered)
        if free.size == 0:
            break
        k = free[np.argmax(dist[free])]
        if dist[k] < smallest:
            break
        centres.append(pts[k])
        radii.append(dist[k])
        covered |= ((pts - pts[k]) ** 2).sum(axis=1) <= dist[k] ** 2
        error = float(surface_gap(samples, np.array(centres), np.array(radii)).max()) / r_eq
        if error <= tolerance:
            break
    c, r = np.array(centres), np.array(radii)
    error = float(surface_gap(samples, c, r).max()) / r_eq
    union = np.zeros(pts.shape[0], dtype=bool)
    for k in range(c.shape[0]):
        union |= ((pts - c[k]) ** 2).sum(axis=1) < r[k] ** 2
    fraction = float(union.sum() * h**3 / mesh.signed_volume())
    return Filling(c, r, error, fraction, h)


__all__ = ["Filling", "fill_mesh", "closed_mesh", "surface_gap", "distance_and_winding"]
