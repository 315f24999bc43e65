"""A wet sphere against a wet sphere: restitution against the Stokes number, critical Stokes number.

Two equal spheres, each carrying a liquid film, approach head-on at the
relative speed v. At contact a liquid bridge forms from their films
(``systems.wet.migration``); the linear spring-dashpot law pushes them
apart while the bridge pulls them back (capillary force from the half-filling
angle) and its liquid resists the motion (lubrication, from the minimum
separation to rupture): ``LiquidMigrationLS`` (Lian & Seville 2016;
MercuryDPM's two-particle LiquidMigrationLS self test is the same set-up).
The pair rebounds if the bridge ruptures, at (1 + theta/2) V^(1/3), with the
relative speed e v; it is captured (e = 0) when, after the contact, the
bridge turns the separating pair back toward each other.

The Stokes number St = m* v / (6 pi mu R*^2) (m*, R* the reduced mass and
radius, mu the viscosity); the critical Stokes number, below which the pair
never rebounds, is the midpoint between the largest St captured and the
smallest St that rebounds among the speeds run.

    python run/wet_collision.py
    python run/wet_collision.py --set speeds=0.2,0.5,1,2 --set viscosity=0.05

Writes ``<output>.csv`` (speed, St, e, bridge volume, steps) and prints
each case and the critical Stokes number. One rank (two particles).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, World
from ecs_dem.comm import SerialComm
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species, species_ranges
from ecs_dem.components.wet import add_liquid
from ecs_dem.driver import run_driver
from ecs_dem.errors import ConfigValueError
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.wet.laws import LiquidMigrationLS
from ecs_dem.systems.wet.migration import liquid_migration

DEFAULTS = {
    "radius": 1e-3,                 # m, each sphere
    "density": 2500.0,              # kg/m^3
    "kn": 2e3,                      # N/m, linear normal spring
    "gamman": 0.0,                  # 1/s, linear law's damping (0: elastic dry contact)
    "surface_tension": 0.072,       # N/m
    "contact_angle": 20.0,          # degrees
    "viscosity": 0.1,               # Pa s
    "min_separation": 1e-5,         # m, lubrication acts from here to rupture (v dt << it)
    "film": 5e-11,                  # m^3 on each sphere
    "max_bridge_volume": 1e-10,     # m^3
    "speeds": "0.1,0.2,0.4,0.6,0.8,1.2,2",  # m/s, relative approach speeds
    "gap": 2e-5,                    # m, initial separation of the surfaces
    "dt": 2e-7,                     # s
    "max_time": 0.05,               # s per case: neither ruptured nor captured by then: an error
    "output": "output/wet_collision",
}
RANGES = tuple((k, 0.0, math.inf, False) for k in
               ("radius", "kn", "viscosity", "min_separation", "max_bridge_volume",
                "gap", "dt", "max_time")) + (
    ("gamman", 0.0, math.inf, True), ("surface_tension", 0.0, math.inf, True),
    ("film", 0.0, math.inf, True), ("contact_angle", 0.0, 90.0, "[)"),
    *species_ranges(density="density"))


def speeds_of(cfg) -> list[float]:
    try:
        speeds = [float(v) for v in str(cfg["speeds"]).split(",")]
    except ValueError:
        raise ConfigValueError(f"config key 'speeds' = {cfg['speeds']!r}: give relative speeds "
                               "in m/s separated by commas, such as 0.2,0.5,1") from None
    if not speeds or min(speeds) <= 0:
        raise ConfigValueError(f"config key 'speeds' = {cfg['speeds']!r}: speeds must be > 0")
    return speeds


def reduced(cfg) -> tuple[float, float]:
    """(m*, R*) of the pair (kg, m)."""
    m = cfg["density"] * 4.0 / 3.0 * math.pi * cfg["radius"] ** 3
    return m / 2.0, cfg["radius"] / 2.0


def stokes_number(cfg, speed: float) -> float:
    mstar, rstar = reduced(cfg)
    return mstar * speed / (6.0 * math.pi * cfg["viscosity"] * rstar**2)


def build_world(cfg, speed: float):
    r = cfg["radius"]
    world = World(Box((-0.05,) * 3, (0.05,) * 3), dt=cfg["dt"], skin=0.1 * r, comm=SerialComm())
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=cfg["density"])
    x = r + 0.5 * cfg["gap"]
    add_particles(world, [[-x, 0, 0], [x, 0, 0]], r,
                  velocity=[[0.5 * speed, 0, 0], [-0.5 * speed, 0, 0]])
    add_liquid(world, cfg["film"])
    law = LiquidMigrationLS(
        LinearSpringDashpotLaw(kn=cfg["kn"], gamman=cfg["gamman"], friction=0.0),
        surface_tension=cfg["surface_tension"], contact_angle=cfg["contact_angle"],
        viscosity=cfg["viscosity"], min_separation=cfg["min_separation"],
        max_bridge_volume=cfg["max_bridge_volume"])
    contacts = ContactForces(law)
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *liquid_migration(contacts), contacts, second):
        world.add_system(s)
    return world


def collide(cfg, speed: float) -> dict:
    """One collision at relative speed `speed`: restitution e (0 when captured), the Stokes
    number, the bridge's volume and the steps run."""
    world = build_world(cfg, speed)
    world.setup()
    p = world.particles
    steps = int(round(cfg["max_time"] / cfg["dt"]))
    migration = world.systems[3]
    volume = 0.0
    done = 0
    chunk = 50
    separating = False
    order = np.argsort(p.gid[:2])
    while True:
        world.run(chunk)
        done += chunk
        if world.pairs.n_owned:
            volume = max(volume, float(world.pairs.bridge_volume[0, 0]))
        order = np.argsort(p.gid[:2])
        rate = float(p.velocity[order[1], 0] - p.velocity[order[0], 0])  # d(separation)/dt
        if migration.ruptured:
            e = rate / speed
            break
        if volume > 0.0 and rate > 0.0:
            separating = True
        elif separating and rate <= 0.0:  # the bridge turned the pair back: captured
            e = 0.0
            break
        if done >= steps:
            raise ConfigValueError(
                f"the collision at {speed} m/s neither rebounded nor was captured within "
                f"max_time = {cfg['max_time']} s; raise max_time")
    return {"speed": speed, "stokes": stokes_number(cfg, speed), "restitution": e,
            "bridge_volume": volume, "steps": done}


def critical_stokes(results) -> float:
    """Midpoint between the largest St captured and the smallest St that rebounds (nan when
    the speeds do not bracket it)."""
    captured = [r["stokes"] for r in results if r["restitution"] <= 0.0]
    rebound = [r["stokes"] for r in results if r["restitution"] > 0.0]
    if not captured or not rebound:
        return math.nan
    return 0.5 * (max(captured) + min(rebound))


def run_cases(job) -> int:
    cfg = job.cfg
    results = []
    for speed in speeds_of(cfg):
        r = collide(cfg, speed)
        results.append(r)
        job.print(f"v {speed:8.4g} m/s  St {r['stokes']:9.4g}  e {r['restitution']:.5f}  "
                  f"bridge {r['bridge_volume']:.4g} m^3")
    st_c = critical_stokes(results)
    job.print(f"critical Stokes number {st_c:.4g}")
    path = job.write_csv(f"{cfg['output']}.csv", ["speed", "stokes", "restitution",
                                                    "bridge_volume", "steps"],
                         [[r[k] for k in ("speed", "stokes", "restitution", "bridge_volume",
                                          "steps")] for r in results])
    if path is not None:
        job.print(f"wrote {path}")
    return 0


def check(cfg) -> None:
    speeds_of(cfg)
    Path(cfg["output"]).parent.mkdir(parents=True, exist_ok=True)


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run_cases,
                      description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
