"""Discharge of grains through a conical STL hopper: mass flow rate against orifice diameter, Beverloo's law.

The hopper is an open cone of half-angle ``half_angle`` (degrees from the
vertical) from its orifice (diameter D) up to radius ``top_radius``, under
a vertical bin (cylinder) of height ``bin_height``, triangulated with edges of about ``edge_length``
(``hopper_mesh``) and written to ``<output>/hopper_D<mm>.stl`` for each D
(the orifice at z = 0 in the file), then loaded as a mesh wall: every D
cuts the same cone, whose smallest orifice lies at z = 0, so a wider
orifice sits higher. ``particles`` grains (Hertz-Mindlin, radii uniform
in [radius_min, radius_max], mean diameter d) are inserted on a jittered
lattice inside the cone of the smallest orifice, from the bottom up, and
settle for ``settle_time`` on a plane closing the orifice. For every D of
``diameters`` (m, comma-separated) the settled bed is put in that D's cone
(grains below its cut fall out at once) without
the plane and discharges for at most ``discharge_time`` onto a floor
``fall_height`` below the orifice, inside four side walls.

Mass flow rate W: the mass below the orifice (centres a grain diameter d
below its plane) is
recorded every ``record_every`` steps; W is the slope of a straight line
fitted (least squares) to it over the steady part of the discharge, from
10 % to 60 % of the bed's mass out (the start-up and the emptying cone
excluded; the run stops once 60 % is out). The driver prints the slopes of
the window's two halves: they agree when the flow is steady.

Bulk density rho_b: the mass of the grains whose centres lie in a vertical
cylinder about the axis, from 25 % to 60 % of the settled bed's height, its
radius the cone's radius at its bottom less d, divided by its volume
(counting centres gives the mean density of a region much larger than a
grain without cutting grains). Measured once in the settled bed.

Beverloo: W = C rho_b sqrt(g) (D - k d)^(5/2). The driver fits C and k by
least squares on W^(2/5) = (C rho_b sqrt(g))^(2/5) (D - k d), a straight line
in D, and prints them against the literature's C = 0.55-0.65, k = 1.3-2.9
(Beverloo et al. 1961; Nedderman 1992). With three diameters close together
the fit is loose; docs/user-guide/mesh-walls.md says what a fuller run takes.

    python run/hopper.py                                  # defaults, a few minutes here
    python run/hopper.py --set diameters=0.012,0.015,0.018,0.021,0.024 --set particles=4000
    mpiexec.mpich -n 2 .venv/bin/python run/hopper.py

Writes ``<output>/hopper.csv`` (one row per diameter), ``<output>/hopper_discharge.csv``
(the discharged mass against time of every diameter), ``<output>/hopper.png`` (the
discharge curves and W against D with the fit) and the STL files.
SIGINT or SIGTERM stops it after the current step with exit code 128 + the
signal's number (the files are written after the last diameter).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.mesh.io import write_mesh
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh_walls import add_mesh_wall
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.driver import run_driver, write_csv
from ecs_dem.errors import ConfigValueError, InputError
from ecs_dem.io.paths import unwritable
from ecs_dem.memory import check_particle_count
from ecs_dem.run.rotating_drum import GRAIN_RANGES, STEP_RANGES, add_grain_systems, number_list
from ecs_dem.runner import run_or_stop
from ecs_dem.systems.contact.time_step import rayleigh_time

DEFAULTS = {
    "diameters": "0.015,0.0195,0.024",  # m, orifice diameters, comma-separated
    "half_angle": 30.0,             # degrees from the vertical
    "top_radius": 0.03,             # m
    "bin_height": 0.04,             # m, the vertical cylinder above the cone
    "edge_length": 3e-3,            # m, triangle size of the cone
    "particles": 2000,
    "radius_min": 1.35e-3,          # m
    "radius_max": 1.65e-3,          # m
    "youngs_modulus": 1e7,          # Pa (soft, for a larger time step)
    "poisson_ratio": 0.3,
    "density": 2500.0,              # kg/m^3
    "restitution": 0.5,
    "friction": 0.5,                # grains and hopper (one material)
    "rolling_friction": 0.1,        # stands in for the grains' departure from spheres
    "gravity": 9.81,                # m/s^2, along -z
    "settle_time": 0.3,             # s on the closed orifice
    "discharge_time": 1.0,          # s at most per diameter
    "fall_height": 0.05,            # m from the orifice down to the floor
    "record_every": 50,             # steps between records of the discharged mass
    "dt_fraction": 0.2,             # dt as a fraction of the Rayleigh time of radius_min
    "skin_fraction": 0.2,           # skin as a fraction of radius_max
    "seed": 1,
    "output": "output/hopper",      # folder of the CSV files, the plot and the STL files
}

RANGES = (
    ("half_angle", 0.0, 90.0, False),
    ("top_radius", 0.0, math.inf, False),
    ("bin_height", 0.0, math.inf, True),
    ("edge_length", 0.0, math.inf, False),
    *GRAIN_RANGES,
    ("discharge_time", 0.0, math.inf, False),
    ("fall_height", 0.0, math.inf, False),
    ("record_every", 1, math.inf, True),
    *STEP_RANGES,
)

#: the discharged fractions of the bed's mass that bound the steady window
WINDOW = (0.1, 0.6)
#: the slab of the settled bed (fractions of its height) where rho_b is measured
DENSITY_SLAB = (0.25, 0.6)


# ---------------------------------------------------------------------------- geometry

def ring_band(lower: np.ndarray, lower_angle: np.ndarray, upper: np.ndarray,
              upper_angle: np.ndarray) -> np.ndarray:
    """Triangles joining two rings of vertices (indices, and their angles about the axis,
    ascending), of any counts: from lower vertex 0 and the upper vertex just behind it,
    each step advances on the ring whose next vertex comes first in angle."""
    nl, nu = len(lower), len(upper)
    rl = np.append(lower_angle - lower_angle[0], 2 * math.pi)
    rel = np.mod(upper_angle - lower_angle[0], 2 * math.pi)
    order = np.roll(np.arange(nu), -int(np.argmax(rel)))   # from the one just behind
    ru = rel[order]
    ru[0] -= 2 * math.pi
    ru = np.append(ru, ru[0] + 2 * math.pi)
    i = j = 0
    triangles = []
    while i < nl or j < nu:
        if j == nu or (i < nl and rl[i + 1] <= ru[j + 1]):
            triangles.append((lower[i], lower[(i + 1) % nl], upper[order[j % nu]]))
            i += 1
        else:
            triangles.append((lower[i % nl], upper[order[(j + 1) % nu]], upper[order[j]]))
            j += 1
    return np.array(triangles, dtype=np.int64)


def hopper_mesh(orifice_radius: float, top_radius: float, half_angle: float,
                edge_length: float, bin_height: float = 0.0) -> Mesh:
    """An open hopper of axis z: a cone of half-angle `half_angle` (rad) from the vertical,
    from the orifice ring (z = 0) up to `top_radius`, and a vertical cylinder of
    `bin_height` above it. Rings about ``edge_length`` apart along the wall, each of about
    2 pi r / edge_length vertices, every other one turned half a segment, joined by
    ``ring_band``."""
    if not 0 < orifice_radius < top_radius:
        raise ConfigValueError(f"the orifice radius {orifice_radius} m must lie in (0, "
                               f"top_radius = {top_radius} m): widen the top or narrow the "
                               "orifice")
    row = edge_length * math.sqrt(3) / 2
    slant = (top_radius - orifice_radius) / math.sin(half_angle)
    cone = max(1, round(slant / row))
    radii = list(np.linspace(orifice_radius, top_radius, cone + 1))
    heights = [(r - orifice_radius) / math.tan(half_angle) for r in radii]
    levels = round(bin_height / row) if bin_height > 0 else 0
    for k in range(1, levels + 1):
        radii.append(top_radius)
        heights.append(heights[cone] + bin_height * k / levels)
    points, triangles, previous, count = [], [], None, 0
    for k, (r, z) in enumerate(zip(radii, heights)):
        n = max(3, round(2 * math.pi * r / edge_length))
        angle = 2 * math.pi * (np.arange(n) + 0.5 * (k % 2)) / n
        index = np.arange(n) + count
        count += n
        if previous is not None:
            triangles.append(ring_band(*previous, index, angle))
        previous = (index, angle)
        points.append(np.column_stack([r * np.cos(angle), r * np.sin(angle), np.full(n, z)]))
    return Mesh(np.concatenate(points), np.concatenate(triangles))


def cone_height(cfg: dict, diameter: float) -> float:
    """Height of the cone of orifice `diameter` (m)."""
    return (cfg["top_radius"] - 0.5 * diameter) / math.tan(math.radians(cfg["half_angle"]))


def orifice_height(cfg: dict, diameter: float) -> float:
    """Height of the orifice `diameter` on the cone whose smallest orifice is at z = 0."""
    return cone_height(cfg, min(diameters_of(cfg))) - cone_height(cfg, diameter)


def mean_diameter(cfg: dict) -> float:
    return cfg["radius_min"] + cfg["radius_max"]


def fill_positions(cfg: dict, diameter: float, rng) -> np.ndarray:
    """`particles` centres on a jittered cubic lattice (spacing 2.2 radius_max) inside the
    cone of orifice `diameter`, clear of its wall and above the orifice plane, the lowest
    first."""
    rmax, n = cfg["radius_max"], cfg["particles"]
    spacing = 2.2 * rmax
    theta = math.radians(cfg["half_angle"])
    clear = 1.1 * rmax / math.cos(theta)        # centre to cone, measured horizontally
    top = cone_height(cfg, diameter) + cfg["bin_height"]
    xs = np.arange(-cfg["top_radius"], cfg["top_radius"] + 1e-12, spacing)
    zs = np.arange(1.1 * rmax, top - 1.1 * rmax, spacing)
    x, y, z = np.meshgrid(xs, xs, zs, indexing="ij")
    pos = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    reach = np.minimum(0.5 * diameter + pos[:, 2] * math.tan(theta) - clear,
                       cfg["top_radius"] - 1.1 * rmax)
    pos = pos[np.hypot(pos[:, 0], pos[:, 1]) <= reach]
    if len(pos) < n:
        raise ConfigValueError(f"the hopper holds at most {len(pos)} grains on the insertion "
                               f"lattice, not particles = {n}: lower particles or raise "
                               "top_radius")
    order = np.lexsort((pos[:, 1], pos[:, 0], pos[:, 2]))
    pos = pos[order[:n]]
    return pos + rng.uniform(-0.05, 0.05, pos.shape) * spacing


def time_step(cfg: dict) -> float:
    return cfg["dt_fraction"] * float(rayleigh_time(cfg["radius_min"], cfg["density"],
                                                    cfg["youngs_modulus"], cfg["poisson_ratio"]))


def build_world(cfg: dict, diameter: float, position, radius, velocity=None,
                closed: bool = False, comm=None) -> World:
    """The hopper of orifice `diameter` above a floor inside four side walls, the grains at
    `position`; `closed`: a plane at z = 0 closes the orifice."""
    half = cfg["top_radius"] + 0.5 * cfg["edge_length"] + 3.0 * cfg["radius_max"]
    box = Box((-half, -half, -cfg["fall_height"]),
              (half, half, cone_height(cfg, min(diameters_of(cfg))) + cfg["bin_height"]
               + 4.0 * cfg["radius_max"]))
    world = World(box, dt=time_step(cfg), skin=cfg["skin_fraction"] * cfg["radius_max"],
                  comm=comm)
    grain = add_species(world, youngs_modulus=cfg["youngs_modulus"],
                        poisson_ratio=cfg["poisson_ratio"], density=cfg["density"],
                        restitution=cfg["restitution"], friction=cfg["friction"],
                        rolling_friction=cfg["rolling_friction"])
    mesh = hopper_mesh(0.5 * diameter, cfg["top_radius"], math.radians(cfg["half_angle"]),
                       cfg["edge_length"], cfg["bin_height"])
    add_mesh_wall(world, mesh, species=grain,
                  translate=(0.0, 0.0, orifice_height(cfg, diameter)))
    add_wall(world, (0.0, 0.0, -cfg["fall_height"]), (0.0, 0.0, 1.0), species=grain)
    for axis in (0, 1):
        for sign in (1.0, -1.0):
            normal = np.zeros(3)
            normal[axis] = sign
            add_wall(world, -half * normal, normal, species=grain)
    if closed:
        add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), species=grain)
    add_particles(world, position, radius, grain, velocity=velocity)
    add_grain_systems(world, cfg["gravity"], planar_walls=True)
    return world


# ---------------------------------------------------------------------------- measures

def bulk_density(cfg: dict, diameter: float, position, radius) -> float:
    """rho_b of the settled bed (module docstring), kg/m^3."""
    z = position[:, 2]
    height = float((z + radius).max())
    z0, z1 = DENSITY_SLAB[0] * height, DENSITY_SLAB[1] * height
    rc = 0.5 * diameter + z0 * math.tan(math.radians(cfg["half_angle"])) - mean_diameter(cfg)
    if rc <= 0 or z1 - z0 < 2 * mean_diameter(cfg):
        raise ConfigValueError("the settled bed is too small to measure its bulk density: "
                               "add particles")
    inside = (z >= z0) & (z < z1) & (np.hypot(position[:, 0], position[:, 1]) < rc)
    mass = cfg["density"] * 4.0 / 3.0 * math.pi * float(np.sum(radius[inside] ** 3))
    return mass / (math.pi * rc * rc * (z1 - z0))


def settle(cfg: dict, comm=None):
    """The bed settled on the closed smallest orifice: (position, radius, velocity) of every
    grain in gid order, on every rank."""
    rng = np.random.default_rng(cfg["seed"])
    diameter = min(diameters_of(cfg))
    pos = fill_positions(cfg, diameter, rng)
    radius = rng.uniform(cfg["radius_min"], cfg["radius_max"], len(pos))
    world = build_world(cfg, diameter, pos, radius, closed=True, comm=comm)
    world.setup()
    run_or_stop(world, int(round(cfg["settle_time"] / world.dt)), "the settling")
    return observe.gather_by_gid(world, world.particles, ("position", "radius", "velocity"),
                                 root=None)


def line_slope(t, m) -> float:
    return float(np.polyfit(t, m, 1)[0]) if len(t) >= 2 else math.nan


def discharge(cfg: dict, bed, diameter: float, comm=None) -> dict:
    """Open the orifice `diameter` under the settled `bed`; W and the record (module
    docstring)."""
    position, radius, velocity = bed
    world = build_world(cfg, diameter, position, radius, velocity, comm=comm)
    world.setup()
    p = world.particles
    total = observe.total(world, p.mass)
    below = orifice_height(cfg, diameter) - mean_diameter(cfg)
    steps = int(round(cfg["discharge_time"] / world.dt))
    times, out = [0.0], [observe.total(world, p.mass, where=p.position[:, 2] < below)]
    while world.step < steps and out[-1] < WINDOW[1] * total:
        run_or_stop(world, min(int(cfg["record_every"]), steps - world.step),
                    f"the discharge through D = {diameter} m")
        times.append(world.time)
        out.append(observe.total(world, p.mass, where=p.position[:, 2] < below))
    t, m = np.asarray(times), np.asarray(out)
    window = (m >= WINDOW[0] * total) & (m <= WINDOW[1] * total)
    if window.sum() < 4:
        raise ConfigValueError(
            f"orifice D = {diameter} m: only {m[-1] / total:.0%} of the bed came out in "
            f"discharge_time = {cfg['discharge_time']} s, too little to fit the flow between "
            f"{WINDOW[0]:.0%} and {WINDOW[1]:.0%} out: lengthen discharge_time or widen the "
            "orifice (D > 5 d)")
    tw, mw = t[window], m[window]
    half = len(tw) // 2
    return {"diameter": diameter, "flow": line_slope(tw, mw),
            "flow_first": line_slope(tw[:half + 1], mw[:half + 1]),
            "flow_second": line_slope(tw[half:], mw[half:]),
            "mass": total, "mass_end": observe.total(world, p.mass),
            "grains_end": observe.count(world, np.ones(p.n_owned, dtype=bool)),
            "times": t, "discharged": m, "window": (float(tw[0]), float(tw[-1]))}


def beverloo_fit(diameters, flows, rho_b: float, g: float, d: float) -> tuple[float, float]:
    """(C, k) of W = C rho_b sqrt(g) (D - k d)^(5/2): least squares on W^(2/5), a straight
    line in D (module docstring)."""
    a, b = np.polyfit(np.asarray(diameters), np.asarray(flows) ** 0.4, 1)
    return float(a ** 2.5 / (rho_b * math.sqrt(g))), float(-b / (a * d))


# ---------------------------------------------------------------------------- driver

def diameters_of(cfg: dict) -> list[float]:
    return number_list(cfg, "diameters", lambda v: v > 0,
                       "orifice diameters in m, comma-separated, such as 0.015,0.02,0.025")


def check(cfg: dict) -> None:
    diameters = diameters_of(cfg)
    if not 0 < cfg["radius_min"] <= cfg["radius_max"]:
        raise ConfigValueError(f"need 0 < radius_min <= radius_max (got {cfg['radius_min']}, "
                               f"{cfg['radius_max']}): swap them or set them equal")
    if max(diameters) >= 2 * cfg["top_radius"]:
        raise ConfigValueError(f"orifice diameter {max(diameters)} m must be smaller than the "
                               f"top, 2 top_radius = {2 * cfg['top_radius']} m")
    if min(diameters) < 3 * mean_diameter(cfg):
        raise ConfigValueError(f"orifice diameter {min(diameters)} m is below 3 grain "
                               f"diameters ({3 * mean_diameter(cfg):.4g} m): the hopper would "
                               "jam; use D > 5 d for Beverloo's law")
    problem = unwritable(Path(cfg["output"]) / "hopper.csv")
    if problem:
        raise InputError(problem)
    check_particle_count(cfg["particles"], default_comm())
    fill_positions(cfg, min(diameters), np.random.default_rng(0))  # the hopper holds them


def write_outputs(results: list[dict], fit, out: Path) -> None:
    """The CSV files and the plot (not collective: rank 0 writes them)."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "hopper.csv",
              ("diameter_m", "flow_kg_s", "flow_first_half_kg_s", "flow_second_half_kg_s",
               "window_start_s", "window_end_s", "bulk_density_kg_m3", "beverloo_C",
               "beverloo_k"),
              [[r["diameter"], r["flow"], r["flow_first"], r["flow_second"], r["window"][0],
                r["window"][1], fit["rho_b"], fit["C"], fit["k"]] for r in results], ".6g")
    write_csv(out / "hopper_discharge.csv", ("diameter_m", "time_s", "discharged_kg"),
              [[r["diameter"], float(t), float(m)] for r in results
               for t, m in zip(r["times"], r["discharged"])], ".6g")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for r in results:
        ax1.plot(r["times"], r["discharged"] * 1e3, label=f"D = {r['diameter'] * 1e3:.3g} mm")
    ax1.set_xlabel("time (s)")
    ax1.set_ylabel("discharged mass (g)")
    ax1.legend()
    D = np.array([r["diameter"] for r in results])
    ax2.plot(D * 1e3, [r["flow"] * 1e3 for r in results], "o", label="measured")
    grid = np.linspace(max(fit["k"] * fit["d"], 0.0) + 1e-6, D.max() * 1.1, 100)
    ax2.plot(grid * 1e3, fit["C"] * fit["rho_b"] * math.sqrt(fit["g"])
             * np.clip(grid - fit["k"] * fit["d"], 0, None) ** 2.5 * 1e3, "-",
             label=f"Beverloo C = {fit['C']:.3g}, k = {fit['k']:.3g}")
    ax2.set_xlabel("orifice diameter (mm)")
    ax2.set_ylabel("mass flow rate (g/s)")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(out / "hopper.png", dpi=120)
    plt.close(fig)


def run(job) -> int:
    cfg = job.cfg
    out = Path(cfg["output"])
    diameters = diameters_of(cfg)
    results: list[dict] = []
    job.on_stop = lambda: (f"nothing written ({len(results)} of {len(diameters)} diameters "
                           "had finished; the files are written after the last)")
    theta = math.radians(cfg["half_angle"])
    for D in diameters:
        job.write(write_mesh, out / f"hopper_D{D * 1e3:.4g}mm.stl",
                  hopper_mesh(0.5 * D, cfg["top_radius"], theta, cfg["edge_length"],
                              cfg["bin_height"]),
                  binary=False)
    d = mean_diameter(cfg)
    job.print(f"hopper: {cfg['particles']} grains (d = {d * 1e3:.3g} mm), dt = "
              f"{time_step(cfg):.3g} s; settling {cfg['settle_time']} s")
    bed = settle(cfg, job.comm)
    rho_b = bulk_density(cfg, min(diameters), bed[0], bed[1])
    job.print(f"bulk density in the hopper {rho_b:.1f} kg/m^3 (solid fraction "
              f"{rho_b / cfg['density']:.3f})")
    for D in diameters:
        r = discharge(cfg, bed, D, job.comm)
        results.append(r)
        job.print(f"D = {D * 1e3:.4g} mm ({D / d:.2f} d): W = {r['flow'] * 1e3:.4g} g/s "
                  f"(halves {r['flow_first'] * 1e3:.4g}, {r['flow_second'] * 1e3:.4g} g/s; "
                  f"window {r['window'][0]:.3g}-{r['window'][1]:.3g} s)")
    fit = {"rho_b": rho_b, "g": cfg["gravity"], "d": d}
    if len(results) >= 2:
        fit["C"], fit["k"] = beverloo_fit(diameters, [r["flow"] for r in results], rho_b,
                                          cfg["gravity"], d)
        job.print(f"Beverloo fit: C = {fit['C']:.3f} (literature 0.55-0.65), k = "
                  f"{fit['k']:.2f} (literature 1.3-2.9)")
    else:
        fit["C"] = fit["k"] = math.nan
        job.print("Beverloo fit: needs at least two diameters (three for a check)")
    job.write(write_outputs, results, fit, out)
    job.print(f"wrote {out / 'hopper.csv'}, {out / 'hopper_discharge.csv'} and "
              f"{out / 'hopper.png'}")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run,
                      description=__doc__.splitlines()[0], soft_kill=True)


if __name__ == "__main__":
    sys.exit(main())
