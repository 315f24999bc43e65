"""Pour a polydisperse bed into a box and let it settle under gravity.

About 5,000 Hertz-Mindlin spheres (radius 1.5-2.5 mm, a soft glass-like
material) start on a loose jittered lattice above the floor of a box with
four side walls, fall and settle. Radii are uniform between radius_min and
radius_max unless ``psd`` names a particle size distribution
(ecs_dem.components.insertion: uniform, normal or lognormal between the
diameters 2 radius_min and 2 radius_max, by ``psd_basis``, or a CSV file of
diameters and cumulative fractions); ``insertion = "random"`` places the
grains at random without overlaps in a box above the floor at solid fraction
``insert_fraction`` instead of the lattice. With a ``psd``, the inserted
sizes are checked against it in ``<output stem>_psd.csv`` and ``.png``.
Output goes to ``output/pour.h5``: snapshots of the particles every ``snapshot_every`` steps and a diagnostics
time series (kinetic energy, contacts, wall forces) every ``diagnostics_every``
steps. The run ends with the fraction of kinetic energy left and the
pressure on the floor against the weight of the bed.

    python run/pour.py                          # defaults, about 10 s
    python run/pour.py --set particles=20000 --set duration=0.8
    python run/pour.py --config my_pour.toml --show-config
    python run/pour.py --set psd=lognormal --set psd_mean=4e-3 --set psd_spread=0.2 \
        --set psd_basis=volume --set insertion=random
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.insertion.check import write_check
from ecs_dem.components.insertion.insert import InsertionError, insert
from ecs_dem.components.insertion.psd import psd_from_config, uniform
from ecs_dem.components.insertion.regions import BoxRegion
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species, species_ranges
from ecs_dem.components.walls import add_wall
from ecs_dem.driver import on_rank_0, run_driver
from ecs_dem.errors import ConfigValueError
from ecs_dem.runner import RUN_DEFAULTS
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from ecs_dem.memory import check_particle_count
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.diagnostics import Diagnostics, kinetic_energy
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

DEFAULTS = {
    "particles": 5000,
    "radius_min": 1.5e-3,          # m
    "radius_max": 2.5e-3,          # m
    "psd": "",                     # "": uniform radii; uniform, normal, lognormal or a CSV file
    "psd_basis": "number",         # number, length, surface or volume: what the PSD's fractions count
    "psd_mean": 0.0,               # m, diameter: normal mean, lognormal median
    "psd_spread": 0.0,             # normal: std of the diameter (m); lognormal: std of ln d
    "insertion": "lattice",        # lattice (jittered) or random (no overlaps, in a box)
    "insert_fraction": 0.25,       # random insertion: solid fraction of the insertion box
    "box_width": 0.08,             # m, square footprint
    "youngs_modulus": 1e7,         # Pa (soft, to allow a larger time step)
    "poisson_ratio": 0.3,
    "density": 2500.0,             # kg/m^3
    "restitution": 0.5,
    "friction": 0.5,
    "rolling_friction": 0.0,
    "gravity": 9.81,               # m/s^2
    "duration": 0.5,               # s of simulated time
    "dt_fraction": 0.2,            # dt as a fraction of the Rayleigh time
    "skin_fraction": 0.2,          # skin as a fraction of radius_max
    "seed": 1,
    "output": "output/pour.h5",
    "snapshot_every": 2500,        # steps; 0 = no snapshots
    "diagnostics_every": 500,      # steps
    "quiet": False,
    "balance_every": 1000,         # steps between load balancing (several ranks); 0 = off
    **RUN_DEFAULTS,  # checkpoint ("": the output with .checkpoint.h5), checkpoint_every, restart, progress
}

#: (key, low, high, bounds included): the values a run can use (ecs_dem.config.check_ranges)
RANGES = (
    ("particles", 1, math.inf, True),
    ("radius_min", 0.0, math.inf, False),
    ("radius_max", 0.0, math.inf, False),
    ("box_width", 0.0, math.inf, False),
    ("psd_mean", 0.0, math.inf, True),
    ("psd_spread", 0.0, math.inf, True),
    ("insert_fraction", 0.0, 0.4, "(]"),
    *species_ranges(youngs_modulus="youngs_modulus", poisson_ratio="poisson_ratio",
                    density="density", restitution="restitution", friction="friction",
                    rolling_friction="rolling_friction"),
    ("gravity", 0.0, math.inf, True),
    ("duration", 0.0, math.inf, False),
    ("dt_fraction", 0.0, 1.0, False),
    ("skin_fraction", 0.0, math.inf, False),
    ("seed", 0, math.inf, True),
    ("snapshot_every", 0, math.inf, True),
    ("diagnostics_every", 1, math.inf, True),
    ("balance_every", 0, math.inf, True),
    ("checkpoint_every", 0, math.inf, True),
)
#: what a restart must share with its checkpoint (ecs_dem.runner.check_restart)
IDENTITY = ("particles", "radius_min", "radius_max", "psd", "psd_basis", "psd_mean", "psd_spread",
            "insertion", "insert_fraction", "box_width", "youngs_modulus", "poisson_ratio",
            "density", "restitution", "friction", "rolling_friction", "gravity", "seed")


def lattice_positions(n: int, width: float, spacing: float, rng) -> np.ndarray:
    """n points on a jittered cubic lattice of the given spacing inside the footprint."""
    per_side = int(np.floor(width / spacing))
    if per_side < 1:
        raise ConfigValueError(f"box_width {width} m is smaller than one lattice spacing "
                               f"{spacing:.4g} m (2.2 radius_max): widen the box or use smaller "
                               "grains")
    layers = int(np.ceil(n / per_side**2))
    k = np.arange(layers * per_side**2)[:n]
    ix, iy, iz = k % per_side, (k // per_side) % per_side, k // per_side**2
    pos = np.stack([ix, iy, iz], axis=1) * spacing + 0.5 * spacing
    pos[:, :2] += 0.5 * (width - per_side * spacing)
    pos += rng.uniform(-0.05, 0.05, pos.shape) * spacing
    return pos


def size_distribution(cfg: dict):
    """The PSD the config names, or None (radii uniform in [radius_min, radius_max])."""
    if not str(cfg["psd"]).strip():
        return None
    return psd_from_config(cfg["psd"], d_min=2 * cfg["radius_min"], d_max=2 * cfg["radius_max"],
                           basis=cfg["psd_basis"], mean=cfg["psd_mean"], spread=cfg["psd_spread"])


def initial_packing(cfg: dict, rng, psd) -> tuple[np.ndarray, np.ndarray, float]:
    """Positions, radii and the height of the box, on the lattice or inserted at random."""
    n, width = cfg["particles"], cfg["box_width"]
    rmax = cfg["radius_max"] if psd is None else 0.5 * psd.d_max
    if cfg["insertion"] == "lattice":
        spacing = 2.2 * rmax
        pos = lattice_positions(n, width, spacing, rng)
        radius = (rng.uniform(cfg["radius_min"], cfg["radius_max"], n) if psd is None
                  else psd.sample_radii(n, rng))
        return pos, radius, float(pos[:, 2].max()) + spacing
    if cfg["insertion"] != "random":
        raise ConfigValueError(f"insertion = {cfg['insertion']!r}: use lattice or random")
    psd = psd or uniform(2 * cfg["radius_min"], 2 * cfg["radius_max"])
    if width <= 2 * rmax:
        raise ConfigValueError(f"box_width {width} m is not wider than the largest grain "
                               f"({2 * rmax:.4g} m): widen the box or use smaller grains")
    height = max(n * psd.mean_volume() / (cfg["insert_fraction"] * width * width), 2.2 * rmax)
    try:
        grains = insert(BoxRegion((0.0, 0.0, 0.0), (width, width, height)), psd, rng, count=n)
    except InsertionError as exc:
        raise ConfigValueError(f"{exc}. Here: lower insert_fraction "
                               f"({cfg['insert_fraction']})") from exc
    return grains.position, grains.radius, height


def build_world(cfg: dict, output: Hdf5Output | None = None, comm=None) -> World:
    rng = np.random.default_rng(cfg["seed"])
    rmin, rmax = cfg["radius_min"], cfg["radius_max"]
    if not 0 < rmin <= rmax:
        raise ConfigValueError(f"need 0 < radius_min <= radius_max (got {rmin}, {rmax}): "
                               "swap them or set them equal")
    psd = size_distribution(cfg)
    if psd is not None:
        rmin, rmax = 0.5 * psd.d_min, 0.5 * psd.d_max
    pos, radius, height = initial_packing(cfg, rng, psd)
    width = cfg["box_width"]
    box = Box((0.0, 0.0, 0.0), (width, width, height))
    dt = cfg["dt_fraction"] * float(rayleigh_time(rmin, cfg["density"], cfg["youngs_modulus"],
                                                   cfg["poisson_ratio"]))
    world = World(box, dt=dt, skin=cfg["skin_fraction"] * rmax, comm=comm,
                  balance_every=cfg["balance_every"])
    add_species(world, youngs_modulus=cfg["youngs_modulus"], poisson_ratio=cfg["poisson_ratio"],
                density=cfg["density"], restitution=cfg["restitution"], friction=cfg["friction"],
                rolling_friction=cfg["rolling_friction"])
    add_particles(world, pos, radius, 0)
    if psd is not None and output is not None:
        stem = Path(cfg["output"]).with_suffix("")
        on_rank_0(world, write_check, f"{stem}_psd", psd, 2 * radius,
                  title=f"pour: {radius.size} grains against the requested PSD")
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((width, 0, 0), (-1, 0, 0)),
                          ((0, 0, 0), (0, 1, 0)), ((0, width, 0), (0, -1, 0))):
        add_wall(world, point, normal)

    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    world.add_system(first)
    world.add_system(NeighborSearch())
    world.add_system(Gravity((0.0, 0.0, -cfg["gravity"])))
    contacts = world.add_system(ContactForces(law))
    walls = world.add_system(WallContacts(law))
    world.add_system(second)
    world.add_system(Diagnostics(cfg["diagnostics_every"], output, (contacts, walls),
                                 echo=not cfg["quiet"]))
    if output is not None and cfg["snapshot_every"] > 0:
        world.add_system(SnapshotWriter(output, cfg["snapshot_every"]))
    return world


def check(cfg: dict) -> None:
    """The particles must fit in memory (every rank holds them all until the set-up)."""
    check_particle_count(cfg["particles"], default_comm())


def run(job) -> int:
    cfg = job.cfg
    path = Path(cfg["output"])
    with job.open_output(path, checkpoint_beside=True) as output:
        world = build_world(cfg, output, job.comm)
        steps = int(round(cfg["duration"] / world.dt))
        n = world.particles.n_owned  # before set-up every rank holds all particles
        job.print(f"pour: {n} particles, dt = {world.dt:.3g} s, {steps} steps "
                  f"({cfg['duration']} s), output {path}")
        status = job.run_world(world, steps, identity=IDENTITY)
        if world.stop_requested:
            return status
    p = world.particles
    weight = observe.total(world, p.mass) * cfg["gravity"]
    top = observe.largest(world, p.position[:, 2] + p.radius, empty=0.0)
    floor = float(world.walls.force[0, 2])
    ke = kinetic_energy(world)
    contacts = observe.sum_of(world, sum(getattr(s, "touching", 0) for s in world.systems))
    ran = world.step - world.first_step
    job.print(f"done: step {world.step} ({ran} steps) in {job.elapsed:.1f} s, "
              f"{n * ran / max(job.elapsed, 1e-9):.3g} particle-steps/s"
              + (f" on {job.ranks} ranks" if job.ranks > 1 else ""))
    job.print(f"bed: top {top * 1e3:.1f} mm, kinetic energy {ke:.3g} J, {int(contacts)} contacts")
    job.print(f"floor force {-floor:.4g} N against bed weight {weight:.4g} N "
              f"(side walls carry the rest by friction: Janssen)")
    job.print(f"snapshots and time series in {path}")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run,
                      description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
