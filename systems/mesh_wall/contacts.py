"""Contacts of grains with rigid mesh walls, with the particles' contact law.

``MeshWallContacts(law)`` takes the same law object as ``ContactForces``
(Hertz-Mindlin, the linear law, ...) and evaluates it on the candidates of
``mesh_pairs`` (``systems.mesh_wall.search.MeshWallSearch``, which set-up adds
when missing) with the contact pipeline, the per-candidate geometry, Table 1
selection and hand-over of springs that membrane patches use
(``systems.contact.triangle_selection``) and the rigid-wall geometry of
``systems.mesh_wall.kernels``. One tangential spring per grain and surface
region, carried across triangle edges; the normal force does not jump where
a grain rolls from one triangle onto the next.

Material pair: (the wall's species, or the rigid material for -1; the
grain's species), mixed by the law's rules. The wall is infinitely massive
(M* = m_grain) and moves by its prescribed motion (``MeshWallMotion``, which
set-up adds when some wall moves and the world has none).

Each grain's owner evaluates all its mesh-wall contacts. ``mesh_walls.force``
and ``torque`` (about the wall's reference point) receive each rank's share
(SUM fields: the engine sums them over ranks when something reads them); the
triangles' ``step_*`` fields are summed onto their owners, and
``MeshWallWork`` (added after this system) adds them to the run's totals
``contacts``, ``normal_work`` and ``friction_work`` there.

MC-DEM (``systems.multicontact``): give the model,
``MeshWallContacts(law, model=systems[0].model)`` added after the systems of
``multicontact(law, gamma)``. Each candidate is then a contact side of its
grain in Eq. (1), like a planar wall: its force displaces the grain's surface
at the grain's other contacts, and the displacement W toward the triangle
moves the grain's surface there (a candidate touches when |d| < r + W, the
Table 1 selection compares r + W - |d|, and the law sees the overlap
r + W - |d|). The lever arm of the force is then |d| + W/2 (|d| without
MC-DEM). A world with MC-DEM and a MeshWallContacts without the model is
refused at set-up (Eq. (1) would miss its contacts).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo, Table

from ecs_dem.components.mesh_walls import FIXED
from ecs_dem.systems.contact import triangle_selection
from ecs_dem.systems.contact.contact_system import ContactSystem, history_columns
from ecs_dem.systems.contact.law import rigid_material
from ecs_dem.systems.contact.table import ScratchArrays
from ecs_dem.systems.integration.velocity_verlet import IntegrateFirstHalf
from ecs_dem.systems.membrane.patch_contacts import NO_REACH, triangle_contact_states
from ecs_dem.systems.membrane.vertex_sharing import vertex_sharing
from ecs_dem.systems.mesh_wall import kernels
from ecs_dem.systems.mesh_wall.motion import MeshWallMotion
from ecs_dem.systems.mesh_wall.search import MeshWallSearch, grain_rows, mesh_pair_table

GRAIN_READS = ("position", "velocity", "angular_velocity", "radius", "mass", "species")
WORK_FIELDS = ("step_contacts", "step_normal_work", "step_friction_work")
TOTALS = ("contacts", "normal_work", "friction_work")
#: per-candidate state: selected at the last step (the hand-over of springs needs it)
WAS_SELECTED = Field("was_selected", np.uint8, (), Halo.LOCAL, 0, "", "selected at the last step")


class MeshWallContacts(ContactSystem):
    """Contacts of grains with the triangles of rigid mesh walls (module docstring).

    ``touching``: the candidates that touch (selected or not) at the last step;
    ``selected``: the selected face, edge and vertex contacts.
    """

    geometry = kernels
    templates = (triangle_selection,)
    reads = {"mesh_pairs": ("i", "t"), "mesh_walls": ("species", "reference"),
             "particles": GRAIN_READS}
    reads_ghosts = {"mesh_vertices": ("position", "velocity"),
                    "mesh_triangles": ("vertices", "wall")}
    accumulates = {"mesh_walls": ("force", "torque"), "mesh_triangles": WORK_FIELDS}
    accumulates_owned = {"particles": ("force", "torque")}

    def __init__(self, law, check_time_step: bool = True, model=None):
        super().__init__(law, model, check_time_step)
        history = tuple(f.name for f in law.history)
        self.writes = {"mesh_pairs": history + ("was_selected",)}
        self.selected = np.zeros(3, dtype=np.int64)  # face, edge, vertex contacts of the step
        self._arrays, self._args_key, self._args = ScratchArrays(), None, ()

    @property
    def contact_key(self) -> str:
        return "mesh_pairs"

    def interaction_range(self, world) -> float:
        """Largest grain radius plus the longest triangle edge: a grain's owner then holds
        every triangle it may touch, and every vertex of it."""
        grains = grain_rows(world)
        p = world.particles
        r = float(p.radius[grains].max()) if grains.size else 0.0
        walls = world.tables.get("mesh_walls")
        edge = float(walls.longest_edge.max()) if walls is not None and walls.n_owned else 0.0
        return r + edge

    def setup(self, world) -> None:
        walls = world.tables.get("mesh_walls")
        if walls is None or walls.n_owned == 0:
            raise InputError("MeshWallContacts: the world has no mesh wall "
                             "(components.mesh_walls.add_mesh_wall)")
        from ecs_dem.systems.multicontact.systems import MultiContactDisplacements
        if self.model is None and world.has_system(MultiContactDisplacements):
            raise InputError("MeshWallContacts: the world runs MC-DEM (systems.multicontact), "
                             "whose Eq. (1) would miss these contacts; give the model: "
                             "MeshWallContacts(law, model=systems[0].model), systems = "
                             "multicontact(law, gamma), added after those systems")
        if not world.has_system(MeshWallSearch):
            world.add_system(MeshWallSearch(), before=self)
        if np.any(walls.motion != FIXED) and not world.has_system(MeshWallMotion):
            world.add_system(MeshWallMotion(), before=IntegrateFirstHalf)
        if not world.has_system(MeshWallWork):
            world.add_system(MeshWallWork())
        pairs = mesh_pair_table(world)
        pairs.add_field(WAS_SELECTED)
        self.setup_contacts(world, [pairs])
        self.n_walls = walls.n_owned

    def law_changed(self, bound) -> None:
        self._args_key = None

    def run(self, world) -> None:
        if world.mesh_walls.n_owned != self.n_walls:
            raise InputError("mesh walls were added after set-up; add every one before the "
                             "first step")
        kernels_ = self.kernels(world)
        prepare, G, history, flags = self._kernel_args(world)
        if self.model is not None:
            M = self.model.arrays(self, world, world.mesh_pairs)
            reach = M[0].reshape(-1)
        else:
            M, reach = (), NO_REACH
        advance = not (world.setup_phase or world.iteration_pass)
        self.touching = int(kernels_.prepare(*prepare[:9], history, advance,
                                             *prepare[9:], self.selected, reach))
        G = (*G, world.dt if advance else 0.0)
        self.evaluate(world, kernels_, G, M, history, flags)

    def _material(self, world) -> np.ndarray:
        material = world.mesh_walls.species
        species = world.tables.get("species")
        bad = (material < -1) | (material >= rigid_material(species))
        if np.any(bad):
            raise InputError(f"mesh_walls.species[{int(np.argmax(bad))}] = "
                             f"{int(material[bad][0])} is not a species: give a row of the "
                             "species table, or -1 for a rigid wall")
        return np.where(material >= 0, material, rigid_material(species)).astype(np.int64)

    snapshot_reads = {"particles": ("gid", "position"), "mesh_pairs": ("i", "triangle")}

    def recorded_bodies(self, world, contacts):
        """The grain's row and the triangle's gid of each contact (a row of ``mesh_pairs``)."""
        pairs = world.mesh_pairs
        return pairs.owned("i")[contacts], None, pairs.owned("triangle")[contacts]

    def _kernel_args(self, world) -> tuple:
        """``prepare``'s arguments (but ``update`` and the counts), the geometry tuple (but
        ``work_dt``), history and flags, kept until some table changes structurally or a
        wall's species changes."""
        pairs, p = world.mesh_pairs, world.particles
        tri, verts, walls = world.mesh_triangles, world.mesh_vertices, world.mesh_walls
        key = (Table.structure_version, walls.species.tobytes())
        if key == self._args_key:
            return self._args
        n = pairs.n_owned
        names = self.bound.function.history
        geometry = self._arrays.get("geometry", n, np.float64,
                                    triangle_selection.GEOMETRY_WIDTH)[:n]
        rank = self._arrays.get("rank", n, np.int8)[:n]
        touch = self._arrays.get("touch", n, np.uint8)[:n]
        selected = self._arrays.get("selected", n, np.uint8)[:n]
        adj_start, adjacent = vertex_sharing(pairs.i, pairs.t, tri.with_ghosts("vertices"))
        tri_rows = tri.with_ghosts("rows")
        vertex_position = verts.with_ghosts("position")
        prepare = (pairs.i, pairs.t, adj_start, adjacent, tri_rows, tri.with_ghosts("gid"),
                   p.position, vertex_position, p.radius, geometry, rank, touch, selected,
                   pairs.was_selected)
        G = (pairs.i, pairs.t, tri_rows, tri.with_ghosts("wall"), self._material(world),
             geometry, selected, *p.views(GRAIN_READS), *p.views(("force", "torque")),
             verts.with_ghosts("velocity"), walls.force, walls.torque, walls.reference,
             *(tri.with_ghosts(f) for f in WORK_FIELDS))
        self._args = (prepare, G, history_columns(pairs, names, n),
                      self._scratch.flags(pairs, names))
        self._args_key = key
        return self._args

    def contact_states(self, world) -> dict[str, np.ndarray]:
        """The candidates of the last evaluation (``triangle_contact_states``)."""
        return triangle_contact_states(world.mesh_pairs, self._arrays)


class MeshWallWork(System):
    """Add each triangle's contacts and work of the step (summed onto its owner) to the run's
    totals ``contacts``, ``normal_work`` and ``friction_work`` (J): what wear and the
    per-triangle records read."""

    stage = Stage.FORCES
    reads = {"mesh_triangles": WORK_FIELDS}
    writes = {"mesh_triangles": TOTALS}

    def run(self, world) -> None:
        tri = world.mesh_triangles
        add_step_work(tri.n_owned, *tri.views(WORK_FIELDS), *tri.views(TOTALS))


@kernel
def add_step_work(n, step_contacts, step_normal, step_friction, contacts, normal, friction):
    """Add the step's work of triangles 0..n-1 to their totals. Only triangles that some
    grain touched at this step carry work (a step's count is a sum of ones, exact in
    float64), so the others are passed over with one load each: a large mesh touched in few
    places costs a read of one field, not three adds over every triangle."""
    for t in range(n):
        if step_contacts[t] != 0.0:
            contacts[t] += np.int64(round(step_contacts[t]))
            normal[t] += step_normal[t]
            friction[t] += step_friction[t]


__all__ = ["MeshWallContacts", "MeshWallWork"]
