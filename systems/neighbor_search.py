"""Linked cells + Verlet pair list with a skin, and the ``pairs`` table.

The ``pairs`` table holds one row per candidate pair (closer than
r_i + r_j + skin at the last rebuild): the particles' gids ``gid_i < gid_j``,
their local rows ``i``, ``j`` (kept current by the engine on owned and ghost
pair rows: ``Table(references=...)``, ``ecs_dem.references``) and a unique
``gid``, the pair id (``pair_id``), the same on every rank. Rows are anchored
to particle gid_i: they migrate with it, and travel as ghost rows where it
does when a system reads pair ghosts (``World.incident_rows`` lists the
pairs of every particle row).

Any other pair field is per-contact data (contact history of a law,
per-contact state of any dtype and row shape that a system declares with
``pairs.add_field``). At every rebuild the list is built anew and every such
field is carried over from the old pair with the same gids, so it survives
rebuilds, re-sorting, migration and restart, whatever the row order. New
pairs, and pairs absent from the old list, get the field's default: they
were farther apart than the skin, hence not touching.

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
    Field("i", np.int32, (), Halo.LOCAL, -1, "", "local row of particle gid_i"),
    Field("j", np.int32, (), Halo.LOCAL, -1, "", "local row of particle gid_j (nearest image)"),
    Field("gid_i", np.int64, (), Halo.FORWARD, -1, "", "lower gid of the pair (the anchor)"),
    Field("gid_j", np.int64, (), Halo.FORWARD, -1, "", "higher gid of the pair"),
)
#: fields that identify a pair; every other pair field is carried across rebuilds
IDENTITY = ("gid", "i", "j", "gid_i", "gid_j")


def pair_id(gid_i, gid_j):
    """Unique id of the pair gid_i < gid_j: gid_j (gid_j - 1) / 2 + gid_i (any rank computes it)."""
    gid_i = np.asarray(gid_i, dtype=np.int64)
    gid_j = np.asarray(gid_j, dtype=np.int64)
    return gid_j * (gid_j - 1) // 2 + gid_i


def pair_table(world) -> Table:
    """The world's ``pairs`` table, created on first use."""
    if "pairs" not in world.tables:
        world.add_table(Table("pairs", PAIR_FIELDS, capacity=1024, anchor=("particles", "gid_i"),
                              references={"i": "gid_i", "j": "gid_j"}))
    return world.tables["pairs"]


def carried_fields(pairs: Table) -> list[str]:
    """The per-contact fields of the pairs table (everything but the pair's identity)."""
    return [f for f in pairs.fields if f not in IDENTITY]


def _differs_from_default(pairs: Table, names, flags: np.ndarray) -> None:
    """flags[k] = 1 where some field of old pair k differs from its default."""
    m = pairs.n_owned
    for f in names:
        d = pairs.fields[f]
        col = pairs.owned(f).reshape(m, -1)
        if d.np_dtype == np.float64 and d.default == 0:
            mark_nonzero(col, flags)
        elif m:
            flags |= np.any(col != np.asarray(d.default, dtype=d.np_dtype), axis=1)


class NeighborSearch(System):
    """Build the half pair list of particles over owned and ghost rows.

    Cells are at least as wide as the largest contact distance plus the skin
    (2 r_max + skin), so a cell and its 13 forward neighbours hold every
    candidate once (``neighbor_kernels.build_pairs_half_stencil``). The new
    list and its carried-over history are built in scratch arrays kept
    between rebuilds, then copied into the ``pairs`` table.
    """

    stage = Stage.NEIGHBORS
    reads_ghosts = {"particles": ("position", "radius", "gid", "fixed", "contact_group")}
    builds = ("pairs",)

    def __init__(self):
        self.built_epoch = -1
        self.builds_done = 0
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
        group = particles.with_ghosts("contact_group")
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
                count = nk.build_pairs_half_stencil(pos, radius, gid, fixed, group, n_owned, skin, start,
                                                    rows, dims, pi, pj, gi, gj)
                if count <= pi.size:
                    break
                cap = int(count * 1.2) + 64

        # per-contact data of the old list (still in the table), carried over by gid pair
        carried = carried_fields(pairs)
        values = {}
        if count:
            values = dict(i=pi[:count], j=pj[:count], gid_i=gi[:count], gid_j=gj[:count],
                          gid=pair_id(gi[:count], gj[:count]))
            if carried:
                m = pairs.n_owned
                src = self._array("src", count, np.int64)[:count]
                if m:
                    keep = self._array("keep", m, np.uint8)[:m]  # old pairs with some data
                    keep[:] = 0
                    _differs_from_default(pairs, carried, keep)
                    max_gid = int(max(pairs.gid_i.max(), gi[:count].max()))
                    nk.match_history(pairs.gid_i, pairs.gid_j, keep, gi[:count], gj[:count],
                                     max_gid, src)
                else:
                    src[:] = -1
                for f in carried:
                    values[f] = self._carry(pairs, f, src, count, m)
        pairs.permute(np.empty(0, dtype=np.int64))  # empty, keep columns
        pairs.append(count, **values)
        self.built_epoch = particles.epoch
        self.builds_done += 1

    def _carry(self, pairs, name, src, count, m):
        """Values of field `name` for the new pairs: the old pair's where src >= 0, else default."""
        d = pairs.fields[name]
        if d.np_dtype == np.float64 and d.default == 0:
            width = max(int(np.prod(d.shape)), 1)
            new = self._array(f"h:{name}", count, np.float64, width)[:count]
            nk.take_rows(src, pairs.owned(name).reshape(m, width), new)
            return new.reshape((count,) + d.shape)
        new = np.full((count,) + d.shape, d.default, dtype=d.np_dtype)
        found = src >= 0
        new[found] = pairs.owned(name)[src[found]]
        return new
