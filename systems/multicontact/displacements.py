"""Eq. (1) of Brodu et al. (2015): the surface displacement each contact of a grain induces at
the grain's other contacts (``systems.multicontact.systems`` gives the model and its
conventions).
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.jit import inline, kernel

from ecs_dem.systems.contact.triangle_selection import MIN_DISTANCE, RANK_FACE
from ecs_dem.systems.membrane.patch_geometry import classify, grain_offset
from ecs_dem.systems.membrane.vertex_sharing import share_vertex


@inline
def influence_coefficients(ekx, eky, ekz, sk, ecx, ecy, ecz, sc, prefactor, c34, c12):
    """(a_kc, a_ck) in m/N: delta_{k->c} = a_kc F_k and delta_{c->k} = a_ck F_c, Brodu et al.
    Eq. (1) both ways for two contacts k, c of one grain (one distance, one square root).

    Contact points x = s e from the grain's centre (e the unit vector toward
    the partner, s in m), inward normals n = -e (docs/physics.md,
    Multi-contact DEM); prefactor gamma (1 + nu) / (2 pi E) (1/Pa); c34 = 3 - 4 nu,
    c12 = 1 - 2 nu. From k to c: u = u_kc; from c to k: u_ck = -u_kc, so
    n_c.u_ck = -n_c.u_kc and n_k.u_ck = -n_k.u_kc. Positive: the surface at
    the receiving contact moves toward its partner. Zero for coincident
    points, and one way when the receiving point lies on the outward normal
    ray of the other (1 + n.u <= 0: not a surface point of a convex grain).
    """
    dx = sc * ecx - sk * ekx
    dy = sc * ecy - sk * eky
    dz = sc * ecz - sk * ekz
    d2 = dx * dx + dy * dy + dz * dz
    if not d2 > 0.0:
        return 0.0, 0.0
    inv_d = 1.0 / math.sqrt(d2)
    nku = -(ekx * dx + eky * dy + ekz * dz) * inv_d  # n_k . u_kc
    ncu = -(ecx * dx + ecy * dy + ecz * dz) * inv_d  # n_c . u_kc
    nkc = ekx * ecx + eky * ecy + ekz * ecz         # n_k . n_c
    both = nku * ncu + c34 * nkc                     # the same both ways
    scale = -prefactor * inv_d
    den = 1.0 + nku  # 1 + n_k . u_kc
    a_kc = scale * (both - c12 * (nkc + ncu) / den) if den > 1e-12 else 0.0
    den = 1.0 - ncu  # 1 + n_c . u_ck
    a_ck = scale * (both - c12 * (nkc - nku) / den) if den > 1e-12 else 0.0
    return a_kc, a_ck


@inline
def point_force_displacement(force, ekx, eky, ekz, sk, ecx, ecy, ecz, sc, prefactor, c34, c12):
    """delta_{k->c} (m) of Brodu et al. Eq. (1): ``force`` F_k (N, positive repulsive) times
    a_kc of ``influence_coefficients`` (same arguments)."""
    return force * influence_coefficients(ekx, eky, ekz, sk, ecx, ecy, ecz, sc, prefactor, c34,
                                          c12)[0]


@kernel
def mesh_separations(pair_i, pair_t, tri_rows, position, vertex_position, radius, direction,
                     distance, rank):
    """Of every mesh-wall candidate (grain row ``pair_i``, triangle row ``pair_t``): the unit
    vector from the grain's centre toward the triangle's closest point (``direction``), the
    distance to it (``distance``, m) and its kind in Table 1 (``rank``: RANK_FACE, ...), as
    the contact geometry takes them (``systems.contact.triangle_selection.prepare``: a centre
    on the surface looks along the triangle's normal, at MIN_DISTANCE r)."""
    for c in range(pair_i.size):
        i = pair_i[c]
        tr = pair_t[c]
        a = tri_rows[tr, 0]
        b = tri_rows[tr, 1]
        d = tri_rows[tr, 2]
        dx, dy, dz, _, wa, wb, wc = grain_offset(position, i, vertex_position, a, b, d,
                                                 MIN_DISTANCE * radius[i])
        dist = math.sqrt(dx * dx + dy * dy + dz * dz)
        direction[c, 0] = -dx / dist
        direction[c, 1] = -dy / dist
        direction[c, 2] = -dz / dist
        distance[c] = dist
        rank[c] = 2 - classify(wa, wb, wc)[0]


@inline
def one_contact(rk, rc, mesh_t, mesh_rank, tri_vertices):
    """Whether mesh-wall candidates rk and rc (rows of ``mesh_pairs``) of one grain are
    candidates of one contact: on triangles sharing a vertex, not both face contacts. Table 1
    keeps one of them; the other is the same contact seen from a neighbouring triangle, and
    takes no displacement from it (as the contact itself takes none from itself)."""
    if mesh_rank[rk] == RANK_FACE and mesh_rank[rc] == RANK_FACE:
        return False
    return share_vertex(tri_vertices, mesh_t[rk], mesh_t[rc])


@kernel
def surface_displacements(n_owned, start, items, pair_i, pair_j, pair_force, pair_offset,
                          position, radius, species, youngs, poisson, rigid_direction,
                          rigid_distance, rigid_force, rigid_offset, gamma, displacement,
                          rigid_displacement, mesh_start, mesh_items, mesh_direction,
                          mesh_distance, mesh_force, mesh_offset, mesh_displacement, mesh_t,
                          mesh_rank, tri_vertices):
    """W of every contact side of the owned grains (Eq. (1), ``systems.multicontact.systems``).

    For owned particle row p: its contacts are the pair rows (owned or
    ghost) of ``items[start[p]:start[p + 1]]`` (``World.incident_rows``),
    then its rigid objects: for each kind s of the tuples (walls, ...), object
    w at distance ``rigid_distance[s][p, w]`` (m) from p's centre, in the
    direction ``rigid_direction[s][p, w]`` (unit, from the centre toward the
    surface). Sources are the contacts with a non-zero normal force of the
    last evaluation (``pair_force``, ``rigid_force[s]``, N), receivers every
    listed pair and every object within one radius of the surface (others
    get W = 0). Contact points from the current positions and the last W
    (``pair_offset`` (rows, 2), ``rigid_offset[s]`` (n, objects)). Adds W into
    ``displacement[row, side]`` (side 0: p is gid_i) and writes
    ``rigid_displacement[s][p, w]``. Then its mesh-wall candidates
    ``mesh_items[mesh_start[p]:mesh_start[p + 1]]`` (rows of ``mesh_pairs``, every one a
    receiver, those with a force a source), each like a rigid object: direction and distance
    to the triangle's closest point (``mesh_separations``), last force and W
    (``mesh_force``, ``mesh_offset``); W into ``mesh_displacement[row]``. Two candidates of
    one mesh-wall contact (``one_contact``: triangles ``mesh_t`` sharing a vertex of
    ``tri_vertices``, not both of ``mesh_rank`` face) do not displace each other: a grain
    whose foot point nears a triangle's edge would otherwise see the neighbouring triangle's
    candidate pushed away by 1/d and lose the contact as it crosses. ``youngs``,
    ``poisson`` per species (Pa, 1). Units: m.

    Returns (largest |W| / r of any contact side, its particle row, or -1).
    """
    n_rigid = 0
    for s in range(len(rigid_force)):
        n_rigid += rigid_force[s].shape[1]
    most = 0
    for p in range(n_owned):
        most = max(most, start[p + 1] - start[p] + mesh_start[p + 1] - mesh_start[p])
    size = most + n_rigid
    ex = np.empty(size)
    ey = np.empty(size)
    ez = np.empty(size)
    s_ = np.empty(size)
    f = np.empty(size)
    W = np.empty(size)
    row = np.empty(size, dtype=np.int64)  # pair row, or -1 - (rigid column)
    side = np.empty(size, dtype=np.int64)
    kind = np.empty(n_rigid, dtype=np.int64)  # rigid column -> its kind and object
    obj = np.empty(n_rigid, dtype=np.int64)
    k = 0
    for s in range(len(rigid_force)):
        for w in range(rigid_force[s].shape[1]):
            kind[k] = s
            obj[k] = w
            k += 1
    worst = 0.0
    worst_row = -1
    for p in range(n_owned):
        xp = position[p, 0]
        yp = position[p, 1]
        zp = position[p, 2]
        rp = radius[p]
        m = 0
        for t in range(start[p], start[p + 1]):
            r = items[t]
            sd = 0 if pair_i[r] == p else 1
            q = pair_j[r] if sd == 0 else pair_i[r]
            if q < 0:
                continue
            dx = position[q, 0] - xp
            dy = position[q, 1] - yp
            dz = position[q, 2] - zp
            dist = math.sqrt(dx * dx + dy * dy + dz * dz)
            if not dist > 0.0:
                continue
            ex[m] = dx / dist
            ey[m] = dy / dist
            ez[m] = dz / dist
            # the mean of the two deformed surfaces along the centre line
            s_[m] = 0.5 * (rp + pair_offset[r, sd] + dist - radius[q] - pair_offset[r, 1 - sd])
            f[m] = pair_force[r]
            row[m] = r
            side[m] = sd
            m += 1
        for k in range(n_rigid):
            s = kind[k]
            w = obj[k]
            h = rigid_distance[s][p, w]
            rigid_displacement[s][p, w] = 0.0
            if h > 2.0 * rp and rigid_force[s][p, w] == 0.0:
                continue  # more than a radius from the surface: no contact can form
            ex[m] = rigid_direction[s][p, w, 0]
            ey[m] = rigid_direction[s][p, w, 1]
            ez[m] = rigid_direction[s][p, w, 2]
            s_[m] = 0.5 * (rp + rigid_offset[s][p, w] + h)
            f[m] = rigid_force[s][p, w]
            row[m] = -1 - k
            side[m] = 0
            m += 1
        for t in range(mesh_start[p], mesh_start[p + 1]):
            r = mesh_items[t]
            ex[m] = mesh_direction[r, 0]
            ey[m] = mesh_direction[r, 1]
            ez[m] = mesh_direction[r, 2]
            s_[m] = 0.5 * (rp + mesh_offset[r] + mesh_distance[r])
            f[m] = mesh_force[r]
            row[m] = r
            side[m] = 2  # a mesh-wall candidate
            m += 1
        E = youngs[species[p]]
        nu = poisson[species[p]]
        prefactor = gamma * (1.0 + nu) / (2.0 * math.pi * E)
        c34 = 3.0 - 4.0 * nu
        c12 = 1.0 - 2.0 * nu
        meshy = mesh_start[p + 1] - mesh_start[p] > 1  # loop-invariant: unswitched
        # sources (touching at the last evaluation) first: [0, ns), the other receivers after
        ns = 0
        for c in range(m):
            W[c] = 0.0
            if f[c] != 0.0:
                if c != ns:
                    ex[c], ex[ns] = ex[ns], ex[c]
                    ey[c], ey[ns] = ey[ns], ey[c]
                    ez[c], ez[ns] = ez[ns], ez[c]
                    s_[c], s_[ns] = s_[ns], s_[c]
                    f[c], f[ns] = f[ns], f[c]
                    row[c], row[ns] = row[ns], row[c]
                    side[c], side[ns] = side[ns], side[c]
                ns += 1
        for c in range(ns):  # two sources: once, both ways
            for k in range(c + 1, ns):
                if meshy and side[c] == 2 and side[k] == 2 and one_contact(
                        row[k], row[c], mesh_t, mesh_rank, tri_vertices):
                    continue  # scalar tests first: a call with arrays costs refcounts
                a_kc, a_ck = influence_coefficients(ex[k], ey[k], ez[k], s_[k], ex[c], ey[c],
                                                    ez[c], s_[c], prefactor, c34, c12)
                W[c] += a_kc * f[k]
                W[k] += a_ck * f[c]
        for c in range(ns, m):  # a contact without force receives only
            for k in range(ns):
                if meshy and side[c] == 2 and side[k] == 2 and one_contact(
                        row[k], row[c], mesh_t, mesh_rank, tri_vertices):
                    continue
                W[c] += point_force_displacement(f[k], ex[k], ey[k], ez[k], s_[k], ex[c], ey[c],
                                                 ez[c], s_[c], prefactor, c34, c12)
        for c in range(m):
            if side[c] == 2:
                mesh_displacement[row[c]] = W[c]
            elif row[c] >= 0:
                displacement[row[c], side[c]] += W[c]
            else:
                k = -1 - row[c]
                rigid_displacement[kind[k]][p, obj[k]] = W[c]
            if abs(W[c]) > worst * rp:
                worst = abs(W[c]) / rp
                worst_row = p
    return worst, worst_row


__all__ = ["influence_coefficients", "point_force_displacement", "surface_displacements",
           "mesh_separations"]
