"""Grain-patch contacts of patch membranes (MSS_patch) with the particles' contact law.

``PatchContacts(law)`` takes the same law object as ``ContactForces`` (Hertz-
Mindlin or the linear law) and evaluates it on the candidates of
``patch_pairs`` (systems.membrane.patch_search) with the contact pipeline and the
geometry, selection (Table 1), force distribution and history of
systems.membrane.patch_kernels.

Material pair: the law's parameters for (the membrane's species, the grain's
species), mixed by the law's own rules (Hertz-Mindlin: E*, G* from the
compliance sums, restitution and friction the arithmetic means; e.g. a grain
with mu = 0.25 on a membrane species with mu = 1.2 slides at mu = 0.725; give
the membrane species the friction you want the pair to have, or the grain
and membrane species equal values), or state the pair's own constants
(``law.set_pair``, systems.contact.pair_constants). The damping's effective
mass follows ``effective_mass``: "patch" (default), the grain's with the
patch's share of the membrane mass, M* = m_g m_p / (m_g + m_p),
m_p = sum w_k m_k over the triangle's vertices with the contact point's
barycentric weights; "grain", M* = m_g, the membrane as infinitely massive
as a wall; "triangle", M* = m_g m_t / (m_g + m_t), m_t = A0 d rho the
touched triangle's own rest mass, as MercuryDPM's mesh triangles carry
(systems.membrane.patch_kernels).

Each grain's owner evaluates all its patch contacts; forces on ghost
vertices come home through the reverse reduction, so results do not depend
on the number of ranks.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.components.membranes import element_span
from ecs_dem.errors import InputError
from ecs_dem.table import Field, Halo, Table

from ecs_dem.systems.contact.contact_system import ContactSystem, history_columns
from ecs_dem.systems.contact.table import ScratchArrays
from ecs_dem.systems.contact import triangle_selection
from ecs_dem.systems.membrane import patch_kernels
from ecs_dem.systems.membrane.patch_search import patch_pair_table
from ecs_dem.systems.membrane.vertex_sharing import vertex_sharing

PATCH_READS = ("position", "velocity", "angular_velocity", "radius", "mass", "fixed", "species")
#: conventions for the effective mass of a grain-patch contact (module docstring)
EFFECTIVE_MASS = ("patch", "grain", "triangle")
#: prepare's reach: no contact model moves a grain's surface toward the patches
NO_REACH = np.zeros(0)
#: per-candidate state: selected at the last step (the hand-over of springs needs it)
WAS_SELECTED = Field("was_selected", np.uint8, (), Halo.LOCAL, 0, "", "selected at the last step")


class PatchContacts(ContactSystem):
    """Contacts of grains with the triangles of patch membranes (module docstring).

    ``max_stretch``: the largest a triangle may get relative to its initial size; with the
    largest grain radius it sets the ghost width (a grain's owner must see every triangle
    it may touch). ``effective_mass``: "patch", "grain" or "triangle" (module docstring).
    ``touching``: the candidates that touch (selected or not) at the last
    step; ``selected``: the selected face, edge and vertex contacts.
    """

    geometry = patch_kernels
    templates = (triangle_selection,)
    reads = {"patch_pairs": ("i", "t"), "membranes": ("species",)}
    reads_ghosts = {"particles": PATCH_READS,
                    "membrane_triangles": ("vertices", "membrane")}
    accumulates = {"particles": ("force", "torque")}

    def __init__(self, law, check_time_step: bool = True, max_stretch: float = 1.5,
                 effective_mass: str = "patch"):
        super().__init__(law, None, check_time_step)
        if effective_mass not in EFFECTIVE_MASS:
            raise InputError(f"PatchContacts: effective_mass {effective_mass!r} is not one of "
                             f"{', '.join(map(repr, EFFECTIVE_MASS))} (module docstring)")
        self.effective_mass = effective_mass
        self.max_stretch = float(max_stretch)
        self.writes = {"patch_pairs": (*(f.name for f in law.history), "was_selected")}
        self.selected = np.zeros(3, dtype=np.int64)  # face, edge, vertex contacts of the step
        self._arrays = ScratchArrays()
        self._args_key = None
        self._args = ()

    @property
    def contact_key(self) -> str:
        return "patch_pairs"

    def interaction_range(self, world) -> float:
        p = world.particles
        grains = p.membrane < 0
        r = float(p.radius[grains].max()) if np.any(grains) else 0.0
        return r + self.max_stretch * element_span(world, "membrane_triangles")

    def setup(self, world) -> None:
        if "membrane_triangles" not in world.tables:
            raise InputError("PatchContacts: the world has no membrane (components.membranes)")
        pairs = patch_pair_table(world)
        pairs.add_field(WAS_SELECTED)
        self.setup_contacts(world, [pairs])

    def law_changed(self, bound) -> None:
        self._args_key = None

    def run(self, world) -> None:
        kernels = self.kernels(world)
        prepare, G, history, flags = self._kernel_args(world)
        self.touching = int(kernels.prepare(*prepare[:9], history, not world.setup_phase,
                                            *prepare[9:], self.selected, NO_REACH))
        self.evaluate(world, kernels, G, (), history, flags)

    snapshot_reads = {"particles": ("gid", "position"), "patch_pairs": ("i", "triangle")}

    def recorded_bodies(self, world, contacts):
        """The grain's row and the triangle's gid of each contact (a row of ``patch_pairs``)."""
        pairs = world.patch_pairs
        return pairs.owned("i")[contacts], None, pairs.owned("triangle")[contacts]

    def _kernel_args(self, world) -> tuple:
        """The arguments of ``prepare`` (but ``update`` and the counts) and the pipeline's
        geometry tuple, history and flags, cached until some table changes structurally
        (``Table.structure_version``): building them cost 12 us a step in case 1 of the
        triaxial test, a third of the kernel's time. They include which candidates share a
        vertex (systems.membrane.vertex_sharing), which changes only with the candidate
        list."""
        pairs = world.patch_pairs
        p = world.particles
        tri = world.membrane_triangles
        key = Table.structure_version
        if key == self._args_key:
            return self._args
        g = p.with_ghosts
        n = pairs.n_owned
        names = self.bound.function.history
        geometry = self._arrays.get("geometry", n, np.float64, patch_kernels.GEOMETRY_WIDTH)[:n]
        rank = self._arrays.get("rank", n, np.int8)[:n]
        touch = self._arrays.get("touch", n, np.uint8)[:n]
        selected = self._arrays.get("selected", n, np.uint8)[:n]
        adj_start, adjacent = vertex_sharing(pairs.i, pairs.t, tri.with_ghosts("vertices"))
        tri_rows = tri.with_ghosts("rows")
        prepare = (pairs.i, pairs.t, adj_start, adjacent, tri_rows, tri.with_ghosts("gid"),
                   g("position"), g("position"), g("radius"), geometry, rank, touch, selected,
                   pairs.was_selected)
        G = (pairs.i, pairs.t, tri_rows, tri.with_ghosts("membrane"), world.membranes.species,
             geometry, selected, g("position"), g("velocity"), g("angular_velocity"),
             g("radius"), g("mass"), g("fixed"), g("species"), g("force"), g("torque"),
             EFFECTIVE_MASS.index(self.effective_mass), self._triangle_mass(world))
        self._args = (prepare, G, history_columns(pairs, names, n),
                      self._scratch.flags(pairs, names))
        self._args_key = key
        return self._args

    def _triangle_mass(self, world) -> np.ndarray:
        """Rest mass A0 d rho of every triangle row, ghosts included (convention
        "triangle"; an empty array otherwise)."""
        if self.effective_mass != "triangle":
            return np.zeros(0)
        tri, m = world.membrane_triangles, world.membranes
        per_area = m.thickness * m.density
        return tri.with_ghosts("rest_area") * per_area[tri.with_ghosts("membrane")]

    def contact_states(self, world) -> dict[str, np.ndarray]:
        """The candidates of the last evaluation (``triangle_contact_states``)."""
        return triangle_contact_states(world.patch_pairs, self._arrays)


def triangle_contact_states(pairs, arrays: ScratchArrays) -> dict[str, np.ndarray]:
    """The candidates of a grain-triangle contact table's last evaluation (``patch_pairs``,
    ``mesh_pairs``; `arrays`: its system's scratch): grain and triangle gids, kind ("face",
    "edge", "vertex"), overlap (m), touching and selected flags (for tests and
    diagnostics)."""
    n = pairs.n_owned
    rank = arrays.get("rank", n, np.int8)[:n]
    kinds = np.array(["vertex", "edge", "face"])
    geometry = arrays.get("geometry", n, np.float64, triangle_selection.GEOMETRY_WIDTH)
    return {"grain": pairs.gid_i.copy(), "triangle": pairs.triangle.copy(),
            "kind": kinds[rank], "overlap": geometry[:n, triangle_selection._GDELTA].copy(),
            "touching": arrays.get("touch", n, np.uint8)[:n].astype(bool),
            "selected": arrays.get("selected", n, np.uint8)[:n].astype(bool)}
