"""Grain-patch contacts as a geometry of the contact pipeline (``systems.contact.pipeline``).

Compiled with any law by ``contact_kernels`` like the pairs and the rigid
objects: the same scalar law serves all of them.
Geometry (Goetz & Poeschel Sect. 2.5, Eq. (17), Table 1, as docs/physics.md,
Grain-patch contacts, reads them; systems.membrane.patch_geometry):

* contact point q: the point of the triangle closest to the grain's centre,
  with barycentric weights w_k; d = x_grain - q, delta = r - |d|, normal d^
  (two-sided: a grain on either side is pushed away); rj = 0, R* = r (a
  flat partner); |d| is kept at least ``MIN_DISTANCE`` r along the triangle's
  outward normal, so a centre on the membrane gets a direction;
* the grain's lever radius is passed as r - delta/2, so that a law placing
  the contact at mid-overlap (Hertz-Mindlin: lever ri - delta/2) acts at q
  itself, where the vertices take the reaction: angular momentum is then
  conserved exactly (the membrane has no thickness; on a rigid wall the
  lever stays r - delta/2, so a spinning grain rolls very slightly
  differently, by a relative delta/2r);
* the partner's velocity at q is the vertices' velocities interpolated with
  the w_k, and the force on the grain goes to the vertices as -w_k F (forces
  and torques balance exactly; the torque acts on the grain alone);
* M*, by the contact system's ``effective_mass`` convention (``G[16]``: 0, 1,
  2): "patch" (the default), M* = m_g m_p / (m_g + m_p) with m_p = sum w_k m_k
  the patch's share of membrane mass (a fixed vertex with w_k > 0 makes it
  infinite: M* = m_g); "grain", M* = m_g, the membrane taken as infinitely
  massive, as against a wall; "triangle", M* = m_g m_t / (m_g + m_t) with
  m_t = A0 d rho the triangle's own rest mass (``G[17]``, per triangle row),
  fixed vertices or not (MercuryDPM's mesh triangles carry that mass);
* material: the law's parameters of (membrane species, grain species);
* selection among the patches a grain touches (Table 1, docs/physics.md):
  among patches that share a vertex, face beats edge beats vertex; among the
  remaining edge or vertex contacts of such patches, the largest overlap is
  kept, ties going to the lower triangle gid (one contact per shared edge
  or vertex; deterministic, so results do not depend on the rank count);
  patches that share no vertex are kept independently;
* history: one tangential spring per selected contact, which a grain keeps as
  it moves over the membrane: at a hand-over (a patch becomes selected while
  a patch sharing a vertex with it, selected at the last step, is not any
  more) the new contact takes over the old one's spring, so friction does
  not dip or jump (docs/physics.md: never reset at a hand-over). A grain
  touching a membrane in one place thus has one spring for the pair, the
  simpler of two valid choices (the other: one spring per touching patch,
  kept up to date while not selected); a spring is reset when its
  contact stops being selected (after any hand-over), and a contact selected
  with nothing to take over starts at zero, as any new contact. Only the
  selected contacts run the law: late in the triaxial test's confinement
  three in four touching candidates are not selected (the other choice, one
  spring per touching patch kept up to date, ran the law for all of them).
  Storage is per (grain, triangle) candidate (``patch_pairs``).

Candidates are grouped by grain (systems.membrane.patch_search). ``prepare``
computes the geometry and classification of every candidate, then the
selection and the hand-over per grain; the pipeline then evaluates the
selected candidates (its overlap test is the selection) in chunks, the law in
a vectorised loop, and scatters the forces in candidate order. ``G`` is::

    (pair_i, pair_t, tri_rows, tri_membrane, membrane_species, geometry, selected,
     position, velocity, angular_velocity, radius, mass, fixed, species, force, torque,
     effective_mass, triangle_mass)
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.generated_kernels import template
from ecs_dem.jit import row

from ecs_dem.systems.contact.chunks import CHUNK
from ecs_dem.systems.membrane.patch_geometry import classify, closest_point
from ecs_dem.systems.membrane.triangle import triangle_normal

#: the partner is a membrane triangle, not a particle (its vertices take the force)
PARTNER_IS_PARTICLE = False
#: |d| of a patch contact is at least this fraction of the grain radius
MIN_DISTANCE = 1e-6
#: rank of a contact in Table 1 (a higher rank beats a lower one): 2 - the kind of patch_geometry
RANK_FACE, RANK_EDGE, RANK_VERTEX = 2, 1, 0
# per-candidate geometry (contact scratch, one row per candidate)
_GX, _GY, _GZ, _GDELTA, _GW0, _GW1, _GW2 = 0, 1, 2, 3, 4, 5, 6
GEOMETRY_WIDTH = 7
# scratch columns of a chunk
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
def prepare(pair_i, pair_t, adj_start, adjacent, tri_rows, tri_gid, position, radius, history,
            update, geometry, rank, touch, selected, was_selected, counts):
    """The geometry of every candidate (its row of ``geometry``: d, the overlap, the
    barycentric weights of the contact point), its kind (``rank``), whether it touches, the
    Table 1 selection (``selected``) and, with ``update``, the hand-over of springs (module
    docstring). Candidates (pair_i grain rows, pair_t triangle rows) are grouped by grain;
    adj_start and adjacent say which share a vertex (systems.membrane.vertex_sharing).
    ``was_selected`` (per-candidate state) is the selection of the last step. counts[0..2]
    receive the selected face, edge and vertex contacts. Returns the touching count."""
    n = pair_i.size
    touching = 0
    for c in range(n):
        i = row(pair_i[c])
        tr = row(pair_t[c])
        a = row(tri_rows[tr, 0])
        b = row(tri_rows[tr, 1])
        d = row(tri_rows[tr, 2])
        qx, qy, qz, wa, wb, wc = closest_point(
            position[i, 0], position[i, 1], position[i, 2],
            position[a, 0], position[a, 1], position[a, 2],
            position[b, 0], position[b, 1], position[b, 2],
            position[d, 0], position[d, 1], position[d, 2])
        dx = position[i, 0] - qx
        dy = position[i, 1] - qy
        dz = position[i, 2] - qz
        r = radius[i]
        dist = math.sqrt(dx * dx + dy * dy + dz * dz)
        if dist < MIN_DISTANCE * r:  # centre on the membrane: along the outward normal
            nx, ny, nz = triangle_normal(position, a, b, d)
            s = MIN_DISTANCE * r / math.sqrt(nx * nx + ny * ny + nz * nz)
            dx = nx * s
            dy = ny * s
            dz = nz * s
        geometry[c, _GX] = dx
        geometry[c, _GY] = dy
        geometry[c, _GZ] = dz
        geometry[c, _GDELTA] = r - dist
        geometry[c, _GW0] = wa
        geometry[c, _GW1] = wb
        geometry[c, _GW2] = wc
        kd, _ = classify(wa, wb, wc)
        rank[c] = 2 - kd
        touch[c] = np.uint8(dist < r)
        touching += touch[c]
    select_all(touch, rank, geometry[:, _GDELTA], pair_t, tri_gid, adj_start, adjacent,
               selected)
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
    """The selection of ``prepare``: a selected candidate is a contact."""
    return G[6][q]


@template("inline")
def bodies(q, c, G):
    return np.int64(G[0][q]), np.int64(-1)


@template("inline")
def gather(buf, t, q, c, G):
    """d, the overlap, the grain's radius, M*, the velocity relative to the membrane at the
    contact point and the grain's spin into column t; returns the material pair (membrane
    species, grain species)."""
    pair_i, pair_t, tri_rows, tri_membrane, membrane_species, geometry = G[:6]
    velocity, angular_velocity, radius, mass, fixed, species = G[8], G[9], G[10], G[11], G[12], G[13]
    C = CHUNK
    i = row(pair_i[c])
    tr = row(pair_t[c])
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
    for ax in range(3):
        buf[(_V0 + ax) * C + t] = velocity[i, ax] - (
            w0 * velocity[a, ax] + w1 * velocity[b, ax] + w2 * velocity[d, ax])
        buf[(_WI0 + ax) * C + t] = angular_velocity[i, ax]
    mp = w0 * mass[a] + w1 * mass[b] + w2 * mass[d]
    rigid = (w0 > 0.0 and fixed[a]) or (w1 > 0.0 and fixed[b]) or (w2 > 0.0 and fixed[d])
    mg = mass[i]
    if G[16] == 2:
        mt = G[17][tr]
        buf[_MSTAR * C + t] = mg * mt / (mg + mt)
    else:
        buf[_MSTAR * C + t] = mg if rigid or G[16] == 1 else mg * mp / (mg + mp)
    return membrane_species[tri_membrane[tr]], species[i]


@template("inline")
def kinematics(buf, t):
    """The law's geometry of column t; the lever radius r - delta/2: a law that puts the
    contact at mid-overlap (Hertz-Mindlin) then acts at the membrane point q, where the
    vertices take the reaction."""
    C = CHUNK
    dx = buf[_DX * C + t]
    dy = buf[_DY * C + t]
    dz = buf[_DZ * C + t]
    delta = buf[_DELTA * C + t]
    ri = buf[_RI * C + t]
    return (dx, dy, dz, dx * dx + dy * dy + dz * dz, delta, ri - 0.5 * delta, 0.0, ri,
            buf[_MSTAR * C + t], buf[_V0 * C + t], buf[_V1 * C + t], buf[_V2 * C + t],
            buf[_WI0 * C + t], buf[_WI1 * C + t], buf[_WI2 * C + t], 0.0, 0.0, 0.0)


@template("inline")
def scatter(buf, t, q, c, G):
    """The force and torque on the grain, -w_k F on the triangle's vertices."""
    pair_i, pair_t, tri_rows, geometry, force, torque = G[0], G[1], G[2], G[5], G[14], G[15]
    i = row(pair_i[c])
    tr = row(pair_t[c])
    fx, fy, fz = add_to_particle(force, torque, i, buf, t)  # noqa: F821 (the pipeline's)
    for v in range(3):
        w = geometry[c, _GW0 + v]
        vertex = row(tri_rows[tr, v])
        force[vertex, 0] -= w * fx
        force[vertex, 1] -= w * fy
        force[vertex, 2] -= w * fz
