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
  to every triangle is at least r. A voxel grid (``classify``) speeds this up: voxels that no
  triangle's bounding box (widened by the largest radius) reaches lie wholly inside or
  outside, one winding number per connected group of them; a voxel near the surface lists
  the triangles that reach it, and a sphere there is tested against those only: its
  distance to them, and its side from the voxel centre's side (one winding number per such
  voxel) and the parity of the triangles the segment from the centre crosses. A segment that
  grazes an edge to round-off takes the full test.

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
#: the voxel grid of a region without one: (lo, 1/size, margin), dims, states, list starts,
#: listed triangles, centre inside flags
_NO_GRID = (np.zeros(7), np.ones(3, dtype=np.int64), np.zeros(1, dtype=np.int8),
            np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int8))
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
        """(kind, params, vertices, triangles, the voxel grid arrays): the arguments of
        :func:`sphere_inside` after the sphere."""
        return (self.kind, self.params, np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64),
                *_NO_GRID)

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
        """Build the voxel grid for spheres up to radius ``margin`` (the insertion calls this
        with its largest radius): each voxel is INSIDE, OUTSIDE or, near the surface,
        UNKNOWN with the list of the triangles that can matter there."""
        if self._voxels <= 0 or margin <= self._grid_margin:
            return
        span = self.hi - self.lo
        size = float(span.max()) / self._voxels
        dims = np.maximum(np.ceil(span / size).astype(np.int64), 1)
        inv = dims / np.maximum(span, 1e-300)
        v, t = self.mesh.vertices, self.mesh.triangles
        states = _classify_voxels(v, t, self.lo, inv, dims, float(margin))
        start, tris = _voxel_lists(v, t, self.lo, inv, dims, float(margin))
        centre = _centre_flags(v, t, self.lo, inv, dims, states, start, tris)
        head = np.concatenate((self.lo, inv, [float(margin)]))
        self._grid = (head, dims, states, start, tris, centre)
        self._grid_margin = float(margin)

    def arrays(self):
        grid = _NO_GRID if self._grid is None else self._grid
        return (self.kind, self.params, self.mesh.vertices, self.mesh.triangles, *grid)

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
def _voxel_range(vertices, triangles, t, lo, inv, dims, pad, kmin, kmax):
    """The voxels the bounding box of triangle t, widened by pad, reaches (kmin..kmax)."""
    for a in range(3):
        low = min(vertices[triangles[t, 0], a], vertices[triangles[t, 1], a],
                  vertices[triangles[t, 2], a]) - pad
        high = max(vertices[triangles[t, 0], a], vertices[triangles[t, 1], a],
                   vertices[triangles[t, 2], a]) + pad
        kmin[a] = min(max(int(math.floor((low - lo[a]) * inv[a])), 0), dims[a] - 1)
        kmax[a] = min(max(int(math.floor((high - lo[a]) * inv[a])), 0), dims[a] - 1)


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
        _voxel_range(vertices, triangles, t, lo, inv, dims, margin, kmin, kmax)
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
def _voxel_lists(vertices, triangles, lo, inv, dims, margin):
    """Per voxel, the triangles whose bounding box widened by ``margin`` reaches it (CSR:
    start, triangles). A sphere of radius <= margin about a point of the voxel can only touch
    these, and a segment inside the voxel can only cross these."""
    ncell = dims[0] * dims[1] * dims[2]
    count = np.zeros(ncell + 1, dtype=np.int64)
    kmin = np.empty(3, dtype=np.int64)
    kmax = np.empty(3, dtype=np.int64)
    for sweep in range(2):
        if sweep == 1:
            for c in range(ncell):
                count[c + 1] += count[c]
            fill = count[:ncell].copy()
            out = np.empty(count[ncell], dtype=np.int64)
        for t in range(triangles.shape[0]):
            _voxel_range(vertices, triangles, t, lo, inv, dims, margin, kmin, kmax)
            for iz in range(kmin[2], kmax[2] + 1):
                for iy in range(kmin[1], kmax[1] + 1):
                    for ix in range(kmin[0], kmax[0] + 1):
                        c = ix + dims[0] * (iy + dims[1] * iz)
                        if sweep == 0:
                            count[c + 1] += 1
                        else:
                            out[fill[c]] = t
                            fill[c] += 1
    return count, out


@kernel
def _voxel_centre(c, lo, inv, dims, p):
    ix, iy, iz = c % dims[0], (c // dims[0]) % dims[1], c // (dims[0] * dims[1])
    p[0] = lo[0] + (ix + 0.5) / inv[0]
    p[1] = lo[1] + (iy + 0.5) / inv[1]
    p[2] = lo[2] + (iz + 0.5) / inv[2]


@kernel
def _centre_flags(vertices, triangles, lo, inv, dims, states, start, tris):
    """Per UNKNOWN voxel: 1 when its centre is inside, 0 outside, -1 when the centre lies
    on the surface to round-off (no reference point: such voxels take the full test)."""
    flags = np.full(states.shape[0], -1, dtype=np.int8)
    p = np.empty(3)
    tiny = 1e-9 / max(inv[0], inv[1], inv[2])
    for c in range(states.shape[0]):
        if states[c] != VOXEL_UNKNOWN:
            continue
        _voxel_centre(c, lo, inv, dims, p)
        near = False
        for k in range(start[c], start[c + 1]):
            t = tris[k]
            if _triangle_d2(p[0], p[1], p[2], vertices, triangles[t, 0], triangles[t, 1],
                            triangles[t, 2]) <= tiny * tiny:
                near = True
        if not near:
            flags[c] = 1 if winding_number(p, vertices, triangles) >= 0.5 else 0
    return flags


@kernel
def _segment_crosses(px, py, pz, qx, qy, qz, vertices, i, j, k):
    """Whether the segment p-q crosses triangle (i, j, k): 1 yes, 0 no, -1 too close to
    tell (it passes within round-off of an edge, or an end lies on the plane)."""
    ox, oy, oz = vertices[i, 0], vertices[i, 1], vertices[i, 2]
    ax, ay, az = vertices[j, 0] - ox, vertices[j, 1] - oy, vertices[j, 2] - oz
    bx, by, bz = vertices[k, 0] - ox, vertices[k, 1] - oy, vertices[k, 2] - oz
    dx, dy, dz = qx - px, qy - py, qz - pz
    hx, hy, hz = dy * bz - dz * by, dz * bx - dx * bz, dx * by - dy * bx
    det = ax * hx + ay * hy + az * hz
    eps = 1e-10
    scale = math.sqrt((dx * dx + dy * dy + dz * dz) * (ax * ax + ay * ay + az * az)
                      * (bx * bx + by * by + bz * bz))
    if abs(det) <= eps * scale:
        return 0  # parallel to the plane: no crossing (touching it is the distance test's)
    sx, sy, sz = px - ox, py - oy, pz - oz
    u = (sx * hx + sy * hy + sz * hz) / det
    gx, gy, gz = sy * az - sz * ay, sz * ax - sx * az, sx * ay - sy * ax
    v = (dx * gx + dy * gy + dz * gz) / det
    w = (bx * gx + by * gy + bz * gz) / det
    if u < -eps or v < -eps or u + v > 1 + eps or w < -eps or w > 1 + eps:
        return 0
    if u < eps or v < eps or u + v > 1 - eps or w < eps or w > 1 - eps:
        return -1
    return 1


@kernel
def sphere_inside(p, r, kind, params, vertices, triangles, vhead, vdims, vstates, vstart, vtris,
                  vcentre):
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
    # mesh: the voxel grid first, then the triangles listed for the voxel, else all of them
    if vstates.shape[0] > 1 and r <= vhead[6]:
        c = 0
        stride = 1
        for a in range(3):
            k = int(math.floor((p[a] - vhead[a]) * vhead[3 + a]))
            if k < 0 or k >= vdims[a]:
                return False
            c += k * stride
            stride *= vdims[a]
        if vstates[c] == VOXEL_OUTSIDE:
            return False
        if vstates[c] == VOXEL_INSIDE:
            return True
        if vcentre[c] >= 0:
            r2 = r * r
            for m in range(vstart[c], vstart[c + 1]):
                t = vtris[m]
                if _triangle_d2(p[0], p[1], p[2], vertices, triangles[t, 0], triangles[t, 1],
                                triangles[t, 2]) < r2:
                    return False
            # inside like the voxel's centre unless the segment to it crosses the surface
            # an odd number of times
            ix, iy, iz = c % vdims[0], (c // vdims[0]) % vdims[1], c // (vdims[0] * vdims[1])
            cx = vhead[0] + (ix + 0.5) / vhead[3]
            cy = vhead[1] + (iy + 0.5) / vhead[4]
            cz = vhead[2] + (iz + 0.5) / vhead[5]
            inside = vcentre[c] == 1
            clear = True
            for m in range(vstart[c], vstart[c + 1]):
                t = vtris[m]
                cross = _segment_crosses(cx, cy, cz, p[0], p[1], p[2], vertices, triangles[t, 0],
                                         triangles[t, 1], triangles[t, 2])
                if cross < 0:
                    clear = False
                    break
                if cross == 1:
                    inside = not inside
            if clear:
                return inside
    return _mesh_test(p, r, vertices, triangles)


@kernel
def _inside_many(x, r, kind, params, vertices, triangles, vhead, vdims, vstates, vstart, vtris,
                 vcentre):
    out = np.empty(x.shape[0], dtype=np.bool_)
    for i in range(x.shape[0]):
        out[i] = sphere_inside(x[i], r[i], kind, params, vertices, triangles, vhead, vdims,
                               vstates, vstart, vtris, vcentre)
    return out


__all__ = ["Region", "BoxRegion", "CylinderRegion", "MeshRegion", "RegionError",
           "winding_number", "triangle_distance2", "sphere_inside"]
