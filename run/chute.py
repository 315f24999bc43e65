"""LAMMPS's granular chute benchmark (bench/in.chute) in ecs_dem.

32,000 spheres from LAMMPS's own data file (../shared/lammps-bench/data.chute):
gran/hooke/history (kn 2e5, kt 2/7 kn, gamman 50, no tangential damping,
friction 0.5), gravity 1 tilted 26 degrees, frozen base (type 2), periodic in
x and y, dt 1e-4, skin 0.1. LJ units, as in LAMMPS. Prints LAMMPS-style thermo
lines ("Step Atoms KinEng c_1"): at step 100 LAMMPS prints 784292.08 and
1571.0968.

    python run/chute.py                       # 100 steps, thermo every 100
    python run/chute.py --set steps=15000 --set thermo_every=1000
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, InputError, World, observe
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.driver import run_driver
from ecs_dem.io.lammps_data import read_sphere_data
from ecs_dem.runner import RUN_DEFAULTS
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.diagnostics import Diagnostics
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

REPO = Path(__file__).resolve().parents[1]
DEFAULTS = {
    "data": str(REPO.parent / "shared" / "lammps-bench" / "data.chute"),
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
    **RUN_DEFAULTS,  # checkpoint, checkpoint_every, restart, progress
    "progress": False,
}

#: (key, low, high, bounds included): the values a run can use (ecs_dem.config.check_ranges)
RANGES = (
    ("steps", 1, math.inf, True),
    ("thermo_every", 0, math.inf, True),
    ("checkpoint_every", 0, math.inf, True),
)


def build_world(cfg: dict, log=print) -> World:
    """The chute from ``cfg["data"]``; `log` prints the thermo lines (rank 0's print on
    several ranks: ``Job.print``)."""
    data = read_sphere_data(cfg["data"])
    if not np.any(data.type == cfg["frozen_type"]):
        raise InputError(f"config key 'frozen_type' = {cfg['frozen_type']}: no atom of that type "
                         f"in {cfg['data']} (types {sorted(set(data.type.tolist()))}), so there "
                         "would be no frozen base; give one of those types")
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
    return world


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
