"""Insertion regions: a box, a cylinder, the inside of a closed triangle mesh.

A region answers one question, for the insertion kernels and for users: does a sphere of
radius r about x lie wholly inside (``contains``)? It also gives its bounding box (where
candidate positions are drawn) and its volume (to turn a solid fraction into a grain count).

- :class:`BoxRegion`: lo + r <= x <= hi - r on every axis.
- :class:`CylinderRegion`: a right circular cylinder along x, y or z from its base centre;
  distance from the axis <= R - r and r <= height coordinate <= h - r.
- :class:`MeshRegion`: a closed mesh, validated (``components.mesh.validation``: merged,
  manifold, outward wound); x is inside when its winding number (the solid angle of the
  surface seen from x over 4 pi, van Oosterom and Strackee's formula per triangle) exceeds
  1/2, which is exact for a closed surface and robust to round-off near edges (unlike a ray
  parity test, no ray can graze a vertex); the sphere fits when x is inside and its distance
  to every triangle is at least r. A coarse voxel grid classifies cells that lie wholly
  inside or wholly outside once, so most candidates skip the per-triangle test.

All three share one numba test (:func:`sphere_inside`) fed by ``kind`` and ``params``, so the
insertion kernel takes any region without Python in its loop.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.validation import MeshError, boundary_edges, validate_mesh

KIND_BOX, KIND_CYLINDER, KIND_MESH = 0, 1, 2
AXES = {"x": 0, "y": 1, "z": 2}
#: voxel states of a mesh region's classification grid
VOXEL_UNKNOWN, VOXEL_INSIDE, VOXEL_OUTSIDE = 0, 1, 2


class RegionError(InputError):
    """A region that cannot take grains; the message names the defect and the fix."""


def _vector(name: str, value) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64).reshape(-1)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise RegionError(f"region: {name} must be three finite coordinates in metres, got {value!r}")
    return v


class Region:
    """Base of the insertion regions: ``lo``, ``hi`` (bounding box), ``volume``, ``kind``,
    ``params`` and the mesh arrays of the shared numba test."""

    kind = KIND_BOX
    lo: np.ndarray
    hi: np.ndarray
    volume: float

    def arrays(self):
        """(kind, params, vertices, triangles, voxel lo, voxel inv size, voxel dims, voxel
        states, voxel margin): the arguments of :func:`sphere_inside`."""
        empty3 = np.zeros((0, 3))
        return (self.kind, self.params, empty3, np.zeros((0, 3), dtype=np.int64),
                np.zeros(3), np.zeros(3), np.ones(3, dtype=np.int64),
                np.zeros(1, dtype=np.int8), 0.0)

    def contains(self, position, radius=0.0) -> np.ndarray:
        """Whether each sphere (centre position (n, 3), radius (n,) or scalar, m) lies wholly
        inside the region."""
        x = np.atleast_2d(np.asarray(position, dtype=np.float64))
        r = np.broadcast_to(np.asarray(radius, dtype=np.float64), (x.shape[0],)).copy()
        return _inside_many(x, r, *self.arrays())


class BoxRegion(Region):
    """The axis-aligned box from ``lo`` to ``hi`` (m)."""

    kind = KIND_BOX

    def __init__(self, lo, hi):
        self.lo, self.hi = _vector("lo", lo), _vector("hi", hi)
        if np.any(self.hi <= self.lo):
            raise RegionError(f"box region: hi {self.hi.tolist()} must exceed lo "
                              f"{self.lo.tolist()} on every axis: swap the corners")
        self.params = np.concatenate((self.lo, self.hi))
        self.volume = float(np.prod(self.hi - self.lo))

    def __repr__(self):
        return f"BoxRegion({self.lo.tolist()}, {self.hi.tolist()})"


class CylinderRegion(Region):
    """A cylinder of ``radius`` and ``height`` (m) whose base centre is ``base`` and whose axis
    runs along ``axis`` ("x", "y" or "z")."""

    kind = KIND_CYLINDER

    def __init__(self, base, radius: float, height: float, axis: str = "z"):
        self.base = _vector("base", base)
        if str(axis).lower() not in AXES:
            raise RegionError(f"cylinder region: axis {axis!r} must be x, y or z (for another "
                              "direction use a mesh region: components.mesh.generators.cylinder "
                              "with caps, rotated)")
        a = AXES[str(axis).lower()]
        R, h = float(radius), float(height)
        if not (np.isfinite(R) and R > 0 and np.isfinite(h) and h > 0):
            raise RegionError(f"cylinder region: radius {radius!r} and height {height!r} must "
                              "be lengths > 0 in metres")
        self.radius, self.height, self.axis = R, h, a
        self.lo = self.base - R
        self.hi = self.base + R
        self.lo[a], self.hi[a] = self.base[a], self.base[a] + h
        self.params = np.array([*self.base, R, h, float(a)])
        self.volume = math.pi * R * R * h

    def __repr__(self):
        return (f"CylinderRegion({self.base.tolist()}, {self.radius}, {self.height}, "
                f"axis={'xyz'[self.axis]!r})")


class MeshRegion(Region):
    """The inside of a closed triangle mesh (a :class:`~ecs_dem.components.mesh.Mesh`, e.g.
    from ``read_mesh`` or a generator). ``voxels`` cells along the longest side classify
    the bounding box once (0: test every candidate against all triangles)."""

    kind = KIND_MESH

    def __init__(self, mesh: Mesh, voxels: int = 32):
        if not isinstance(mesh, Mesh):
            raise RegionError(f"mesh region: expected a Mesh (components.mesh), got "
                              f"{type(mesh).__name__}")
        clean = validate_mesh(mesh)
        open_edges = boundary_edges(clean)
        if len(open_edges):
            raise MeshError(f"mesh region: the surface is not closed ({len(open_edges)} boundary "
                            f"edges, first between vertices {open_edges[0].tolist()} of the "
                            "cleaned mesh), so it has no inside: close the holes (e.g. "
                            "generators.cylinder(..., caps=True), or a mesh repair tool)")
        self.mesh = clean
        self.volume = clean.signed_volume()
        v = clean.vertices
        self.lo, self.hi = v.min(axis=0), v.max(axis=0)
        self.params = np.zeros(0)
        self._voxels = int(voxels)
        self._grid = None
        self._grid_margin = -1.0

    def classify(self, margin: float) -> None:
        """Classify the voxel grid for spheres up to radius ``margin`` (the insertion calls
        this with its largest radius)."""
        if self._voxels <= 0 or margin <= self._grid_margin:
            return
        span = self.hi - self.lo
        size = float(span.max()) / self._voxels
        dims = np.maximum(np.ceil(span / size).astype(np.int64), 1)
        inv = dims / np.maximum(span, 1e-300)
        states = _classify_voxels(self.mesh.vertices, self.mesh.triangles, self.lo, inv, dims,
                                  float(margin))
        self._grid = (self.lo.copy(), inv, dims, states)
        self._grid_margin = float(margin)

    def arrays(self):
        if self._grid is None:
            grid = (np.zeros(3), np.zeros(3), np.ones(3, dtype=np.int64),
                    np.zeros(1, dtype=np.int8))
            margin = 0.0
        else:
            grid, margin = self._grid, self._grid_margin
        return (self.kind, self.params, self.mesh.vertices, self.mesh.triangles, *grid, margin)

    def __repr__(self):
        return (f"MeshRegion({len(self.mesh.triangles)} triangles, volume {self.volume:.6g} "
                "m^3)")


# ---- kernels ------------------------------------------------------------------------------
@kernel
def _segment_distance2(px, py, pz, ax, ay, az, bx, by, bz):
    """Squared distance from p to the segment a-b."""
    ex, ey, ez = bx - ax, by - ay, bz - az
    wx, wy, wz = px - ax, py - ay, pz - az
    len2 = ex * ex + ey * ey + ez * ez
    t = 0.0
    if len2 > 0.0:
        t = min(max((wx * ex + wy * ey + wz * ez) / len2, 0.0), 1.0)
    dx, dy, dz = wx - t * ex, wy - t * ey, wz - t * ez
    return dx * dx + dy * dy + dz * dz


@kernel
def _triangle_d2(px, py, pz, v, i, j, k):
    """Squared distance from (px, py, pz) to the triangle of vertex rows i, j, k of v: the
    distance to the plane when the foot point falls inside the triangle (it lies on the
    inner side of all three edges), else the nearest of the three edges."""
    ax, ay, az = v[i, 0], v[i, 1], v[i, 2]
    bx, by, bz = v[j, 0], v[j, 1], v[j, 2]
    cx, cy, cz = v[k, 0], v[k, 1], v[k, 2]
    ux, uy, uz = bx - ax, by - ay, bz - az
    wx, wy, wz = cx - ax, cy - ay, cz - az
    nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
    nn = nx * nx + ny * ny + nz * nz
    if nn > 0.0:
        h = ((px - ax) * nx + (py - ay) * ny + (pz - az) * nz) / nn
        fx, fy, fz = px - h * nx, py - h * ny, pz - h * nz
        # (edge x (foot - edge start)) . n >= 0 for the three edges a-b, b-c, c-a
        s1 = ((by - ay) * (fz - az) - (bz - az) * (fy - ay)) * nx \
            + ((bz - az) * (fx - ax) - (bx - ax) * (fz - az)) * ny \
            + ((bx - ax) * (fy - ay) - (by - ay) * (fx - ax)) * nz
        s2 = ((cy - by) * (fz - bz) - (cz - bz) * (fy - by)) * nx \
            + ((cz - bz) * (fx - bx) - (cx - bx) * (fz - bz)) * ny \
            + ((cx - bx) * (fy - by) - (cy - by) * (fx - bx)) * nz
        s3 = ((ay - cy) * (fz - cz) - (az - cz) * (fy - cy)) * nx \
            + ((az - cz) * (fx - cx) - (ax - cx) * (fz - cz)) * ny \
            + ((ax - cx) * (fy - cy) - (ay - cy) * (fx - cx)) * nz
        if s1 >= 0.0 and s2 >= 0.0 and s3 >= 0.0:
            return h * h * nn
    d = _segment_distance2(px, py, pz, ax, ay, az, bx, by, bz)
    d = min(d, _segment_distance2(px, py, pz, bx, by, bz, cx, cy, cz))
    return min(d, _segment_distance2(px, py, pz, cx, cy, cz, ax, ay, az))


def triangle_distance2(p, a, b, c) -> float:
    """Squared distance from point p to the triangle a, b, c (3-vectors, m^2)."""
    v = np.array([a, b, c], dtype=np.float64)
    return float(_triangle_d2(float(p[0]), float(p[1]), float(p[2]), v, 0, 1, 2))


@kernel
def winding_number(p, vertices, triangles):
    """The winding number of a closed, outward wound surface about p: 1 inside, 0 outside
    (the sum of the triangles' signed solid angles over 4 pi)."""
    total = 0.0
    for t in range(triangles.shape[0]):
        i, j, k = triangles[t, 0], triangles[t, 1], triangles[t, 2]
        ax, ay, az = vertices[i, 0] - p[0], vertices[i, 1] - p[1], vertices[i, 2] - p[2]
        bx, by, bz = vertices[j, 0] - p[0], vertices[j, 1] - p[1], vertices[j, 2] - p[2]
        cx, cy, cz = vertices[k, 0] - p[0], vertices[k, 1] - p[1], vertices[k, 2] - p[2]
        la = math.sqrt(ax * ax + ay * ay + az * az)
        lb = math.sqrt(bx * bx + by * by + bz * bz)
        lc = math.sqrt(cx * cx + cy * cy + cz * cz)
        det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
        den = (la * lb * lc + (ax * bx + ay * by + az * bz) * lc
               + (ax * cx + ay * cy + az * cz) * lb + (bx * cx + by * cy + bz * cz) * la)
        total += 2.0 * math.atan2(det, den)
    return total / (4.0 * math.pi)


@kernel
def _mesh_test(p, r, vertices, triangles):
    """Sphere (p, r) wholly inside the closed mesh."""
    if winding_number(p, vertices, triangles) < 0.5:
        return False
    r2 = r * r
    for t in range(triangles.shape[0]):
        if _triangle_d2(p[0], p[1], p[2], vertices, triangles[t, 0], triangles[t, 1],
                        triangles[t, 2]) < r2:
            return False
    return True


@kernel
def _classify_voxels(vertices, triangles, lo, inv, dims, margin):
    """Per voxel: UNKNOWN when some triangle's bounding box, widened by ``margin``, reaches
    into it; the other voxels form connected groups the surface does not cross (a crossing
    would lie in a voxel and mark it), so one winding number per group classifies the whole
    group INSIDE or OUTSIDE. Every point of an INSIDE voxel lies farther than ``margin`` from
    every triangle: a sphere of radius <= margin about it fits."""
    nx, ny, nz = dims[0], dims[1], dims[2]
    states = np.zeros(nx * ny * nz, dtype=np.int8)
    touched = np.zeros(nx * ny * nz, dtype=np.bool_)
    kmin = np.empty(3, dtype=np.int64)
    kmax = np.empty(3, dtype=np.int64)
    for t in range(triangles.shape[0]):
        for a in range(3):
            low = min(vertices[triangles[t, 0], a], vertices[triangles[t, 1], a],
                      vertices[triangles[t, 2], a]) - margin
            high = max(vertices[triangles[t, 0], a], vertices[triangles[t, 1], a],
                       vertices[triangles[t, 2], a]) + margin
            kmin[a] = min(max(int(math.floor((low - lo[a]) * inv[a])), 0), dims[a] - 1)
            kmax[a] = min(max(int(math.floor((high - lo[a]) * inv[a])), 0), dims[a] - 1)
        for iz in range(kmin[2], kmax[2] + 1):
            for iy in range(kmin[1], kmax[1] + 1):
                for ix in range(kmin[0], kmax[0] + 1):
                    touched[ix + nx * (iy + ny * iz)] = True
    stack = np.empty(nx * ny * nz, dtype=np.int64)
    p = np.empty(3)
    for seed in range(nx * ny * nz):
        if touched[seed] or states[seed] != VOXEL_UNKNOWN:
            continue
        ix, iy, iz = seed % nx, (seed // nx) % ny, seed // (nx * ny)
        p[0] = lo[0] + (ix + 0.5) / inv[0]
        p[1] = lo[1] + (iy + 0.5) / inv[1]
        p[2] = lo[2] + (iz + 0.5) / inv[2]
        state = VOXEL_INSIDE if winding_number(p, vertices, triangles) >= 0.5 else VOXEL_OUTSIDE
        states[seed] = state
        stack[0] = seed
        top = 1
        while top > 0:
            top -= 1
            c = stack[top]
            cx, cy, cz = c % nx, (c // nx) % ny, c // (nx * ny)
            for step in range(6):
                qx, qy, qz = cx, cy, cz
                if step == 0:
                    qx -= 1
                elif step == 1:
                    qx += 1
                elif step == 2:
                    qy -= 1
                elif step == 3:
                    qy += 1
                elif step == 4:
                    qz -= 1
                else:
                    qz += 1
                if qx < 0 or qy < 0 or qz < 0 or qx >= nx or qy >= ny or qz >= nz:
                    continue
                q = qx + nx * (qy + ny * qz)
                if not touched[q] and states[q] == VOXEL_UNKNOWN:
                    states[q] = state
                    stack[top] = q
                    top += 1
    return states


@kernel
def sphere_inside(p, r, kind, params, vertices, triangles, vlo, vinv, vdims, vstates, vmargin):
    """Whether the sphere of radius r about p lies wholly inside the region (see the module
    docstring for the three kinds)."""
    if kind == KIND_BOX:
        for a in range(3):
            if p[a] < params[a] + r or p[a] > params[3 + a] - r:
                return False
        return True
    if kind == KIND_CYLINDER:
        ax = int(params[5])
        h = p[ax] - params[ax]
        if h < r or h > params[4] - r:
            return False
        rho2 = 0.0
        for a in range(3):
            if a != ax:
                rho2 += (p[a] - params[a]) ** 2
        lim = params[3] - r
        return lim >= 0.0 and rho2 <= lim * lim
    # mesh: the voxel grid first, then the exact test
    if vstates.shape[0] > 1:
        c = 0
        stride = 1
        outside_grid = False
        for a in range(3):
            k = int(math.floor((p[a] - vlo[a]) * vinv[a]))
            if k < 0 or k >= vdims[a]:
                outside_grid = True
                break
            c += k * stride
            stride *= vdims[a]
        if outside_grid:
            return False
        if vstates[c] == VOXEL_OUTSIDE:
            return False
        if vstates[c] == VOXEL_INSIDE and r <= vmargin:
            return True
    return _mesh_test(p, r, vertices, triangles)


@kernel
def _inside_many(x, r, kind, params, vertices, triangles, vlo, vinv, vdims, vstates, vmargin):
    out = np.empty(x.shape[0], dtype=np.bool_)
    for i in range(x.shape[0]):
        out[i] = sphere_inside(x[i], r[i], kind, params, vertices, triangles, vlo, vinv, vdims,
                               vstates, vmargin)
    return out


__all__ = ["Region", "BoxRegion", "CylinderRegion", "MeshRegion", "RegionError",
           "winding_number", "triangle_distance2", "sphere_inside"]
