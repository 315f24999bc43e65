"""Cost of a wet contact against a dry one on a dense packing (target: at most 1.5 times).

A benchmark, not a test. A periodic simple-cubic packing of ``--side``^3 spheres
(radius 1 mm, every neighbour overlapping by 0.2 % of the radius, small random
velocities) runs the same steps with

  dry      ContactForces(HertzMindlinLaw())
  willett  ContactForces(LiquidMigrationWillet(HertzMindlinLaw())) after its two migration
           systems, every particle carrying liquid: every contact holds a bridge
  ls       the same with LiquidMigrationLS (lubrication too: a logarithm per contact)

Variants are interleaved and repeated (this machine's speed swings from outside)
and the medians printed: ms per step of the whole step and of the contact work
(the contact system, plus the migration systems for wet), the touching contacts, and
each wet law's ratio to dry of the contact work per contact.

    python bench/wet_contact.py                # side 16 (4096 spheres), 3 repetitions
    python bench/wet_contact.py --side 24 --reps 5
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.wet import add_liquid
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.wet.laws import LiquidMigrationLS, LiquidMigrationWillet
from ecs_dem.systems.wet.migration import liquid_migration

R = 1e-3


LAWS = {"willett": LiquidMigrationWillet, "ls": LiquidMigrationLS}


def build(side: int, variant: str):
    spacing = 2 * R * (1 - 0.001)
    width = side * spacing
    world = World(Box((0, 0, 0), (width,) * 3, (True,) * 3), dt=1e-6, skin=0.1 * R)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.5,
                friction=0.5)
    g = (np.arange(side) + 0.5) * spacing
    pos = np.array(np.meshgrid(g, g, g, indexing="ij")).reshape(3, -1).T
    rng = np.random.default_rng(1)
    add_particles(world, pos, R, velocity=rng.normal(0, 1e-3, pos.shape))
    first, second = velocity_verlet()
    if variant != "dry":
        add_liquid(world, 1e-10)
        contacts = ContactForces(LAWS[variant](HertzMindlinLaw(), max_bridge_volume=2e-11))
        force_systems = (*liquid_migration(contacts), contacts)
    else:
        force_systems = (ContactForces(HertzMindlinLaw()),)
    for s in (first, NeighborSearch(), *force_systems, second):
        world.add_system(s)
    world.setup()
    world.run(5)  # bridges formed, kernels compiled
    return world, force_systems


def measure(world, force_systems, steps: int) -> tuple[float, float]:
    """(ms per step, ms per step in the force systems)."""
    spent = [0.0]
    originals = []
    for s in force_systems:
        run = s.run

        def timed(w, run=run):
            t0 = time.perf_counter()
            run(w)
            spent[0] += time.perf_counter() - t0
        originals.append((s, run))
        s.run = timed
    t0 = time.perf_counter()
    world.run(steps)
    total = time.perf_counter() - t0
    for s, run in originals:
        s.run = run
    return 1e3 * total / steps, 1e3 * spent[0] / steps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=16)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    worlds = {name: build(args.side, name) for name in ("dry", "willett", "ls")}
    times = {name: [] for name in worlds}
    for _ in range(args.reps):
        for name, (world, systems) in worlds.items():
            times[name].append(measure(world, systems, args.steps))
    per_contact = {}
    for name, (world, systems) in worlds.items():
        step = statistics.median(t[0] for t in times[name])
        work = statistics.median(t[1] for t in times[name])
        touching = systems[-1].touching
        per_contact[name] = work / max(touching, 1)
        print(f"{name}: {step:8.3f} ms/step, contact work {work:8.3f} ms/step, "
              f"{touching} contacts, {1e6 * per_contact[name]:.1f} ns per contact")
    for name in LAWS:
        print(f"{name}/dry contact work per contact: "
              f"{per_contact[name] / per_contact['dry']:.2f} (target <= 1.5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
