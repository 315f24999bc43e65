"""Linked cells + Verlet pair list with a skin, and the ``pairs`` table.

The ``pairs`` table holds one row per candidate pair (closer than
r_i + r_j + skin at the last rebuild): the particles' gids ``gid_i < gid_j``,
their local rows ``i``, ``j`` (kept current by the engine on owned and ghost
pair rows: ``Table(references=...)``, ``ecs_dem.references``) and a unique
``gid``, the pair id of (gid_i, gid_j) (``neighbor_kernels.pair_ids``), the same on
every rank. Rows are anchored to particle gid_i: they migrate
with it, and travel as ghost rows where it does when a system reads pair
ghosts (``World.incident_rows`` lists the pairs of every particle row).

Any other pair field is per-contact data (contact history of a law,
per-contact state of any dtype and row shape that a system declares with
``pairs.add_field``). At every rebuild the list is built anew and every such
field is carried over from the old pair with the same gids, so it survives
rebuilds, re-sorting, migration and restart, whatever the row order. New
pairs, and pairs absent from the old list, get the field's default: they
were farther apart than the skin, hence not touching.

A contact system whose law acts beyond contact (a liquid bridge) declares
its ``pair_reach`` (m, the law's reach): the list then holds the pairs
closer than r_i + r_j + reach + skin.

The list is rebuilt only when the domain rebuilt (some particle moved more
than half the skin), which keeps every touching pair in it in between.

Mirrors (``pair_mirrors``, created by a contact system that evaluates pairs
across a rank boundary on both sides, LAMMPS's ``newton off``): the pairs
the rule leaves to another rank, of an owned particle and a lower-gid ghost
that is a copy of another rank's particle. Same fields as ``pairs``, rows
anchored to the *owned* particle gid_j, so a mirror's per-contact data
migrates with it, and carried over from the old mirrors like the pairs'.
A pair stays where its lower-gid particle goes; the one case this misses,
a migration that puts its two particles on different ranks, is covered
before rows migrate (``before_rebuild``, which sees each row's
destination): every pair with data that the migration splits and whose
higher-gid particle is this rank's own gets a mirror copy, anchored to that
particle, which carries it to its new rank.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo, Table

from ecs_dem.systems.neighbors import kernels as nk
from ecs_dem.systems.contact.table import KeptRows, ScratchArrays, carry_into, rows_with_data

PAIR_FIELDS = (
    Field("i", np.int32, (), Halo.LOCAL, -1, "", "local row of particle gid_i"),
    Field("j", np.int32, (), Halo.LOCAL, -1, "", "local row of particle gid_j (nearest image)"),
    Field("gid_i", np.int64, (), Halo.FORWARD, -1, "", "lower gid of the pair (the anchor)"),
    Field("gid_j", np.int64, (), Halo.FORWARD, -1, "", "higher gid of the pair"),
)
#: fields that identify a pair; every other pair field is carried across rebuilds
IDENTITY = ("gid", "i", "j", "gid_i", "gid_j")


def pair_table(world) -> Table:
    """The world's ``pairs`` table, created on first use."""
    if "pairs" not in world.tables:
        world.add_table(Table("pairs", PAIR_FIELDS, capacity=1024, anchor=("particles", "gid_i"),
                              references={"i": "gid_i", "j": "gid_j"}))
    return world.tables["pairs"]


def mirror_table(world) -> Table:
    """The world's ``pair_mirrors`` table (module docstring), created on first use: the
    neighbour search fills it once it exists."""
    if "pair_mirrors" not in world.tables:
        world.add_table(Table("pair_mirrors", PAIR_FIELDS, capacity=1024,
                              anchor=("particles", "gid_j"),
                              references={"i": "gid_i", "j": "gid_j"}))
    return world.tables["pair_mirrors"]


class NeighborSearch(System):
    """Build the half pair list of particles over owned and ghost rows.

    Cells are at least as wide as the largest contact distance plus the skin
    (2 r_max + skin), so a cell and its 13 forward neighbours hold every
    candidate once (``neighbor_kernels.build_pairs_half_stencil``). The new
    list is written straight into the ``pairs`` (and ``pair_mirrors``) table,
    after the rows with history were taken aside, and the history is carried
    over from those (``contact_table``).
    """

    stage = Stage.NEIGHBORS
    reads_ghosts = {"particles": ("position", "radius", "gid", "fixed", "contact_group")}
    builds = ("pairs",)

    def __init__(self):
        self.built_epoch = -1
        self.builds_done = 0
        self._scratch = ScratchArrays()

    def interaction_range(self, world) -> float:
        r = world.particles.radius
        return 2.0 * float(r.max()) if r.size else 0.0

    def setup(self, world) -> None:
        pair_table(world)

    def declare(self, world) -> None:
        if "pair_mirrors" in world.tables:  # a contact system with newton off made it
            self.builds = ("pairs", "pair_mirrors")

    def before_rebuild(self, world) -> None:
        """Mirror copies of the pairs with data that migration splits and whose gid_j is this
        rank's own (module docstring)."""
        mirrors, pairs = world.tables.get("pair_mirrors"), world.tables.get("pairs")
        if mirrors is None or pairs is None or pairs.n_owned == 0 or world.comm.size == 1:
            return
        if world.is_setup:  # else every rank holds every row (set-up, restart on other ranks)
            # the data test is the costly one: only on the pairs that migration splits
            destination = world.domain.destinations(world.particles)
            out = self._scratch.get("split_pairs", pairs.n_owned, np.int64)
            count = nk.split_pairs(pairs.owned("i"), pairs.owned("j"), destination, out)
            rows = rows_with_data(pairs, IDENTITY, out[:count])
        else:
            rows = rows_with_data(pairs, IDENTITY)
        if rows.size:
            mirrors.append(rows.size, **{f: pairs.owned(f)[rows] for f in mirrors.fields
                                         if pairs.has_field(f)})

    def _mirror_scratch(self) -> tuple:
        """Empty arrays of the mirror lists' types, for a build that finds no mirrors."""
        return (self._scratch.get("mi", 0, np.int32)[:0], self._scratch.get("mj", 0, np.int32)[:0],
                self._scratch.get("mgi", 0, np.int64)[:0], self._scratch.get("mgj", 0, np.int64)[:0])

    @staticmethod
    def _lists(table: Table, cap: int) -> tuple:
        """Room for `cap` new rows of `table`, written in place: its (i, j, gid_i, gid_j) columns."""
        table.reserve_rewrite(cap)
        return tuple(table.column(f)[:cap] for f in ("i", "j", "gid_i", "gid_j"))

    def run(self, world) -> None:
        particles = world.particles
        pairs = pair_table(world)
        mirrors = world.tables.get("pair_mirrors")
        n = particles.n
        n_owned = particles.n_owned
        pos = particles.with_ghosts("position")
        radius = particles.with_ghosts("radius")
        gid = particles.with_ghosts("gid")
        fixed = particles.with_ghosts("fixed")
        group = particles.with_ghosts("contact_group")
        skin = world.skin
        reach = max((float(getattr(s, "pair_reach", 0.0)) for s in world.systems), default=0.0)
        if reach > 0.0:  # a contact law acts beyond contact: list pairs that much farther apart
            skin = skin + reach
        # on one rank every ghost is a periodic image of an own row: never a mirror
        find_mirrors = mirrors is not None and world.comm.size > 1
        tables = [pairs] + ([mirrors] if mirrors is not None else [])
        kept = [KeptRows(t, IDENTITY, "gid_i", "gid_j") for t in tables]  # before overwriting
        if find_mirrors:
            own = world.domain.own_images(particles)
            mcap = max(mirrors.n_owned + mirrors.n_owned // 4, (n - n_owned) * 4 + 64)
        else:
            own = np.ones(0, dtype=np.uint8)
            mcap = 0
        cap = max(pairs.n_owned + pairs.n_owned // 4, 8 * n_owned + 64)
        out = self._lists(pairs, cap)
        mout = self._lists(mirrors, mcap) if find_mirrors else self._mirror_scratch()
        count = mcount = 0
        if n:
            lo, inv_cell, dims = nk.cell_grid(pos, radius, n, skin)
            start, rows, _ = nk.bin_rows(pos, n, lo, inv_cell, dims)
            while True:
                count, mcount = nk.build_pairs_half_stencil(
                    pos, radius, gid, fixed, group, n_owned, skin, start, rows, dims, *out,
                    find_mirrors, own, *mout)
                if count <= out[0].size and mcount <= mout[0].size:
                    break
                out = self._lists(pairs, int(count * 1.2) + 64)
                if find_mirrors:
                    mout = self._lists(mirrors, int(mcount * 1.2) + 64)
        if mirrors is not None and not find_mirrors:
            mirrors.reserve_rewrite(0)
        for table, rows_kept, k in zip(tables, kept, (count, mcount)):
            nk.pair_ids(table.column("gid_i")[:k], table.column("gid_j")[:k],
                        table.column("gid")[:k])
            carry_into(table, IDENTITY, rows_kept, "gid_i", "gid_j", k, self._scratch)
            table.commit_rewrite(k)
        self.built_epoch = particles.epoch
        self.builds_done += 1
