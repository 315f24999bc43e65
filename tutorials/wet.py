"""Tutorial: wet grains and a spray (docs/tutorials/wet.md).

A small bed of grains lies on a floor; a nozzle above it sprays droplets in
a cone. Each droplet that touches a grain joins the grain's liquid film;
grains in contact share their films into liquid bridges (Willett's
capillary force holds them together) and get the liquid back when a bridge
breaks. Droplets that miss land on the floor and are lost. The run prints
where the liquid is, the liquid balance that holds to round-off, and writes
HDF5 snapshots for ParaView: grains coloured by their film, bridges as
lines, droplets as points.

    python tutorials/wet.py                 # the full settings: 400 grains, 0.25 s
    python tutorials/wet.py --short         # the short settings (CI): 120 grains, 0.08 s
    mpiexec.mpich -n 2 .venv/bin/python tutorials/wet.py --short

``ECS_DEM_TUTORIAL_SHORT=1`` in the environment selects the short settings
too. Everything is in SI units: metres, kilograms, seconds, pascals.
"""
from __future__ import annotations

import argparse
import math
import os

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.droplets import add_nozzle
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.components.wet import add_liquid
from ecs_dem.io.hdf5_output import Hdf5Output
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts
from ecs_dem.systems.wet.balance import LiquidBalance
from ecs_dem.systems.wet.droplets import droplet_count, spray
from ecs_dem.systems.wet.laws import LiquidMigrationWillet
from ecs_dem.systems.wet.migration import liquid_migration
from ecs_dem.systems.wet.output import WetSnapshots

FULL = {"grains": 400, "duration": 0.25, "reports": 5}
SHORT = {"grains": 120, "duration": 0.08, "reports": 4}

WIDTH = 0.03                # m, side of the square box
R = 1.5e-3                  # m, grain radius
FILM = 2e-11                # m^3 of liquid on each grain at the start
DROPLET = 1e-4              # m, droplet radius
VOLUME_RATE = 2e-8          # m^3/s sprayed


def settings(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short settings (CI)")
    parser.add_argument("--output", default="output/tutorials/wet.h5", help="HDF5 output file")
    args = parser.parse_args(argv)
    short = args.short or os.environ.get("ECS_DEM_TUTORIAL_SHORT") == "1"
    return short, args.output


def bed(n: int, rng) -> np.ndarray:
    """n grain centres on a loose square lattice just above the floor."""
    spacing = 2.05 * R
    per_layer = int(WIDTH / spacing) ** 2
    k = np.arange(n)
    side = int(WIDTH / spacing)
    layer, rest = divmod(k, per_layer)
    x = (rest % side + 0.5) * spacing
    y = (rest // side + 0.5) * spacing
    z = (layer + 0.5) * spacing
    return np.stack([x, y, z], axis=1) + rng.uniform(-0.02, 0.02, (n, 3)) * R


def build_world(grains: int, output: Hdf5Output, comm, every: int) -> World:
    rng = np.random.default_rng(3)  # the same on every rank: every rank builds the same bed
    world = World(Box((0, 0, 0), (WIDTH, WIDTH, 0.04)), dt=5e-6, skin=0.2 * R, comm=comm)
    add_species(world, youngs_modulus=5e6, poisson_ratio=0.3, density=2500.0,
                restitution=0.3, friction=0.5)
    add_particles(world, bed(grains, rng), R)
    add_liquid(world, FILM)                       # every grain starts with a film
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)),
                          ((WIDTH, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                          ((0, WIDTH, 0), (0, -1, 0))):
        add_wall(world, point, normal)
    # a cone of droplets from 3 cm above the floor, straight down
    add_nozzle(world, [0.5 * WIDTH, 0.5 * WIDTH, 0.03], [0, 0, -1], shape="cone",
               half_angle=20.0, droplet_radius=DROPLET, speed=1.0, volume_rate=VOLUME_RATE)
    law = LiquidMigrationWillet(HertzMindlinLaw(), surface_tension=0.072, contact_angle=20.0,
                                max_bridge_volume=2e-11)
    contacts, walls = ContactForces(law), WallContacts(law)
    first, second = velocity_verlet()
    for system in (first, NeighborSearch(), Gravity((0, 0, -9.81)), *spray((0, 0, -9.81)),
                   *liquid_migration(contacts, walls), contacts, walls, second,
                   LiquidBalance(every=every), WetSnapshots(output, every)):
        world.add_system(system)
    return world


def main(argv=None) -> int:
    short, path = settings(argv)
    cfg = SHORT if short else FULL
    comm = default_comm()
    output = Hdf5Output(path, comm=comm)
    steps = int(round(cfg["duration"] / 5e-6))
    every = steps // cfg["reports"]
    world = build_world(cfg["grains"], output, comm, every)
    say = print if comm.rank == 0 else (lambda *a, **k: None)
    droplet = 4.0 / 3.0 * math.pi * DROPLET**3
    say(f"wet ({'short' if short else 'full'} settings): {cfg['grains']} grains of radius "
        f"{R} m with {FILM} m^3 of liquid each")
    say(f"nozzle: {VOLUME_RATE} m^3/s in droplets of {droplet:.4g} m^3 "
        f"({VOLUME_RATE / droplet:.0f} per second)")
    say("time (s)  films (m^3)  bridges (m^3)  airborne (m^3)  lost (m^3)  imbalance")
    world.run(steps)
    balance = world.systems[-2]
    for row in balance.records[1:]:
        say(f"{row['time']:8.4f}  {row['films']:11.4e}  {row['bridges']:13.4e}  "
            f"{row['airborne']:14.4e}  {row['lost_at_walls']:10.4e}  "
            f"{row['imbalance'] / row['inserted']:.1e}")
    bridges = observe.count(world, world.pairs.owned("bridge_volume")[:, 0] > 0)
    nozzle = world.tables["nozzles"]
    say(f"droplets sprayed {int(nozzle.emitted[0])}, in the air {droplet_count(world)}; "
        f"bridges {bridges}")
    output.close()
    say(f"wrote {path} and {os.path.splitext(path)[0]}.xdmf")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
