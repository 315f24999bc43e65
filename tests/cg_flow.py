"""A small flowing chute for the coarse-graining conservation checks (tests and the
tutorial): spheres on a rough base of fixed spheres, gravity tilted along x, periodic in x
and y; and the residuals of the continuity and momentum equations between two steps."""
from __future__ import annotations

import math

import numpy as np

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch

from ecs_dem.cg.fields import derive
from ecs_dem.cg.from_world import world_sums
from ecs_dem.cg.grid import CartesianGrid

R = 1e-3
ANGLE = 26.0
G = 9.81 * np.array([math.sin(math.radians(ANGLE)), 0.0, -math.cos(math.radians(ANGLE))])


def small_chute(comm=None, n_side=6, layers=6, seed=5) -> World:
    """A loose lattice above a rough base of fixed spheres; released, it settles and flows."""
    rng = np.random.default_rng(seed)
    spacing = 2.2 * R
    width = n_side * spacing
    world = World(Box((0, 0, -R), (width, width, (layers + 3) * spacing), (True, True, False)),
                  dt=5e-6, skin=0.2 * R, comm=comm)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.6,
                friction=0.5)
    k = np.arange(n_side * n_side * layers)
    pos = np.stack([k % n_side, (k // n_side) % n_side, k // n_side**2], axis=1) * spacing
    pos = pos + (0.5 * spacing, 0.5 * spacing, 0.0) + rng.uniform(-0.02, 0.02, pos.shape) * R
    base = pos[:, 2] < 0.5 * spacing
    pos[base, 2] = rng.uniform(0.0, 0.3 * R, base.sum())
    pos[~base, 2] += 0.5 * spacing
    radius = np.where(base, 0.9 * R, R * rng.uniform(0.9, 1.05, k.size))
    add_particles(world, pos, radius, 0, fixed=base,
                  velocity=np.where(base[:, None], 0.0, rng.normal(0, 0.02, pos.shape)))
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), Gravity(tuple(G)), ContactForces(HertzMindlinLaw()), second):
        world.add_system(s)
    return world


def record_every_step(world) -> None:
    for s in world.systems:
        if callable(getattr(s, "record_contacts", None)):
            s.record_contacts(1)


def profile_grid(world, cells: int) -> CartesianGrid:
    lo, hi = world.box.lo, world.box.hi
    return CartesianGrid((lo[0], lo[1], -3 * R), (hi[0], hi[1], hi[2]), (1, 1, cells),
                         average="xy")


def balance_residuals(world, grids, kernel, steps: int = 1) -> list[tuple[float, float]]:
    """Per grid, the relative residuals (continuity, momentum along x and z) between the
    world's state now and `steps` steps later (the world advances), with the time
    derivative a difference and the right-hand sides the mean of both ends; the fixed
    base is the boundary (``world_sums(select=("fixed", False))``)."""
    record_every_step(world)
    world.run(1)  # a step whose force pass recorded its contacts
    select = ("fixed", False)
    before = [derive(world_sums(world, g, kernel, select=select)) for g in grids]
    t0 = world.time
    world.run(steps)
    after = [derive(world_sums(world, g, kernel, select=select)) for g in grids]
    dt = world.time - t0
    out = []
    for g, a, b in zip(grids, before, after):
        dz = g.spacing[2]
        ddz = lambda f: np.gradient(f, dz, axis=2)  # noqa: E731
        rate = (b["density"] - a["density"]) / dt
        div = 0.5 * (ddz(a["momentum"][..., 2]) + ddz(b["momentum"][..., 2]))
        continuity = np.abs(rate + div).max() / np.abs(rate).max()
        errors = [continuity]
        for c in (0, 2):
            dp = (b["momentum"][..., c] - a["momentum"][..., c]) / dt
            rhs = 0.0
            for f in (a, b):
                flux = f["kinetic_stress"] + f["momentum"][..., :, None] * f["velocity"][..., None, :]
                rhs = rhs + 0.5 * (-ddz(flux[..., c, 2] + f["contact_stress"][..., c, 2])
                                   + f["boundary_force"][..., c] + f["density"] * G[c])
            errors.append(np.abs(dp - rhs).max() / np.abs(dp).max())
        out.append(tuple(errors))
    return out
