"""Cyclic uniaxial compression of soft spheres: the experiment of Brodu et al. 2015, Sect. V.

514 soft spheres (hydrogel: E = 23.3 kPa, mu = 0.03, restitution close to 1,
density matched to the fluid, so no gravity) in a square container are
compressed by a top plate to 13.4 % strain and released, cycle after cycle;
the first cycles are discarded. For each prefactor gamma of the multi-contact
correction (0: independent contacts, 1: elastic half-space, 1.19: MC-DEM as
fitted; ``systems.multicontact.systems``) the driver records the force on the top
plate against strain for loading and unloading, the contacts per grain Z
(grain-grain contacts with a normal force above tau), and contact-force
distributions, and writes them to CSV files and PNG plots in ``output``::

    top_force.csv            strain bin; per gamma: top-plate force (N), loading and unloading
    contacts.csv             strain bin; per gamma: Z above tau and Z of all contacts, both phases
    force_distribution.csv   f/<f> bin; per gamma: P(f/<f>) at maximum strain (loading) and at
                             distribution_strain (unloading), the paper's Fig. 4 level
    summary.csv              per gamma: top force at maximum strain and its ratio to the
                             gamma = 1.19 run (the paper's Rtop ratios: 0.43, 0.80, 1.00),
                             hysteresis, Z, late contacts, run time
    samples_gamma<g>.csv     every sample of every cycle (cycle, phase, strain, forces, Z)
    top_force.png, contacts.png, force_distribution.png

The quick default (the paper gives E, mu, the particle count, the strain and
the cycles, not the grains' sizes): diameters uniform in 12 mm +- 10 %, a
9 cm x 9 cm container (the settled packing is about as high as wide),
density matched (no gravity in the cycles), nu = 0.49, restitution 0.9,
saturated friction F_t = mu F_n (``SaturatedHertzLaw``; ``friction_law=mindlin``
for the Mindlin spring), rigid frictional walls, 6 cycles (2 discarded).

The experiment's own sample, ``--config run/configs/compression_experiment.toml``
(its Ref. [8]): 514 spheres of 18.2-24.6 mm in a 165 mm x 166 mm container
(``box_width``, ``box_depth``) under their buoyant weight throughout
(``weight_density`` 11.5 kg/m^3, the grain's density minus the water's, under
``gravity``; the grains' mass stays ``density``), nu = 0.5 (incompressible),
restitution 0.95, a piston stroke of 27.5 mm (``piston_travel``: from the
plate's highest position to ``max_strain``; it sets the lift above H0), strain
0 where the plate first touches, 20 cycles with the first 5 discarded.

Preparation, as far as the paper describes it (its spheres replace the
measured grains of a consolidated packing and relax to a nearby state, a
"slight inflation" with a non-zero top force and 6.4 < Z < 6.5 contacts per
grain without threshold in the least compressed state): the spheres start on
a loose jittered lattice and settle without friction (``prepare_friction``,
and a lower ``prepare_restitution`` to come to rest sooner) under a weak
gravity (``settle_gravity``, or their weight when ``weight_density`` > 0);
the top plate comes down until it carries ``touch_force``; gravity is
switched off if the grains are density matched, and the plate goes on down
until the packing, at rest, has
``initial_z`` = 6.4 grain-grain contacts per grain: that height H0 is strain
0 (``initial_z=0``: strain 0 where the plate first touched). Every gamma
starts from this same packing, with the grains' own friction. A cycle takes
the plate down to ``max_strain`` and up to ``-lift_strain`` (above the
least compressed state, as the experiment's scans without contact; or set
by ``piston_travel``) at
``plate_speed``; strain = (H0 - H)/H0. Forces and Z are averaged over the
kept cycles in ``levels`` strain bins per phase.

    python run/compression.py                              # the short default, a few minutes
    python run/compression.py --set cycles=20 --set discard=5   # the paper's protocol
    python run/compression.py --config run/configs/compression_experiment.toml  # its sample
    mpiexec.mpich -n 2 .venv/bin/python run/compression.py

SIGINT or SIGTERM stops it after the current step with exit code 128 + the
signal's number, writing nothing (the files are written after the last gamma;
there is no checkpoint).
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from ecs_dem import Box, InputError, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species, species_ranges
from ecs_dem.components.walls import add_wall
from ecs_dem.config import check_ranges
from ecs_dem.driver import run_driver, write_csv
from ecs_dem.errors import ConfigValueError
from ecs_dem.io.paths import unwritable
from ecs_dem.memory import check_particle_count
from ecs_dem.runner import run_or_stop
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.diagnostics import kinetic_energy
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.hertz_saturated import SaturatedHertzLaw
from ecs_dem.systems.multicontact.systems import multicontact
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

DEFAULTS = {
    "particles": 514,
    "diameter": 0.012,             # m, mean diameter
    "polydispersity": 0.1,         # diameters uniform in diameter * (1 +- polydispersity)
    "box_width": 0.09,             # m, container along x
    "box_depth": 0.0,              # m, container along y; 0: box_width (a square)
    "youngs_modulus": 23.3e3,      # Pa
    "poisson_ratio": 0.49,
    "density": 1000.0,             # kg/m^3: the grains' mass (inertia)
    "weight_density": 0.0,         # kg/m^3: grain minus fluid density, their weight under
                                   # gravity throughout; 0: density matched (no gravity)
    "gravity": 9.81,               # m/s^2, with weight_density
    "restitution": 0.9,
    "friction": 0.03,
    "friction_law": "saturated",   # saturated (F_t = mu F_n, the paper) or mindlin
    "gammas": "0,1,1.19",          # prefactors of Eq. (1), one run each
    "mc_iterations": 0,            # extra iterations of the correction per step (0: lagged)
    "max_strain": 0.134,
    "lift_strain": 0.02,           # the plate rises this far above the packing each cycle
    "piston_travel": 0.0,          # m: the plate's stroke, highest position to maximum strain
                                   # (sets lift_strain from H0 when > 0)
    "cycles": 6,                   # the paper: 20
    "discard": 2,                  # first cycles left out of the averages (the paper: 5)
    "plate_speed": 0.0025,         # m/s
    "settle_gravity": 0.5,         # m/s^2, preparation only
    "prepare_friction": 0.0,       # friction while the packing is prepared
    "prepare_restitution": 0.5,    # restitution while the packing is prepared (faster rest)
    "initial_z": 6.4,              # contacts per grain at strain 0 (the paper's simulations: 6.4)
    "touch_force": 1e-3,           # N: strain 0 where the approaching plate carries this force
    "tau": 0.004,                  # N, weak-force threshold for Z (the paper's 4 mN)
    "levels": 25,                  # strain bins per phase
    "distribution_strain": 0.1,    # unloading level of the second force distribution
    "samples_per_level": 8,        # samples per strain bin and phase
    "dt_fraction": 0.1,            # dt as a fraction of the smallest sphere's Rayleigh time
    "skin_fraction": 0.5,          # skin as a fraction of the mean radius (covers W_i + W_j)
    "seed": 1,
    "output": "output/compression",
    "plots": True,
    "quiet": False,
}


def gammas_of(cfg) -> list[float]:
    try:
        values = [float(g) for g in str(cfg["gammas"]).split(",") if g.strip()]
    except ValueError:
        raise ConfigValueError(f"gammas must be numbers separated by commas (got "
                               f"{cfg['gammas']!r})") from None
    if not values or any(not (math.isfinite(g) and g >= 0) for g in values):
        raise ConfigValueError(f"gammas must be one or more numbers >= 0 (got {cfg['gammas']!r})")
    return values


#: (key, low, high, bounds included): every number (ecs_dem.config.check_ranges; check_config
#: checks the relations between keys)
RANGES = (
    ("particles", 1, math.inf, "[)"), ("diameter", 0.0, math.inf, False),
    ("polydispersity", 0.0, 1.0, "[)"), ("box_width", 0.0, math.inf, False),
    ("box_depth", 0.0, math.inf, "[)"), ("weight_density", 0.0, math.inf, "[)"),
    ("gravity", 0.0, math.inf, False), ("piston_travel", 0.0, math.inf, "[)"),    # m
    ("max_strain", 0.0, 0.5, False), ("lift_strain", 0.0, math.inf, "[)"),
    ("discard", 0, math.inf, "[)"), ("plate_speed", 0.0, math.inf, False),    # m/s
    ("mc_iterations", 0, math.inf, "[)"),
    ("settle_gravity", 0.0, math.inf, False), ("initial_z", 0.0, math.inf, "[)"),
    ("touch_force", 0.0, math.inf, False), ("tau", 0.0, math.inf, True),
    ("levels", 2, math.inf, "[)"), ("samples_per_level", 1, math.inf, "[)"),
    ("dt_fraction", 0.0, 1.0, False),    # above 1 the engine refuses dt (the stable limit)
    ("skin_fraction", 0.0, math.inf, False),  # the summary divides by the skin
    *species_ranges(youngs_modulus="youngs_modulus", poisson_ratio="poisson_ratio",
                    density="density", restitution="restitution", friction="friction",
                    prepare_restitution="restitution", prepare_friction="friction"),
)


def check_config(cfg) -> None:
    """InputError naming the first value no run can use: RANGES, then the relations between
    keys and the output directory (before anything is prepared or written)."""
    check_ranges(cfg, RANGES)
    check_particle_count(cfg["particles"], default_comm())
    checks = [
        (cfg["cycles"] > cfg["discard"], "need cycles > discard"),
        (0 < cfg["distribution_strain"] < cfg["max_strain"],
         "distribution_strain must lie in (0, max_strain)"),
        (cfg["friction_law"] in ("saturated", "mindlin"), "friction_law is saturated or mindlin"),
    ]
    for ok, msg in checks:
        if not ok:  # the same on every rank: printed once
            raise ConfigValueError(f"compression: {msg}")
    gammas_of(cfg)
    out = Path(cfg["output"])  # a directory of CSVs and plots, written after the whole run
    problem = (f"output {out} is a file: give a directory" if out.is_file()
               else unwritable(out / "summary.csv"))
    if problem:
        raise InputError(f"compression: {problem}")


def contact_law(cfg):
    return SaturatedHertzLaw() if cfg["friction_law"] == "saturated" else HertzMindlinLaw()


def build_world(cfg, position, radius, height, plate_z, gamma, gravity=0.0, prepare=False,
                comm=None):
    """The container (floor, four sides, top plate at `plate_z`) with MC-DEM at `gamma` (None:
    the plain ``ContactForces`` and ``WallContacts``, for comparisons); the grains' friction and
    restitution are the preparation's if `prepare`.

    Returns (world, the contact system (MC-DEM's force system, or ContactForces), the gravity
    system).
    """
    rmin = float(radius.min())
    dt = cfg["dt_fraction"] * float(rayleigh_time(rmin, cfg["density"], cfg["youngs_modulus"],
                                                   cfg["poisson_ratio"]))
    width, depth = cfg["box_width"], cfg["box_depth"] or cfg["box_width"]
    world = World(Box((0.0, 0.0, 0.0), (width, depth, height)), dt=dt,
                  skin=cfg["skin_fraction"] * 0.5 * cfg["diameter"], comm=comm, seed=cfg["seed"])
    add_species(world, youngs_modulus=cfg["youngs_modulus"], poisson_ratio=cfg["poisson_ratio"],
                density=cfg["density"],
                restitution=cfg["prepare_restitution" if prepare else "restitution"],
                friction=cfg["prepare_friction" if prepare else "friction"])
    add_particles(world, position, radius, 0)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((width, 0, 0), (-1, 0, 0)),
                          ((0, 0, 0), (0, 1, 0)), ((0, depth, 0), (0, -1, 0))):
        add_wall(world, point, normal)
    add_wall(world, (0.0, 0.0, plate_z), (0.0, 0.0, -1.0), mode="velocity")
    first, second = velocity_verlet()
    weight = Gravity((0.0, 0.0, -gravity))
    law = contact_law(cfg)
    # the prepared packing overlaps by more than the default set-up tolerance
    if gamma is None:
        systems = [ContactForces(law, max_initial_overlap=0.5), WallContacts(law)]
        contacts = systems[0]
    else:
        systems = multicontact(law, gamma, max_initial_overlap=0.5,
                               iterations=cfg["mc_iterations"])
        contacts = systems[1]
    for s in (first, NeighborSearch(), weight, *systems, second):
        world.add_system(s)
    return world, contacts, weight


TOP = 5  # wall row of the top plate


def weight_acceleration(cfg) -> float:
    """The acceleration that gives grains of mass density ``density`` the weight of
    ``weight_density`` (their buoyant weight in the fluid) under ``gravity`` (m/s^2; 0 when
    density matched)."""
    return cfg["gravity"] * cfg["weight_density"] / cfg["density"]


def lift_strain(cfg, h0) -> float:
    """How far above H0 the plate rises each cycle, as a strain: ``lift_strain``, or from
    ``piston_travel`` (the stroke from the highest position to maximum strain)."""
    travel = cfg["piston_travel"]
    if not travel:
        return cfg["lift_strain"]
    lift = travel / h0 - cfg["max_strain"]
    if lift < 0.0:
        raise InputError(f"compression: piston_travel {1e3 * travel:.3g} mm is shorter than the "
                         f"compression to max_strain ({1e3 * cfg['max_strain'] * h0:.3g} mm of "
                         f"H0 = {1e3 * h0:.4g} mm): raise it, or lower max_strain")
    return lift


def relax(world, steps_max, energy_per_grain, check_every=200) -> int:
    """Run until the kinetic energy per grain falls below `energy_per_grain` (J); returns steps."""
    n = observe.count(world, world.particles)
    done = 0
    while done < steps_max:
        run_or_stop(world, check_every, "during the preparation")
        done += check_every
        if kinetic_energy(world) < energy_per_grain * n:
            break
    return done


def gathered_state(world):
    """(position, radius) of every particle in gid order, on every rank."""
    return observe.gather_by_gid(world, world.particles, ("position", "radius"), root=None)


def z_all(world) -> float:
    """Grain-grain contacts per grain, without threshold."""
    counts = observe.sum_of(world, np.count_nonzero(world.pairs.mc_force > 0.0),
                            world.particles.n_owned)
    return 2.0 * counts[0] / counts[1]


def prepare(cfg, comm, say):
    """The packing every gamma starts from, and H0 (module docstring): (position, radius, H0, box height)."""
    rng = np.random.default_rng(cfg["seed"])
    n, d = cfg["particles"], cfg["diameter"]
    width, depth = cfg["box_width"], cfg["box_depth"] or cfg["box_width"]
    diameters = d * rng.uniform(1 - cfg["polydispersity"], 1 + cfg["polydispersity"], n)
    spacing = 1.15 * diameters.max()
    nx, ny = int(width // spacing), int(depth // spacing)
    if min(nx, ny) < 1:
        raise InputError(f"box_width {width} m or box_depth {depth} m is narrower than one "
                         f"grain ({spacing:.3g} m)")
    k = np.arange(n)
    pos = np.stack([k % nx, (k // nx) % ny, k // (nx * ny)], axis=1) * spacing + 0.5 * spacing
    pos[:, 0] += 0.5 * (width - nx * spacing)
    pos[:, 1] += 0.5 * (depth - ny * spacing)
    pos += rng.uniform(-0.05, 0.05, pos.shape) * spacing
    height = float(pos[:, 2].max()) + spacing
    settle = weight_acceleration(cfg) or cfg["settle_gravity"]
    world, _, weight = build_world(cfg, pos, 0.5 * diameters, height, height - 1e-6 * d, 0.0,
                                   settle, True, comm)
    # at rest: grains slower than 0.1 mm/s on average (saturated friction keeps a small jitter)
    quiet = 0.5 * cfg["density"] * math.pi / 6 * d**3 * 1e-4**2  # J per grain
    steps = relax(world, 100_000, quiet)
    say(f"prepare: settled under {settle:.4g} m/s^2 with friction "
        f"{cfg['prepare_friction']:g} in {steps} steps")
    p = world.particles
    top = observe.largest(world, p.position[:, 2] + p.radius)
    walls = world.walls
    walls.point[TOP, 2] = top + 0.02 * d
    walls.velocity[TOP] = (0.0, 0.0, -cfg["plate_speed"])
    approach = 0
    while walls.force[TOP, 2] < cfg["touch_force"]:
        run_or_stop(world, 10, "during the preparation")
        approach += 10
        if walls.point[TOP, 2] < 0.5 * top:
            raise InputError("prepare: the plate went half-way down without touching the grains")
    if not cfg["weight_density"]:
        weight.acceleration[...] = 0.0  # density matched from now on; the plate holds the packing
    touch = float(walls.point[TOP, 2])
    # down until the relaxed packing has initial_z contacts per grain (0: stay where it touched)
    while True:
        walls.velocity[TOP] = 0.0
        steps += relax(world, 100_000, quiet)
        if z_all(world) >= cfg["initial_z"]:
            break
        walls.velocity[TOP] = (0.0, 0.0, -cfg["plate_speed"])
        while z_all(world) < cfg["initial_z"]:
            run_or_stop(world, 10, "during the preparation")
            approach += 10
            if walls.point[TOP, 2] < 0.5 * touch:
                raise InputError(f"prepare: no Z = {cfg['initial_z']} within half the packing's "
                                 "height; lower initial_z")
    h0 = float(walls.point[TOP, 2])
    say(f"prepare: the plate touched at {1e3 * touch:.2f} mm; strain 0 at H0 = {1e3 * h0:.2f} mm "
        f"({100 * (touch - h0) / touch:.2f} % lower) with Z = {z_all(world):.2f} and a top-plate "
        f"force of {walls.force[TOP, 2]:.3g} N, at rest ({approach} steps of plate motion, "
        f"{steps} of relaxation)")
    position, radius = gathered_state(world)
    return position, radius, h0, height


def measure(world, tau) -> dict:
    """Top and bottom plate forces (N), Z above tau and Z of all grain-grain contacts, the mean
    contact force (N), the kinetic energy (J), and the largest reach W_i + W_j of two deformed
    surfaces toward each other (m; the neighbour skin must exceed it)."""
    pairs = world.pairs
    f = pairs.mc_force
    counts = observe.sum_of(world, np.count_nonzero(f > tau), np.count_nonzero(f > 0.0),
                            float(f[f > 0.0].sum()), world.particles.n_owned)
    n = counts[3]
    return {"top_force": float(world.walls.force[TOP, 2]), "bottom_force": float(-world.walls.force[0, 2]),
            "z_tau": 2.0 * counts[0] / n, "z_all": 2.0 * counts[1] / n,
            "mean_force": counts[2] / max(counts[1], 1.0), "kinetic_energy": kinetic_energy(world),
            "reach": observe.largest(world, pairs.mc_offset.sum(axis=1), empty=0.0)}


def contact_forces(world) -> np.ndarray:
    """Normal forces of every touching grain-grain contact, on every rank, in rank order."""
    f = world.pairs.mc_force
    return observe.concatenated(world, f[f > 0.0])


def cycle_plate(cfg, world, h0, say, gamma):
    """Run the cycles; returns (samples, {"max": forces at maximum strain, "mid": at the
    unloading distribution level}, both from the kept cycles)."""
    walls = world.walls
    dt = world.dt
    speed = cfg["plate_speed"]
    z_max = h0 * (1.0 - cfg["max_strain"])
    z_low = h0 * (1.0 + lift_strain(cfg, h0))
    z_mid = h0 * (1.0 - cfg["distribution_strain"])
    levels, per_level = cfg["levels"], cfg["samples_per_level"]
    samples = []
    forces = {"max": [], "mid": []}
    t0 = time.perf_counter()
    z = float(walls.point[TOP, 2])
    for cycle in range(cfg["cycles"]):
        kept = cycle >= cfg["discard"]
        for phase, target in (("loading", z_max), ("unloading", z_low)):
            n = max(int(math.ceil(abs(target - z) / (speed * dt))), 1)
            walls.velocity[TOP] = (0.0, 0.0, (target - z) / (n * dt))
            # samples: evenly in strain; a stop where the plate passes the distribution level
            every = max(int(round(n * h0 * cfg["max_strain"] / abs(target - z) / (levels * per_level))), 1)
            stops = sorted(set(range(every, n, every)) | {n})
            mid_step = (int(round((z - z_mid) / (z - target) * n))
                        if phase == "unloading" and kept else -1)
            if 0 < mid_step < n:
                stops = sorted(set(stops) | {mid_step})
            done = 0
            for stop in stops:
                run_or_stop(world, stop - done, f"in the cycles of gamma {gamma:g}")
                done = stop
                strain = (h0 - float(walls.point[TOP, 2])) / h0
                samples.append({"cycle": cycle, "phase": phase, "strain": strain,
                                **measure(world, cfg["tau"])})
                if kept and stop == mid_step:
                    forces["mid"].append(contact_forces(world))
            if phase == "loading":
                at_max = samples[-1]
                if kept:
                    forces["max"].append(contact_forces(world))
            z = target
            walls.point[TOP, 2] = target  # exact turning point (the steps differ by round-off)
        say(f"gamma {gamma:g}: cycle {cycle + 1}/{cfg['cycles']}{'' if kept else ' (discarded)'}: "
            f"at {100 * at_max['strain']:.1f} % strain top force {at_max['top_force']:.4g} N, "
            f"Z {at_max['z_tau']:.2f} above tau ({at_max['z_all']:.2f} in all); "
            f"{time.perf_counter() - t0:.0f} s")
    walls.velocity[TOP] = 0.0
    return samples, forces


def binned(samples, cfg, phase, key):
    """Mean of `key` over kept cycles in `levels` strain bins on [0, max_strain] (NaN where empty)."""
    edges = np.linspace(0.0, cfg["max_strain"], cfg["levels"] + 1)
    edges[-1] += 1e-9
    sums = np.zeros(cfg["levels"])
    counts = np.zeros(cfg["levels"])
    for s in samples:
        if s["cycle"] >= cfg["discard"] and s["phase"] == phase and 0.0 <= s["strain"] < edges[-1]:
            b = min(int(np.searchsorted(edges, s["strain"], side="right")) - 1, cfg["levels"] - 1)
            sums[b] += s[key]
            counts[b] += 1
    with np.errstate(invalid="ignore"):
        return 0.5 * (edges[:-1] + edges[1:]), np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def top_force_at_max(samples, cfg) -> float:
    """Mean top-plate force at the end of the kept loadings (maximum strain) [N]."""
    ends = [s for k, s in enumerate(samples) if s["cycle"] >= cfg["discard"] and s["phase"] == "loading"
            and (k + 1 == len(samples) or samples[k + 1]["phase"] == "unloading")]
    return float(np.mean([s["top_force"] for s in ends]))


def hysteresis(samples, cfg) -> float:
    """Area between the mean loading and unloading curves over the area under loading (0..1)."""
    strain, load = binned(samples, cfg, "loading", "top_force")
    _, unload = binned(samples, cfg, "unloading", "top_force")
    ok = np.isfinite(load) & np.isfinite(unload)
    return float(np.trapezoid((load - unload)[ok], strain[ok]) / np.trapezoid(load[ok], strain[ok]))


def distribution(forces, bins) -> np.ndarray:
    """P(f/<f>) over a list of force samples, each normalised by its own mean; NaN in every
    bin when no sample holds a force (no contacts where it was sampled: undefined)."""
    samples = [f / f.mean() for f in forces if f.size]
    if not samples:
        return np.full(len(bins) - 1, np.nan)
    hist, _ = np.histogram(np.concatenate(samples), bins=bins, density=True)
    return hist


def write_outputs(cfg, results, out: Path) -> list[Path]:
    """CSV files (module docstring); returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    gammas = list(results)
    for g, r in results.items():
        path = out / f"samples_gamma{g:g}.csv"
        keys = list(r["samples"][0])
        write_csv(path, keys, ([s[k] for k in keys] for s in r["samples"]), ".6g")
        files.append(path)
    strain, _ = binned(results[gammas[0]]["samples"], cfg, "loading", "top_force")
    columns = {}
    for g, r in results.items():
        for phase in ("loading", "unloading"):
            for key in ("top_force", "z_tau", "z_all"):
                columns[(g, phase, key)] = binned(r["samples"], cfg, phase, key)[1]
    header = ["strain"] + [f"top_force_N_gamma{g:g}_{ph}" for g in gammas for ph in ("loading", "unloading")]
    phases = ("loading", "unloading")
    rows = ([strain[b]] + [columns[(g, ph, "top_force")][b] for g in gammas for ph in phases]
            for b in range(strain.size))
    write_csv(out / "top_force.csv", header, rows, ".6g")
    header = ["strain"] + [f"Z_{key}_gamma{g:g}_{ph}" for g in gammas for key in ("tau", "all")
                           for ph in ("loading", "unloading")]
    rows = ([strain[b]] + [columns[(g, ph, f"z_{key}")][b] for g in gammas for key in ("tau", "all")
                           for ph in ("loading", "unloading")] for b in range(strain.size))
    write_csv(out / "contacts.csv", header, rows, ".6g")
    bins = np.linspace(0.0, 5.0, 26)
    centres = 0.5 * (bins[:-1] + bins[1:])
    hists = {(g, lev): distribution(r["forces"][lev], bins)
             for g, r in results.items() for lev in ("max", "mid")}
    header = ["f_over_mean"] + [f"P_gamma{g:g}_{lev}" for g in gammas for lev in ("max", "mid")]
    write_csv(out / "force_distribution.csv", header,
              ([centres[b]] + [hists[(g, lev)][b] for g in gammas for lev in ("max", "mid")]
               for b in range(centres.size)), ".6g")
    reference = results[1.19]["top_max"] if 1.19 in results else None
    header = ["gamma", "top_force_at_max_strain_N", "ratio_to_gamma1.19", "hysteresis",
              "Z_tau_at_max", "Z_all_at_max", "Z_tau_at_0", "late_contacts", "max_reach_over_skin",
              "seconds"]
    rows = []
    for g, r in results.items():
        zt = columns[(g, "loading", "z_tau")]
        za = columns[(g, "loading", "z_all")]
        rows.append([g, r["top_max"], r["top_max"] / reference if reference else float("nan"),
                     r["hysteresis"], zt[-1], za[-1], zt[0], r["late"],
                     max(x["reach"] for x in r["samples"]) / r["skin"], r["seconds"]])
    write_csv(out / "summary.csv", header, rows, ".6g")
    return files + [out / name for name in ("top_force.csv", "contacts.csv", "force_distribution.csv",
                                            "summary.csv")]


def plot(cfg, results, out: Path) -> list[Path]:
    """The three PNG figures (matplotlib, without a display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    colours = dict(zip(results, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    names = {0.0: "independent contacts", 1.0: "elastic half-space", 1.19: "MC-DEM"}
    label = lambda g: f"gamma = {g:g} ({names[g]})" if g in names else f"gamma = {g:g}"  # noqa: E731
    for key, ylabel, name in (("top_force", "top-plate force [N]", "top_force.png"),
                              ("z_tau", f"Z (contacts above {1e3 * cfg['tau']:g} mN)", "contacts.png")):
        fig, ax = plt.subplots(figsize=(6, 4.5))
        for g, r in results.items():
            for phase, style in (("loading", "-"), ("unloading", "--")):
                strain, value = binned(r["samples"], cfg, phase, key)
                ax.plot(100 * strain, value, style, color=colours[g],
                        label=f"{label(g)}, {phase}")
        ax.set_xlabel("strain [%]")
        ax.set_ylabel(ylabel)
        ax.set_title(f"cycles {cfg['discard'] + 1}-{cfg['cycles']} averaged")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / name, dpi=120)
        plt.close(fig)
        files.append(out / name)
    bins = np.linspace(0.0, 5.0, 26)
    centres = 0.5 * (bins[:-1] + bins[1:])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, lev, title in ((axes[0], "max", f"{100 * cfg['max_strain']:.1f} % strain, loading"),
                           (axes[1], "mid", f"{100 * cfg['distribution_strain']:.1f} % strain, unloading")):
        for g, r in results.items():
            ax.semilogy(centres, distribution(r["forces"][lev], bins), "o-", ms=3, color=colours[g],
                        label=label(g))
        ax.set_xlabel("f / <f>")
        ax.set_title(title)
    axes[0].set_ylabel("P(f / <f>)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "force_distribution.png", dpi=120)
    plt.close(fig)
    files.append(out / "force_distribution.png")
    return files


def run_all(job) -> int:
    cfg = job.cfg
    job.on_stop = lambda: (f"nothing written (the files in {cfg['output']} are written after "
                           "the last gamma)")
    say = job.print if not cfg["quiet"] else (lambda msg: None)
    t0 = time.perf_counter()
    position, radius, h0, height = prepare(cfg, job.comm, say)
    results = {}
    for gamma in gammas_of(cfg):
        t1 = time.perf_counter()
        # the box ends a grain above the plate's highest position, so that ranks cut the
        # packing, not the empty space the preparation needed above it
        top = h0 * (1.0 + lift_strain(cfg, h0)) + cfg["diameter"]
        world, mc, _ = build_world(cfg, position, radius, min(top, height), h0, gamma,
                                   weight_acceleration(cfg), comm=job.comm)
        world.setup()
        grains = observe.count(world, world.particles)  # collective: on every rank
        if gamma == gammas_of(cfg)[0]:
            lift = lift_strain(cfg, h0)
            say(f"compression: {grains} grains, dt = {world.dt:.3g} s, plate speed "
                f"{1e3 * cfg['plate_speed']:g} mm/s, piston travel "
                f"{1e3 * (cfg['max_strain'] + lift) * h0:.3g} mm ({1e3 * lift * h0:.3g} above "
                f"H0), {cfg['cycles']} cycles (first {cfg['discard']} discarded)"
                + (f", {job.ranks} ranks" if job.ranks > 1 else ""))
        samples, forces = cycle_plate(cfg, world, h0, say, gamma)
        results[gamma] = {"samples": samples, "forces": forces,
                          "top_max": top_force_at_max(samples, cfg),
                          "hysteresis": hysteresis(samples, cfg),
                          "late": observe.sum_of(world, mc.late_contacts), "skin": world.skin,
                          "seconds": time.perf_counter() - t1}
    out = Path(cfg["output"])
    # rank 0 writes the files after the last gamma (a signal before then leaves none)
    files = job.write(write_outputs, cfg, results, out) or []
    if cfg["plots"]:
        files += job.write(plot, cfg, results, out) or []
    ref = results.get(1.19, {}).get("top_max")
    job.print(f"done in {time.perf_counter() - t0:.0f} s; at {100 * cfg['max_strain']:.1f} % "
              f"strain (cycles {cfg['discard'] + 1}-{cfg['cycles']}):")
    for g, r in results.items():
        ratio = f", {r['top_max'] / ref:.3f} of gamma = 1.19" if ref else ""
        reach = max(x["reach"] for x in r["samples"]) / r["skin"]
        job.print(f"  gamma {g:<5g} top force {r['top_max']:.4g} N{ratio}, hysteresis "
                  f"{r['hysteresis']:.3f}, late contacts {int(r['late'])} (largest W_i + W_j "
                  f"{reach:.2f} skin)")
    job.print(f"outputs in {out}: " + ", ".join(f.name for f in files))
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, check=check_config, run=run_all,
                      description=__doc__.splitlines()[0], soft_kill=True)


if __name__ == "__main__":
    sys.exit(main())
