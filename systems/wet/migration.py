"""Liquid migration: liquid moves from the films into bridges at contact and back at rupture.

Two systems, in this order before the wet contact system (``liquid_migration(contacts)``
returns them), for a ``ContactForces`` whose law migrates liquid
(``LiquidMigrationWillet``, ``LiquidMigrationLS``: ``systems.wet.laws``):

1. ``BridgeStarts`` counts, per owned particle, the bridges it starts this
   step: its pairs that overlap (r_i + r_j > |x_i - x_j|), have no bridge and
   carry liquid (film_i + film_j > 0);
2. ``LiquidMigration``, with those counts on ghost rows too (the scheduler
   forwards ``bridges_starting`` in between):

   * formation: each particle gives each bridge it starts
     c_i = min(film_i / n_i, V_max / 2) (film_i its film at the start of the
     step, n_i its count), so a particle never gives more than it has,
     whatever the order of its pairs; the bridge forms with V = c_i + c_j
     when V > 0 and V >= V_min (a dry particle gives nothing: one wet particle
     suffices), else nothing moves;
   * rupture: a bridge of volume V whose separation reached its rupture
     distance (1 + theta/2) V^(1/3) returns V/2 to each particle's film
     (the rule of equal halves), and its volume becomes 0.

Which rank evaluates a pair across ranks: with the contact system's default
``newton=False`` both ranks hold the pair (``pairs`` on the rank of the lower
gid, ``pair_mirrors`` on the other), see the same positions, films and
counts (FORWARD fields), so both take the same decisions and store the same
bridge volume; each changes the film of its own particle only (the pair's
``Domain.home_rows``; a periodic image of an own row gets its share directly).
So each bridge is counted once (in ``pairs``) and each film change happens
once, on the owner, without a reverse message; the result does not depend
on the order of the pairs, hence not on the rank count (beyond round-off of
the sums).

Walls (``liquid_migration(contacts, walls)``, a ``WallContacts`` with the same
law): walls hold no film. A particle touching a wall starts a bridge like a
pair (it counts among the particle's starts) and gives it
min(film_i / n_i, V_max / 2); at rupture half the bridge returns to the
particle's film and half is lost (``liquid_lost``, the balance's
``lost_at_walls``). The owner of the particle evaluates its wall bridges.

Nothing moves in the set-up force pass (``World.setup``): a restart then
continues bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System

from ecs_dem.components.wet import liquid_fields
from ecs_dem.systems.contact.law import rigid_material
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.walls.contacts import WallContacts
from ecs_dem.systems.wet.capillary import bridge_holds

READS = ("position", "radius", "species", "liquid_film")


@kernel
def count_starts(pair_i, pair_j, position, radius, film, bridge, home, starts):
    """starts[home] += 1 for both particles of every pair that starts a bridge (module
    docstring)."""
    for k in range(pair_i.size):
        if bridge[k, 0] != 0.0:
            continue
        i = pair_i[k]
        j = pair_j[k]
        dx = position[i, 0] - position[j, 0]
        dy = position[i, 1] - position[j, 1]
        dz = position[i, 2] - position[j, 2]
        rsum = radius[i] + radius[j]
        if rsum * rsum > dx * dx + dy * dy + dz * dz and film[i] + film[j] > 0.0:
            if home[i] >= 0:
                starts[home[i]] += 1
            if home[j] >= 0:
                starts[home[j]] += 1


@kernel
def migrate(pair_i, pair_j, position, radius, material, film0, starts, home, params, q_rupture,
            q_vmin, q_vmax, bridge, film):
    """Formation and rupture of the bridges of one pair list (module docstring); film0: the
    films at the start of the step (owned and ghost rows), film: the owned films, changed.
    Returns (bridges formed, bridges ruptured)."""
    formed = 0
    ruptured = 0
    for k in range(pair_i.size):
        i = pair_i[k]
        j = pair_j[k]
        dx = position[i, 0] - position[j, 0]
        dy = position[i, 1] - position[j, 1]
        dz = position[i, 2] - position[j, 2]
        rsq = dx * dx + dy * dy + dz * dz
        rsum = radius[i] + radius[j]
        a = material[i]
        b = material[j]
        v = bridge[k, 0]
        if v > 0.0:
            if not bridge_holds(-(rsum - math.sqrt(rsq)), v, params[a, b, q_rupture]):
                half = 0.5 * v
                if home[i] >= 0:
                    film[home[i]] += half
                if home[j] >= 0:
                    film[home[j]] += half
                bridge[k, 0] = 0.0
                ruptured += 1
        elif rsum * rsum > rsq and film0[i] + film0[j] > 0.0:
            cap = 0.5 * params[a, b, q_vmax]
            ci = min(max(film0[i], 0.0) / starts[i], cap) if starts[i] > 0 else 0.0
            cj = min(max(film0[j], 0.0) / starts[j], cap) if starts[j] > 0 else 0.0
            volume = ci + cj
            if volume > 0.0 and volume >= params[a, b, q_vmin]:
                bridge[k, 0] = volume
                if home[i] >= 0:
                    film[home[i]] -= ci
                if home[j] >= 0:
                    film[home[j]] -= cj
                formed += 1
    return formed, ruptured


@kernel
def count_wall_starts(position, radius, film, bridge, point, normal, starts):
    """starts[i] += 1 for every wall owned particle i touches without a bridge, with liquid."""
    for i in range(starts.size):
        if film[i] <= 0.0:
            continue
        for w in range(point.shape[0]):
            h = ((position[i, 0] - point[w, 0]) * normal[w, 0]
                 + (position[i, 1] - point[w, 1]) * normal[w, 1]
                 + (position[i, 2] - point[w, 2]) * normal[w, 2])
            if bridge[i, w, 0] == 0.0 and radius[i] - h > 0.0:
                starts[i] += 1


@kernel
def migrate_walls(position, radius, material, film0, starts, point, normal, wall_material,
                  params, q_rupture, q_vmin, q_vmax, bridge, film, lost):
    """Formation and rupture of the owned particles' wall bridges (module docstring).
    Returns (bridges formed, bridges ruptured)."""
    formed = 0
    ruptured = 0
    for i in range(film.size):
        b = material[i]
        for w in range(point.shape[0]):
            a = wall_material[w]
            h = ((position[i, 0] - point[w, 0]) * normal[w, 0]
                 + (position[i, 1] - point[w, 1]) * normal[w, 1]
                 + (position[i, 2] - point[w, 2]) * normal[w, 2])
            v = bridge[i, w, 0]
            if v > 0.0:
                if not bridge_holds(-(radius[i] - h), v, params[a, b, q_rupture]):
                    half = 0.5 * v
                    film[i] += half
                    lost[i] += v - half
                    bridge[i, w, 0] = 0.0
                    ruptured += 1
            elif radius[i] - h > 0.0 and film0[i] > 0.0 and starts[i] > 0:
                volume = min(film0[i] / starts[i], 0.5 * params[a, b, q_vmax])
                if volume > 0.0 and volume >= params[a, b, q_vmin]:
                    bridge[i, w, 0] = volume
                    film[i] -= volume
                    formed += 1
    return formed, ruptured


def _pair_lists(contacts, world) -> list:
    """The pair tables the contact system evaluates (pairs, and mirrors without newton)."""
    lists = [world.pairs]
    if not contacts.newton and "pair_mirrors" in world.tables:
        lists.append(world.tables["pair_mirrors"])
    return lists


def _check_contacts(contacts, who: str) -> None:
    if not isinstance(contacts, ContactForces) or not getattr(contacts.law, "migrating", False):
        raise InputError(f"{who}: give it the ContactForces system of a migrating wet law "
                         "(LiquidMigrationWillet or LiquidMigrationLS)")
    if contacts.newton:
        raise InputError(f"{who}: the wet contact system must use newton=False (its default "
                         "without a model): both ranks of a pair then take the same decision")


class _MigrationSystem(System):
    """What both migration systems share: their contact systems, checked."""

    stage = Stage.FORCES

    def __init__(self, contacts, walls=None):
        _check_contacts(contacts, type(self).__name__)
        _check_walls(walls, contacts, type(self).__name__)
        self.contacts = contacts
        self.walls = walls


class BridgeStarts(_MigrationSystem):
    """Per owned particle, the bridges it starts this step (module docstring, step 1)."""

    def __init__(self, contacts, walls=None):
        super().__init__(contacts, walls)
        self.reads_ghosts = {"particles": ("position", "radius", "liquid_film")}
        self.reads = {"pairs": ("i", "j", "bridge_volume")}
        if walls is not None:
            self.reads = {**self.reads, "particles": ("wall_bridge_volume",),
                          "walls": ("point", "normal")}
        self.writes = {"particles": ("bridges_starting",)}

    def setup(self, world) -> None:
        liquid_fields(world)

    def declare(self, world) -> None:
        if not self.contacts.newton:
            self.reads = {**self.reads, "pair_mirrors": ("i", "j", "bridge_volume")}

    def run(self, world) -> None:
        p = world.particles
        starts = p.owned("bridges_starting")
        starts[:] = 0
        if world.setup_phase:
            return
        home = world.domain.home_rows(p)
        arrays = [p.with_ghosts(f) for f in ("position", "radius", "liquid_film")]
        for table in _pair_lists(self.contacts, world):
            n = table.n_owned
            count_starts(table.owned("i"), table.owned("j"), *arrays,
                         table.column("bridge_volume")[:n], home, starts)
        if self.walls is not None and self.walls.n_objects:
            w = world.walls
            count_wall_starts(p.owned("position"), p.owned("radius"), p.owned("liquid_film"),
                              p.owned("wall_bridge_volume"), w.point, w.normal, starts)


class LiquidMigration(_MigrationSystem):
    """Formation and rupture of bridges, liquid moved between films and bridges (module
    docstring, step 2). ``formed``, ``ruptured``: bridges formed and ruptured on this rank's
    pair lists since set-up (a pair across ranks counts on both)."""

    def __init__(self, contacts, walls=None):
        super().__init__(contacts, walls)
        self.reads_ghosts = {"particles": READS + ("bridges_starting",)}
        self.reads = {"pairs": ("i", "j")}
        self.writes = {"particles": ("liquid_film",), "pairs": ("bridge_volume",)}
        if walls is not None:
            self.reads = {**self.reads, "walls": ("point", "normal", "species")}
            self.writes = {**self.writes,
                           "particles": ("liquid_film", "liquid_lost", "wall_bridge_volume")}
        self.formed = 0
        self.ruptured = 0
        self._film0 = np.zeros(0)

    def setup(self, world) -> None:
        liquid_fields(world)
        systems = world.systems
        if (self not in systems or self.contacts not in systems
                or systems.index(self.contacts) < systems.index(self)):
            raise InputError("LiquidMigration: add it (after its BridgeStarts) before its wet "
                             "contact system; liquid_migration(contacts) gives both in order")

    def declare(self, world) -> None:
        if not self.contacts.newton:
            self.reads = {**self.reads, "pair_mirrors": ("i", "j")}
            self.writes = {**self.writes, "pair_mirrors": ("bridge_volume",)}

    def run(self, world) -> None:
        if world.setup_phase:
            return
        p = world.particles
        bound = self.contacts._binding.current(world)
        names = bound.function.parameters
        q = [names.index(n) for n in ("rupture_cubed", "min_bridge_volume", "max_bridge_volume")]
        film_all = p.with_ghosts("liquid_film")
        if self._film0.size < film_all.size:
            self._film0 = np.zeros(int(film_all.size * 1.25) + 16)
        film0 = self._film0[:film_all.size]
        film0[:] = film_all
        home = world.domain.home_rows(p)
        arrays = [p.with_ghosts(f) for f in ("position", "radius", "species")]
        starts = p.with_ghosts("bridges_starting")
        film = p.owned("liquid_film")
        for table in _pair_lists(self.contacts, world):
            n = table.n_owned
            formed, ruptured = migrate(table.owned("i"), table.owned("j"), *arrays, film0, starts,
                                       home, bound.parameters, *q,
                                       table.column("bridge_volume")[:n], film)
            self.formed += formed
            self.ruptured += ruptured
        if self.walls is not None and self.walls.n_objects:
            w = world.walls
            material = np.where(w.species >= 0, w.species, rigid_material(
                world.tables.get("species"))).astype(np.int64)
            formed, ruptured = migrate_walls(
                p.owned("position"), p.owned("radius"), p.owned("species"), film0, starts,
                w.point, w.normal, material, bound.parameters, *q,
                p.owned("wall_bridge_volume"), film, p.owned("liquid_lost"))
            self.formed += formed
            self.ruptured += ruptured


def _check_walls(walls, contacts, who: str) -> None:
    if walls is not None and (not isinstance(walls, WallContacts) or walls.law is not contacts.law):
        raise InputError(f"{who}: walls must be the WallContacts system of the same wet law "
                         "object as the particle contacts")


def liquid_migration(contacts, walls=None) -> tuple:
    """The migration systems of a wet contact system (and its WallContacts, if the walls hold
    bridges too), in order: add them before the contact systems."""
    return BridgeStarts(contacts, walls), LiquidMigration(contacts, walls)


__all__ = ["BridgeStarts", "LiquidMigration", "liquid_migration", "count_starts", "migrate",
           "count_wall_starts", "migrate_walls"]
