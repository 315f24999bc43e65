"""A mesh wall of about 10^6 triangles with grains: load time, memory, triangles per rank, step time.

A flat square sheet of triangles (``flat_sheet``, edge ``--edge``) is loaded
as one fixed mesh wall, and ``--grains`` Hertz-Mindlin grains (radius 2 mm)
are dropped onto it from a lattice just above it, spread over the whole
sheet; the world runs ``--steps`` steps. Printed, per run:

* load time: building the mesh and ``add_mesh_wall`` (validation included),
  then the set-up (distribution of vertices and triangles to their ranks,
  ghosts, first force pass), each the slowest rank's;
* memory per rank: peak resident set (``ru_maxrss``) of each rank at the end;
* triangles each rank holds: owned, and owned plus ghosts, as fractions of
  the mesh (a mesh copied to each rank would give 1.0 on every rank);
* time per step: wall time of the timed steps over their count (after 20
  warm-up steps), and grain-steps per second per core.

    python bench/mesh_wall_large.py                                 # 1 rank, 10^6 triangles
    mpiexec.mpich -n 2 .venv/bin/python bench/mesh_wall_large.py    # 2 ranks
    python bench/mesh_wall_large.py --edge 3e-3 --steps 100         # a small trial

Every rank builds the whole mesh before the set-up (as it builds the grains)
and keeps its part after: the load memory peak is one mesh per rank.
"""
from __future__ import annotations

import argparse
import math
import resource
import sys
import time

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.mesh_walls import add_mesh_wall
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.neighbors.search import NeighborSearch

RADIUS = 2e-3


def sheet_edge_for(triangles: float, width: float) -> float:
    """The edge length giving about `triangles` equilateral triangles on a square of `width`."""
    return math.sqrt(2.0 * width * width / (triangles * math.sqrt(3.0) / 2.0))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=float, default=0.6, help="side of the sheet (m)")
    ap.add_argument("--edge", type=float, default=0.0,
                    help="triangle edge (m); 0: about 10^6 triangles on the sheet")
    ap.add_argument("--grains", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--timers", action="store_true",
                    help="print the world's time per system and halo verb (rank 0)")
    args = ap.parse_args(argv)
    comm = default_comm()
    say = print if comm.rank == 0 else (lambda *a, **k: None)
    width = args.width
    edge = args.edge or sheet_edge_for(1e6, width)

    t0 = time.perf_counter()
    mesh = flat_sheet(edge, width=width, height=width, center=(0.5 * width, 0.5 * width, 0.01))
    half = 0.5 * width
    box = Box((-0.001, -0.001, 0.0), (width + 0.001, width + 0.001, 0.05))
    E, nu, rho = 1e7, 0.3, 2500.0
    world = World(box, dt=0.2 * float(rayleigh_time(RADIUS, rho, E, nu)), skin=0.4 * RADIUS,
                  comm=comm)
    grain = add_species(world, youngs_modulus=E, poisson_ratio=nu, density=rho,
                        restitution=0.5, friction=0.5)
    add_mesh_wall(world, mesh, species=grain)
    load = time.perf_counter() - t0

    per_side = int(math.ceil(math.sqrt(args.grains / 2)))
    spacing = min((width - 4 * RADIUS) / per_side, 3 * RADIUS)
    k = np.arange(args.grains)
    pos = np.stack([2 * RADIUS + (k % per_side + 0.5) * spacing,
                    2 * RADIUS + (k // per_side % per_side + 0.5) * spacing,
                    0.01 + 1.05 * RADIUS + 2.2 * RADIUS * (k // per_side ** 2)], axis=1)
    pos[:, :2] += half - 0.5 * per_side * spacing - 2 * RADIUS
    add_particles(world, pos, RADIUS, grain)
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), Gravity((0.0, 0.0, -9.81)), ContactForces(law),
              MeshWallContacts(law), second):
        world.add_system(s)
    t0 = time.perf_counter()
    world.setup()
    setup = time.perf_counter() - t0
    world.run(20)
    world.timers.clear()
    t0 = time.perf_counter()
    world.run(args.steps)
    step = (time.perf_counter() - t0) / args.steps

    tri = world.mesh_triangles
    total = int(world.mesh_walls.triangle_count[0])
    owned = observe.concatenated(world, np.array([tri.n_owned]))
    held = observe.concatenated(world, np.array([tri.n]))
    rss = observe.concatenated(world, np.array([resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss / 1024.0]))
    slowest = observe.concatenated(world, np.array([load, setup, step])).reshape(-1, 3).max(0)
    grains = observe.count(world, world.particles)
    say(f"mesh wall of {total} triangles (edge {edge * 1e3:.3g} mm, {width} m square), "
        f"{grains} grains, {comm.size} rank(s)")
    say(f"load: mesh and add_mesh_wall {slowest[0]:.2f} s, set-up {slowest[1]:.2f} s")
    for r in range(comm.size):
        say(f"rank {r}: peak memory {rss[r]:.0f} MiB, triangles owned {owned[r] / total:.3f}, "
            f"held with ghosts {held[r] / total:.3f} of the mesh")
    say(f"time per step {slowest[2] * 1e3:.2f} ms ({args.steps} steps), "
        f"{grains / slowest[2] / comm.size:.3g} grain-steps/s per core")
    if args.timers:
        say(world.timing_report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
