"""Grains against triangulated surfaces: per-candidate geometry, Table 1 selection, hand-over.

The part of a grain-triangle contact geometry that membrane patches
(``systems.membrane.patch_kernels``) and rigid mesh walls
(``systems.mesh_wall.kernels``) share, as a template module of the contact
pipeline (``systems.contact.pipeline``: a contact system lists it in its
``templates``). Goetz & Poeschel Sect. 2.5, Eq. (17), Table 1, as
docs/physics.md (Grain-patch contacts) reads them:

* ``prepare`` computes, for every candidate (grain row, triangle row), the
  point of the triangle closest to the grain's centre (``patch_geometry``),
  d = x_grain - q, the overlap r - |d| and the barycentric weights of q into
  its row of ``geometry`` (columns ``_GX`` .. ``_GW2``), classifies it
  face / edge / vertex, and runs the selection and the hand-over below.
  |d| is kept at least ``MIN_DISTANCE`` r along the triangle's outward
  normal, so a centre on the surface gets a direction;
* ``select_all``: among triangles that share a vertex, face beats edge beats
  vertex; among the remaining edge or vertex contacts of such triangles the
  largest overlap is kept, ties going to the lower triangle gid (one contact
  per shared edge or vertex; deterministic, so results do not depend on the
  rank count); triangles that share no vertex are kept independently;
* ``touches``, ``bodies``, ``kinematics`` of the pipeline's geometry
  interface and ``gather_surface`` (the columns of ``gather`` but M*), for
  geometries whose ``G`` starts (pair_i, pair_t, tri_rows, ., ., geometry,
  selected) and whose scratch columns are the ones below;
* ``hand_over_all``: a newly selected contact takes over the tangential
  spring of a contact on a triangle sharing a vertex that was selected at
  the last step and is not any more, so friction does not dip or jump as a
  grain moves over the surface.

The triangle's vertices are rows of another array than the grains'
(``vertex_position``): a membrane's vertices are particles (the same array
twice), a mesh wall's are rows of ``mesh_vertices``. Which candidates share a
vertex comes from ``systems.membrane.vertex_sharing``.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.generated_kernels import template
from ecs_dem.jit import row

from ecs_dem.systems.contact.chunks import CHUNK
from ecs_dem.systems.membrane.patch_geometry import classify, grain_offset

#: |d| of a grain-triangle contact is at least this fraction of the grain radius
MIN_DISTANCE = 1e-6
#: rank of a contact in Table 1 (a higher rank beats a lower one): 2 - the kind of patch_geometry
RANK_FACE, RANK_EDGE, RANK_VERTEX = 2, 1, 0
# per-candidate geometry (contact scratch, one row per candidate)
_GX, _GY, _GZ, _GDELTA, _GW0, _GW1, _GW2 = 0, 1, 2, 3, 4, 5, 6
GEOMETRY_WIDTH = 7
# scratch columns of a chunk (column _MSTAR: the geometry's M*)
_DX, _DY, _DZ, _DELTA, _RI, _MSTAR, _V0, _V1, _V2, _WI0, _WI1, _WI2 = range(12)
GEOMETRY_COLUMNS = 12


@template("inline")
def select_all(touch, rank, delta, pair_t, tri_gid, adj_start, adjacent, selected):
    """Table 1 among the touching candidates of each grain (module docstring).

    First face beats edge beats vertex among patches sharing a vertex; then, among the
    contacts left, an edge or vertex contact gives way to one of the same rank on a patch
    sharing a vertex with a larger overlap (ties: the lower triangle gid) that the first
    rule left. adjacent[adj_start[c]:adj_start[c + 1]]: the candidates of c's grain on
    patches sharing a vertex with c's (systems.membrane.vertex_sharing).

    ``selected`` after the first rule: 1 where kept; the second rule marks the contacts it
    drops 2 (still kept by the first rule, which it asks of the others), then 0.
    One call for all grains: an inline helper with array arguments called once per grain
    cost an atomic reference count per array and call (numba cannot prune them across
    the helper's loops), more than the selection itself.
    """
    n = touch.size
    for c in range(n):
        kept = touch[c] != 0
        if kept:
            for e in range(adj_start[c], adj_start[c + 1]):
                c2 = row(adjacent[e])
                if touch[c2] and rank[c2] > rank[c]:
                    kept = False
                    break
        selected[c] = kept
    for c in range(n):
        if not selected[c] or rank[c] == RANK_FACE:
            continue
        for e in range(adj_start[c], adj_start[c + 1]):
            c2 = row(adjacent[e])
            if rank[c2] != rank[c] or not touch[c2] or not selected[c2]:
                continue
            if delta[c2] > delta[c] or (
                    delta[c2] == delta[c] and tri_gid[pair_t[c2]] < tri_gid[pair_t[c]]):
                selected[c] = 2
                break
    for c in range(n):
        selected[c] = selected[c] == 1


@template("inline")
def hand_over_all(selected, was_selected, adj_start, adjacent, history):
    """A newly selected contact takes the spring of a contact, on a patch sharing a vertex,
    that was selected at the last step and is not any more (the first such, in candidate
    order); then remember the selection (one call for all grains, as ``select_all``)."""
    for c in range(selected.size):
        if selected[c] and not was_selected[c]:
            for e in range(adj_start[c], adj_start[c + 1]):
                c2 = row(adjacent[e])
                if was_selected[c2] and not selected[c2]:
                    copy_history(history, c2, c)  # noqa: F821 (generated)
                    break
    for c in range(selected.size):
        was_selected[c] = selected[c]


@template("kernel")
def prepare(pair_i, pair_t, adj_start, adjacent, tri_rows, tri_gid, position, vertex_position,
            radius, history, update, geometry, rank, touch, selected, was_selected, counts,
            reach):
    """The geometry of every candidate (its row of ``geometry``: d, the overlap, the
    barycentric weights of the contact point), its kind (``rank``), whether it touches, the
    Table 1 selection (``selected``) and, with ``update``, the hand-over of springs (module
    docstring). Candidates (pair_i grain rows, pair_t triangle rows) are grouped by grain;
    adj_start and adjacent say which share a vertex (systems.membrane.vertex_sharing).
    ``was_selected`` (per-candidate state) is the selection of the last step. counts[0..2]
    receive the selected face, edge and vertex contacts. ``reach`` (m, one per candidate, or
    empty for none): how far a contact model moved the grain's surface toward the triangle
    (MC-DEM's W); a candidate then touches when |d| < r + reach and the selection compares
    the overlaps r + reach - |d|. Returns the touching count."""
    n = pair_i.size
    touching = 0
    moved = reach.size > 0
    overlap = np.empty(n)
    for c in range(n):
        i = row(pair_i[c])
        tr = row(pair_t[c])
        a = row(tri_rows[tr, 0])
        b = row(tri_rows[tr, 1])
        d = row(tri_rows[tr, 2])
        r = radius[i]
        dx, dy, dz, dist, wa, wb, wc = grain_offset(position, i, vertex_position, a, b, d,
                                                    MIN_DISTANCE * r)
        geometry[c, _GX] = dx
        geometry[c, _GY] = dy
        geometry[c, _GZ] = dz
        geometry[c, _GDELTA] = r - dist
        w = reach[c] if moved else 0.0
        overlap[c] = r - dist + w
        geometry[c, _GW0] = wa
        geometry[c, _GW1] = wb
        geometry[c, _GW2] = wc
        kd, _ = classify(wa, wb, wc)
        rank[c] = 2 - kd
        touch[c] = np.uint8(dist < r + w)
        touching += touch[c]
    select_all(touch, rank, overlap, pair_t, tri_gid, adj_start, adjacent, selected)
    if update:
        hand_over_all(selected, was_selected, adj_start, adjacent, history)
    for q in range(3):
        counts[q] = 0
    for c in range(n):
        if selected[c]:
            counts[2 - rank[c]] += 1
    return touching



@template("inline")
def touches(q, c, G, reach):
    """The selection of ``prepare``: a selected candidate is a contact (G[6]: ``selected``)."""
    return G[6][q]


@template("inline")
def bodies(q, c, G):
    return np.int64(G[0][q]), np.int64(-1)


@template("inline")
def gather_surface(buf, t, c, geometry, tri_rows, tr, i, velocity, angular_velocity, radius,
                   vertex_velocity):
    """Column t of candidate c (grain row i, triangle row tr) but M*: d, the overlap, the
    grain's radius, its velocity relative to the surface at the contact point (the vertices'
    velocities interpolated with the barycentric weights) and its spin."""
    C = CHUNK
    w0 = geometry[c, _GW0]
    w1 = geometry[c, _GW1]
    w2 = geometry[c, _GW2]
    a = row(tri_rows[tr, 0])
    b = row(tri_rows[tr, 1])
    d = row(tri_rows[tr, 2])
    buf[_DX * C + t] = geometry[c, _GX]
    buf[_DY * C + t] = geometry[c, _GY]
    buf[_DZ * C + t] = geometry[c, _GZ]
    buf[_DELTA * C + t] = geometry[c, _GDELTA]
    buf[_RI * C + t] = radius[i]
    # unrolled: a loop here keeps its array arguments' references alive per contact
    buf[_V0 * C + t] = velocity[i, 0] - (
        w0 * vertex_velocity[a, 0] + w1 * vertex_velocity[b, 0] + w2 * vertex_velocity[d, 0])
    buf[_V1 * C + t] = velocity[i, 1] - (
        w0 * vertex_velocity[a, 1] + w1 * vertex_velocity[b, 1] + w2 * vertex_velocity[d, 1])
    buf[_V2 * C + t] = velocity[i, 2] - (
        w0 * vertex_velocity[a, 2] + w1 * vertex_velocity[b, 2] + w2 * vertex_velocity[d, 2])
    buf[_WI0 * C + t] = angular_velocity[i, 0]
    buf[_WI1 * C + t] = angular_velocity[i, 1]
    buf[_WI2 * C + t] = angular_velocity[i, 2]


@template("inline")
def kinematics(buf, t):
    """The law's geometry of column t; the lever radius r - delta/2: a law that puts the
    contact at mid-overlap (Hertz-Mindlin) then acts at the surface point q, where the
    surface takes the reaction."""
    C = CHUNK
    dx = buf[_DX * C + t]
    dy = buf[_DY * C + t]
    dz = buf[_DZ * C + t]
    delta = buf[_DELTA * C + t]
    ri = buf[_RI * C + t]
    return (dx, dy, dz, dx * dx + dy * dy + dz * dz, delta, ri - 0.5 * delta, 0.0, ri,
            buf[_MSTAR * C + t], buf[_V0 * C + t], buf[_V1 * C + t], buf[_V2 * C + t],
            buf[_WI0 * C + t], buf[_WI1 * C + t], buf[_WI2 * C + t], 0.0, 0.0, 0.0)


__all__ = ["prepare", "select_all", "hand_over_all", "GEOMETRY_WIDTH", "MIN_DISTANCE",
           "RANK_FACE", "RANK_EDGE", "RANK_VERTEX"]
