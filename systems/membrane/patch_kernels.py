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
(``systems.contact.triangle_selection``, shared with the rigid mesh walls)
computes the geometry and classification of every candidate, then the
selection and the hand-over per grain; the pipeline then evaluates the
selected candidates (its overlap test is the selection) in chunks, the law in
a vectorised loop, and scatters the forces in candidate order. ``G`` is::

    (pair_i, pair_t, tri_rows, tri_membrane, membrane_species, geometry, selected,
     position, velocity, angular_velocity, radius, mass, fixed, species, force, torque,
     effective_mass, triangle_mass)
"""
from __future__ import annotations


from ecs_dem.generated_kernels import template
from ecs_dem.jit import row

from ecs_dem.systems.contact.chunks import CHUNK
from ecs_dem.systems.contact.triangle_selection import (  # noqa: F401 (the template's globals)
    GEOMETRY_COLUMNS, GEOMETRY_WIDTH, MIN_DISTANCE, _GW0, _MSTAR)

#: the partner is a membrane triangle, not a particle (its vertices take the force)
PARTNER_IS_PARTICLE = False


@template("inline")
def gather(buf, t, q, c, G):
    """d, the overlap, the grain's radius, M*, the velocity relative to the membrane at the
    contact point and the grain's spin into column t; returns the material pair (membrane
    species, grain species)."""
    pair_i, pair_t, tri_rows, tri_membrane, membrane_species, geometry = G[:6]
    velocity, angular_velocity, radius, mass, fixed, species = G[8], G[9], G[10], G[11], G[12], G[13]
    i = row(pair_i[c])
    tr = row(pair_t[c])
    gather_surface(buf, t, c, geometry, tri_rows, tr, i, velocity,  # noqa: F821 (shared)
                   angular_velocity, radius, velocity)
    mp = 0.0  # the patch's share of membrane mass; infinite with a fixed vertex of weight > 0
    rigid = False
    for k in range(3):
        weight = geometry[c, _GW0 + k]
        vertex = row(tri_rows[tr, k])
        mp += weight * mass[vertex]
        rigid = rigid or (weight > 0.0 and fixed[vertex])
    mg = mass[i]
    if G[16] == 2:
        mt = G[17][tr]
        buf[_MSTAR * CHUNK + t] = mg * mt / (mg + mt)
    else:
        buf[_MSTAR * CHUNK + t] = mg if rigid or G[16] == 1 else mg * mp / (mg + mp)
    return membrane_species[tri_membrane[tr]], species[i]


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
