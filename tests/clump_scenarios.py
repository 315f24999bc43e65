"""Worlds with clumps used by the serial and the MPI tests, built identically on every rank
(pass SerialComm for the 1-rank reference)."""
from __future__ import annotations

import numpy as np

from ecs_dem import Box, World
from ecs_dem.components.clumps import library
from ecs_dem.components.clumps.bodies import add_clumps
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.observe import gather_by_gid
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.rigid_body import rigid_bodies
from ecs_dem.systems.walls.contacts import WallContacts

R = 1e-3
MATERIAL = dict(youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.5,
                friction=0.4)


def random_quaternions(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def add_clump_systems(world, *force_systems):
    """Rigid bodies, velocity Verlet, the neighbour search and the force systems."""
    first, second = velocity_verlet()
    for s in (*rigid_bodies(), first, NeighborSearch(), *force_systems, second):
        world.add_system(s)


def mixed_pour(comm=None, *, cells=(4, 4, 4), seed=5, dt=4e-6, balance_every=0,
               gravity=(0.0, 0.0, -9.81), material=None, sideways=0.3, debug=None):
    """Dimers, tetrahedra, elongated grains and spheres on a lattice in a box periodic in x
    and y with a floor, thrown with random velocities and spins: they fall, collide, cross
    the periodic sides and pile up. Returns the world (not set up)."""
    rng = np.random.default_rng(seed)
    spacing = 6.0 * R
    nx, ny, nz = cells
    size = np.array([nx, ny, nz + 1]) * spacing
    kwargs = {} if comm is None else {"comm": comm}
    if debug is not None:
        kwargs["debug"] = debug
    world = World(Box((0, 0, 0), size, (True, True, False)), dt=dt, skin=0.3 * R,
                  balance_every=balance_every, **kwargs)
    add_species(world, **(material or MATERIAL))
    k = np.arange(nx * ny * nz)
    sites = (np.stack([k % nx, (k // nx) % ny, k // (nx * ny)], axis=1) + 0.5) * spacing
    sites[:, 2] += 0.5 * spacing
    kind = k % 4
    shapes = [library.dimer(R), library.tetrahedron(0.8 * R), library.elongated(0.7 * R)]
    for s, template in enumerate(shapes):
        at = sites[kind == s]
        add_clumps(world, template, at, random_quaternions(rng, len(at)), 0,
                   velocity=rng.normal(0, sideways, (len(at), 3)) + (0, 0, -0.3),
                   angular_velocity=rng.normal(0, 50.0, (len(at), 3)))
    spheres = sites[kind == 3]
    add_particles(world, spheres, R * rng.uniform(0.8, 1.1, len(spheres)), 0,
                  velocity=rng.normal(0, sideways, (len(spheres), 3)),
                  angular_velocity=rng.normal(0, 50.0, (len(spheres), 3)))
    add_wall(world, (0, 0, 0), (0, 0, 1))
    law = HertzMindlinLaw()
    add_clump_systems(world, Gravity(gravity), ContactForces(law), WallContacts(law))
    return world


BODY_STATE = ("com", "velocity", "orientation", "angular_momentum", "angular_velocity")


def body_state(world, fields=BODY_STATE) -> dict:
    """The bodies' fields (owned rows of every rank) ordered by gid, on every rank."""
    return dict(zip(fields, gather_by_gid(world, "bodies", fields, root=None)))
