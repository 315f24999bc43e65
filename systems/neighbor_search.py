"""Linked cells + Verlet pair list with a skin, and the ``pairs`` table.

The ``pairs`` table holds one row per candidate pair (closer than
r_i + r_j + skin at the last rebuild): local rows ``i``, ``j`` and their gids
``gid_i < gid_j``. Contact systems add their per-pair history fields to it
(``tangential_spring`` and so on). At every rebuild the list is built anew and
every history field is carried over from the old pair with the same gids, so
history survives rebuilds, re-sorting and (with MPI) migration, whatever the
row order. Pairs absent from the new list lose their history: they were
farther apart than the skin, hence not touching.

The list is rebuilt only when the domain rebuilt (some particle moved more
than half the skin), which keeps every touching pair in it in between.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo, Table

from . import neighbor_kernels as nk

PAIR_FIELDS = (
    Field("i", np.int32, (), Halo.LOCAL, -1, "", "local row of the lower-gid particle"),
    Field("j", np.int32, (), Halo.LOCAL, -1, "", "local row of the higher-gid particle"),
    Field("gid_j", np.int64, (), Halo.FORWARD, -1, "", "gid of particle j (the pair's gid field is gid_i)"),
)


def pair_table(world) -> Table:
    """The world's ``pairs`` table, created on first use.

    Its ``gid`` column holds gid_i: a pair is identified by (gid, gid_j).
    """
    if "pairs" not in world.tables:
        world.add_table(Table("pairs", PAIR_FIELDS, capacity=1024, anchor=("particles", "gid")))
    return world.tables["pairs"]


class NeighborSearch(System):
    """Build the half pair list of particles over owned and ghost rows.

    Cells are at least as wide as the largest contact distance plus the skin
    (2 r_max + skin), so the 27 surrounding cells hold every candidate.
    """

    stage = Stage.NEIGHBORS
    reads_ghosts = {"particles": ("position", "radius", "gid", "fixed")}

    def __init__(self):
        self.built_epoch = -1
        self.builds = 0

    def interaction_range(self, world) -> float:
        r = world.particles.radius
        return 2.0 * float(r.max()) if r.size else 0.0

    def setup(self, world) -> None:
        pair_table(world)

    def run(self, world) -> None:
        particles = world.particles
        pairs = pair_table(world)
        n = particles.n
        pos = particles.with_ghosts("position")
        radius = particles.with_ghosts("radius")
        gid = particles.with_ghosts("gid")
        fixed = particles.with_ghosts("fixed")
        skin = world.skin

        # history of the old list, keyed by gid pair, before the table is refilled
        history = [f for f, d in pairs.fields.items()
                   if f not in ("i", "j", "gid", "gid_j") and d.np_dtype.kind == "f"]
        old_gi = pairs.gid.copy()
        old_gj = pairs.gid_j.copy()
        old_hist = {f: pairs.owned(f).copy() for f in history}

        if n:
            cell = max(2.0 * float(radius.max()) + skin, 1e-300)
            lo = pos.min(axis=0)
            span = pos.max(axis=0) - lo
            dims = np.maximum(np.floor(span / cell).astype(np.int64), 1)
            while np.prod(dims) > 8 * n + 64:  # very sparse systems: coarser grid
                dims = np.maximum(dims // 2, 1)
            inv_cell = dims / np.maximum(span, 1e-300)
            inv_cell = np.where(span > 0, inv_cell, 0.0)
            start, rows, cell_of = nk.bin_rows(pos, n, lo, inv_cell, dims)
            cap = max(pairs.capacity, 8 * particles.n_owned + 64)
            while True:
                pi = np.empty(cap, dtype=np.int32)
                pj = np.empty(cap, dtype=np.int32)
                count = nk.build_pairs(pos, radius, gid, fixed, particles.n_owned, n, skin,
                                       start, rows, cell_of, dims, pi, pj)
                if count <= cap:
                    break
                cap = int(count * 1.2) + 64
        else:
            count = 0
            pi = pj = np.empty(0, dtype=np.int32)

        pairs.permute(np.empty(0, dtype=np.int64))  # empty, keep columns
        pairs.append(count, i=pi[:count], j=pj[:count], gid=gid[pi[:count]], gid_j=gid[pj[:count]])
        if history and old_gi.size and count:
            keep = np.zeros(old_gi.size, dtype=np.bool_)
            for f in history:
                h = old_hist[f].reshape(old_gi.size, -1)
                keep |= np.any(h != 0.0, axis=1)
            max_gid = int(max(old_gi.max(), gid.max()))
            src = nk.match_old_pairs(old_gi, old_gj, keep, pairs.gid, pairs.gid_j, max_gid)
            found = src >= 0
            for f in history:
                pairs.owned(f)[found] = old_hist[f][src[found]]
        self.built_epoch = particles.epoch
        self.builds += 1
