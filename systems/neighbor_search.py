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
from .contact_chunks import mark_nonzero

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
    (2 r_max + skin), so a cell and its 13 forward neighbours hold every
    candidate once (``neighbor_kernels.build_pairs_half_stencil``). The new
    list and its carried-over history are built in scratch arrays kept
    between rebuilds, then copied into the ``pairs`` table.
    """

    stage = Stage.NEIGHBORS
    reads_ghosts = {"particles": ("position", "radius", "gid", "fixed")}

    def __init__(self):
        self.built_epoch = -1
        self.builds = 0
        self._scratch = {}

    def interaction_range(self, world) -> float:
        r = world.particles.radius
        return 2.0 * float(r.max()) if r.size else 0.0

    def setup(self, world) -> None:
        pair_table(world)

    def _array(self, name, size, dtype, width=None):
        """A scratch array of at least `size` rows, grown geometrically, kept between calls."""
        a = self._scratch.get(name)
        shape = (size,) if width is None else (size, width)
        if a is None or a.shape[0] < size or a.shape[1:] != shape[1:]:
            grown = max(size, int(1.25 * a.shape[0]) if a is not None else size)
            a = np.empty((grown,) + shape[1:], dtype=dtype)
            self._scratch[name] = a
        return a

    def run(self, world) -> None:
        particles = world.particles
        pairs = pair_table(world)
        n = particles.n
        n_owned = particles.n_owned
        pos = particles.with_ghosts("position")
        radius = particles.with_ghosts("radius")
        gid = particles.with_ghosts("gid")
        fixed = particles.with_ghosts("fixed")
        skin = world.skin

        count = 0
        if n:
            cell = max(2.0 * float(radius.max()) + skin, 1e-300)
            lo, hi = nk.bounds(pos, n)
            span = hi - lo
            dims = np.maximum(np.floor(span / cell).astype(np.int64), 1)
            while np.prod(dims) > 8 * n + 64:  # very sparse systems: coarser grid
                dims = np.maximum(dims // 2, 1)
            inv_cell = dims / np.maximum(span, 1e-300)
            inv_cell = np.where(span > 0, inv_cell, 0.0)
            start, rows, _ = nk.bin_rows(pos, n, lo, inv_cell, dims)
            cap = max(pairs.n_owned + pairs.n_owned // 4, 8 * n_owned + 64)
            while True:
                pi = self._array("i", cap, np.int32)
                pj = self._array("j", cap, np.int32)
                gi = self._array("gid_i", cap, np.int64)
                gj = self._array("gid_j", cap, np.int64)
                count = nk.build_pairs_half_stencil(pos, radius, gid, fixed, n_owned, skin, start,
                                                    rows, dims, pi, pj, gi, gj)
                if count <= pi.size:
                    break
                cap = int(count * 1.2) + 64

        # history of the old list (still in the table), carried over by gid pair
        history = [f for f, d in pairs.fields.items()
                   if f not in ("i", "j", "gid", "gid_j") and d.np_dtype.kind == "f"]
        values = {}
        if count:
            values = dict(i=pi[:count], j=pj[:count], gid=gi[:count], gid_j=gj[:count])
            if history:
                m = pairs.n_owned
                src = self._array("src", count, np.int64)[:count]
                if m:
                    # candidates: old pairs with some non-zero history
                    keep = self._array("keep", m, np.uint8)[:m]
                    keep[:] = 0
                    for f in history:
                        mark_nonzero(pairs.owned(f).reshape(m, -1), keep)
                    max_gid = int(max(pairs.gid.max(), gi[:count].max()))
                    nk.match_history(pairs.gid, pairs.gid_j, keep, gi[:count], gj[:count], max_gid,
                                     src)
                else:
                    src[:] = -1
                for f in history:
                    shape = pairs.fields[f].shape
                    width = max(int(np.prod(shape)), 1)
                    new = self._array(f"h:{f}", count, np.float64, width)[:count]
                    nk.take_rows(src, pairs.owned(f).reshape(m, width), new)
                    values[f] = new.reshape((count,) + shape)
        pairs.permute(np.empty(0, dtype=np.int64))  # empty, keep columns
        pairs.append(count, **values)
        self.built_epoch = particles.epoch
        self.builds += 1
