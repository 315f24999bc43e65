"""Helpers shared by the tests: small worlds built from the public API (import as `helpers`).

Tests mirror the code layout: tests/engine (ecs_dem/), tests/components,
tests/systems (physics against analytic values), tests/run (drivers end to end).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.io.checkpoint import restart, write_checkpoint
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PYTHON = sys.executable


def load_driver(name: str):
    """The driver ``ecs_dem.run.<name>`` (the folder run/), imported in this process: its
    functions without a subprocess (``load_driver("triaxial.driver")`` for a module of a
    driver in several files)."""
    import importlib

    return importlib.import_module(f"ecs_dem.run.{name}")


def shared_file(*parts) -> Path:
    """A file from ../shared; skipped outside CI when absent, a failure in CI."""
    path = SHARED.joinpath(*parts)
    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing: CI runs with ../shared beside the clone")
        pytest.skip(f"{path} not present (../shared is not beside this clone)")
    return path




def make_world(*, box_lo=(-1, -1, -1), box_hi=(1, 1, 1), periodic=(False, False, False),
               dt=1e-6, skin=1e-3, material=None, sort=True):
    """A world with a particles table and one species (glass-like unless `material`)."""
    world = World(Box(box_lo, box_hi, periodic), dt=dt, skin=skin, sort=sort)
    mat = dict(youngs_modulus=1e8, poisson_ratio=0.3, density=2500.0, restitution=0.9,
               friction=0.5)
    mat.update(material or {})
    add_species(world, **mat)
    create_particle_table(world)
    return world


def add_standard_systems(world, law, *extra_force_systems, **contact_kwargs):
    """Velocity Verlet + neighbour search + contacts (+ extra force systems), in the usual order."""
    first, second = velocity_verlet()
    world.add_system(first)
    world.add_system(NeighborSearch())
    contacts = world.add_system(ContactForces(law, **contact_kwargs))
    for s in extra_force_systems:
        world.add_system(s)
    world.add_system(second)
    return contacts


def colliding_pile(force_systems, contacts, *, seed: int, spin: float = 0.0):
    """125 spheres colliding in a box periodic in x and y (pairs with periodic images of own
    rows), the first 10 fixed, with random velocities (and angular velocities of scale
    `spin`, rad/s): velocity Verlet, the neighbour search, `force_systems` in order (among
    them `contacts`, a ContactForces), run 300 steps. Returns (world, owned rows in gid
    order)."""
    rng = np.random.default_rng(seed)
    world = make_world(box_lo=(0, 0, 0), box_hi=(0.1, 0.1, 0.2), periodic=(True, True, False),
                       dt=2e-6, skin=2e-4)
    grid = np.stack(np.meshgrid(*[np.arange(5)] * 3, indexing="ij"), -1).reshape(-1, 3)
    add_particles(world, 0.01 + 0.0195 * grid + rng.uniform(0, 1e-3, grid.shape), 0.0095,
                  velocity=rng.normal(0, 0.5, grid.shape),
                  angular_velocity=rng.normal(0, spin, grid.shape))
    world.particles.fixed[:10] = True
    first, second = velocity_verlet()
    for s in [first, NeighborSearch(), *force_systems, second]:
        world.add_system(s)
    touching = 0
    for _ in range(6):
        world.run(50)
        touching += contacts.touching
    assert touching > 0
    p = world.particles
    return world, np.argsort(p.gid[:p.n_owned])


def straight_and_resumed(build, path, before: int, after: int):
    """(straight, resumed): build() run for before + after steps, and build() restarted from the
    checkpoint `path` the first wrote after `before` steps, then run for `after` (on every rank)."""
    straight = build()
    straight.run(before)
    write_checkpoint(straight, path)
    straight.run(after)
    resumed = build()
    restart(resumed, path)
    resumed.run(after)
    return straight, resumed


__all__ = ["make_world", "add_standard_systems", "add_particles", "shared_file", "straight_and_resumed",
           "PYTHON", "REPO"]
