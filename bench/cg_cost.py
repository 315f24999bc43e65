"""Cost of on-the-fly coarse-graining as a share of a dense bed's run time.

A bed of ``--side``^2 x ``--layers`` spheres (r = 1 mm, Hertz-Mindlin, gravity, a floor,
periodic in x and y, lasting contacts from the first step) runs ``--steps`` steps twice:
with a depth profile (z resolved, x and y averaged) and with
a 3D grid (one point per particle diameter), both evaluated every ``--every`` steps with
``--kernel``: a Gaussian of width r (cut off at 3 r) or Lucy's polynomial of support 4 r
(width 1.15 r). Prints each run's time per step and the time its coarse-graining took
(``CoarseGraining`` and its ``ContactRecorder``, timed inside the run) against the rest
of the run: the overhead (goal: below 10 % at every 100 steps). Timing both parts in the
same run keeps the ratio meaningful on a machine whose load changes between runs. The
first ``every`` steps (compiling the kernels) are left out.

    python bench/cg_cost.py [--side 20] [--layers 10] [--steps 2000] [--every 100]
                            [--kernel gaussian|lucy]
    mpiexec.mpich -n 2 .venv/bin/python bench/cg_cost.py
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ecs_dem import Box, World
from ecs_dem.cg.grid import CartesianGrid
from ecs_dem.cg.kernels import Kernel
from ecs_dem.cg.system import CoarseGraining, ContactRecorder
from ecs_dem.comm import default_comm
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


def bed(comm, side: int, layers: int, grid=None, every: int = 100, kernel="gaussian"):
    spacing = 1.99 * R
    width = side * spacing
    world = World(Box((0, 0, 0), (width, width, 1.3 * layers * spacing), (True, True, False)),
                  dt=5e-6, skin=0.2 * R, comm=comm)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0,
                restitution=0.7, friction=0.5)
    rng = np.random.default_rng(7)
    k = np.arange(side * side * layers)
    pos = np.stack([k % side, (k // side) % side, k // side**2], axis=1) * spacing
    pos = pos + 0.5 * spacing + rng.uniform(-0.01, 0.01, pos.shape) * R
    add_particles(world, pos, R * rng.uniform(0.995, 1.005, k.size), 0,
                  velocity=rng.normal(0, 0.05, pos.shape))
    add_wall(world, (0, 0, 0), (0, 0, 1))
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), Gravity((0, 0, -9.81)), ContactForces(law),
              WallContacts(law), second):
        world.add_system(s)
    if grid is not None:
        k = Kernel.gaussian(R) if kernel == "gaussian" else Kernel.lucy(4 * R)
        world.add_system(CoarseGraining(grid(width, layers * spacing), k, every=every))
    return world


def timed(comm, args, grid) -> tuple[float, float]:
    """(seconds per step of the run, of which in coarse-graining), after a warm-up of
    `every` steps (compiles)."""
    world = bed(comm, args.side, args.layers, grid, args.every, args.kernel)
    world.run(args.every)
    spent = [0.0]
    for s in world.systems:
        if isinstance(s, (CoarseGraining, ContactRecorder)):
            def run(w, _run=s.run):
                t0 = time.perf_counter()
                _run(w)
                spent[0] += time.perf_counter() - t0
            s.run = run
    comm.barrier()
    t = time.perf_counter()
    world.run(args.steps)
    comm.barrier()
    return (time.perf_counter() - t) / args.steps, spent[0] / args.steps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=20)
    ap.add_argument("--layers", type=int, default=10)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--kernel", choices=("gaussian", "lucy"), default="gaussian")
    args = ap.parse_args(argv)
    comm = default_comm()
    kinds = {
        "depth profile": lambda w, h: CartesianGrid((0, 0, -3 * R), (w, w, h + 3 * R),
                                                    (1, 1, int((h + 6 * R) / (0.5 * R))),
                                                    average="xy"),
        "3D grid": lambda w, h: CartesianGrid((0, 0, 0), (w, w, h),
                                              (int(np.ceil(w / (2 * R))),) * 2
                                              + (int(np.ceil(h / (2 * R))),)),
    }
    times = {name: timed(comm, args, grid) for name, grid in kinds.items()}
    if comm.rank == 0:
        n = args.side * args.side * args.layers
        print(f"{n} particles, {comm.size} rank(s), {args.steps} steps, fields every "
              f"{args.every} steps, {args.kernel} kernel")
        for name, (t, cg) in times.items():
            print(f"  {name:14s} {1e3 * t:.3f} ms/step, of which coarse-graining "
                  f"{1e3 * cg:.3f}: overhead {100 * cg / (t - cg):.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
