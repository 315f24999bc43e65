"""Broad phase of grain-mesh-wall contacts: candidate (grain, triangle) pairs, ``mesh_pairs``.

At every rebuild the owned particles (grains, and membrane vertices as spheres
of their radius, as planar walls see them) are binned in a
cell grid and each mesh-wall triangle (owned and ghost rows of
``mesh_triangles``, with every vertex present on this rank) into the cells its
bounding box, grown by r_max + skin, touches; a grain and a triangle are a
candidate when the grain's centre lies within r + skin of the triangle
(``systems.membrane.patch_search.build_triangle_pairs``, which the membrane
patches use too). Between rebuilds grains and vertices move less than half a
skin each (the rebuild rule counts ``mesh_vertices`` like the particles), so
no contact is missed.

Rule for MPI: the owner of the grain lists and evaluates all its mesh-wall
contacts, so the Table 1 selection sees every triangle the grain touches; the
triangles are there as owned or ghost rows because the contact system's
interaction range (largest grain radius plus the longest triangle edge) sets
the ghost width.

``mesh_pairs`` rows: ``gid_i`` the grain's gid (the anchor), ``triangle`` the
triangle's gid, ``i`` the grain's row, ``t`` the triangle's row in
``mesh_triangles``, ``gid`` the pair id; grouped by grain, then by triangle
gid. Every other field (the law's tangential history, ``was_selected``) is
carried over by (grain, triangle) at each rebuild (``rebuild_contact_table``),
so it survives rebuilds, migration and restart.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo, Table

from ecs_dem.systems.contact.table import ScratchArrays
from ecs_dem.systems.membrane.patch_search import build_triangle_pairs

MESH_PAIR_FIELDS = (
    Field("gid_i", np.int64, (), Halo.FORWARD, -1, "", "gid of the grain (the anchor)"),
    Field("triangle", np.int64, (), Halo.FORWARD, -1, "", "gid of the mesh triangle"),
    Field("i", np.int32, (), Halo.LOCAL, -1, "", "local row of the grain"),
    Field("t", np.int32, (), Halo.LOCAL, -1, "", "local row of the triangle (owned or ghost)"),
)
IDENTITY = ("gid", "gid_i", "triangle", "i", "t")


def mesh_pair_table(world) -> Table:
    """The world's ``mesh_pairs`` table, created on first use."""
    if "mesh_pairs" not in world.tables:
        world.add_table(Table("mesh_pairs", MESH_PAIR_FIELDS, capacity=256,
                              anchor=("particles", "gid_i"), references={"i": "gid_i"}))
    return world.tables["mesh_pairs"]


def grain_rows(world) -> np.ndarray:
    """Owned particle rows that touch mesh walls: every particle, grains and membrane
    vertices alike (a vertex as a sphere of its radius, as on a planar wall)."""
    return np.arange(world.particles.n_owned, dtype=np.int64)


class MeshWallSearch(System):
    """Build ``mesh_pairs``: candidate grain-triangle contacts of owned grains (module
    docstring)."""

    stage = Stage.NEIGHBORS
    reads = {"particles": ("position", "radius", "gid")}
    reads_ghosts = {"mesh_vertices": ("position",), "mesh_triangles": ("vertices", "wall")}
    builds = ("mesh_pairs",)

    def __init__(self):
        self._scratch = ScratchArrays()
        self.builds_done = 0

    def setup(self, world) -> None:
        mesh_pair_table(world)

    def run(self, world) -> None:
        p = world.particles
        pairs = mesh_pair_table(world)
        tri = world.mesh_triangles
        grains = grain_rows(world)
        rows = tri.with_ghosts("rows")
        use = np.all(rows >= 0, axis=1)
        build_triangle_pairs(pairs, IDENTITY, grains, p.with_ghosts("position"),
                             p.with_ghosts("radius"), world.mesh_vertices.with_ghosts("position"),
                             rows, use, tri.with_ghosts("gid"), p.gid, world.skin, self._scratch)
        self.builds_done += 1


__all__ = ["MeshWallSearch", "mesh_pair_table", "grain_rows"]
