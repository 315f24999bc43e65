"""Small worlds used by the MPI tests, built identically on every rank.

Each builder takes a communicator: the test runs it once with the MPI
communicator (the parallel run) and once with SerialComm (the 1-rank
reference, computed by every rank for itself).
"""
from __future__ import annotations

import numpy as np

from ecs_dem import Box, Field, Halo, Stage, System, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.membrane.springs import SpringForces, add_springs
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

MATERIAL = dict(youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.7, friction=0.5)
R = 1e-3


def _systems(world, *force_systems):
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *force_systems, second):
        world.add_system(s)


def dense_bed(comm, n_side=12, layers=6, periodic_xy=True, balance_every=1000, newton=False):
    """A compressed, frictional bed on a floor under gravity: many lasting contacts.

    Spheres start overlapping by 0.5 % of their diameter on a cubic lattice,
    with random velocities, in a box periodic in x and y. ``newton``: ContactForces
    evaluates each cross-rank pair once and sends the force back (else on both sides).
    """
    rng = np.random.default_rng(7)
    spacing = 1.99 * R
    width = n_side * spacing
    world = World(Box((0, 0, 0), (width, width, 1.3 * layers * spacing), (periodic_xy, periodic_xy, False)),
                  dt=5e-6, skin=0.2 * R, comm=comm, balance_every=balance_every)
    add_species(world, **MATERIAL)
    k = np.arange(n_side * n_side * layers)
    pos = np.stack([k % n_side, (k // n_side) % n_side, k // n_side**2], axis=1) * spacing
    pos = pos + 0.5 * spacing + rng.uniform(-0.01, 0.01, pos.shape) * R
    radius = R * rng.uniform(0.995, 1.005, k.size)
    add_particles(world, pos, radius, 0, velocity=rng.normal(0, 0.05, pos.shape),
                  angular_velocity=rng.normal(0, 20, pos.shape))
    add_wall(world, (0, 0, 0), (0, 0, 1))
    law = HertzMindlinLaw()
    _systems(world, Gravity((0, 0, -9.81)), ContactForces(law, newton=newton), WallContacts(law))
    return world


def periodic_gas(comm, n=400):
    """Frictional, damped spheres in a fully periodic box, no gravity: momentum is conserved."""
    rng = np.random.default_rng(11)
    L = 0.03
    world = World(Box((0, 0, 0), (L, L, L), (True, True, True)), dt=5e-6, skin=0.2 * R, comm=comm)
    add_species(world, **MATERIAL)
    m = int(np.ceil(n ** (1 / 3)))
    k = np.arange(m**3)[:n]
    spacing = L / m
    pos = np.stack([k % m, (k // m) % m, k // m**2], axis=1) * spacing + 0.5 * spacing
    add_particles(world, pos, R * rng.uniform(0.9, 1.1, n), 0, velocity=rng.normal(0, 1.0, (n, 3)),
                  angular_velocity=rng.normal(0, 100, (n, 3)))
    _systems(world, ContactForces(HertzMindlinLaw()))
    return world


def pour(comm, n=600, balance_every=200, gid_stride=1):
    """Spheres thrown down from a loose lattice onto a floor inside four walls: rows migrate.

    `gid_stride` > 1 spreads the gids (k * stride), as a rank of a large run holds
    gids far beyond its row count."""
    rng = np.random.default_rng(3)
    spacing = 2.3 * R
    per = 8
    width = per * spacing
    layers = int(np.ceil(n / per**2))
    k = np.arange(n)
    pos = np.stack([k % per, (k // per) % per, k // per**2], axis=1) * spacing + 0.5 * spacing
    pos[:, 2] += 0.5 * layers * spacing
    world = World(Box((0, 0, 0), (width, width, 2 * layers * spacing)), dt=2e-5, skin=0.2 * R,
                  comm=comm, balance_every=balance_every)
    add_species(world, **MATERIAL)
    velocity = rng.normal(0, 0.05, (n, 3)) + (0.0, 0.0, -0.5)
    add_particles(world, pos, R * rng.uniform(0.85, 1.0, n), 0, velocity=velocity,
                  gid=k * gid_stride if gid_stride > 1 else None)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((width, 0, 0), (-1, 0, 0)),
                          ((0, 0, 0), (0, 1, 0)), ((0, width, 0), (0, -1, 0))):
        add_wall(world, point, normal)
    law = HertzMindlinLaw()
    _systems(world, Gravity((0, 0, -9.81)), ContactForces(law), WallContacts(law))
    return world


def spring_net(comm, n=16):
    """A triangulated n x n net (equilateral, side a) joined by springs, periodic in x and y.

    The net spans the whole box, so springs cross every rank boundary and the
    periodic faces; random initial velocities make it vibrate.
    """
    rng = np.random.default_rng(5)
    a = 2.5 * R
    h = a * np.sqrt(3.0) / 2.0
    L = n * a
    # thin in z, so that the ranks cut the net (along x or y), not the empty space above it
    world = World(Box((0, 0, -L / 8), (L, n * h, L / 8), (True, True, False)), dt=2e-6,
                  skin=0.2 * R, comm=comm)
    add_species(world, **MATERIAL)
    ij = np.arange(n * n)
    i, j = ij % n, ij // n
    pos = np.stack([(i + 0.5 * (j % 2) + 0.25) * a, (j + 0.5) * h, np.zeros(n * n)], axis=1)
    add_particles(world, pos, R, 0, velocity=rng.normal(0, 0.05, pos.shape))
    gid = world.particles.gid.copy()
    right = gid[(i + 1) % n + j * n]
    up = gid[(i + (j % 2)) % n + ((j + 1) % n) * n]
    up_left = gid[(i - 1 + (j % 2)) % n + ((j + 1) % n) * n]
    va = np.concatenate([gid, gid, gid])
    vb = np.concatenate([right, up, up_left])
    # rest lengths as in the periodic lattice (the raw distance would cross the box)
    add_springs(world, va, vb, stiffness=50.0, damping=1e-4, rest_length=np.full(va.size, a))
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), SpringForces(), ContactForces(HertzMindlinLaw()), second):
        world.add_system(s)
    return world


def gather(world, table="particles", fields=("position",)):
    """{gid: tuple of field values} over all ranks (every rank gets the whole map)."""
    t = world.table(table)
    mine = {int(g): tuple(np.array(t.owned(f)[k]) for f in fields) for k, g in enumerate(t.gid)}
    comm = world.comm
    if comm.size == 1:
        return mine
    merged = {}
    for part in comm.world.allgather(mine):
        overlap = set(part) & set(merged)
        assert not overlap, f"gids owned by two ranks: {sorted(overlap)[:5]}"
        merged.update(part)
    return merged


def gather_pairs(world, field="tangential_spring"):
    """{(gid_i, gid_j): history} of touching pairs over all ranks."""
    p = world.pairs
    h = p.owned(field)
    mine = {(int(a), int(b)): h[k].copy() for k, (a, b) in enumerate(zip(p.gid_i, p.gid_j))
            if np.any(h[k] != 0)}
    if world.comm.size == 1:
        return mine
    merged = {}
    for part in world.comm.world.allgather(mine):
        assert not set(part) & set(merged), "a pair is evaluated on two ranks"
        merged.update(part)
    return merged


def owners(world) -> dict:
    """{gid: owning rank} over all ranks."""
    parts = world.comm.world.allgather([int(g) for g in world.particles.gid])
    return {g: r for r, part in enumerate(parts) for g in part}


class ContactAge(System):
    """Per-pair data of several dtypes and row shapes, kept by a user system (MC-DEM-like state).

    For every listed pair, at every force evaluation: ``age`` (int32) counts the consecutive
    evaluations it has been touching (0 when apart); ``first_gap`` (float64, (3,)) is
    x_i - x_j when the contact began; ``code`` (uint8, (2,), default 7) is (1, 2) while touching
    and 7 when apart; ``total`` (float32, (2, 2)) adds the age to its [0, 0] entry. All of it
    must survive rebuilds, sorting, migration and restart (carried by gid pair).
    """

    stage = Stage.FORCES
    reads = {"pairs": ("i", "j")}
    reads_ghosts = {"particles": ("position", "radius")}
    writes = {"pairs": ("age", "first_gap", "code", "total")}
    FIELDS = (Field("age", np.int32, (), Halo.LOCAL, 0),
              Field("first_gap", np.float64, (3,), Halo.LOCAL, 0.0, "m"),
              Field("code", np.uint8, (2,), Halo.LOCAL, 7),
              Field("total", np.float32, (2, 2), Halo.LOCAL, 0.0))

    def setup(self, world):
        for f in self.FIELDS:
            world.pairs.add_field(f)

    def run(self, world):
        p, q = world.particles, world.pairs
        x, r = p.with_ghosts("position"), p.with_ghosts("radius")
        d = x[q.i] - x[q.j]
        touching = np.linalg.norm(d, axis=1) < r[q.i] + r[q.j]
        new = touching & (q.age == 0)
        q.first_gap[new] = d[new]
        q.first_gap[~touching] = 0.0
        q.age[...] = np.where(touching, q.age + 1, 0)
        q.code[...] = np.where(touching[:, None], np.array([1, 2], np.uint8), np.uint8(7))
        q.total[:, 0, 0] = np.where(touching, q.total[:, 0, 0] + q.age.astype(np.float32), 0.0)


def with_contact_age(world):
    """Insert ContactAge after the neighbour search (before the contact forces)."""
    k = next(n for n, s in enumerate(world.systems) if isinstance(s, NeighborSearch))
    world.systems.insert(k + 1, ContactAge())
    return world


def gather_pair_data(world, fields=("age", "first_gap", "code", "total")):
    """{(gid_i, gid_j): tuple of per-pair values} of every listed pair over all ranks."""
    q = world.pairs
    mine = {(int(a), int(b)): tuple(np.array(q.owned(f)[k]) for f in fields)
            for k, (a, b) in enumerate(zip(q.gid_i, q.gid_j))}
    if world.comm.size == 1:
        return mine
    merged = {}
    for part in world.comm.world.allgather(mine):
        assert not set(part) & set(merged), "a pair is listed on two ranks"
        merged.update(part)
    return merged


# counts in REVERSE fields of several dtypes (tests of the reverse reduction)
COUNT_FIELDS = (
    Field("contacts_i32", np.int32, (), Halo.REVERSE, 0, "", "touching partners"),
    Field("partner_gid_sum", np.int64, (), Halo.REVERSE, 0, "", "sum of the partners' gids"),
    Field("half_contacts", np.float32, (), Halo.REVERSE, 0.0, "", "0.5 per touching partner"),
    Field("contact_pair", np.int32, (2,), Halo.REVERSE, 0, "", "(1, 2) per touching partner"),
)
NAMES = tuple(f.name for f in COUNT_FIELDS)


class CountContacts(System):
    """Add to both particles of every touching pair (owned and ghost rows) in non-float64 fields."""

    stage = Stage.FORCES
    reads = {"pairs": ("i", "j")}
    reads_ghosts = {"particles": ("position", "radius", "gid")}
    accumulates = {"particles": NAMES}

    def setup(self, world):
        for f in COUNT_FIELDS:
            world.particles.add_field(f)
        self.on_ghosts = 0
        self.from_other_ranks = 0

    def run(self, world):
        p, q = world.particles, world.pairs
        x, r, gid = p.with_ghosts("position"), p.with_ghosts("radius"), p.with_ghosts("gid")
        i, j = q.i.astype(np.int64), q.j.astype(np.int64)
        touching = np.linalg.norm(x[i] - x[j], axis=1) < r[i] + r[j]
        i, j = i[touching], j[touching]
        both = np.concatenate([i, j])
        np.add.at(p.with_ghosts("contacts_i32"), both, np.int32(1))
        np.add.at(p.with_ghosts("partner_gid_sum"), both, np.concatenate([gid[j], gid[i]]))
        np.add.at(p.with_ghosts("half_contacts"), both, np.float32(0.5))
        np.add.at(p.with_ghosts("contact_pair"), both, np.array([1, 2], dtype=np.int32))
        ghost = both[both >= p.n_owned]
        self.on_ghosts = ghost.size
        self.from_other_ranks = int(np.count_nonzero(~np.isin(gid[ghost], p.gid)))


class ReadCounts(System):
    """Reads one count on owners mid-step: the scheduler must reverse it before this runs."""

    stage = Stage.FORCES
    reads = {"particles": ("contacts_i32",)}
    writes = {"particles": ("seen_contacts",)}

    def setup(self, world):
        world.particles.add_field(Field("seen_contacts", np.int64, (), Halo.LOCAL, -1))

    def run(self, world):
        p = world.particles
        p.seen_contacts[...] = p.contacts_i32
