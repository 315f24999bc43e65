"""Volume, centre and second moments of a clump's shape, three ways.

Every function returns a :class:`Shape` per unit density: ``volume`` V [m^3],
``centre`` c [m] and ``second_moment`` S = integral of (x - c)(x - c)^T dV
[m^5] about that centre. A body of density rho then has mass rho V and
inertia tensor rho (tr(S) 1 - S) about its centre of mass (``Shape.inertia``).

* :func:`of_spheres`: summation over pebbles that do not overlap, exact
  (each sphere's own 2/5 m r^2 moved to the centre by the parallel-axis
  rule). Overlapping pebbles would be counted twice: refused (use voxels).
* :func:`of_voxels`: the union of the pebbles (overlaps counted once) on a
  grid of cubes of side h: a cube counts whole when its centre lies in some
  pebble. Each counted cube brings its own second moment h^5/12 per axis.
  The error falls as the grid is refined (first order in h for the volume of
  a curved surface, with cancellations that usually make it faster).
* :func:`of_closed_surface`: exact for a closed triangle mesh wound outward.
  The solid is the signed sum of the tetrahedra (p, a, b, c) that every
  triangle (a, b, c) spans with a reference point p (the divergence theorem
  applied triangle by triangle; Mirtich, J. Graphics Tools 1 (1996) 31 and
  Eberly, "Polyhedral mass properties" (2002) derive the same integrals).
  For a tetrahedron with vertices p + u_k (u_0 = 0, u_1..u_3 the triangle
  relative to p) and signed volume v = u_1 . (u_2 x u_3) / 6:
  integral of y dV = v s / 4 and integral of y y^T dV = v (sum_k u_k u_k^T
  + s s^T) / 20, where y = x - p and s = u_1 + u_2 + u_3.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecs_dem.errors import InputError

#: voxels of one slab of the grid evaluated at once (memory stays below ~100 MB)
SLAB_VOXELS = 2_000_000


@dataclass(frozen=True)
class Shape:
    """Volume [m^3], centre [m] and second moment about the centre [m^5], per unit density."""

    volume: float
    centre: np.ndarray
    second_moment: np.ndarray

    @property
    def inertia(self) -> np.ndarray:
        """The inertia tensor per unit density about the centre, tr(S) 1 - S [m^5]."""
        s = self.second_moment
        return np.trace(s) * np.eye(3) - s


def _pebbles(centres, radii) -> tuple[np.ndarray, np.ndarray]:
    c = np.atleast_2d(np.asarray(centres, dtype=np.float64))
    if c.ndim != 2 or c.shape[1] != 3 or c.shape[0] == 0:
        raise InputError(f"clump: pebble centres must have shape (n, 3) with n >= 1, got {c.shape}")
    r = np.broadcast_to(np.asarray(radii, dtype=np.float64), (c.shape[0],)).copy()
    if not np.all(np.isfinite(c)):
        raise InputError("clump: pebble centres must be finite")
    if not np.all(np.isfinite(r) & (r > 0)):
        raise InputError(f"clump: every pebble radius must be a positive length in metres "
                         f"(got {r.tolist()})")
    return c, r


def overlapping_pairs(centres, radii) -> np.ndarray:
    """(k, 2) indices of pebbles that overlap (closer than the sum of their radii, less a
    relative 1e-12 that lets touching pebbles pass)."""
    c, r = _pebbles(centres, radii)
    d = np.linalg.norm(c[:, None] - c[None], axis=2)
    i, j = np.nonzero(np.triu(d < (r[:, None] + r[None]) * (1 - 1e-12), 1))
    return np.stack([i, j], axis=1)


def of_spheres(centres, radii) -> Shape:
    """Exact volume, centre and second moment of non-overlapping pebbles (module docstring)."""
    c, r = _pebbles(centres, radii)
    pairs = overlapping_pairs(c, r)
    if pairs.size:
        i, j = pairs[0]
        raise InputError(f"clump: pebbles {i} and {j} overlap, so a sum over pebbles counts the "
                         "overlap twice; use mass_properties='voxels' (the union on a grid) or "
                         "give the template's closed surface")
    v = 4.0 / 3.0 * np.pi * r**3
    volume = float(v.sum())
    centre = (v[:, None] * c).sum(axis=0) / volume
    d = c - centre
    # a ball's own second moment is r^2 / 5 per axis (times its volume)
    s = np.einsum("k,ki,kj->ij", v, d, d) + np.eye(3) * float((v * r**2).sum() / 5.0)
    return Shape(volume, centre, s)


def of_voxels(centres, radii, voxel: float | None = None) -> Shape:
    """The union of the pebbles on a grid of cubes of side `voxel` [m] (default a twentieth of
    the smallest radius); module docstring."""
    c, r = _pebbles(centres, radii)
    h = float(r.min() / 20.0 if voxel is None else voxel)
    if not (np.isfinite(h) and h > 0):
        raise InputError(f"clump: voxel size must be a positive length in metres (got {voxel})")
    lo = (c - r[:, None]).min(axis=0)
    hi = (c + r[:, None]).max(axis=0)
    counts = np.ceil((hi - lo) / h).astype(np.int64) + 1
    if int(np.prod(counts)) > 2_000_000_000:
        raise InputError(f"clump: a voxel of {h:.3g} m makes {int(np.prod(counts))} cubes; "
                         "give a larger voxel")
    axes = [lo[a] + h * (np.arange(counts[a]) + 0.5) - 0.5 * (counts[a] * h - (hi[a] - lo[a]))
            for a in range(3)]
    gx, gy = np.meshgrid(axes[0], axes[1], indexing="ij")
    gx, gy = gx.ravel(), gy.ravel()
    n = 0
    first = np.zeros(3)
    second = np.zeros((3, 3))
    per_slab = max(1, SLAB_VOXELS // gx.size)
    for start in range(0, axes[2].size, per_slab):
        zs = axes[2][start:start + per_slab]
        pts = np.column_stack([np.tile(gx, zs.size), np.tile(gy, zs.size), np.repeat(zs, gx.size)])
        inside = np.zeros(pts.shape[0], dtype=bool)
        for k in range(c.shape[0]):
            inside |= ((pts - c[k]) ** 2).sum(axis=1) < r[k] ** 2
        p = pts[inside] - lo  # relative to a corner: smaller round-off in the sums
        n += p.shape[0]
        first += p.sum(axis=0)
        second += p.T @ p
    if n == 0:
        raise InputError(f"clump: no voxel of {h:.3g} m lies inside the pebbles; use a smaller voxel")
    volume = n * h**3
    mean = first / n
    s = (second / n - np.outer(mean, mean)) * volume + np.eye(3) * volume * h**2 / 12.0
    return Shape(float(volume), mean + lo, s)


def of_closed_surface(vertices, triangles) -> Shape:
    """Exact volume, centre and second moment of the solid a closed, outward-wound triangle
    mesh bounds (module docstring). The mesh is not checked here; ``components.clumps.template``
    validates it first."""
    x = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles, dtype=np.int64)
    p = x.mean(axis=0)
    u = x[t] - p  # (m, 3 corners, 3)
    v = np.einsum("ij,ij->i", u[:, 0], np.cross(u[:, 1], u[:, 2])) / 6.0
    volume = float(v.sum())
    if not volume > 0:
        raise InputError(f"clump: the closed surface encloses volume {volume:.3g} m^3; a solid "
                         "needs a positive volume (triangles wound counter-clockwise seen from "
                         "outside)")
    s = u.sum(axis=1)
    first = (v[:, None] * s).sum(axis=0) / 4.0
    outer = np.einsum("mki,mkj->mij", u, u) + np.einsum("mi,mj->mij", s, s)
    second = np.einsum("m,mij->ij", v, outer) / 20.0
    centre = first / volume
    s_c = second - volume * np.outer(centre, centre)
    return Shape(volume, centre + p, 0.5 * (s_c + s_c.T))


__all__ = ["Shape", "of_spheres", "of_voxels", "of_closed_surface", "overlapping_pairs"]
