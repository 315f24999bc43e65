"""Grain-patch geometry: closest point on a triangle and the face/edge/vertex classification.

Goetz & Poeschel Sect. 2.5, Eq. (17), as docs/physics.md reads it
(Grain-patch contacts): the contact point is the point of the triangle
closest to the grain's centre (Ericson, Real-Time Collision Detection,
Sect. 5.1.5), with barycentric weights (w0, w1, w2) >= 0 summing to 1; the
contact is a *vertex* contact where two weights vanish, an *edge* contact
where one does, and a *face* contact otherwise. Weights are snapped to zero
below ``SNAP`` (exact tests would let a point on a shared edge count as a
face contact of both triangles and double the force).

Local numbering: vertex k is the triangle's k-th vertex; edge k runs from
vertex k to vertex k + 1 (mod 3), so it is the edge where the weight of
vertex k + 2 vanishes.
"""
from __future__ import annotations

import math

from ecs_dem.jit import inline

from ecs_dem.systems.membrane.triangle import triangle_normal

#: barycentric weights below this count as zero (dimensionless)
SNAP = 1e-9
FACE, EDGE, VERTEX = 0, 1, 2


@inline
def closest_point(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Closest point q of triangle (a, b, c) to p and its barycentric weights (wa, wb, wc).

    Ericson 5.1.5: the Voronoi region of p among the vertices, edges and face.
    Returns (qx, qy, qz, wa, wb, wc).
    """
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, 1.0, 0.0, 0.0
    bpx, bpy, bpz = px - bx, py - by, pz - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return bx, by, bz, 0.0, 1.0, 0.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return ax + v * abx, ay + v * aby, az + v * abz, 1.0 - v, v, 0.0
    cpx, cpy, cpz = px - cx, py - cy, pz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return cx, cy, cz, 0.0, 0.0, 1.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return ax + w * acx, ay + w * acy, az + w * acz, 1.0 - w, 0.0, w
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return (bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz), 0.0, 1.0 - w, w)
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return (ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w,
            1.0 - v - w, v, w)


@inline
def classify(wa, wb, wc):
    """(kind, local index): FACE (index -1), EDGE k (from vertex k to k + 1), or VERTEX k."""
    za = wa < SNAP
    zb = wb < SNAP
    zc = wc < SNAP
    zeros = int(za) + int(zb) + int(zc)
    if zeros == 0:
        return FACE, -1
    if zeros == 1:
        if zc:
            return EDGE, 0
        if za:
            return EDGE, 1
        return EDGE, 2
    if not za:
        return VERTEX, 0
    if not zb:
        return VERTEX, 1
    return VERTEX, 2


@inline
def grain_offset(position, i, vertex_position, a, b, c, min_distance):
    """d = x_i - q from the closest point q of triangle (a, b, c) (rows of vertex_position)
    to the centre of grain row i, its length |d| and q's weights:
    (dx, dy, dz, |d|, wa, wb, wc). Where |d| < min_distance (m), d is that long along the
    triangle's normal (a centre on the surface gets a direction; |d| stays the true one)."""
    qx, qy, qz, wa, wb, wc = closest_point(
        position[i, 0], position[i, 1], position[i, 2],
        vertex_position[a, 0], vertex_position[a, 1], vertex_position[a, 2],
        vertex_position[b, 0], vertex_position[b, 1], vertex_position[b, 2],
        vertex_position[c, 0], vertex_position[c, 1], vertex_position[c, 2])
    dx = position[i, 0] - qx
    dy = position[i, 1] - qy
    dz = position[i, 2] - qz
    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
    if dist < min_distance:
        nx, ny, nz = triangle_normal(vertex_position, a, b, c)
        s = min_distance / math.sqrt(nx * nx + ny * ny + nz * nz)
        dx = nx * s
        dy = ny * s
        dz = nz * s
    return dx, dy, dz, dist, wa, wb, wc
