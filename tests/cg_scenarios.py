"""A settled granular bed with a coarse-graining system, built alike on every rank (the
serial tests and tests/mpi/test_cg.py)."""
from __future__ import annotations

import numpy as np

from ecs_dem import Box, Stage, System, World
from ecs_dem.jit import kernel
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts

R = 1e-3
G = 9.81
MATERIAL = dict(youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.2,
                friction=0.5)


@kernel
def add_drag(velocity, mass, rate, force):
    for i in range(mass.size):
        for a in range(3):
            force[i, a] -= rate * mass[i] * velocity[i, a]


class Drag(System):
    """A background drag -rate m v on every particle: settles a bed fast (rate in 1/s)."""

    stage = Stage.FORCES
    reads = {"particles": ("velocity", "mass")}
    accumulates_owned = {"particles": ("force",)}

    def __init__(self, rate: float):
        self.rate = float(rate)

    def run(self, world):
        velocity, mass, force = world.particles.views(("velocity", "mass", "force"))
        add_drag(velocity, mass, self.rate, force)


def bed(comm, coarse_graining, n_side=6, layers=6, newton=False, drag=300.0, debug=None):
    """Spheres dropped from a loose cubic lattice onto a floor (z = 0) in a box periodic in x
    and y, under gravity and a background drag (``Drag``); `coarse_graining` (a CoarseGraining system, or None) runs after
    the step; `debug`: the World's debug mode (None: the suite's default, on). Returns the
    world (not yet run)."""
    rng = np.random.default_rng(17)
    spacing = 2.05 * R
    width = n_side * spacing
    world = World(Box((0, 0, 0), (width, width, 1.5 * layers * spacing), (True, True, False)),
                  dt=5e-6, skin=0.2 * R, comm=comm, balance_every=0, debug=debug)
    add_species(world, **MATERIAL)
    k = np.arange(n_side * n_side * layers)
    pos = np.stack([k % n_side, (k // n_side) % n_side, k // n_side**2], axis=1) * spacing
    pos = pos + 0.5 * spacing + rng.uniform(-0.05, 0.05, pos.shape) * R
    add_particles(world, pos, R * rng.uniform(0.9, 1.0, k.size), 0)
    add_wall(world, (0, 0, 0), (0, 0, 1))
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    systems = [first, NeighborSearch(), Gravity((0, 0, -G)), Drag(drag), ContactForces(law, newton=newton),
               WallContacts(law), second]
    if coarse_graining is not None:
        systems.append(coarse_graining)
    for s in systems:
        world.add_system(s)
    return world


def box_width(n_side=6) -> float:
    return n_side * 2.05 * R
