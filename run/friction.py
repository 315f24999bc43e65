"""The sliding test of Goetz & Poeschel Sect. 3.2: a grain dragged over a membrane, both models.

A grain (radius 2 mm) is pressed onto a flat membrane by a constant load and
dragged horizontally at 0.05 m/s, free only vertically, its rotation
suppressed. The membrane is either MSS_patch (triangles of side 1.33 mm) or
MSS_particle (vertex spheres of radius 0.67 mm at 1.33 mm spacing), and
either kinematic (every vertex fixed) or free (pre-tensioned and clamped at
its rim). Three paths: along a mesh edge between vertex rows, along a row of
vertices, and oblique (17 degrees). Smooth patches should give a constant
height and a constant friction force F_t = mu F_n; vertex spheres give
bumps (Fig. 6 of the paper).

    python run/friction.py                                 # every case, a few minutes here
    python run/friction.py --set models=patch --set variants=kinematic
    python run/friction.py --set length=0.01
    mpiexec.mpich -n 2 .venv/bin/python run/friction.py   # any number of ranks; rank 0 writes

Writes ``output/friction.csv`` (one row per sample: model, variant, path,
position along the path, F_t, F_n, height) and ``output/friction.png`` (F_t
and the height against position), and prints, per case, the mean and
relative standard deviation of F_n and F_t and the mean of F_t / (mu F_n).
The friction coefficient of the pair is the mean of the grain's and the
membrane's (Hertz-Mindlin mixing): 0.25 and 1.2 give 0.725.

SIGINT or SIGTERM stops it after the current step with exit code 128 + the
signal's number, writing nothing (its files are written after the last case;
there is no checkpoint: the cases are short).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, InputError, Stage, System, World, observe
from ecs_dem.components.membranes import add_membrane, membrane_ranges, membrane_vertices
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.particles import add_particles, create_particle_table, fix_particles
from ecs_dem.components.species import add_species, species_ranges
from ecs_dem.driver import run_driver, write_csv
from ecs_dem.errors import ConfigValueError
from ecs_dem.io.paths import unwritable
from ecs_dem.runner import run_or_stop
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.membrane.systems import membrane_systems
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.membrane.patch_contacts import PatchContacts
from ecs_dem.systems.membrane.patch_search import PatchSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

DEFAULTS = {
    "models": "patch,particle",         # patch (MSS_patch) and/or particle (MSS_particle)
    "variants": "kinematic,free",
    "paths": "edge,vertices,oblique",
    "grain_radius": 2e-3,               # m
    "grain_density": 2500.0,            # kg/m^3
    "grain_modulus": 4.6e10,            # Pa (Table 2)
    "grain_poisson": 0.245,
    "grain_friction": 0.25,
    "membrane_friction": 1.2,
    "membrane_modulus": 1.25e6,         # Pa (Table 2)
    "membrane_thickness": 3e-4,         # m
    "membrane_density": 1000.0,         # kg/m^3
    "restitution": 0.3,                 # grain and membrane (low: the grain settles quickly)
    "spacing": 1.33e-3,                 # m: patch side, or vertex spacing of MSS_particle
    "vertex_radius": 0.67e-3,           # m, MSS_particle
    "sheet": 0.024,                     # m, side of the square sheet
    "load": 0.05,                       # N pressing the grain down
    "speed": 0.05,                      # m/s
    "length": 0.008,                    # m dragged and sampled
    "run_in": 0.003,                    # m dragged first (the springs load up), not sampled
    "settle": 0.03,                     # s at rest under the load first
    "pretension": 0.01,                 # free variant: strain of the clamped sheet
    "membrane_damping": 0.3,            # damping ratio of the free membrane's springs
    "dt": 0.0,                          # s; 0: 1e-6 kinematic, 2e-7 free (its vertex springs)
    "samples": 400,
    "output": "output/friction",
}
PATHS = {"edge": (0.0, 0.25), "vertices": (0.0, 0.0), "oblique": (17.0, 0.1)}  # degrees, y offset / h
#: (key, low, high, bounds included): the values a run can use (ecs_dem.config.check_ranges)
RANGES = (
    ("load", 0.0, math.inf, False), ("speed", 0.0, math.inf, False),
    ("length", 0.0, math.inf, False), ("run_in", 0.0, math.inf, True),
    ("settle", 0.0, math.inf, True), ("pretension", -1.0, math.inf, False),
    ("membrane_damping", 0.0, math.inf, True), ("dt", 0.0, math.inf, True),
    ("samples", 1, math.inf, True),
    # the geometry and materials, named by their keys here (the components check them again)
    ("grain_radius", 0.0, math.inf, False), ("spacing", 0.0, math.inf, False),
    ("vertex_radius", 0.0, math.inf, False), ("sheet", 0.0, math.inf, False),
    *species_ranges(grain_density="density", grain_modulus="youngs_modulus",
                    grain_poisson="poisson_ratio", grain_friction="friction",
                    membrane_friction="friction", membrane_modulus="youngs_modulus",
                    membrane_density="density", restitution="restitution"),
    *membrane_ranges(membrane_thickness="thickness"),
)


class Drag(System):
    """Hold the grain's horizontal velocity at the drag velocity and suppress its rotation;
    its vertical motion stays free. Adds the load."""

    stage = Stage.INTEGRATE_SECOND
    reads = {"particles": ("membrane",)}
    writes = {"particles": ("velocity", "angular_velocity")}

    def __init__(self, velocity, load):
        self.velocity = np.asarray(velocity, dtype=float)
        self.load = float(load)

    def run(self, world) -> None:
        p = world.particles
        g = p.membrane < 0
        p.velocity[g, :2] = self.velocity[:2]
        p.angular_velocity[g] = 0.0


class Load(System):
    stage = Stage.FORCES
    reads = {"particles": ("membrane",)}
    accumulates = {"particles": ("force",)}

    def __init__(self, load):
        self.load = float(load)

    def run(self, world) -> None:
        p = world.particles
        p.force[p.membrane < 0, 2] -= self.load


def build_world(cfg: dict, model: str, variant: str, path: str):
    """The sheet (centre at the origin, normal +z), the grain resting on it, and the systems."""
    s, L = cfg["spacing"], cfg["sheet"]
    mesh = flat_sheet(s, width=L, height=L, center=(0.0, 0.0, 0.0))
    h = s * math.sqrt(3) / 2
    angle, offset = PATHS[path]
    direction = np.array([math.cos(math.radians(angle)), math.sin(math.radians(angle)), 0.0])
    # start on a lattice line (vertices lie on rows y = k h; the sheet's rows are centred)
    rows_y = np.unique(np.round(mesh.vertices[:, 1] / h))
    y0 = rows_y[np.argmin(np.abs(rows_y))] * h + offset * h
    start = np.array([-(0.5 * cfg["length"] + cfg["run_in"]) * direction[0], y0, 0.0])
    r = cfg["grain_radius"]
    z_contact = cfg["vertex_radius"] if model == "particle" else 0.0
    start[2] = z_contact + 0.999 * r
    dt = cfg["dt"] or (1e-6 if variant == "kinematic" else 2e-7)
    world = World(Box((-L, -L, -L), (L, L, L)), dt=dt, skin=0.2e-3)
    grain = add_species(world, youngs_modulus=cfg["grain_modulus"], poisson_ratio=cfg["grain_poisson"],
                        density=cfg["grain_density"], restitution=cfg["restitution"],
                        friction=cfg["grain_friction"])
    material = add_species(world, youngs_modulus=cfg["membrane_modulus"], poisson_ratio=1 / 3,
                           density=cfg["membrane_density"], restitution=cfg["restitution"],
                           friction=cfg["membrane_friction"])
    create_particle_table(world)
    add_membrane(world, mesh, youngs_modulus=cfg["membrane_modulus"],
                 thickness=cfg["membrane_thickness"], density=cfg["membrane_density"],
                 damping_ratio=cfg["membrane_damping"], contact=model, species=material,
                 vertex_radius=cfg["vertex_radius"] if model == "particle" else None)
    if variant == "kinematic":
        fix_particles(world, membrane_vertices(world, 0))
    else:
        rim = membrane_vertices(world, 0, where=lambda x: np.max(np.abs(x[:, :2]), axis=1)
                                > 0.5 * L - 0.75 * s)
        fix_particles(world, rim)
        world.springs.rest_length[:] /= 1.0 + cfg["pretension"]
    add_particles(world, [start], r, grain)
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    world.add_system(first)
    if model == "patch":
        world.add_system(PatchSearch())
        world.add_system(PatchContacts(law))
    else:
        world.add_system(NeighborSearch())
        world.add_system(ContactForces(law))
    if variant == "free":
        for system in membrane_systems():
            world.add_system(system)
    world.add_system(Load(cfg["load"]))
    world.add_system(second)
    drag = world.add_system(Drag(np.zeros(3), cfg["load"]))
    return world, drag, direction


def grain_contact_force(world) -> tuple[np.ndarray, np.ndarray]:
    """The force on the grain (contacts and load) from the last force pass, and its position,
    on every rank (collective: one rank owns the grain; new arrays on every rank)."""
    p = world.particles
    force, position = observe.gather_by_gid(world, p, ("force", "position"),
                                            where=p.membrane < 0, root=None)
    return force[0], position[0]


def sampled_steps(cfg: dict, dt: float) -> int:
    """Steps of the sampled drag (``length`` at ``speed``)."""
    return int(round(cfg["length"] / cfg["speed"] / dt))


def run_case(cfg: dict, model: str, variant: str, path: str) -> dict:
    world, drag, direction = build_world(cfg, model, variant, path)
    where = f"in case {model}/{variant}/{path}"
    run_or_stop(world, int(round(cfg["settle"] / world.dt)), where)
    drag.velocity = cfg["speed"] * direction
    run_or_stop(world, int(round(cfg["run_in"] / cfg["speed"] / world.dt)), where)
    steps = sampled_steps(cfg, world.dt)
    every = max(steps // cfg["samples"], 1)
    rows = []
    x0 = None
    for k in range(steps // every):
        run_or_stop(world, every, where)
        f, x = grain_contact_force(world)
        f[2] += cfg["load"]
        if x0 is None:
            x0 = x.copy()
        along = float((x - x0) @ direction)
        tangential = float(-(f @ direction))
        rows.append((along, tangential, float(f[2]), float(x[2])))
    a = np.array(rows)
    mu = 0.5 * (cfg["grain_friction"] + cfg["membrane_friction"])
    return {"model": model, "variant": variant, "path": path, "rows": rows, "mu": mu,
            "fn_mean": a[:, 2].mean(), "fn_rsd": a[:, 2].std() / abs(a[:, 2].mean()),
            "ft_mean": a[:, 1].mean(), "ft_rsd": a[:, 1].std() / abs(a[:, 1].mean()),
            "ratio": float(np.mean(a[:, 1] / (mu * a[:, 2]))),
            "ratio_sd": float(np.std(a[:, 1] / (mu * a[:, 2]))),
            "height_amplitude": float(a[:, 3].max() - a[:, 3].min())}


def write_outputs(results, out: str) -> None:
    """The CSV and the plot (module docstring); not collective (rank 0 writes them)."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_csv(path.with_suffix(".csv"),
              ["model", "variant", "path", "position_m", "tangential_force_N", "normal_force_N",
               "height_m"],
              ([r["model"], r["variant"], r["path"], *row] for r in results for row in r["rows"]))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for r in results:
        a = np.array(r["rows"])
        label = f"{r['model']} {r['variant']} {r['path']}"
        ax1.plot(a[:, 0] * 1e3, a[:, 1], label=label)
        ax2.plot(a[:, 0] * 1e3, (a[:, 3] - a[:, 3].mean()) * 1e6, label=label)
    ax1.set_ylabel("tangential force [N]")
    ax2.set_ylabel("height - mean [um]")
    ax2.set_xlabel("position along the path [mm]")
    ax1.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path.with_suffix(".png"), dpi=120)


def cases_of(cfg: dict) -> list[tuple[str, str, str]]:
    """(model, variant, path) of every case the configuration asks for, in the order run."""
    return [(m, v, c) for m in cfg["models"].split(",") for v in cfg["variants"].split(",")
            for c in cfg["paths"].split(",")]


def check(cfg: dict) -> None:
    """Every case and the output path, before the first case runs."""
    for model, variant, path in cases_of(cfg):
        if model not in ("patch", "particle") or variant not in ("kinematic", "free") \
                or path not in PATHS:
            raise ConfigValueError(f"unknown case {model}/{variant}/{path}: models are "
                                   "patch, particle; variants kinematic, free; paths "
                                   f"{', '.join(PATHS)}")
    out = Path(cfg["output"])
    problem = (f"output {cfg['output']!r} names no file: give a path without its suffix, "
               "such as output/friction" if out.name in ("", ".", "..")
               else unwritable(out.with_suffix(".csv")))
    if problem:
        raise InputError(problem)


def run_cases(job) -> int:
    cfg = job.cfg
    cases, results = cases_of(cfg), []
    job.on_stop = lambda: (f"nothing written ({len(results)} of {len(cases)} cases had "
                           f"finished; {cfg['output']}.csv is written after the last)")
    for model, variant in dict.fromkeys((m, v) for m, v, _ in cases):
        # the set-up's force pass checks dt against the contact law and the membrane's
        # springs: a step too long for a later case fails now, not after the first cases ran
        world = build_world(cfg, model, variant, cases[0][2])[0]
        world.setup()
        if sampled_steps(cfg, world.dt) < 1:
            raise ConfigValueError(
                f"config key 'length' = {cfg['length']!r} m is dragged in less than one "
                f"time step ({world.dt:.3g} s at speed {cfg['speed']!r} m/s): nothing "
                "would be sampled")
    for model, variant, path in cases:
        r = run_case(cfg, model, variant, path)
        results.append(r)
        job.print(f"{model:8s} {variant:9s} {path:8s}  F_n {r['fn_mean']:.5g} N "
                  f"(rsd {r['fn_rsd']:.2e})  F_t {r['ft_mean']:.5g} N (rsd {r['ft_rsd']:.2e})"
                  f"  F_t/(mu F_n) {r['ratio']:.6f} (sd {r['ratio_sd']:.2e})  height "
                  f"amplitude {r['height_amplitude'] * 1e6:.3g} um")
    job.write(write_outputs, results, cfg["output"])  # the files are written after the last case
    job.print(f"wrote {cfg['output']}.csv and {cfg['output']}.png")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run_cases,
                      description=__doc__.splitlines()[0], soft_kill=True)


if __name__ == "__main__":
    sys.exit(main())
