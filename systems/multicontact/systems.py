"""Multi-contact DEM (MC-DEM, Brodu, Dijksman & Behringer 2015, Eq. (1)).

Each contact's Hertz overlap is corrected by the surface displacements that
the other contacts of the same grains induce: for contact c between grains
i and j, the law sees the overlap

    Delta_c = delta_c + W_c^i + W_c^j,    W_c^g = sum_{k of g, k != c} delta_{k->c},

summed over the other contacts k of grain g (grain and wall contacts alike),
with Eq. (1) (the point force on an elastic half-space, Bower 5.4.4):

    delta_{k->c} = -gamma (1 + nu) F_k / (2 pi E d_kc) { (n_k.u_kc)(n_c.u_kc)
                   + (3 - 4 nu) n_k.n_c - (1 - 2 nu) (n_k + u_kc).n_c / (1 + n_k.u_kc) }.

Conventions (docs: physics and conventions, Multi-contact correction):

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
  distance h from a rigid object's surface (a wall, any rigid object kind of
  ``systems.contact.rigid_objects``), s = (r_g + W^g + h) / 2 toward the
  surface (a rigid object has no displacement of its own, with or without a
  species).
* The corrected overlap enters the contact law (any law of
  ``systems.contact.law``; ``SaturatedHertzLaw`` is the paper's friction
  F_t = mu |F_n|): its lever arms r + W - Delta/2 put the contact point at
  the mean of the deformed surfaces; R* is the undeformed spheres'
  (``systems.multicontact.model``: MC-DEM as a model of the contact
  pipeline, so it serves every contact geometry and every law).

New contacts from deformation: W is computed for every pair of the
neighbour list, touching or not (toward near neighbours, in the paper's
words), and for every rigid object within a radius of a grain's surface; a pair
touches when Delta > 0, so it forms when the deformed surfaces meet, at zero
force. The list holds the pairs closer than r_i + r_j + skin at its last
rebuild; a pair outside it can only touch if W_i + W_j exceeds what is left
of the skin. Such a contact, found only at the next rebuild, is counted in
``MultiContact.late_contacts`` (zero in a correct run; raise the skin
otherwise).

The scheme: forces lagged by one step. At each step,
``MultiContactDisplacements`` evaluates W from the current positions and
the normal forces and W of the previous step (``mc_force``, ``mc_offset``);
the contact systems given the model (``ContactForces(law, model=mc)``,
``WallContacts(law, model=mc)``, any rigid-object contact system) then
evaluate every contact with Delta and store its new F_n and W. The static state is the fixed point F = K (delta + A F)^(3/2)
(docs/physics.md, Multi-contact DEM): with positions at rest the step is exactly one iteration
of that map, which converges while its gain (3/2) K sqrt(Delta) A stays
below one, as in a packing that has a static state at all. Why lagged and
not iterated inside the step: an iteration costs a force pass and a halo
exchange each way, while a quasi-static packing takes thousands of steps
to move, each of which is one iteration; no extra force pass, one halo
exchange each way per step (tests: a grain between plates converges to 1e-12
in 8 to 22 steps, a free grain comes to rest at the fixed point). The option
``iterations=n`` (``MultiContact``, ``multicontact``) iterates inside the step as
well: n extra force passes of the displacements and the model's contact systems
at the step's positions (``World.add_force_iteration``), n + 1 iterations per
step at n + 1 times the force cost. Beyond
gain one there is no static state: the forces grow step after step, and the
run stops with an error as soon as a surface displacement exceeds its
grain's radius.

Across ranks (the engine's halo policies; no MPI code here): every contact
side is computed by the rank that owns the grain, which holds all of its
contacts (owned pair rows, ghost pair rows of pairs anchored to a ghost
partner, its rigid objects). The per-pair ``mc_force`` and ``mc_offset`` are FORWARD,
so ghost pair rows carry them; a side computed on a ghost pair row is
accumulated into ``mc_displacement`` (REVERSE) and summed into the pair's
owner row before the forces. Rigid-object contacts live in particle fields
(LOCAL): ``mc_<prefix>force``, ``mc_<prefix>offset``, ``mc_<prefix>displacement``
(``mc_wall_force``, ... for walls).
All of it is per-pair and per-particle data: carried across neighbour
rebuilds by gid pair, migration and checkpoints.

Mesh walls (``systems.mesh_wall.contacts.MeshWallContacts(law, model=...)``): each
grain-triangle candidate is a contact side of its grain, like a wall (direction and
distance to the triangle's closest point; per-candidate ``mc_mesh_force``,
``mc_mesh_offset``, ``mc_mesh_displacement`` of ``mesh_pairs``, LOCAL: the grain's owner
holds all its candidates). Candidates on triangles sharing a vertex, not both face
contacts, are one contact seen from neighbouring triangles (Table 1 keeps one of them):
they do not displace each other.

Use ``multicontact(law, gamma)``: the systems in the order they must run (the
displacements, the pair contacts, the wall contacts), sharing one
``MultiContact`` model; give the same model to any other rigid-object contact
system, or a ``MeshWallContacts``, added after them.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError, StateError
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo

from ecs_dem.systems.contact.contact_system import ContactSystem, merged
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.rigid_object_contacts import RigidObjectContacts
from ecs_dem.systems.multicontact import model as mc_model
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.mesh_wall.search import mesh_pair_table
from ecs_dem.systems.multicontact.displacements import (influence_coefficients,
                                                        mesh_separations,
                                                        point_force_displacement,
                                                        surface_displacements)
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


def rigid_fields(prefix: str, n_objects: int) -> tuple[Field, ...]:
    """Per-particle fields of the contacts with n_objects rigid objects of one kind (LOCAL:
    the owner computes both sides); ``prefix`` is the kind's (``"wall_"``)."""
    return (
        Field(f"mc_{prefix}force", np.float64, (n_objects,), Halo.LOCAL, 0.0, "N",
              "normal force of the contact with each object at its last evaluation (0 apart)"),
        Field(f"mc_{prefix}offset", np.float64, (n_objects,), Halo.LOCAL, 0.0, "m",
              "surface displacement W toward each object at the last evaluation"),
        Field(f"mc_{prefix}displacement", np.float64, (n_objects,), Halo.LOCAL, 0.0, "m",
              "this step's surface displacement W toward each object (Eq. 1)"),
    )


MESH_FIELDS = (
    Field("mc_mesh_force", np.float64, (), Halo.LOCAL, 0.0, "N",
          "normal force of the grain-triangle contact at its last evaluation (0 apart)"),
    Field("mc_mesh_offset", np.float64, (), Halo.LOCAL, 0.0, "m",
          "surface displacement W of the grain toward the triangle at the last evaluation"),
    Field("mc_mesh_displacement", np.float64, (), Halo.LOCAL, 0.0, "m",
          "this step's surface displacement W of the grain toward the triangle (Eq. 1)"),
)
MESH_NAMES = ("mc_mesh_displacement", "mc_mesh_force", "mc_mesh_offset")


def wall_fields(n_walls: int) -> tuple[Field, ...]:
    """``rigid_fields`` of the walls: ``mc_wall_force``, ``mc_wall_offset``,
    ``mc_wall_displacement``."""
    return rigid_fields("wall_", n_walls)


class MultiContact:
    """MC-DEM as a contact model (module docstring): give it to the contact systems of every
    geometry that should see the corrected overlaps, after its ``MultiContactDisplacements``.

    Parameters
    ----------
    gamma : float
        Prefactor of Eq. (1), >= 0 (``GAMMA_INDEPENDENT``, ``GAMMA_HALF_SPACE``,
        ``GAMMA_MCDEM``).
    iterations : int
        Extra iterations of the correction inside each step (0: the lagged scheme, one
        iteration per step): the displacements and the model's contact systems run that
        many more force passes at the step's positions before the step's own
        (``World.add_force_iteration``), each a full force evaluation of those systems.

    ``late_contacts``: contacts from deformation that the neighbour list missed, on this
    rank since set-up (module docstring).
    """

    template = mc_model
    #: W is bounded only by the grain's radius (a larger one stops the run): a rigid object's
    #: near list keeps every particle
    reach_bound = math.inf

    def __init__(self, gamma: float = GAMMA_MCDEM, iterations: int = 0):
        if not (isinstance(iterations, (int, np.integer)) and iterations >= 0):
            raise InputError(f"multi-contact: iterations must be an integer >= 0 (got "
                             f"{iterations!r}); 0 is the lagged scheme")
        self.iterations = int(iterations)
        gamma = float(gamma)
        if not (math.isfinite(gamma) and gamma >= 0.0):
            raise InputError(f"multi-contact: gamma must be finite and >= 0 (got {gamma}); "
                             f"{GAMMA_INDEPENDENT} gives independent contacts, {GAMMA_HALF_SPACE} "
                             f"the elastic half-space, {GAMMA_MCDEM} MC-DEM as fitted")
        self.gamma = gamma
        self.systems: list[ContactSystem] = []
        self._events: dict[int, int] = {}
        self._listed_none = np.zeros(0, dtype=np.uint8)

    @property
    def name(self) -> str:
        extra = f", iterations={self.iterations}" if self.iterations else ""
        return f"MultiContact(gamma={self.gamma:g}{extra})"

    @property
    def late_contacts(self) -> int:
        return sum(self._events.values())

    def events_of(self, system) -> int:
        return self._events.get(id(system), 0)

    def count_events(self, system, n: int) -> None:
        self._events[id(system)] = self._events.get(id(system), 0) + n

    def attach(self, system, world) -> None:
        """A contact system takes the model: its per-contact fields, and the check that the
        model's displacements run before it."""
        before = world.systems[:world.systems.index(system)]
        if not any(isinstance(s, MultiContactDisplacements) and s.model is self for s in before):
            raise InputError(f"multi-contact: {system.name} needs the MultiContactDisplacements of "
                             "its model before it; add the systems of multicontact(law, gamma) "
                             "in the order it returns them")
        if isinstance(system, RigidObjectContacts):
            for f in rigid_fields(system.history_prefix, system.n_objects):
                world.particles.add_field(f)
        elif isinstance(system, ContactForces):
            for f in PAIR_FIELDS:
                pair_table(world).add_field(f)
        elif isinstance(system, MeshWallContacts):
            for f in MESH_FIELDS:
                mesh_pair_table(world).add_field(f)
        else:
            raise InputError(f"multi-contact: {system.name} has no multi-contact form (pairs, "
                             "rigid objects and mesh walls have)")
        self.systems.append(system)

    @staticmethod
    def _names(system) -> tuple[str, str, str]:
        p = f"mc_{system.history_prefix}"
        return f"{p}displacement", f"{p}force", f"{p}offset"

    def declarations(self, system, world) -> dict:
        if isinstance(system, RigidObjectContacts):
            displacement, force, offset = self._names(system)
            return {"reads": {"particles": (displacement,)},
                    "writes": {"particles": (force, offset)}}
        if isinstance(system, MeshWallContacts):
            return {"reads": {"mesh_pairs": MESH_NAMES[:1]}, "writes": {"mesh_pairs": MESH_NAMES[1:]}}
        return {"reads": {"pairs": ("mc_displacement",)}, "writes": {"pairs": PAIR_STATE}}

    def arrays(self, system, world, table) -> tuple:
        """The model's tuple M (``systems.multicontact.model``) for `system`'s contacts."""
        if isinstance(system, RigidObjectContacts):
            p = world.particles
            k = system.n_objects * p.n_owned
            displacement, force, offset = (p.owned(name) for name in self._names(system))
            return (displacement.reshape(k, 1), force.reshape(k), offset.reshape(k, 1),
                    self._listed_none)
        if isinstance(system, MeshWallContacts):
            displacement, force, offset = (table.owned(name) for name in MESH_NAMES)
            k = force.size
            return (displacement.reshape(k, 1), force, offset.reshape(k, 1), self._listed_none)
        return (table.owned("mc_displacement"), table.owned("mc_force"), table.owned("mc_offset"),
                table.owned("mc_listed"))


class MultiContactDisplacements(System):
    """W of every contact side (Eq. (1)) from the last step's forces: the first half of MC-DEM.

    Runs before the contact systems of its model in the FORCES stage (module docstring);
    declarations are set in ``declare`` (from the contact systems that take the model).
    """

    stage = Stage.FORCES

    def __init__(self, model: MultiContact):
        self.model = model
        self._rigid = []
        self._mesh = None
        self._scratch = {}

    @property
    def name(self) -> str:
        return f"MultiContactDisplacements(gamma={self.model.gamma:g})"

    def _contact_systems(self, world) -> list:
        return [s for s in world.systems if getattr(s, "model", None) is self.model
                and isinstance(s, ContactSystem)]

    def setup(self, world) -> None:
        pairs = pair_table(world)
        for f in PAIR_FIELDS:
            pairs.add_field(f)
        systems = self._contact_systems(world)
        if not any(isinstance(s, ContactForces) for s in systems):
            raise InputError("multi-contact: the model has no pair contact system; add the systems "
                             "of multicontact(law, gamma)")
        self._rigid = []
        for s in systems:
            if not isinstance(s, RigidObjectContacts) or not s.objects(world):
                continue
            # the rigid systems come after this one: their fields are made here, as they will be
            s.n_objects = world.tables[s.table_name].n_owned
            for f in rigid_fields(s.history_prefix, s.n_objects):
                world.particles.add_field(f)
            self._rigid.append(s)
        mesh = [s for s in systems if isinstance(s, MeshWallContacts)]
        self._mesh = mesh[0] if mesh else None
        if self._mesh is not None:
            for f in MESH_FIELDS:
                mesh_pair_table(world).add_field(f)
        if self.model.iterations:
            world.add_force_iteration((self, *systems), self.model.iterations)

    def declare(self, world) -> None:
        reads = {"pairs": ("i", "j"), "particles": ("species",),
                 "species": ("youngs_modulus", "poisson_ratio")}
        writes = {}
        for s in self._rigid:
            displacement, force, offset = MultiContact._names(s)
            reads = merged(reads, {s.table_name: s.shape.FIELDS, "particles": (force, offset)})
            writes = merged(writes, {"particles": (displacement,)})
        self.reads, self.writes = reads, writes
        self.reads_ghosts = {"particles": ("position", "radius"), "pairs": ("mc_force", "mc_offset")}
        self.accumulates = {"pairs": ("mc_displacement",)}
        if self._mesh is not None:
            reads = merged(reads, {"mesh_pairs": ("i", "t") + MESH_NAMES[1:]})
            writes = merged(writes, {"mesh_pairs": MESH_NAMES[:1]})
            self.reads, self.writes = reads, writes
            self.reads_ghosts = merged(self.reads_ghosts, {"mesh_vertices": ("position",),
                                                           "mesh_triangles": ("vertices",)})

    def run(self, world) -> None:
        p, q = world.particles, world.pairs
        gamma = self.model.gamma
        n = p.n_owned
        rigid = self._rigid
        if gamma == 0.0:  # independent contacts: W = 0 (mc_displacement was zeroed)
            for s in rigid:
                p.owned(MultiContact._names(s)[0])[...] = 0.0
            if self._mesh is not None:
                world.mesh_pairs.owned(MESH_NAMES[0])[...] = 0.0
            return
        start, items = world.incident_rows("pairs")
        sp = world.species
        if rigid:
            direction, distance = [], []
            for s in rigid:
                d = self._array(f"direction_{id(s)}", (n, s.n_objects, 3))
                h = self._array(f"distance_{id(s)}", (n, s.n_objects))
                s.separations(world, d, h)
                direction.append(d)
                distance.append(h)
            names = [MultiContact._names(s) for s in rigid]
            rigid_args = (tuple(direction), tuple(distance),
                          tuple(p.owned(force) for _, force, _ in names),
                          tuple(p.owned(offset) for _, _, offset in names))
            out = tuple(p.owned(displacement) for displacement, _, _ in names)
        else:
            none = self._array("none", (n, 0))
            rigid_args = ((self._array("none3", (n, 0, 3)),), (none,), (none,), (none,))
            out = (none,)
        worst, at = surface_displacements(
            n, start, items, q.with_ghosts("i"), q.with_ghosts("j"), q.with_ghosts("mc_force"),
            q.with_ghosts("mc_offset"), p.with_ghosts("position"), p.with_ghosts("radius"),
            p.species, sp.youngs_modulus, sp.poisson_ratio, *rigid_args, gamma,
            q.with_ghosts("mc_displacement"), out, *self._mesh_arguments(world, n))
        if worst > 1.0:
            raise StateError(
                f"multi-contact: the surface of particle gid {int(p.gid[at])} moved by {worst:.3g} "
                "of its radius under its other contacts (Eq. 1): at these overlaps the correction "
                f"has no static state (its gain exceeds one) for gamma = {gamma:g}. Lower gamma or "
                "the compression, or approach the state more slowly")

    def _mesh_arguments(self, world, n: int) -> tuple:
        """surface_displacements' mesh-wall arguments: the candidates of each owned grain
        (start, rows of ``mesh_pairs``), their direction and distance to the triangle, last
        force and W, and this step's W (empty without mesh walls)."""
        if self._mesh is None or world.mesh_pairs.n_owned == 0:
            kept = self._scratch.get("no mesh")
            if kept is None or kept[0].size != n + 1:
                none = np.zeros(0)
                kept = self._scratch["no mesh"] = (np.zeros(n + 1, dtype=np.int64),
                                                   np.zeros(0, np.int64), np.zeros((0, 3)),
                                                   none, none, none, none,
                                                   np.zeros(0, np.int32), np.zeros(0, np.int8),
                                                   np.zeros((0, 3), np.int64))
            return kept
        pairs, p = world.mesh_pairs, world.particles
        m = pairs.n_owned
        grain = pairs.owned("i")
        items = np.argsort(grain, kind="stable")
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(grain, minlength=n)[:n], out=start[1:])
        direction = self._array("mesh_direction", (m, 3))
        distance = self._array("mesh_distance", (m,))
        rank = self._scratch.get("mesh_rank")
        if rank is None or rank.size != m:
            rank = self._scratch["mesh_rank"] = np.zeros(m, dtype=np.int8)
        tri = world.mesh_triangles
        triangle = pairs.owned("t")
        mesh_separations(grain, triangle, tri.with_ghosts("rows"), p.with_ghosts("position"),
                         world.mesh_vertices.with_ghosts("position"), p.with_ghosts("radius"),
                         direction, distance, rank)
        displacement, force, offset = (pairs.owned(name) for name in MESH_NAMES)
        return (start, items, direction, distance, force, offset, displacement, triangle, rank,
                tri.with_ghosts("vertices"))

    def _array(self, name: str, shape: tuple) -> np.ndarray:
        """A scratch array of this shape, kept while the shape holds."""
        a = self._scratch.get(name)
        if a is None or a.shape != shape:
            a = self._scratch[name] = np.zeros(shape)
        return a


def multicontact(law, gamma: float = GAMMA_MCDEM, max_initial_overlap: float = 0.05,
                 check_time_step: bool = True, iterations: int = 0) -> list[System]:
    """The systems of MC-DEM, in the order to add them (module docstring)::

        for s in multicontact(SaturatedHertzLaw(), gamma=1.19):
            world.add_system(s)

    ``MultiContactDisplacements``, then ``ContactForces`` and ``WallContacts`` (which does
    nothing in a world without walls) with one ``MultiContact(gamma)`` model; they replace
    the plain ``ContactForces`` and ``WallContacts``. gamma = 0 gives the independent-contact
    forces of those with the same law, bit for bit on one rank. The model is the systems'
    ``model`` attribute: give it to any other rigid-object contact system, added after them.
    ``iterations``: extra iterations of the correction per step (``MultiContact``).
    """
    model = MultiContact(gamma, iterations)
    return [MultiContactDisplacements(model),
            ContactForces(law, max_initial_overlap, check_time_step, model=model),
            WallContacts(law, check_time_step, model=model, optional=True)]


__all__ = ["GAMMA_INDEPENDENT", "GAMMA_HALF_SPACE", "GAMMA_MCDEM", "PAIR_FIELDS", "PAIR_STATE",
           "MESH_FIELDS",
           "rigid_fields", "wall_fields", "influence_coefficients", "point_force_displacement",
           "surface_displacements", "MultiContact", "MultiContactDisplacements", "multicontact"]
