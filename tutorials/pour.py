"""Tutorial: pour grains into a box and let them settle (docs/tutorials/pour.md).

Builds a world step by step: a box, one material (species), five walls,
grains inserted at random without overlap, the systems of a time step
(integration, neighbour search, gravity, Hertz-Mindlin contacts between
grains and with the walls), HDF5 output with an XDMF sidecar for ParaView,
then runs it and prints what the bed looks like as it settles.

    python tutorials/pour.py                 # the full settings: 2,000 grains, 0.6 s
    python tutorials/pour.py --short         # the short settings (CI): 300 grains, 0.3 s
    mpiexec.mpich -n 2 .venv/bin/python tutorials/pour.py --short

``ECS_DEM_TUTORIAL_SHORT=1`` in the environment selects the short settings
too. Everything is in SI units: metres, kilograms, seconds, pascals.
"""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.diagnostics import Diagnostics, kinetic_energy
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts

# The two sets of settings: the same physics, fewer grains and less time for CI.
FULL = {"grains": 2000, "duration": 0.6, "reports": 6}
SHORT = {"grains": 300, "duration": 0.3, "reports": 3}

WIDTH = 0.04                       # m, side of the square box
R_MIN, R_MAX = 1.5e-3, 2.0e-3      # m, grain radii, uniform in between
GRAVITY = 9.81                     # m/s^2, along -z


def short_settings(argv=None) -> bool:
    """--short on the command line, or ECS_DEM_TUTORIAL_SHORT=1 in the environment."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short settings (CI)")
    parser.add_argument("--output", default="output/tutorials/pour.h5", help="HDF5 output file")
    args = parser.parse_args(argv)
    return args.short or os.environ.get("ECS_DEM_TUTORIAL_SHORT") == "1", args.output


def insert_grains(n: int, width: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Radii and centres of n grains placed one by one at random in a column above the floor,
    each one rejected and drawn again while it overlaps one already placed."""
    radius = rng.uniform(R_MIN, R_MAX, n)
    # a column tall enough that the grains fill about a fifth of it: insertion is then quick
    volume = np.sum(4.0 / 3.0 * np.pi * radius**3) / 0.2
    height = volume / width**2
    position = np.empty((n, 3))
    for i in range(n):
        r = radius[i]
        for _attempt in range(1000):
            x = rng.uniform([r, r, r], [width - r, width - r, height - r])
            gap = np.linalg.norm(position[:i] - x, axis=1) - radius[:i] - r
            if i == 0 or gap.min() > 0.0:
                break
        else:
            raise RuntimeError("insertion failed: make the column taller")
        position[i] = x
    return radius, position


def build_world(grains: int, output: Hdf5Output, comm) -> World:
    rng = np.random.default_rng(7)  # same seed on every rank: every rank builds the same grains
    radius, position = insert_grains(grains, WIDTH, rng)

    # 1. The material: a soft glass-like solid. A lower Young's modulus than glass allows a
    #    larger time step; the bed's shape hardly depends on it.
    E, nu, rho = 1e7, 0.3, 2500.0  # Pa, -, kg/m^3

    # 2. The time step: a fraction of the Rayleigh time of the smallest grain.
    dt = 0.2 * float(rayleigh_time(R_MIN, rho, E, nu))

    # 3. The world: its box (the region the domain decomposition splits among ranks), the
    #    time step and the neighbour list's skin (how far grains may move between rebuilds).
    top = float(position[:, 2].max()) + R_MAX
    world = World(Box((0.0, 0.0, 0.0), (WIDTH, WIDTH, top)), dt=dt, skin=0.2 * R_MAX, comm=comm)

    # 4. A species holds one material's constants; every grain refers to one by its id.
    glass = add_species(world, youngs_modulus=E, poisson_ratio=nu, density=rho,
                        restitution=0.5, friction=0.5)
    add_particles(world, position, radius, glass)  # mass and inertia follow from the density

    # 5. Walls are half-spaces given by a point and an inward normal: a floor and four sides.
    add_wall(world, (0, 0, 0), (0, 0, 1))
    for axis in (0, 1):
        low, high = np.zeros(3), np.zeros(3)
        high[axis] = WIDTH
        add_wall(world, low, np.eye(3)[axis])
        add_wall(world, high, -np.eye(3)[axis])

    # 6. The systems of one time step, in order. The engine inserts the MPI communication
    #    each needs from what it declares it reads and writes.
    law = HertzMindlinLaw()               # one contact law for grain-grain and grain-wall
    first_half, second_half = velocity_verlet()
    world.add_system(first_half)          # kick and drift
    world.add_system(NeighborSearch())    # Verlet lists, rebuilt when grains moved half a skin
    world.add_system(Gravity((0.0, 0.0, -GRAVITY)))
    contacts = world.add_system(ContactForces(law))
    walls = world.add_system(WallContacts(law))
    world.add_system(second_half)         # the second kick

    # 7. Output: a diagnostics time series every 500 steps and a snapshot every 2,000.
    world.add_system(Diagnostics(500, output, (contacts, walls)))
    world.add_system(SnapshotWriter(output, 2000))
    return world


def plot(h5_path: Path, png_path: Path) -> None:
    """Two panels from the output file: the kinetic energy against time (the time series)
    and a side view of the bed in the last snapshot (grains as circles, coloured by height)."""
    import h5py
    import matplotlib
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    from matplotlib.collections import EllipseCollection

    with h5py.File(h5_path, "r") as f:
        series = f["timeseries"]
        time, energy = series["time"][:], series["kinetic_energy"][:]
        last = f["snapshots"][sorted(f["snapshots"])[-1]]  # groups are named by step
        position, radius = last["position"][:], last["radius"][:]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.6), width_ratios=[1.3, 1])
    moving = energy > 0  # the first record, before the grains fall, is exactly 0
    left.semilogy(time[moving], energy[moving])
    left.set_xlabel("time (s)")
    left.set_ylabel("kinetic energy (J)")
    front = np.argsort(position[:, 1])[::-1]  # draw the front grains last
    d = 2e3 * radius[front]
    right.add_collection(EllipseCollection(d, d, 0.0, units="xy", offsets=1e3 * position[front][:, [0, 2]],
                                           offset_transform=right.transData,
                                           array=1e3 * position[front, 2], cmap="viridis",
                                           edgecolors="k", linewidths=0.2))
    right.set_xlim(0, 1e3 * WIDTH)
    right.set_ylim(0, 1e3 * (position[:, 2] + radius).max() * 1.05)
    right.set_aspect("equal")
    right.set_xlabel("x (mm)")
    right.set_ylabel("z (mm)")
    right.set_title("the bed at the end, side view", fontsize=9)
    fig.tight_layout()
    fig.savefig(png_path, dpi=90)
    plt.close(fig)


def main(argv=None) -> int:
    short, path = short_settings(argv)
    settings = SHORT if short else FULL
    comm = default_comm()
    say = print if comm.rank == 0 else (lambda *a, **k: None)  # print on one rank only

    path = Path(path)
    if comm.rank == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
    comm.barrier()
    with Hdf5Output(path, config=dict(settings), comm=comm) as output:
        world = build_world(settings["grains"], output, comm)
        steps = int(round(settings["duration"] / world.dt))
        say(f"pour ({'short' if short else 'full'} settings): {settings['grains']} grains, "
            f"dt = {world.dt:.3g} s, {steps} steps")
        say(f"{'time (s)':>8} {'kinetic energy (J)':>19} {'contacts':>9} {'top of bed (mm)':>16}")
        p = world.particles
        done = 0
        for k in range(1, settings["reports"] + 1):
            chunk = steps * k // settings["reports"] - done
            world.run(chunk)
            done += chunk
            # measures over all ranks (collective: every rank calls them)
            ke = kinetic_energy(world)
            touching = observe.sum_of(world, sum(s.touching for s in world.systems
                                                 if hasattr(s, "touching")))
            top = observe.largest(world, p.position[:, 2] + p.radius)
            say(f"{world.time:8.3f} {ke:19.3e} {int(touching):9d} {top * 1e3:16.1f}")

    # the weight of the bed against what the floor carries (the side walls carry the rest
    # by friction, as in a silo: Janssen's effect)
    mass = observe.total(world, p.mass)
    grains = observe.count(world, p)  # the rows of the particle table on every rank
    floor = -float(world.walls.force[0, 2])   # the force of the grains on wall 0, the floor
    walls = -float(world.walls.force[:, 2].sum())  # on all five walls
    volume = observe.total(world, 4.0 / 3.0 * np.pi * p.radius**3)
    say(f"grains {grains}, mass {mass * 1e3:.2f} g, weight {mass * GRAVITY:.4f} N")
    say(f"floor carries {floor:.4f} N ({floor / (mass * GRAVITY):.0%} of the weight), "
        f"all walls {walls:.4f} N")
    say(f"solid fraction below the top: {volume / (WIDTH**2 * top):.2f}")
    say(f"output: {path} (open {path.with_suffix('.xdmf')} in ParaView)")
    if comm.rank == 0:
        png = path.with_name(path.stem + "_energy.png")
        plot(path, png)
        say(f"plot: {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
