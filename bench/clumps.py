"""Cost of rigid clumps per pebble-step against free spheres with the same pebbles (a benchmark).

``--clumps`` clumps of a library shape (``--shape``, default tetrahedron) are inserted at
random in a box at ``--fraction`` (of their bounding spheres), with random velocities; the
same pebbles, at the same places and speeds, as free spheres make the reference. Both
fall onto the floor under gravity with Hertz-Mindlin contacts; each runs ``--warm`` steps
(compilation, first neighbour lists), then ``--steps`` timed steps. Printed: the time
per pebble-step of each, and their ratio (target: clumps cost at most 1.3 times the
spheres: summing forces onto bodies, integrating them and placing the pebbles must stay
small beside the contacts). The ratio varies by some percent from run to run on a shared
machine: take the best of ``--repeat`` timings of each.

    python bench/clumps.py [--clumps 3000] [--shape tetrahedron] [--steps 400]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ecs_dem import Box, World
from ecs_dem.components.clumps import library
from ecs_dem.components.clumps.shapes import clump_shape
from ecs_dem.components.insertion import BoxRegion, insert
from ecs_dem.components.insertion.insert import add_to_world
from ecs_dem.components.insertion.psd import Component, Mixture, uniform
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.rigid_body import rigid_bodies
from ecs_dem.systems.walls.contacts import WallContacts

MATERIAL = dict(youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.5,
                friction=0.5)


def worlds(clumps: int, shape: str, fraction: float, seed: int = 1) -> tuple[World, World]:
    """(clumps, spheres): the same pebbles as bodies and as free spheres."""
    template = library.shape(shape, 1.0)
    mix = Mixture([Component(uniform(3e-3, 3.3e-3, "volume"), 1.0, 0, clump_shape(template))])
    bounding = mix.components[0].shape.bounding * 3.3e-3
    side = (clumps * 4 / 3 * np.pi * bounding**3 / fraction) ** (1 / 3)
    region = BoxRegion((0, 0, 0), (side, side, side))
    grains = insert(region, mix, np.random.default_rng(seed), count=clumps)
    rng = np.random.default_rng(seed + 1)

    def world():
        w = World(Box((0, 0, 0), (side, side, side)), skin=2e-4,
                  dt=0.2 * float(rayleigh_time(1e-3, 2500.0, 1e7, 0.3)))
        add_species(w, **MATERIAL)
        add_wall(w, (0, 0, 0), (0, 0, 1))
        return w

    a = world()
    add_to_world(a, grains)
    a.bodies.velocity[:clumps] = rng.normal(0, 0.2, (clumps, 3))
    b = world()
    p = a.particles
    n = p.n_owned
    velocity = a.bodies.velocity[np.searchsorted(a.bodies.gid[:clumps], p.body[:n])]
    p.velocity[:n] = velocity
    add_particles(b, p.position[:n], p.radius[:n], 0, velocity=velocity)
    law = HertzMindlinLaw()
    for w, bodies in ((a, rigid_bodies()), (b, [])):
        first, second = velocity_verlet()
        for s in (*bodies, first, NeighborSearch(), Gravity((0, 0, -9.81)), ContactForces(law),
                  WallContacts(law), second):
            w.add_system(s)
    return a, b


def timed(world: World, warm: int, steps: int, repeat: int) -> float:
    """The best time per step [s] over `repeat` timings of `steps` steps, after `warm`."""
    world.setup()
    world.run(warm)
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        world.run(steps)
        best = min(best, (time.perf_counter() - t) / steps)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clumps", type=int, default=3000)
    ap.add_argument("--shape", default="tetrahedron", choices=sorted(library.SHAPES))
    ap.add_argument("--fraction", type=float, default=0.25)
    ap.add_argument("--warm", type=int, default=200)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    clumps, spheres = worlds(a.clumps, a.shape, a.fraction)
    pebbles = clumps.particles.n_owned
    t_clumps = timed(clumps, a.warm, a.steps, a.repeat)
    t_spheres = timed(spheres, a.warm, a.steps, a.repeat)
    print(f"{a.clumps} {a.shape} clumps, {pebbles} pebbles; {a.steps} steps, best of {a.repeat}")
    print(f"clumps : {1e9 * t_clumps / pebbles:8.1f} ns per pebble-step")
    print(f"spheres: {1e9 * t_spheres / pebbles:8.1f} ns per sphere-step")
    ratio = t_clumps / t_spheres
    print(f"ratio  : {ratio:.2f} (target at most 1.3): {'met' if ratio <= 1.3 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
