"""Multi-contact DEM (MC-DEM, Brodu, Dijksman & Behringer 2015, Eq. (1)).

Each contact's Hertz overlap is corrected by the surface displacements that
the other contacts of the same grains induce: for contact c between grains
i and j, the law sees the overlap

    Delta_c = delta_c + W_c^i + W_c^j,    W_c^g = sum_{k of g, k != c} delta_{k->c},

summed over the other contacts k of grain g (grain and wall contacts alike),
with Eq. (1) (the point force on an elastic half-space, Bower 5.4.4):

    delta_{k->c} = -gamma (1 + nu) F_k / (2 pi E d_kc) { (n_k.u_kc)(n_c.u_kc)
                   + (3 - 4 nu) n_k.n_c - (1 - 2 nu) (n_k + u_kc).n_c / (1 + n_k.u_kc) }.

Conventions (../shared/PHYSICS-NOTES.md, Multi-contact correction):

* n_k, n_c: unit normals at the contact points, pointing into grain g (along
  the compressive force); u_kc the unit vector from contact point k to
  contact point c, d_kc their distance; then 1 + n_k.u_kc >= 1 on a convex
  grain (a point c on the outward normal ray of k is not on the grain's
  surface: its term is left out). F_k: the normal force of contact k (N,
  positive repulsive); E, nu: grain g's own Young's modulus and Poisson's
  ratio (not E*); gamma: the empirical prefactor (0: independent contacts,
  1: elastic half-space, 1.19: MC-DEM as fitted), unrelated to damping.
* delta_{k->c} > 0 increases the effective overlap (units m): a contact
  opposite k stiffens, one beside k on a flat face is shielded
  (delta_{k->c} = -gamma (1 - nu^2) F_k / (pi E d)).
* Contact points at the mean of the two deformed surfaces (mid-overlap): for
  a pair at distance D along the unit vector e from g to its partner q, at
  s e from g's centre with s = (r_g + W^g + D - r_q - W^q) / 2; for a wall at
  distance h, s = (r_g + W^g + h) / 2 along -n_wall (a wall is rigid and flat
  and has no displacement of its own, with or without a species).
* The corrected overlap enters the contact law (any law of
  ``systems.contact.law``; ``SaturatedHertzLaw`` is the paper's friction
  F_t = mu |F_n|): its lever arms r + W - Delta/2 put the contact point at
  the mean of the deformed surfaces; R* is the undeformed spheres'
  (``systems.multicontact.kernels``).

New contacts from deformation: W is computed for every pair of the
neighbour list, touching or not (toward near neighbours, in the paper's
words), and for every wall within a radius of a grain's surface; a pair
touches when Delta > 0, so it forms when the deformed surfaces meet, at zero
force. The list holds the pairs closer than r_i + r_j + skin at its last
rebuild; a pair outside it can only touch if W_i + W_j exceeds what is left
of the skin. Such a contact, found only at the next rebuild, is counted in
``MultiContactForces.late_contacts`` (zero in a correct run; raise the skin
otherwise).

The scheme: forces lagged by one step. At each step,
``MultiContactDisplacements`` evaluates W from the current positions and
the normal forces and W of the previous step (``mc_force``, ``mc_offset``);
``MultiContactForces`` then evaluates every contact with Delta and stores its
new F_n and W. The static state is the fixed point F = K (delta + A F)^(3/2)
(PHYSICS-NOTES): with positions at rest the step is exactly one iteration
of that map, which converges while its gain (3/2) K sqrt(Delta) A stays
below one, as in a packing that has a static state at all. Why lagged and
not iterated inside the step: an iteration costs a force pass and a halo
exchange each way, while a quasi-static packing takes thousands of steps
to move, each of which is one iteration; no extra force pass, one halo
exchange each way per step (tests: a grain between plates converges to 1e-12
in 8 to 22 steps, a free grain comes to rest at the fixed point). Beyond
gain one there is no static state: the forces grow step after step, and the
run stops with an error as soon as a surface displacement exceeds its
grain's radius.

Across ranks (the engine's halo policies; no MPI code here): every contact
side is computed by the rank that owns the grain, which holds all of its
contacts (owned pair rows, ghost pair rows of pairs anchored to a ghost
partner, its walls). The per-pair ``mc_force`` and ``mc_offset`` are FORWARD,
so ghost pair rows carry them; a side computed on a ghost pair row is
accumulated into ``mc_displacement`` (REVERSE) and summed into the pair's
owner row before the forces. Wall contacts live in particle fields (LOCAL).
All of it is per-pair and per-particle data: carried across neighbour
rebuilds by gid pair, migration and checkpoints.

Use ``multicontact(law, gamma)``: the two systems, in the order they must run.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError, StateError
from ecs_dem.jit import inline, kernel
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo

from ecs_dem.systems.multicontact import kernels as multicontact_kernels
from ecs_dem.systems.contact.chunks import PairScratch
from ecs_dem.systems.contact.pair_forces import CONTACT_READS, ContactForces, check_time_step, history_columns
from ecs_dem.systems.contact.kinematics import check_initial_overlaps
from ecs_dem.systems.contact.law import law_kernels, rigid_material
from ecs_dem.systems.neighbors.search import pair_table
from ecs_dem.systems.walls.contacts import WallContacts

#: gamma of the independent-contact model, the elastic half-space and MC-DEM as fitted (Table I)
GAMMA_INDEPENDENT, GAMMA_HALF_SPACE, GAMMA_MCDEM = 0.0, 1.0, 1.19

PAIR_FIELDS = (
    Field("mc_force", np.float64, (), Halo.FORWARD, 0.0, "N",
          "normal force of the contact at its last evaluation (positive repulsive; 0 apart)"),
    Field("mc_offset", np.float64, (2,), Halo.FORWARD, 0.0, "m",
          "surface displacements W of gid_i and gid_j toward each other at the last evaluation"),
    Field("mc_displacement", np.float64, (2,), Halo.REVERSE, 0.0, "m",
          "this step's W (Eq. 1) of gid_i and gid_j, each added by the rank owning that grain"),
    Field("mc_listed", np.uint8, (), Halo.LOCAL, 0, "",
          "1 once the pair was in the neighbour list at a force evaluation"),
)
PAIR_STATE = ("mc_force", "mc_offset", "mc_listed")


def wall_fields(n_walls: int) -> tuple[Field, ...]:
    """Per-particle fields of the wall contacts (LOCAL: the owner computes both sides)."""
    return (
        Field("mc_wall_force", np.float64, (n_walls,), Halo.LOCAL, 0.0, "N",
              "normal force of the contact with each wall at its last evaluation (0 apart)"),
        Field("mc_wall_offset", np.float64, (n_walls,), Halo.LOCAL, 0.0, "m",
              "surface displacement W toward each wall at the last evaluation"),
        Field("mc_wall_displacement", np.float64, (n_walls,), Halo.LOCAL, 0.0, "m",
              "this step's surface displacement W toward each wall (Eq. 1)"),
    )


@inline
def influence_coefficients(ekx, eky, ekz, sk, ecx, ecy, ecz, sc, prefactor, c34, c12):
    """(a_kc, a_ck) in m/N: delta_{k->c} = a_kc F_k and delta_{c->k} = a_ck F_c, Brodu et al.
    Eq. (1) both ways for two contacts k, c of one grain (one distance, one square root).

    Contact points x = s e from the grain's centre (e the unit vector toward
    the partner, s in m), inward normals n = -e (PHYSICS-NOTES, Multi-contact
    correction); prefactor gamma (1 + nu) / (2 pi E) (1/Pa); c34 = 3 - 4 nu,
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
def surface_displacements(n_owned, start, items, pair_i, pair_j, pair_force, pair_offset,
                          position, radius, species, youngs, poisson, wall_point, wall_normal,
                          wall_force, wall_offset, gamma, displacement, wall_displacement):
    """W of every contact side of the owned grains (Eq. (1), module docstring).

    For owned particle row p: its contacts are the pair rows (owned or
    ghost) of ``items[start[p]:start[p + 1]]`` (``World.incident_rows``) and
    the walls; sources are those with a non-zero normal force of the last
    evaluation (``pair_force``, ``wall_force``), receivers every listed pair
    and every wall within one radius of the surface (others get W = 0).
    Contact points from the current positions and the last W (``pair_offset``
    (rows, 2), ``wall_offset`` (n, walls)). Adds W into ``displacement[row,
    side]`` (side 0: p is gid_i) and writes ``wall_displacement[p, w]``.
    ``youngs``, ``poisson`` per species (Pa, 1). Units: m.

    Returns (largest |W| / r of any contact side, its particle row, or -1).
    """
    n_walls = wall_point.shape[0]
    most = 0
    for p in range(n_owned):
        most = max(most, start[p + 1] - start[p])
    size = most + n_walls
    ex = np.empty(size)
    ey = np.empty(size)
    ez = np.empty(size)
    s = np.empty(size)
    f = np.empty(size)
    W = np.empty(size)
    row = np.empty(size, dtype=np.int64)  # pair row, or -1 - wall
    side = np.empty(size, dtype=np.int64)
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
            s[m] = 0.5 * (rp + pair_offset[r, sd] + dist - radius[q] - pair_offset[r, 1 - sd])
            f[m] = pair_force[r]
            row[m] = r
            side[m] = sd
            m += 1
        for w in range(n_walls):
            nx = wall_normal[w, 0]
            ny = wall_normal[w, 1]
            nz = wall_normal[w, 2]
            h = (xp - wall_point[w, 0]) * nx + (yp - wall_point[w, 1]) * ny + (zp - wall_point[w, 2]) * nz
            wall_displacement[p, w] = 0.0
            if h > 2.0 * rp and wall_force[p, w] == 0.0:
                continue  # more than a radius from the surface: no contact can form
            ex[m] = -nx
            ey[m] = -ny
            ez[m] = -nz
            s[m] = 0.5 * (rp + wall_offset[p, w] + h)
            f[m] = wall_force[p, w]
            row[m] = -1 - w
            side[m] = 0
            m += 1
        E = youngs[species[p]]
        nu = poisson[species[p]]
        prefactor = gamma * (1.0 + nu) / (2.0 * math.pi * E)
        c34 = 3.0 - 4.0 * nu
        c12 = 1.0 - 2.0 * nu
        # sources (touching at the last evaluation) first: [0, ns), the other receivers after
        ns = 0
        for c in range(m):
            W[c] = 0.0
            if f[c] != 0.0:
                if c != ns:
                    ex[c], ex[ns] = ex[ns], ex[c]
                    ey[c], ey[ns] = ey[ns], ey[c]
                    ez[c], ez[ns] = ez[ns], ez[c]
                    s[c], s[ns] = s[ns], s[c]
                    f[c], f[ns] = f[ns], f[c]
                    row[c], row[ns] = row[ns], row[c]
                    side[c], side[ns] = side[ns], side[c]
                ns += 1
        for c in range(ns):  # two sources: once, both ways
            for k in range(c + 1, ns):
                a_kc, a_ck = influence_coefficients(ex[k], ey[k], ez[k], s[k], ex[c], ey[c], ez[c],
                                                    s[c], prefactor, c34, c12)
                W[c] += a_kc * f[k]
                W[k] += a_ck * f[c]
        for c in range(ns, m):  # a contact without force receives only
            for k in range(ns):
                W[c] += point_force_displacement(f[k], ex[k], ey[k], ez[k], s[k], ex[c], ey[c],
                                                 ez[c], s[c], prefactor, c34, c12)
        for c in range(m):
            if row[c] >= 0:
                displacement[row[c], side[c]] += W[c]
            else:
                wall_displacement[p, -1 - row[c]] = W[c]
            if abs(W[c]) > worst * rp:
                worst = abs(W[c]) / rp
                worst_row = p
    return worst, worst_row


def _walls(world):
    return world.walls if "walls" in world.tables and world.walls.n_owned else None


def _add_fields(world) -> None:
    pairs = pair_table(world)
    for f in PAIR_FIELDS:
        pairs.add_field(f)
    walls = _walls(world)
    if walls is not None:
        for f in wall_fields(walls.n_owned):
            world.particles.add_field(f)


class MultiContactDisplacements(System):
    """W of every contact side (Eq. (1)) from the last step's forces: the first half of MC-DEM.

    Runs before its ``MultiContactForces`` in the FORCES stage (module
    docstring); declarations are set in ``setup`` (walls or none).
    """

    stage = Stage.FORCES

    def __init__(self, forces: "MultiContactForces"):
        self.forces = forces

    @property
    def name(self) -> str:
        return f"MultiContactDisplacements(gamma={self.forces.gamma:g})"

    def setup(self, world) -> None:
        _add_fields(world)
        order = [s for s in world.systems if s is self or s is self.forces]
        if order != [self, self.forces]:
            raise InputError("multi-contact: add both systems of multicontact(law, gamma), in the "
                             "order it returns them (displacements, then forces)")
        self.reads = {"pairs": ("i", "j"), "particles": ("species",),
                      "species": ("youngs_modulus", "poisson_ratio")}
        self.reads_ghosts = {"particles": ("position", "radius"), "pairs": ("mc_force", "mc_offset")}
        self.accumulates = {"pairs": ("mc_displacement",)}
        self.writes = {}
        if _walls(world) is not None:
            self.reads = dict(self.reads, walls=("point", "normal"))
            self.reads["particles"] += ("mc_wall_force", "mc_wall_offset")
            self.writes = {"particles": ("mc_wall_displacement",)}

    def run(self, world) -> None:
        p, q = world.particles, world.pairs
        walls = _walls(world)
        gamma = self.forces.gamma
        if gamma == 0.0:  # independent contacts: W = 0 (mc_displacement was zeroed)
            if walls is not None:
                p.mc_wall_displacement[...] = 0.0
            return
        start, items = world.incident_rows("pairs")
        sp = world.species
        n = p.n_owned
        if walls is not None:
            wall_args = (walls.point, walls.normal, p.mc_wall_force, p.mc_wall_offset)
            wall_out = p.mc_wall_displacement
        else:
            wall_args = (np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((n, 0)), np.zeros((n, 0)))
            wall_out = np.zeros((n, 0))
        worst, at = surface_displacements(
            n, start, items, q.with_ghosts("i"), q.with_ghosts("j"), q.with_ghosts("mc_force"),
            q.with_ghosts("mc_offset"), p.with_ghosts("position"), p.with_ghosts("radius"),
            p.species, sp.youngs_modulus, sp.poisson_ratio, *wall_args, gamma,
            q.with_ghosts("mc_displacement"), wall_out)
        if worst > 1.0:
            raise StateError(
                f"multi-contact: the surface of particle gid {int(p.gid[at])} moved by {worst:.3g} "
                "of its radius under its other contacts (Eq. 1): at these overlaps the correction "
                f"has no static state (its gain exceeds one) for gamma = {gamma:g}. Lower gamma or "
                "the compression, or approach the state more slowly")


class MultiContactForces(System):
    """Contact forces of pairs and walls with the corrected overlap: the second half of MC-DEM.

    Replaces ``ContactForces`` and ``WallContacts`` (module docstring).

    Parameters
    ----------
    law : contact law (``systems.contact.law``), e.g. ``SaturatedHertzLaw()``
    gamma : float
        Prefactor of Eq. (1), >= 0 (``GAMMA_INDEPENDENT``, ``GAMMA_HALF_SPACE``,
        ``GAMMA_MCDEM``).
    max_initial_overlap, check_time_step : as ``ContactForces``.

    ``touching``: contacts evaluated at the last step (pairs and walls);
    ``late_contacts``: contacts from deformation that the neighbour list
    missed, on this rank since set-up (module docstring).
    """

    stage = Stage.FORCES
    reads_ghosts = {"particles": CONTACT_READS}
    accumulates = {"particles": ("force", "torque")}

    def __init__(self, law, gamma: float = GAMMA_MCDEM, max_initial_overlap: float = 0.05,
                 check_time_step: bool = True):
        gamma = float(gamma)
        if not (math.isfinite(gamma) and gamma >= 0.0):
            raise InputError(f"multi-contact: gamma must be finite and >= 0 (got {gamma}); "
                             f"{GAMMA_INDEPENDENT} gives independent contacts, {GAMMA_HALF_SPACE} "
                             f"the elastic half-space, {GAMMA_MCDEM} MC-DEM as fitted")
        self.law = law
        self.gamma = gamma
        self.max_initial_overlap = float(max_initial_overlap)
        self.check_time_step = bool(check_time_step)
        self.touching = 0
        self.touching_walls = 0
        self.late_contacts = 0
        self._home_key = None
        self._home = np.zeros(0, dtype=np.int32)

    @property
    def name(self) -> str:
        return f"MultiContactForces({self.law.name}, gamma={self.gamma:g})"

    def interaction_range(self, world) -> float:
        r = world.particles.radius
        return 2.0 * float(r.max()) if r.size else 0.0

    def setup(self, world) -> None:
        if not any(isinstance(s, MultiContactDisplacements) and s.forces is self
                   for s in world.systems):
            raise InputError("multi-contact: MultiContactForces needs its MultiContactDisplacements "
                             "before it; add both systems of multicontact(law, gamma)")
        if any(isinstance(s, (ContactForces, WallContacts)) for s in world.systems):
            raise InputError("multi-contact: MultiContactForces computes the pair and wall contacts "
                             "itself; remove ContactForces and WallContacts from the world")
        _add_fields(world)
        pairs = world.pairs
        history = tuple(f.name for f in self.law.history)
        for f in self.law.history:
            pairs.add_field(f)
        self.reads = {"pairs": ("i", "j", "mc_displacement")}
        self.writes = {"pairs": history + PAIR_STATE}
        check_time_step(world, self.law, self.check_time_step)
        species = world.tables.get("species")
        self._bound = self.law.bind(species)
        self._kernels = law_kernels(multicontact_kernels, self._bound.function)
        self._pair_scratch = PairScratch(self._kernels.COLUMNS)
        self._wall_scratch = PairScratch(self._kernels.COLUMNS)
        walls = _walls(world)
        self.n_walls = 0 if walls is None else walls.n_owned
        if walls is not None:
            # what the plain wall system sets up, we need too: the law's history per particle
            # and wall, and a WallMotion system (its kernels are never called, so never compiled)
            plain = WallContacts(self.law, check_time_step=False)
            plain.setup(world)
            ws = walls.species
            self._wall_material = np.where(ws >= 0, ws, rigid_material(species)).astype(np.int64)
            attached = ("wall",) if world.particles.has_field("wall") else ()
            self.reads = dict(self.reads, walls=plain.reads["walls"],
                              particles=("mc_wall_displacement", *attached))
            self.writes = dict(self.writes, particles=(
                plain.writes["particles"] + ("mc_wall_force", "mc_wall_offset")))
            self.accumulates = dict(self.accumulates, **plain.accumulates)

    def run(self, world) -> None:
        if world.setup_phase:
            check_initial_overlaps(world, self.max_initial_overlap)
        pairs = world.pairs
        g = world.particles.with_ghosts
        bound, s = self._bound, self._pair_scratch
        names = bound.function.history
        touching, late = self._kernels.pair_contacts(
            pairs.i, pairs.j, pairs.mc_displacement, g("position"), g("velocity"),
            g("angular_velocity"), g("radius"), g("mass"), g("species"), g("fixed"),
            bound.parameters, bound.constants, history_columns(pairs, names, pairs.n_owned),
            s.flags(pairs, names), pairs.mc_listed, self._home_rows(world), not world.setup_phase,
            world.dt, g("force"), g("torque"), pairs.mc_force, pairs.mc_offset, s.buf, s.sel)
        self.late_contacts += int(late)
        self.touching = int(touching)
        self.touching_walls = 0
        if self.n_walls:
            self._walls(world)
            self.touching += self.touching_walls

    def _home_rows(self, world) -> np.ndarray:
        """Per particle row, the row that takes its share of a pair's force: the own row of a
        periodic image of this rank's row (as ``ContactForces``, so gamma = 0 gives its
        bits on one rank), else the row itself (copies of other ranks' rows, summed back by
        the reverse)."""
        home = world.domain.home_rows(world.particles)
        if self._home_key is not home:
            self._home = np.where(home >= 0, home, np.arange(home.size, dtype=np.int32))
            self._home_key = home
        return self._home

    def _walls(self, world) -> None:
        p, walls, k = world.particles, world.walls, self.n_walls
        if walls.n_owned != k:
            raise InputError("walls were added after set-up; add every wall before the first step")
        n, bound, s = p.n_owned, self._bound, self._wall_scratch
        history = tuple(f"wall_{f}" for f in bound.function.history)
        self.touching_walls = int(self._kernels.wall_contacts(
            n, p.mc_wall_displacement.reshape(-1), p.position, p.velocity, p.angular_velocity,
            p.radius, p.mass, p.species, WallContacts.attached_walls(p, n), walls.point,
            walls.normal, walls.velocity, self._wall_material, bound.parameters, bound.constants,
            history_columns(p, history, n, k), s.flags(p, history, k).reshape(-1),
            not world.setup_phase, world.dt, p.force, p.torque,
            walls.force, p.mc_wall_force.reshape(-1), p.mc_wall_offset.reshape(-1), s.buf,
            s.sel))


def multicontact(law, gamma: float = GAMMA_MCDEM, max_initial_overlap: float = 0.05,
                 check_time_step: bool = True) -> list[System]:
    """The two systems of MC-DEM, in the order to add them (module docstring)::

        for s in multicontact(SaturatedHertzLaw(), gamma=1.19):
            world.add_system(s)

    They replace ``ContactForces`` and ``WallContacts``; gamma = 0 gives the
    independent-contact forces of those systems with the same law, bit for bit.
    """
    forces = MultiContactForces(law, gamma, max_initial_overlap, check_time_step)
    return [MultiContactDisplacements(forces), forces]


__all__ = ["GAMMA_INDEPENDENT", "GAMMA_HALF_SPACE", "GAMMA_MCDEM", "PAIR_FIELDS", "wall_fields",
           "influence_coefficients", "point_force_displacement", "surface_displacements",
           "MultiContactDisplacements", "MultiContactForces", "multicontact"]
