"""One-rank throughput: the settled Hertz-Mindlin bed and LAMMPS's chute.

Prints particle-steps per second (a benchmark, not a test). Both problems start
from the peer data files (bench/peer_data.py; their README gives every
setting and LAMMPS's figures on this machine: chute 11.0 M, bed 4.26 M
particle-steps/s on one rank).

    python bench/one_rank.py                 # LAMMPS's step counts (about 2 minutes)
    python bench/one_rank.py --quick         # a tenth of the steps
    python bench/one_rank.py --json out.json
    python bench/one_rank.py --profile       # also where the time goes: ms per step by system

The profile comes from the world's own timers (``World.timers``): each
system's ``run``, and the halo operations and domain work between them.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.io.lammps_data import read_sphere_data
from ecs_dem.run import chute  # run/chute.py builds the chute world
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_data import BED, chute_setting, missing, peer_file  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

LAMMPS_FIGURES = {"chute": 11.0e6, "hm_bed": 4.26e6}


def build_bed(path: Path, tiles: int = 1) -> World:
    """hm_bed.data: 20,000 spheres, E 4.6e10 Pa, nu 0.245, mu 0.25, e 0.9, walls, dt 2.9e-7 s.

    ``tiles`` > 1 repeats the bed tiles x tiles times in x and y (a larger bed).
    """
    data = read_sphere_data(path)
    side = float(data.box_hi[0] - data.box_lo[0])
    shifts = [(i * side, j * side, 0.0) for i in range(tiles) for j in range(tiles)]
    width = tiles * side
    box = Box(data.box_lo, (width, width, data.box_hi[2]), periodic=(False, False, False))
    world = World(box, dt=2.9e-7, skin=0.5e-3)
    add_species(world, youngs_modulus=4.6e10, poisson_ratio=0.245, density=float(data.density[0]),
                restitution=0.9, friction=0.25)
    add_particles(world, np.concatenate([data.position + s for s in shifts]),
                  np.tile(data.radius, len(shifts)), 0,
                  velocity=np.tile(data.velocity, (len(shifts), 1)),
                  angular_velocity=np.tile(data.angular_velocity, (len(shifts), 1)),
                  gid=np.concatenate([data.id + k * (int(data.id.max()) + 1)
                                      for k in range(len(shifts))]))
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)),
                          ((width, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                          ((0, width, 0), (0, -1, 0))):
        add_wall(world, point, normal)
    add_hertz_systems(world)
    return world


def add_hertz_systems(world: World) -> None:
    """Velocity Verlet, neighbour search, gravity (-z), Hertz-Mindlin contacts and wall contacts."""
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), Gravity((0, 0, -9.81)), ContactForces(law),
              WallContacts(law), second):
        world.add_system(s)


def measure(world: World, warmup: int, steps: int, repeats: int) -> dict:
    world.setup()
    world.run(warmup)
    world.timers.clear()
    rates = []
    elapsed = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        world.run(steps)
        seconds = time.perf_counter() - t0
        elapsed += seconds
        rates.append(world.particles.n_owned * steps / seconds)
    total_steps = steps * repeats
    return {"particles": world.particles.n_owned, "steps": steps, "repeats": repeats,
            "particle_steps_per_s": float(np.median(rates)), "all": rates,
            "rebuilds": world.domain.rebuild_count, "mean_ms_per_step": 1e3 * elapsed / total_steps,
            "ms_per_step": {k: 1e3 * v / total_steps for k, v in
                            sorted(world.timers.items(), key=lambda kv: -kv[1])}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the steps")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--profile", action="store_true",
                    help="print milliseconds per step spent in each system and halo operation")
    args = ap.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    results = {}
    cfg = dict(chute.DEFAULTS, data=chute_setting(), thermo_every=0)
    results["chute"] = measure(chute.build_world(cfg), 100, int(15000 * scale / args.repeats),
                               args.repeats)
    if peer_file(BED):
        results["hm_bed"] = measure(build_bed(peer_file(BED)), 500,
                                    int(10000 * scale / args.repeats), args.repeats)
    else:
        print(f"hm_bed: {missing(BED)}")
    print(f"{'problem':10s} {'particles':>9s} {'steps':>7s} {'ecs_dem [M p-steps/s]':>22s} "
          f"{'LAMMPS (README)':>16s} {'ratio':>6s}")
    for name, r in results.items():
        rate = r["particle_steps_per_s"]
        ref = LAMMPS_FIGURES[name]
        print(f"{name:10s} {r['particles']:9d} {r['steps'] * r['repeats']:7d} {rate / 1e6:22.2f} "
              f"{ref / 1e6:16.2f} {rate / ref:6.2f}")
    if args.profile:
        for name, r in results.items():
            timed = sum(r["ms_per_step"].values())
            print(f"\n{name}: where a step goes (ms; {timed:.3f} ms timed of "
                  f"{r['mean_ms_per_step']:.3f} ms per step)")
            for key, ms in r["ms_per_step"].items():
                print(f"  {key:40s} {ms:7.3f}  {100 * ms / timed:5.1f} %")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
