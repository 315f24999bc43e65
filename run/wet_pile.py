"""Angle of repose of wet grains against their liquid content: a collapsing column spreads into a heap.

A column of ``particles`` grains (radii uniform in [radius_min, radius_max],
on a jittered lattice of width ``column_width`` grain diameters) stands on a
rough floor (a square layer of fixed grains of radius_max, dry) in a slab
periodic along y (``depth`` diameters deep): a quasi-two-dimensional heap.
Every grain carries the same liquid film, ``content`` times its own volume
(the liquid content, a volume ratio of liquid to solid); for each content of
``contents`` the column collapses under gravity for ``duration`` and comes to
rest as a heap. Grains touching form liquid bridges from their films
(``LiquidMigrationWillet`` on Hertz-Mindlin without rolling resistance:
``systems.wet``), which hold them together until the bridge ruptures.

Angle of repose: the heap is cut along x into bins of width 2 radius_max;
the top of each bin is its highest z + r. On each flank (x < 0 and x > 0)
a line is fitted by least squares to the tops between ``fit_low`` and
``fit_high`` of the heap's height above the floor, and the angle is the mean
of the two |atan(slope)|. The driver also reports the kinetic energy left
(a heap still moving gives a lower bound) and the liquid balance.

    python run/wet_pile.py
    python run/wet_pile.py --set contents=0,0.001,0.003,0.01 --set particles=1500
    mpiexec.mpich -n 2 .venv/bin/python run/wet_pile.py

Writes ``<output>.csv`` (content, angle, the two flanks, bridges, kinetic
energy) and ``<output>.png`` (angle against content).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species, species_ranges
from ecs_dem.components.walls import add_wall
from ecs_dem.components.wet import add_liquid
from ecs_dem.driver import run_driver, write_csv
from ecs_dem.errors import ConfigValueError, InputError
from ecs_dem.io.paths import unwritable
from ecs_dem.memory import check_particle_count
from ecs_dem.runner import run_or_stop
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.diagnostics import kinetic_energy
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts
from ecs_dem.systems.wet.balance import liquid_totals
from ecs_dem.systems.wet.laws import LiquidMigrationWillet
from ecs_dem.systems.wet.migration import liquid_migration

DEFAULTS = {
    "particles": 600,
    "radius_min": 1.8e-3,           # m
    "radius_max": 2.2e-3,           # m
    "column_width": 8,              # grain diameters (2 radius_max), along x
    "depth": 4,                     # grain diameters, the periodic slab along y
    "youngs_modulus": 1e7,          # Pa (soft, for a larger time step)
    "poisson_ratio": 0.3,
    "density": 2500.0,              # kg/m^3
    "restitution": 0.3,
    "friction": 0.5,
    "gravity": 9.81,                # m/s^2, along -z
    "contents": "0,0.001,0.004,0.01",  # liquid volume / grain volume, comma-separated
    "surface_tension": 0.072,       # N/m
    "contact_angle": 20.0,          # degrees
    "max_bridge_volume": 1e-10,     # m^3
    "duration": 0.8,                # s per content
    "fit_low": 0.15,                # of the heap's height: the flank fit's lowest top
    "fit_high": 0.8,                # and its highest
    "dt_fraction": 0.2,             # dt as a fraction of the Rayleigh time of radius_min
    "skin_fraction": 0.2,           # skin as a fraction of radius_max
    "seed": 1,
    "output": "output/wet_pile",
}

RANGES = (
    ("particles", 10, math.inf, True),
    ("radius_min", 0.0, math.inf, False),
    ("radius_max", 0.0, math.inf, False),
    ("column_width", 2, math.inf, True),
    ("depth", 2, math.inf, True),
    *species_ranges(youngs_modulus="youngs_modulus", poisson_ratio="poisson_ratio",
                    density="density", restitution="restitution", friction="friction"),
    ("gravity", 0.0, math.inf, False),
    ("surface_tension", 0.0, math.inf, True),
    ("contact_angle", 0.0, 90.0, "[)"),
    ("max_bridge_volume", 0.0, math.inf, False),
    ("duration", 0.0, math.inf, False),
    ("fit_low", 0.0, 1.0, True),
    ("fit_high", 0.0, 1.0, True),
    ("dt_fraction", 0.0, 1.0, False),
    ("skin_fraction", 0.0, math.inf, False),
    ("seed", 0, math.inf, True),
)


def contents_of(cfg) -> list[float]:
    try:
        values = [float(v) for v in str(cfg["contents"]).split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) and v >= 0 for v in values):
        raise ConfigValueError(f"config key 'contents' = {cfg['contents']!r}: give liquid "
                               "contents (liquid / grain volume, >= 0), comma-separated, such "
                               "as 0,0.002,0.01")
    return values


def geometry(cfg) -> dict:
    """The slab's sizes (m): column half-width, depth, column height, box half-length."""
    d = 2.0 * cfg["radius_max"]
    spacing = 1.05 * d
    nx, ny = int(cfg["column_width"]), int(cfg["depth"])
    layers = math.ceil(cfg["particles"] / (nx * ny))
    height = d + layers * spacing             # above the rough floor
    return {"spacing": spacing, "nx": nx, "ny": ny, "layers": layers, "depth": ny * spacing,
            "half_width": 0.5 * nx * spacing, "height": height,
            "half_length": 0.5 * nx * spacing + 2.5 * height}


def column(cfg, rng) -> tuple[np.ndarray, np.ndarray]:
    """Grain centres and radii of the column (gid order)."""
    g = geometry(cfg)
    s = g["spacing"]
    xs = (np.arange(g["nx"]) - 0.5 * (g["nx"] - 1)) * s
    ys = (np.arange(g["ny"]) + 0.5) * s
    zs = 2.0 * cfg["radius_max"] + (np.arange(g["layers"]) + 0.5) * s
    z, x, y = np.meshgrid(zs, xs, ys, indexing="ij")
    pos = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)[:cfg["particles"]]
    pos += rng.uniform(-0.02, 0.02, pos.shape) * s
    return pos, rng.uniform(cfg["radius_min"], cfg["radius_max"], len(pos))


def floor_grains(cfg) -> np.ndarray:
    """The rough floor: fixed grains of radius_max touching z = 0 on a square lattice."""
    g = geometry(cfg)
    d = 2.0 * cfg["radius_max"]
    nx = int(2 * g["half_length"] / d)
    ny = max(int(round(g["depth"] / d)), 1)
    xs = (np.arange(nx) - 0.5 * (nx - 1)) * d
    ys = (np.arange(ny) + 0.5) * g["depth"] / ny
    x, y = np.meshgrid(xs, ys, indexing="ij")
    return np.stack([x.ravel(), y.ravel(), np.full(x.size, cfg["radius_max"])], axis=1)


def time_step(cfg) -> float:
    return cfg["dt_fraction"] * float(rayleigh_time(cfg["radius_min"], cfg["density"],
                                                    cfg["youngs_modulus"], cfg["poisson_ratio"]))


def build_world(cfg, content: float, comm=None) -> World:
    g = geometry(cfg)
    rng = np.random.default_rng(cfg["seed"])
    box = Box((-g["half_length"], 0.0, 0.0), (g["half_length"], g["depth"], 1.5 * g["height"]),
              (False, True, False))
    world = World(box, dt=time_step(cfg), skin=cfg["skin_fraction"] * cfg["radius_max"],
                  comm=comm)
    add_species(world, youngs_modulus=cfg["youngs_modulus"], poisson_ratio=cfg["poisson_ratio"],
                density=cfg["density"], restitution=cfg["restitution"],
                friction=cfg["friction"])
    pos, radius = column(cfg, rng)
    add_particles(world, pos, radius)
    add_particles(world, floor_grains(cfg), cfg["radius_max"], fixed=True)
    n = len(pos)
    add_liquid(world, content * 4.0 / 3.0 * math.pi * radius**3, rows=np.arange(n))
    add_wall(world, [0.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    law = LiquidMigrationWillet(HertzMindlinLaw(), surface_tension=cfg["surface_tension"],
                                contact_angle=cfg["contact_angle"],
                                max_bridge_volume=cfg["max_bridge_volume"])
    contacts = ContactForces(law)
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), Gravity((0.0, 0.0, -cfg["gravity"])),
              *liquid_migration(contacts), contacts, WallContacts(HertzMindlinLaw()), second):
        world.add_system(s)
    return world


def flank_angles(x, top_z, r_max: float, low: float, high: float) -> tuple[float, float]:
    """(left, right) flank angles in degrees (module docstring) of a heap whose grains have
    centres x and tops top_z (z + r, above the floor's top at 2 r_max); NaN for a flank
    with fewer than three bins in the fitted band."""
    floor = 2.0 * r_max
    width = 2.0 * r_max
    edges = np.arange(x.min() - width, x.max() + 2 * width, width)
    k = np.digitize(x, edges) - 1
    top = np.full(len(edges) - 1, -np.inf)
    np.maximum.at(top, k, top_z)
    centres = 0.5 * (edges[:-1] + edges[1:])
    h = top - floor
    peak = float(np.max(h))
    band = np.isfinite(h) & (h >= low * peak) & (h <= high * peak)
    angles = []
    summit = centres[int(np.argmax(h))]
    for side in (centres < summit, centres > summit):
        sel = band & side
        if np.count_nonzero(sel) < 3:
            angles.append(math.nan)
            continue
        slope = np.polyfit(centres[sel], h[sel], 1)[0]
        angles.append(math.degrees(math.atan(abs(slope))))
    return angles[0], angles[1]


def heap(cfg, content: float, comm=None) -> dict:
    """One content: collapse, then the angle, bridges and what is left moving."""
    world = build_world(cfg, content, comm)
    world.setup()
    run_or_stop(world, int(round(cfg["duration"] / world.dt)), f"the heap at {content}")
    p = world.particles
    mobile = ~p.fixed
    x = observe.concatenated(world, p.position[mobile, 0])
    top = observe.concatenated(world, p.position[mobile, 2] + p.radius[mobile])
    left, right = flank_angles(x, top, cfg["radius_max"], cfg["fit_low"], cfg["fit_high"])
    pairs = world.pairs
    bridges = observe.count(world, pairs.owned("bridge_volume")[:, 0] > 0)
    totals = liquid_totals(world)
    energy = kinetic_energy(world, mobile)
    mass = observe.total(world, p.mass[mobile])
    return {"content": content, "angle": float(np.nanmean([left, right])), "left": left,
            "right": right, "bridges": bridges, "liquid": totals["inserted"],
            "imbalance": totals["imbalance"],
            "kinetic_per_weight": energy / (mass * cfg["gravity"] * cfg["radius_max"])}


HEADER = ("content", "angle_deg", "left_deg", "right_deg", "bridges", "liquid_m3",
          "imbalance_m3", "kinetic_energy_per_m_g_r")
KEYS = ("content", "angle", "left", "right", "bridges", "liquid", "imbalance",
        "kinetic_per_weight")


def write_outputs(results, output: str) -> None:
    write_csv(f"{output}.csv", HEADER, [[r[k] for k in KEYS] for r in results], ".6g")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    c = [100 * r["content"] for r in results]
    ax.plot(c, [r["angle"] for r in results], "o-", label="mean")
    ax.plot(c, [r["left"] for r in results], "x", label="left flank")
    ax.plot(c, [r["right"] for r in results], "+", label="right flank")
    ax.set_xlabel("liquid content (% of grain volume)")
    ax.set_ylabel("angle of repose (deg)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{output}.png", dpi=120)
    plt.close(fig)


def check(cfg) -> None:
    contents_of(cfg)
    if not 0 < cfg["radius_min"] <= cfg["radius_max"]:
        raise ConfigValueError(f"need 0 < radius_min <= radius_max (got {cfg['radius_min']}, "
                               f"{cfg['radius_max']}): swap them or set them equal")
    if cfg["fit_low"] >= cfg["fit_high"]:
        raise ConfigValueError(f"need fit_low < fit_high (got {cfg['fit_low']}, "
                               f"{cfg['fit_high']})")
    problem = unwritable(Path(f"{cfg['output']}.csv"))
    if problem:
        raise InputError(problem)
    check_particle_count(cfg["particles"], default_comm())


def run(job) -> int:
    cfg = job.cfg
    results = []
    job.on_stop = lambda: f"nothing written ({len(results)} contents had finished)"
    job.print(f"wet pile: {cfg['particles']} grains, dt = {time_step(cfg):.3g} s, "
              f"{cfg['duration']} s per content")
    for content in contents_of(cfg):
        r = heap(cfg, content, job.comm)
        results.append(r)
        job.print(f"content {content:8.4g}  angle {r['angle']:6.2f} deg (flanks {r['left']:.2f}, "
                  f"{r['right']:.2f})  bridges {r['bridges']}  kinetic energy "
                  f"{r['kinetic_per_weight']:.2g} m g r  imbalance {r['imbalance']:.2g} m^3")
    Path(cfg["output"]).parent.mkdir(parents=True, exist_ok=True)
    job.write(write_outputs, results, cfg["output"])
    job.print(f"wrote {cfg['output']}.csv and {cfg['output']}.png")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run,
                      description=__doc__.splitlines()[0], soft_kill=True)


if __name__ == "__main__":
    sys.exit(main())
