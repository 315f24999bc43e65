"""Worlds for the multi-contact tests, built identically on every rank (as tests/mpi_scenarios.py).

Each builder takes a communicator: the MPI tests run it with the MPI
communicator and with SerialComm (the 1-rank reference) and compare by gid.
"""
from __future__ import annotations

import numpy as np

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.multicontact.systems import multicontact
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

R = 5e-3  # m
#: the hydrogel of Brodu et al. 2015 (E, mu), nearly incompressible
HYDROGEL = dict(youngs_modulus=23.3e3, poisson_ratio=0.45, density=1000.0, restitution=0.9,
                friction=0.03)


def contact_systems(law, gamma, iterations=0):
    """MC-DEM's systems (with `iterations` extra passes per step), or (gamma None) the plain
    ContactForces + WallContacts."""
    if gamma is None:
        return [ContactForces(law, max_initial_overlap=0.1), WallContacts(law)]
    return multicontact(law, gamma, max_initial_overlap=0.1, iterations=iterations)


def compressed_packing(comm, law, gamma, n_side=7, layers=5, periodic_xy=True, material=None,
                       top_speed=0.02, shift_x=0.0, iterations=0):
    """Soft polydisperse spheres overlapping by about 2 % of a radius on a jittered cubic lattice,
    between a floor and a top plate that moves down at `top_speed` (m/s), periodic in x and y:
    a compressed packing with six or more lasting contacts per grain, wall contacts at both
    plates, and grains on every rank boundary. `gamma` None: the plain contact systems.
    """
    rng = np.random.default_rng(13)
    mat = dict(HYDROGEL, **(material or {}))
    spacing = 1.98 * R
    width = n_side * spacing
    height = layers * spacing
    dt = 0.1 * float(rayleigh_time(R, mat["density"], mat["youngs_modulus"], mat["poisson_ratio"]))
    world = World(Box((0.0, 0.0, 0.0), (width, width, height + R), (periodic_xy, periodic_xy, False)),
                  dt=dt, skin=0.2 * R, comm=comm, sort=True)
    add_species(world, **mat)
    k = np.arange(n_side * n_side * layers)
    pos = np.stack([k % n_side, (k // n_side) % n_side, k // n_side**2], axis=1) * spacing
    pos = pos + 0.5 * spacing + rng.uniform(-0.01, 0.01, pos.shape) * R
    pos[:, 0] = (pos[:, 0] + shift_x * width) % width
    add_particles(world, pos, R * rng.uniform(0.99, 1.01, k.size), 0,
                  velocity=rng.normal(0.0, 0.002, pos.shape))
    add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    add_wall(world, (0.0, 0.0, height), (0.0, 0.0, -1.0), mode="velocity",
             velocity=(0.0, 0.0, -top_speed))
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *contact_systems(law, gamma, iterations), second):
        world.add_system(s)
    return world
