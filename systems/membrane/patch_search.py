"""Broad phase of grain-patch contacts: candidate (grain, triangle) pairs, the ``patch_pairs`` table.

Goetz & Poeschel Sect. 2.5: grains touch a patch membrane through its
triangles. At every rebuild each owned grain is binned in a cell grid (cells
2 r_max + skin wide) and each triangle of a patch membrane (owned and ghost
rows) into every cell its bounding box, grown by r_max + skin, touches; a
grain and a triangle in the same cell are a candidate when the grain's
centre lies within r + skin of the triangle. A triangle much larger than the
grains covers many cells, as many as hold grains that could touch it, and a
much smaller one one or a few: the cost does not grow with the size ratio.

Rule for MPI: the owner of the grain lists (and evaluates) all its patch
contacts, so the Table 1 selection sees every patch a grain touches. Its
triangles are there as owned or ghost rows: the patch contact system's
interaction range (largest grain radius plus the largest triangle, stretched)
makes the ghost layer wide enough.

``patch_pairs`` rows: ``gid_i`` the grain's gid (the anchor), ``triangle``
the triangle's gid, ``i`` the grain's row, ``t`` the triangle's row in
``membrane_triangles``; ``gid`` the pair id of (grain gid, triangle gid), unique
(``neighbor_kernels.pair_ids``, as the ``pairs`` table's).
Rows are grouped by grain. Every other field (the law's tangential history,
one spring per touching patch) is carried over by (grain, triangle) at each
rebuild (systems.contact.table), so it survives rebuilds, migration and
restart. The list is rebuilt under the particles' half-skin rule, which
counts the motion of the membrane vertices too.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo, Table

from ecs_dem.systems.neighbors import kernels as nk
from ecs_dem.systems.contact.table import ScratchArrays, rebuild_contact_table
from ecs_dem.systems.membrane.patch_geometry import grain_offset

PATCH_PAIR_FIELDS = (
    Field("gid_i", np.int64, (), Halo.FORWARD, -1, "", "gid of the grain (the anchor)"),
    Field("triangle", np.int64, (), Halo.FORWARD, -1, "", "gid of the triangle"),
    Field("i", np.int32, (), Halo.LOCAL, -1, "", "local row of the grain"),
    Field("t", np.int32, (), Halo.LOCAL, -1, "", "local row of the triangle (owned or ghost)"),
)
IDENTITY = ("gid", "gid_i", "triangle", "i", "t")
PATCH_MODEL = 0  # components.membranes.CONTACT_MODELS["patch"]


def patch_pair_table(world) -> Table:
    """The world's ``patch_pairs`` table, created on first use."""
    if "patch_pairs" not in world.tables:
        world.add_table(Table("patch_pairs", PATCH_PAIR_FIELDS, capacity=256,
                              anchor=("particles", "gid_i"), references={"i": "gid_i"}))
    return world.tables["patch_pairs"]


@kernel
def patch_candidates(grains, position, radius, vertex_position, tri_rows, use, skin, lo, inv_cell,
                     dims, start, members, out_grain, out_tri):
    """Candidate (grain, triangle) pairs (module docstring); returns how many there are.

    grains: rows of the grains to search, binned in the grid (lo, inv_cell, dims) with
    ``neighbor_kernels.bin_rows`` (start, members: indices into grains); tri_rows (m, 3)
    vertex rows of ``vertex_position`` (a membrane's: the grains' ``position``; a mesh
    wall's: ``mesh_vertices``); use[t] False skips a triangle. Writes up to out_grain.size pairs (indices
    into grains and triangles); the caller grows the arrays and calls again when the count
    is larger.
    """
    r_max = 0.0
    for k in range(grains.size):
        r_max = max(r_max, radius[grains[k]])
    cap = out_grain.size
    count = 0
    reach = r_max + skin
    first = np.empty(3, dtype=np.int64)
    last = np.empty(3, dtype=np.int64)
    for t in range(tri_rows.shape[0]):
        if not use[t]:
            continue
        a = tri_rows[t, 0]
        b = tri_rows[t, 1]
        c = tri_rows[t, 2]
        empty = False
        for ax in range(3):
            low = min(vertex_position[a, ax], vertex_position[b, ax],
                      vertex_position[c, ax]) - reach
            high = max(vertex_position[a, ax], vertex_position[b, ax],
                       vertex_position[c, ax]) + reach
            first[ax] = max(int(np.floor((low - lo[ax]) * inv_cell[ax])), 0)
            last[ax] = min(int(np.floor((high - lo[ax]) * inv_cell[ax])), dims[ax] - 1)
            if first[ax] > last[ax]:
                empty = True
        if empty:
            continue
        for cz in range(first[2], last[2] + 1):
            for cy in range(first[1], last[1] + 1):
                for cx in range(first[0], last[0] + 1):
                    cell = (cz * dims[1] + cy) * dims[0] + cx
                    for s in range(start[cell], start[cell + 1]):
                        k = members[s]
                        g = grains[k]
                        dx, dy, dz, _, _, _, _ = grain_offset(position, g, vertex_position,
                                                              a, b, c, 0.0)
                        cut = radius[g] + skin
                        if dx * dx + dy * dy + dz * dz < cut * cut:
                            if count < cap:
                                out_grain[count] = k
                                out_tri[count] = t
                            count += 1
    return count


def build_triangle_pairs(pairs, identity, grains, position, radius, vertex_position, tri_rows,
                         use, tri_gid, grain_gid, skin, scratch: ScratchArrays) -> None:
    """Rebuild a grain-triangle contact table (``patch_pairs``, ``mesh_pairs``): the candidates
    of ``patch_candidates`` for the owned grain rows `grains`, grouped by grain, then by
    triangle gid, with their pair ids; per-contact data carried over by (grain gid, triangle
    gid) (``rebuild_contact_table``). `tri_gid`: the triangles' gids (owned and ghost rows),
    `grain_gid`: the particles' (owned rows)."""
    count = 0
    cap = max(pairs.n_owned + pairs.n_owned // 4, 4 * grains.size + 64)
    kg = scratch.get("grain", cap, np.int64)
    kt = scratch.get("tri", cap, np.int64)
    if grains.size and np.any(use):
        x = position[grains]
        lo, inv_cell, dims = nk.cell_grid(x, radius[grains], grains.size, skin)
        start, members, _ = nk.bin_rows(x, grains.size, lo, inv_cell, dims)
        while True:
            count = patch_candidates(grains, position, radius, vertex_position, tri_rows, use,
                                     skin, lo, inv_cell, dims, start, members, kg, kt)
            if count <= kg.size:
                break
            kg = scratch.get("grain", int(1.2 * count) + 64, np.int64)
            kt = scratch.get("tri", int(1.2 * count) + 64, np.int64)
    g_rows = grains[kg[:count]]
    t_rows = kt[:count]
    t_gid = tri_gid[t_rows]
    order = np.lexsort((t_gid, g_rows))  # grouped by grain, then by triangle gid
    g_rows, t_rows, t_gid = g_rows[order], t_rows[order], t_gid[order]
    g_gid = grain_gid[g_rows]
    ids = np.empty(g_rows.size, dtype=np.int64)
    nk.pair_ids(g_gid, t_gid, ids)
    values = dict(i=g_rows.astype(np.int32), t=t_rows.astype(np.int32), gid_i=g_gid,
                  triangle=t_gid, gid=ids)
    rebuild_contact_table(pairs, identity, "gid_i", "triangle", values, scratch)


class PatchSearch(System):
    """Build ``patch_pairs``: candidate grain-triangle contacts of owned grains (module docstring).

    Grains are the particles that belong to no membrane; triangles those of
    membranes with the patch contact model.
    """

    stage = Stage.NEIGHBORS
    reads_ghosts = {"particles": ("position", "radius", "gid", "membrane"),
                    "membrane_triangles": ("vertices", "membrane")}
    reads = {"membranes": ("contact_model",)}
    builds = ("patch_pairs",)

    def __init__(self):
        self._scratch = ScratchArrays()
        self.builds_done = 0

    def setup(self, world) -> None:
        patch_pair_table(world)

    def run(self, world) -> None:
        p = world.particles
        tri = world.membrane_triangles
        pairs = patch_pair_table(world)
        grains = np.flatnonzero(p.membrane < 0).astype(np.int64)
        rows = tri.with_ghosts("rows")
        model = world.membranes.contact_model[tri.with_ghosts("membrane")]
        use = (model == PATCH_MODEL) & np.all(rows >= 0, axis=1)
        build_triangle_pairs(pairs, IDENTITY, grains, p.with_ghosts("position"),
                             p.with_ghosts("radius"), p.with_ghosts("position"), rows, use,
                             tri.with_ghosts("gid"), p.gid, world.skin, self._scratch)
        self.builds_done += 1


__all__ = ["PatchSearch", "patch_pair_table", "patch_candidates", "build_triangle_pairs"]
