"""Pour rigid clumps into a box, measure the packing fraction, release a side: angle of repose.

Clumps of the library's shapes (``shapes``: dimer, trimer, tetrahedron, flat, elongated,
ellipsoid_stl, and ``sphere``, comma-separated, equal volume fractions) are drawn from a
size distribution of their volume-equivalent diameters (``psd``: uniform, normal,
lognormal or a CSV file, between ``diameter_min`` and ``diameter_max``, by
``psd_basis``) and inserted at random without overlaps, in random orientations
(components.clumps.shapes, components.insertion), above the floor of a box of
``box_width`` square with four side walls. They fall and settle for ``settle_time``.

Packing fraction: the solid fraction of the union of the pebbles, counted on a grid
of points (spacing a tenth of the smallest pebble radius) in the bed's bulk: one
largest diameter in from the side walls, the floor and the bed's top (the 99th
percentile of the pebbles' tops).

Angle of repose: at ``settle_time`` the wall at x = box_width is taken away; the grains
flow out onto the floor, which reaches ``box_width`` * (1 + ``runout``) in x, for
``release_time``. The surface height h(x) (the highest pebble top in columns of one
largest diameter, taken over the whole depth) is fitted by a straight line where it lies
between 20 % and 80 % of the wall's side height; the angle is atan(-slope).

Output: ``<stem>.h5`` (snapshots of the pebbles with their body's gid and of the bodies,
a diagnostics time series), ``<stem>_profile.csv`` (x, h after the release),
``<stem>_summary.csv`` (packing fraction, angle of repose, bed height, grains) and
``<stem>.png`` (the profile and the fitted slope).

    python -m ecs_dem.run.clump_pour                      # dimers and tetrahedra
    python -m ecs_dem.run.clump_pour --set shapes=sphere  # the same pour with spheres
    python -m ecs_dem.run.clump_pour --set shapes=elongated,sphere --set grains=1500
"""
from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.clumps import library
from ecs_dem.components.clumps.shapes import clump_shape, equivalent_diameter
from ecs_dem.components.insertion.insert import InsertionError, add_to_world, insert
from ecs_dem.components.insertion.psd import SPHERE, Component, Mixture, psd_from_config
from ecs_dem.components.insertion.regions import BoxRegion
from ecs_dem.components.species import add_species, species_ranges
from ecs_dem.components.walls import add_wall
from ecs_dem.driver import run_driver
from ecs_dem.errors import ConfigValueError
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from ecs_dem.memory import check_particle_count
from ecs_dem.run.pour import DEFAULTS as POUR
from ecs_dem.runner import RUN_DEFAULTS
from ecs_dem.system import Stage, System
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.diagnostics import Diagnostics
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.rigid_body import rigid_bodies
from ecs_dem.systems.rigid_body.output import body_snapshot_writer, particle_fields
from ecs_dem.systems.walls.contacts import WallContacts

#: the keys taken from run/pour.py's defaults
MATERIAL = ("youngs_modulus", "poisson_ratio", "density", "restitution", "friction",
            "rolling_friction", "gravity")

DEFAULTS = {
    "shapes": "dimer,tetrahedron",  # library shapes and/or sphere, equal volume fractions
    "grains": 800,
    "diameter_min": 3e-3,           # m, volume-equivalent
    "diameter_max": 4e-3,           # m
    "psd": "uniform",               # uniform, normal, lognormal or a CSV file
    "psd_basis": "volume",
    "psd_mean": 0.0,                # m: normal mean, lognormal median
    "psd_spread": 0.0,
    "insert_fraction": 0.2,         # solid fraction of the bounding spheres at insertion
    "box_width": 0.04,              # m, square footprint
    "runout": 2.0,                  # floor beyond the released wall, in box widths
    **{k: POUR[k] for k in MATERIAL},  # run/pour.py's soft glass-like grains, gravity
    "settle_time": 0.4,             # s before the release
    "release_time": 0.4,            # s after it
    "dt_fraction": 0.2,             # of the smallest pebble's Rayleigh time
    "skin_fraction": 0.2,           # of the largest pebble radius
    "seed": 1,
    "output": "output/clump_pour.h5",
    "snapshot_every": 5000,         # steps; 0 = no snapshots
    "diagnostics_every": 1000,      # steps
    "quiet": False,
    "balance_every": 1000,
    **RUN_DEFAULTS,
}

RANGES = (
    ("grains", 1, math.inf, True), ("diameter_min", 0.0, math.inf, False),
    ("diameter_max", 0.0, math.inf, False), ("psd_mean", 0.0, math.inf, True),
    ("psd_spread", 0.0, math.inf, True), ("insert_fraction", 0.0, 0.35, "(]"),
    ("box_width", 0.0, math.inf, False), ("runout", 0.0, math.inf, False),
    *species_ranges(youngs_modulus="youngs_modulus", poisson_ratio="poisson_ratio",
                    density="density", restitution="restitution", friction="friction",
                    rolling_friction="rolling_friction"),
    ("gravity", 0.0, math.inf, False), ("settle_time", 0.0, math.inf, False),
    ("release_time", 0.0, math.inf, True), ("dt_fraction", 0.0, 1.0, False),
    ("skin_fraction", 0.0, math.inf, False), ("seed", 0, math.inf, True),
    ("snapshot_every", 0, math.inf, True), ("diagnostics_every", 1, math.inf, True),
    ("balance_every", 0, math.inf, True), ("checkpoint_every", 0, math.inf, True),
)
IDENTITY = ("shapes", "grains", "diameter_min", "diameter_max", "psd", "psd_basis", "psd_mean",
            "psd_spread", "insert_fraction", "box_width", "runout", "youngs_modulus",
            "poisson_ratio", "density", "restitution", "friction", "rolling_friction", "gravity",
            "settle_time", "seed")

#: the wall the release takes away (the fourth added: x = box_width, normal -x)
RELEASED_WALL = 2


def shapes_of(cfg: dict) -> list:
    """[(name, template or None for spheres)] of the ``shapes`` key."""
    names = [s.strip() for s in str(cfg["shapes"]).split(",") if s.strip()]
    if not names:
        raise ConfigValueError("config key 'shapes' is empty: name sphere or library shapes "
                               f"({', '.join(sorted(library.SHAPES))})")
    out = []
    for name in names:
        if name != "sphere" and name not in library.SHAPES:
            raise ConfigValueError(f"config key 'shapes': {name!r} is not sphere nor a library "
                                   f"shape ({', '.join(sorted(library.SHAPES))})")
        out.append((name, None if name == "sphere" else library.shape(name, 1.0)))
    return out


def mixture(cfg: dict) -> Mixture:
    if not 0 < cfg["diameter_min"] <= cfg["diameter_max"]:
        raise ConfigValueError(f"need 0 < diameter_min <= diameter_max (got "
                               f"{cfg['diameter_min']}, {cfg['diameter_max']})")
    hi = cfg["diameter_max"] * (1 + 1e-9) if cfg["diameter_max"] == cfg["diameter_min"] \
        else cfg["diameter_max"]
    psd = psd_from_config(cfg["psd"], d_min=cfg["diameter_min"], d_max=hi, basis=cfg["psd_basis"],
                          mean=cfg["psd_mean"], spread=cfg["psd_spread"])
    shapes = shapes_of(cfg)
    return Mixture([Component(psd, 1.0 / len(shapes), 0,
                              SPHERE if t is None else clump_shape(t)) for _, t in shapes],
                   basis="volume")


def smallest_pebble(cfg: dict) -> tuple[float, float]:
    """The smallest and the largest pebble radius a grain of the mixture can have [m]."""
    lo, hi = math.inf, 0.0
    for _, t in shapes_of(cfg):
        ratio = 0.5 if t is None else float(t.radii.min() / equivalent_diameter(t))
        top = 0.5 if t is None else float(t.radii.max() / equivalent_diameter(t))
        lo, hi = min(lo, ratio * cfg["diameter_min"]), max(hi, top * cfg["diameter_max"])
    return lo, hi


class Release(System):
    """Takes the wall at x = box_width away once the bed is measured (moves it past the
    runout; the wall's place is in the checkpoint, so a restart keeps it away)."""

    stage = Stage.INTEGRATE_FIRST
    writes = {"walls": ("point",)}

    def __init__(self, time: float, far: float):
        self.time, self.far = float(time), float(far)

    def run(self, world) -> None:
        if world.time > self.time and world.walls.point[RELEASED_WALL, 0] < self.far:
            world.walls.point[RELEASED_WALL, 0] = self.far


class MeasureBed(System):
    """At the first output after `time` (the release): the packing fraction of the settled
    bed (``measure``); collective."""

    stage = Stage.OUTPUT
    reads = {"particles": ("position", "radius")}

    def __init__(self, time: float, cfg: dict):
        self.time, self.cfg = float(time), cfg
        self.result = None

    def run(self, world) -> None:
        if self.result is None and world.time >= self.time - 0.5 * world.dt:
            self.result = measure(world, self.cfg, released=False)


def build_world(cfg: dict, output: Hdf5Output | None = None, comm=None) -> World:
    rng = np.random.default_rng(cfg["seed"])
    mix = mixture(cfg)
    width = cfg["box_width"]
    bounding = float(np.mean([c.shape.bounding**3 for c in mix.components])) * 8 * math.pi / 6
    height = max(cfg["grains"] * bounding * mix.components[0].psd.moment(3)
                 / (cfg["insert_fraction"] * width * width), 1.2 * cfg["diameter_max"] * 3)
    try:
        grains = insert(BoxRegion((0.0, 0.0, 0.0), (width, width, height)), mix, rng,
                        count=int(cfg["grains"]))
    except InsertionError as exc:
        raise ConfigValueError(f"{exc}. Here: lower insert_fraction "
                               f"({cfg['insert_fraction']})") from exc
    r_min, r_max = smallest_pebble(cfg)
    dt = cfg["dt_fraction"] * float(rayleigh_time(r_min, cfg["density"], cfg["youngs_modulus"],
                                                   cfg["poisson_ratio"]))
    far = width * (1 + cfg["runout"])
    world = World(Box((0.0, 0.0, 0.0), (far, width, height)), dt=dt,
                  skin=cfg["skin_fraction"] * r_max, comm=comm, balance_every=cfg["balance_every"])
    add_species(world, youngs_modulus=cfg["youngs_modulus"], poisson_ratio=cfg["poisson_ratio"],
                density=cfg["density"], restitution=cfg["restitution"], friction=cfg["friction"],
                rolling_friction=cfg["rolling_friction"])
    add_to_world(world, grains)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)),
                          ((width, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                          ((0, width, 0), (0, -1, 0))):
        add_wall(world, point, normal)
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    bodies = rigid_bodies() if "bodies" in world.tables else []
    world.add_system(Release(cfg["settle_time"], 2 * far))
    world.add_system(MeasureBed(cfg["settle_time"], cfg))
    contacts, walls = ContactForces(law), WallContacts(law)
    for s in (*bodies, first, NeighborSearch(), Gravity((0.0, 0.0, -cfg["gravity"])), contacts,
              walls, second, Diagnostics(cfg["diagnostics_every"], output, (contacts, walls),
                                         echo=not cfg["quiet"])):
        world.add_system(s)
    if output is not None and cfg["snapshot_every"] > 0:
        world.add_system(SnapshotWriter(output, cfg["snapshot_every"], particle_fields(
            world, ("gid", "position", "velocity", "radius", "species"))))
        if bodies:
            world.add_system(body_snapshot_writer(output, cfg["snapshot_every"]))
    return world


def packing_fraction(x, r, lo, hi) -> float:
    """The fraction of the box [lo, hi] inside the union of the spheres (x, r), counted at
    the centres of a grid of cells at most a tenth of the smallest radius wide."""
    n = [max(int(math.ceil((hi[a] - lo[a]) / (0.1 * float(r.min())))), 1) for a in range(3)]
    axes = [lo[a] + (hi[a] - lo[a]) / n[a] * (np.arange(n[a]) + 0.5) for a in range(3)]
    inside = np.zeros(tuple(a.size for a in axes), dtype=bool)
    for c, rad in zip(x, r):
        span = [np.flatnonzero(np.abs(axes[a] - c[a]) < rad) for a in range(3)]
        if any(s.size == 0 for s in span):
            continue
        sl = tuple(slice(s[0], s[-1] + 1) for s in span)
        gx, gy, gz = np.meshgrid(*(axes[a][sl[a]] for a in range(3)), indexing="ij")
        inside[sl] |= (gx - c[0]) ** 2 + (gy - c[1]) ** 2 + (gz - c[2]) ** 2 < rad * rad
    return float(inside.mean())


def surface_profile(x, r, column: float, length: float) -> tuple[np.ndarray, np.ndarray]:
    """Column centres and the highest pebble top in each column of width `column` [m]."""
    edges = np.arange(0.0, length + column, column)
    top = x[:, 2] + r
    k = np.clip(np.searchsorted(edges, x[:, 0], side="right") - 1, 0, edges.size - 2)
    height = np.zeros(edges.size - 1)
    np.maximum.at(height, k, top)
    return 0.5 * (edges[:-1] + edges[1:]), height


def repose_angle(centre, height, wall_height) -> tuple[float, np.ndarray]:
    """atan(-slope) in degrees of the line fitted where 0.2 < h / wall_height < 0.8, and the
    fit's (slope, intercept) (NaN when fewer than three columns lie there)."""
    near = (height > 0.2 * wall_height) & (height < 0.8 * wall_height)
    if np.count_nonzero(near) < 3:
        return math.nan, np.array([math.nan, math.nan])
    fit = np.polyfit(centre[near], height[near], 1)
    return math.degrees(math.atan(-fit[0])), fit


def measure(world, cfg: dict, released: bool) -> dict:
    """Packing fraction in the bulk (before the release) or the profile (after); collective."""
    p = world.particles
    x, r = observe.gather_by_gid(world, p, ("position", "radius"), root=None)
    d = cfg["diameter_max"]
    width = cfg["box_width"]
    if not released:
        top = float(np.percentile(x[:, 2] + r, 99))
        lo, hi = np.array([d, d, d]), np.array([width - d, width - d, top - d])
        if np.any(hi <= lo):
            raise ConfigValueError(f"the bed ({top * 1e3:.1f} mm high, {width * 1e3:.1f} mm wide) "
                                   "has no bulk to measure: use more grains or a wider box")
        return {"packing_fraction": packing_fraction(x, r, lo, hi), "bed_height": top}
    centre, height = surface_profile(x, r, d, width * (1 + cfg["runout"]))
    return {"profile": (centre, height)}


def write_results(stem: Path, cfg, before: dict, after: dict, grains: int) -> dict:
    centre, height = after["profile"]
    angle, fit = repose_angle(centre, height, before["bed_height"])
    stem.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{stem}_profile.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["x (m)", "surface height (m)"])
        w.writerows([[f"{a:.6g}", f"{b:.6g}"] for a, b in zip(centre, height)])
    summary = {"shapes": cfg["shapes"], "grains": grains,
               "packing_fraction": before["packing_fraction"],
               "bed_height (m)": before["bed_height"], "angle_of_repose (deg)": angle}
    with open(f"{stem}_summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(summary))
        w.writerow([v if isinstance(v, str) else f"{v:.6g}" for v in summary.values()])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(centre * 1e3, height * 1e3, "o-", ms=3, label="surface")
    if np.isfinite(angle):
        ax.plot(centre * 1e3, np.polyval(fit, centre) * 1e3, "--", label=f"{angle:.1f} deg")
    ax.set_ylim(0, before["bed_height"] * 1.2e3)
    ax.set_xlabel("x (mm)")
    ax.set_ylabel("height (mm)")
    ax.set_title(f"{cfg['shapes']}: packing {before['packing_fraction']:.3f}, "
                 f"repose {angle:.1f} deg")
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{stem}.png", dpi=100)
    plt.close(fig)
    return summary


def check(cfg: dict) -> None:
    shapes_of(cfg)
    per_grain = max(1 if t is None else t.count for _, t in shapes_of(cfg))
    check_particle_count(cfg["grains"] * per_grain, default_comm())


def run(job) -> int:
    cfg = job.cfg
    path = Path(cfg["output"])
    with job.open_output(path, checkpoint_beside=True) as output:
        world = build_world(cfg, output, job.comm)
        total = int(round((cfg["settle_time"] + cfg["release_time"]) / world.dt))
        n = world.particles.n_owned
        job.print(f"clump pour: {cfg['grains']} grains ({cfg['shapes']}), {n} pebbles and "
                  f"spheres, dt = {world.dt:.3g} s, {total} steps, output {path}")
        status = job.run_world(world, total, identity=IDENTITY)
        if world.stop_requested:
            return status
        before = next(s for s in world.systems if isinstance(s, MeasureBed)).result
        if before is None:
            raise ConfigValueError("the run restarted after the release and has no packing "
                                   "fraction of the settled bed: run it from the start")
        job.print(f"settled: packing fraction {before['packing_fraction']:.4f}, bed "
                  f"{before['bed_height'] * 1e3:.1f} mm high")
        after = measure(world, cfg, released=True)
    summary = job.write(write_results, path.with_suffix(""), cfg, before, after,
                        int(cfg["grains"]))
    if summary is not None:
        job.print(f"angle of repose {summary['angle_of_repose (deg)']:.1f} deg; "
                  f"{path.with_suffix('')}_summary.csv, _profile.csv, .png")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run,
                      description=__doc__.splitlines()[0], prog="python -m ecs_dem.run.clump_pour")


if __name__ == "__main__":
    sys.exit(main())
