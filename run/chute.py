"""LAMMPS's granular chute benchmark (bench/in.chute) in ecs_dem.

32,000 spheres of diameter 1 and density 1 (mass pi/6, as in LAMMPS's data
file) in a box 40 x 20 x 37.2886, periodic in x and y: gran/hooke/history
(kn 2e5, kt 2/7 kn, gamman 50, no tangential damping, friction 0.5), gravity
1 tilted 26 degrees along x, a frozen rough base (type 2), dt 1e-4, skin 0.1.
LJ units, as in LAMMPS.
Prints LAMMPS-style thermo lines ("Step Atoms KinEng c_1").

The initial state is either generated here (the default: ``chute_state``, the
deck's geometry, count and density, grains at rest above the base) or read
from LAMMPS's own data file with ``--set data=PATH`` (``data.chute``, the
state LAMMPS's bench/in.chute reads): from that file the thermo line of step
100 equals LAMMPS's reference log to every printed digit (784292.08 and
1571.0968).

    python run/chute.py                       # 100 steps from the generated state
    python run/chute.py --set steps=15000 --set thermo_every=1000
    python run/chute.py --set data=data.chute # LAMMPS's initial state
    python run/chute.py --set steps=20000 --set profile_every=500   # depth profiles

Depth profiles (``profile_every`` > 0; off by default): every ``profile_every``
steps the flowing grains are coarse-grained (``ecs_dem.cg``: Lucy's kernel of
width ``profile_width``, ``profile_cells`` layers in z, averaged over x and y;
the frozen base is the boundary, its contacts the boundary force) from the
contact forces of the step; at the end the mean of the last ``profile_window``
evaluations is written to ``<profile_output>.csv`` (z, density, volume fraction,
velocity, stress components, pressure, stress ratio, granular temperature,
coordination number) and plotted in ``<profile_output>.png``.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ecs_dem import Box, InputError, World, observe
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.driver import run_driver
from ecs_dem.io.lammps_data import SphereData, read_sphere_data
from ecs_dem.runner import RUN_DEFAULTS
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.diagnostics import Diagnostics
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

DEFAULTS = {
    "data": "",             # LAMMPS data file of the initial state; "" generates one (seed)
    "seed": 1,              # random numbers of the generated state
    "steps": 100,
    "thermo_every": 100,
    "dt": 1e-4,
    "skin": 0.1,
    "kn": 2e5,
    "gamman": 50.0,
    "friction": 0.5,
    "dampflag": 0,
    "gravity": 1.0,
    "angle": 26.0,
    "frozen_type": 2,
    "sort": True,
    "profile_every": 0,     # steps between depth-profile evaluations (0: no profiles)
    "profile_window": 10,   # evaluations averaged into the written profiles
    "profile_cells": 40,    # layers in z over the box's height
    "profile_width": 0.5,   # the kernel's width (grain diameters)
    "profile_output": "output/chute/profiles",  # <this>.csv and <this>.png
    **RUN_DEFAULTS,  # checkpoint, checkpoint_every, restart, progress
    "progress": False,
}

#: (key, low, high, bounds included): the values a run can use (ecs_dem.config.check_ranges)
RANGES = (
    ("steps", 1, math.inf, True),
    ("seed", 0, math.inf, True),
    ("thermo_every", 0, math.inf, True),
    ("checkpoint_every", 0, math.inf, True),
    ("profile_every", 0, math.inf, True),
    ("profile_window", 1, math.inf, True),
    ("profile_cells", 1, math.inf, True),
    ("profile_width", 0.0, math.inf, False),
)


#: the deck's geometry (LJ units): box, mobile and base grains, diameter, density
BOX_HI = (40.0, 20.0, 37.2886)
MOBILE, BASE = 31088, 912
DIAMETER, DENSITY = 1.0, 1.0  # data.chute's density column (LAMMPS's log confirms mass pi/6)
BASE_HEIGHT = 1.2  # base centres lie in [0, BASE_HEIGHT)


def chute_state(seed: int = 1, frozen_type: int = 2) -> SphereData:
    """An initial state with the deck's box, counts, diameter and density, at rest.

    The base: 912 frozen grains (type `frozen_type`) on a 38 x 24 grid, each shifted by up
    to a tenth of a spacing in x and y and lifted to a random height in [0, 1.2): a rough
    floor whose gaps are narrower than a grain (grid spacings 1.05 and 0.83; base grains
    may overlap: pairs of frozen grains are never listed). The 31,088 mobile grains (type 1) take random
    sites of a face-centred cubic lattice above it (nearest sites 1.0102 apart: 28 x 14 x
    24 cubic cells fitting the periodic box, 83 % of the sites filled), each moved by up to
    0.002 per axis, so no two grains touch at the start. The top face is open, as LAMMPS's
    shrink-wrapped one: a grain may rise above it (non-periodic faces are not walls)."""
    rng = np.random.default_rng(seed)
    lx, ly, _ = BOX_HI
    nx, ny = 38, 24
    gx, gy = np.meshgrid((np.arange(nx) + 0.5) * lx / nx, (np.arange(ny) + 0.5) * ly / ny,
                         indexing="ij")
    base = np.column_stack([gx.ravel(), gy.ravel(), np.zeros(nx * ny)])
    base[:, 0] += rng.uniform(-0.1, 0.1, nx * ny) * lx / nx
    base[:, 1] += rng.uniform(-0.1, 0.1, nx * ny) * ly / ny
    base[:, 2] = rng.uniform(0.0, BASE_HEIGHT, nx * ny)
    cells = (28, 14, 24)
    a = lx / cells[0]
    corner = np.stack(np.meshgrid(*[np.arange(c) for c in cells], indexing="ij"), -1).reshape(-1, 3)
    motif = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    sites = ((corner[:, None, :] + motif[None, :, :]).reshape(-1, 3) + [0.25, 0.25, 0]) * a
    sites[:, 2] += BASE_HEIGHT + 1.01 * DIAMETER  # clear of the highest base grain
    mobile = sites[np.sort(rng.choice(len(sites), MOBILE, replace=False))]
    mobile += rng.uniform(-0.002, 0.002, mobile.shape)
    position = np.vstack([mobile, base])
    n = len(position)
    return SphereData(np.zeros(3), np.array(BOX_HI), np.arange(1, n + 1, dtype=np.int64),
                      np.where(np.arange(n) < MOBILE, 1, frozen_type).astype(np.int64),
                      np.full(n, DIAMETER), np.full(n, DENSITY), position,
                      np.zeros((n, 3), np.int64), np.zeros((n, 3)), np.zeros((n, 3)))


def build_world(cfg: dict, log=print) -> World:
    """The chute from ``cfg["data"]`` (a LAMMPS data file), or from ``chute_state`` when it is
    empty; `log` prints the thermo lines (rank 0's print on several ranks: ``Job.print``)."""
    if not cfg["data"]:
        data = chute_state(cfg["seed"], cfg["frozen_type"])
    else:
        data = read_sphere_data(cfg["data"])
        if not np.any(data.type == cfg["frozen_type"]):
            raise InputError(f"config key 'frozen_type' = {cfg['frozen_type']}: no atom of that "
                             f"type in {cfg['data']} (types {sorted(set(data.type.tolist()))}), so "
                             "there would be no frozen base; give one of those types")
    box = Box(data.box_lo, data.box_hi, periodic=(True, True, False))
    world = World(box, dt=cfg["dt"], skin=cfg["skin"], sort=cfg["sort"])
    # LJ units: the linear law ignores the elastic constants; only density matters
    add_species(world, youngs_modulus=1.0, poisson_ratio=0.0, density=float(data.density[0]))
    # atoms above the shrink-wrapped top face stay inside our (fixed) z range
    add_particles(world, data.position, data.radius, 0, velocity=data.velocity,
                  angular_velocity=data.angular_velocity, mass=data.mass,
                  fixed=data.type == cfg["frozen_type"], gid=data.id)
    law = LinearSpringDashpotLaw(kn=cfg["kn"], gamman=cfg["gamman"], friction=cfg["friction"],
                                 dampflag=cfg["dampflag"])
    first, second = velocity_verlet()
    world.add_system(first)
    world.add_system(NeighborSearch())
    world.add_system(Gravity.chute(cfg["gravity"], cfg["angle"]))
    contacts = world.add_system(ContactForces(law))
    world.add_system(second)
    if cfg["thermo_every"] > 0:
        world.add_system(LammpsThermo(cfg["thermo_every"], contacts, log))
    if cfg["profile_every"] > 0:
        world.add_system(depth_profiles(cfg, box))
    return world


def depth_profiles(cfg: dict, box: Box):
    """The coarse-graining system of the depth profiles (module docstring)."""
    from ecs_dem.cg.from_world import RecordedFields
    from ecs_dem.cg.grid import CartesianGrid
    from ecs_dem.cg.kernels import Kernel

    kernel = Kernel.lucy(math.sqrt(12.0) * cfg["profile_width"])
    grid = CartesianGrid(box.lo, box.hi, (1, 1, cfg["profile_cells"]), average="xy")
    return RecordedFields(grid, kernel, cfg["profile_every"], cfg["profile_window"],
                          select=("fixed", False))


#: the columns of the profiles' CSV: (name, field, component)
PROFILE_COLUMNS = (("density", "density", ()), ("volume_fraction", "volume_fraction", ()),
                   *((f"velocity_{a}", "velocity", (k,)) for k, a in enumerate("xyz")),
                   *((f"stress_{a}{b}", "stress", (k, m)) for k, m, a, b in
                     ((0, 0, "x", "x"), (1, 1, "y", "y"), (2, 2, "z", "z"), (0, 2, "x", "z"))),
                   ("pressure", "pressure", ()), ("stress_ratio", "stress_ratio", ()),
                   ("temperature", "temperature", ()), ("coordination", "coordination", ()))


def write_profiles(profiles, base: str) -> list:
    """``<base>.csv`` and ``<base>.png`` of the last mean profiles (rank 0; not collective)."""
    from pathlib import Path

    from ecs_dem.driver import write_csv

    step, time, fields = profiles.latest()
    z = profiles.grid.axes[2]
    columns = [np.asarray(fields[f])[0, 0, :, *idx] for _, f, idx in PROFILE_COLUMNS]
    base = Path(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    csv = write_csv(base.with_suffix(".csv"), ["z", *(n for n, _, _ in PROFILE_COLUMNS)],
                    [[float(z[k]), *(float(c[k]) for c in columns)] for k in range(z.size)])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    named = dict(zip((n for n, _, _ in PROFILE_COLUMNS), columns))
    fig, axes = plt.subplots(1, 4, figsize=(13, 4), sharey=True)
    for ax, names, label in zip(axes, (("volume_fraction",), ("velocity_x", "velocity_z"),
                                       ("stress_zz", "stress_xz", "stress_xx"),
                                       ("stress_ratio",)),
                                ("volume fraction", "velocity", "stress", "stress ratio q/p")):
        for name in names:
            ax.plot(named[name], z, label=name)
        ax.set_xlabel(label)
        if len(names) > 1:
            ax.legend(fontsize=8)
    axes[0].set_ylabel("z (grain diameters)")
    fig.suptitle(f"chute depth profiles at step {step} (mean of {profiles.window} evaluations "
                 f"{profiles.every} steps apart)")
    fig.tight_layout()
    png = base.with_suffix(".png")
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return [csv, png]


class LammpsThermo(Diagnostics):
    """Diagnostics printed as LAMMPS thermo lines: Step Atoms KinEng c_1 (erotate/sphere)."""

    def __init__(self, every, contacts, log=print):
        super().__init__(every, contact_systems=(contacts,))
        self.log = log

    def run(self, world):
        super().run(world)
        d = self.records[-1]
        self.log(f"{world.step:8d} {int(d['particles']):8d} {d['kinetic_energy']:12.8g} "
                 f"{d['rotational_energy']:12.8g}")


def run(job) -> int:
    world = build_world(job.cfg, job.print)
    job.print("Step Atoms KinEng c_1")
    status = job.run_world(world, job.cfg["steps"])
    n = observe.count(world, world.particles)  # collective: before the stopped run returns
    if job.cfg["profile_every"] > 0 and not world.stop_requested:
        profiles = next(s for s in world.systems if hasattr(s, "latest"))
        if profiles.fields:
            paths = job.write(write_profiles, profiles, job.cfg["profile_output"])
            if paths:
                job.print(f"depth profiles: {paths[0]}, {paths[1]}")
        else:
            job.print(f"no depth profiles: the run ended before step {profiles.every}")
    ran = world.step - world.first_step
    if not world.stop_requested:
        job.print(f"Loop time of {job.elapsed:.4g} s for {ran} steps with {n} atoms: "
                  f"{n * ran / max(job.elapsed, 1e-12):.4g} particle-steps/s; "
                  f"{world.domain.rebuild_count} neighbour builds")
    return status


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, run=run,
                      description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
