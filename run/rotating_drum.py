"""A rotating drum with lifters, partly filled with grains: dynamic angle of repose and drive torque.

The drum is a closed triangulated surface (an STL file): a cylinder with end
caps, of horizontal axis y, with ``lifters`` rectangular bars along its inner
wall. Without ``stl`` the driver generates it (``drum_mesh``: the cylinder of
``components.mesh.generators`` and bars of triangles no longer than
``edge_length``) and writes it to ``<output>/drum.stl``; with ``stl = PATH``
it loads that file instead, scaled by ``stl_scale`` (1e-3 for a file in mm),
in the drum's own frame: axis z through the origin, the inside between
z = -drum_length / 2 and +drum_length / 2 (the generated file is in that frame).

Grains (Hertz-Mindlin, radii uniform in [radius_min, radius_max]) are
inserted on a jittered lattice in the lower part of the drum, ``particles``
of them, and settle under gravity (-z) for ``settle_time`` with the drum at
rest. Then, for each speed of ``speeds`` (rad/s, right-handed about +y,
comma-separated), the settled bed is rotated for ``spin_up`` (not sampled)
and ``sample_time`` (sampled ``samples`` times for the surface, and every
``torque_every`` steps for the torque). The drum and the grains share one
material (species 0), as a steel drum with steel balls would.

Dynamic angle of repose: at each surface sample the grains are projected on
the x-z plane (along the axis); the central part of the drum, |x| < 0.6 R,
is cut into bins of width 2 radius_max and the top of each bin (the highest
z + r of its grains) is fitted with a straight line by least squares; the
angle is atan of its slope, positive when the surface rises towards the side
the drum lifts (-x for a positive speed). The driver reports its mean and
standard deviation over the samples.

Drive torque: the grains' torque on the drum about its axis, the y component
of ``mesh_walls.torque`` about the rotation point; the motor supplies its
opposite, tau = -T_y, and the power tau omega. On average it must equal the
torque of gravity on the bed about the axis, -M g x_cm (the bed's angular
momentum is steady), which the driver prints beside it: x_cm is the bed's
centre of mass, sampled with the surface.

    python run/rotating_drum.py                      # defaults, a few minutes here
    python run/rotating_drum.py --set speeds=0.5,1,2,4,8 --set particles=3000
    python run/rotating_drum.py --set stl=my_drum.stl --set stl_scale=1e-3
    mpiexec.mpich -n 2 .venv/bin/python run/rotating_drum.py

Writes ``<output>/rotating_drum.csv`` (one row per speed), ``<output>/rotating_drum.png``
(angle and torque against speed) and, when generated, ``<output>/drum.stl``.
SIGINT or SIGTERM stops it after the current step with exit code 128 + the
signal's number (the CSV and the plot are written after the last speed).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.components.mesh.generators import cylinder
from ecs_dem.components.mesh.io import write_mesh
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh_walls import Rotation, add_mesh_wall
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species, species_ranges
from ecs_dem.comm import default_comm
from ecs_dem.driver import run_driver
from ecs_dem.errors import ConfigValueError, InputError
from ecs_dem.io.paths import unwritable
from ecs_dem.memory import check_particle_count
from ecs_dem.runner import run_or_stop
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts

DEFAULTS = {
    "stl": "",                      # drum surface file; "": generate <output>/drum.stl
    "stl_scale": 1.0,               # factor to metres of the file's coordinates
    "drum_radius": 0.04,            # m (generated drum; also the fill's reach)
    "drum_length": 0.03,            # m, inside between the caps
    "edge_length": 4e-3,            # m, triangle size of the generated drum
    "lifters": 6,                   # bars along the inner wall (0: a smooth drum)
    "lifter_height": 3e-3,          # m, radial
    "lifter_width": 3e-3,           # m, tangential
    "particles": 600,
    "radius_min": 1.8e-3,           # m
    "radius_max": 2.2e-3,           # m
    "youngs_modulus": 1e7,          # Pa (soft, for a larger time step)
    "poisson_ratio": 0.3,
    "density": 2500.0,              # kg/m^3
    "restitution": 0.5,
    "friction": 0.5,
    "rolling_friction": 0.0,
    "gravity": 9.81,                # m/s^2, along -z
    "settle_time": 0.4,             # s with the drum at rest
    "speeds": "1,2,4",              # rad/s about +y, comma-separated
    "spin_up": 0.8,                 # s of rotation before sampling
    "sample_time": 0.8,             # s sampled
    "samples": 16,                  # surface fits over sample_time
    "torque_every": 10,             # steps between torque samples
    "dt_fraction": 0.2,             # dt as a fraction of the Rayleigh time of radius_min
    "skin_fraction": 0.2,           # skin as a fraction of radius_max
    "seed": 1,
    "output": "output/rotating_drum",  # folder of the CSV, the plot and the STL
}

#: the ranges of the grain, material and settling keys the mesh-wall drivers share
GRAIN_RANGES = (
    ("particles", 1, math.inf, True),
    ("radius_min", 0.0, math.inf, False),
    ("radius_max", 0.0, math.inf, False),
    *species_ranges(youngs_modulus="youngs_modulus", poisson_ratio="poisson_ratio",
                    density="density", restitution="restitution", friction="friction",
                    rolling_friction="rolling_friction"),
    ("gravity", 0.0, math.inf, False),
    ("settle_time", 0.0, math.inf, True),
)
#: the ranges of the time-step, skin and seed keys they share
STEP_RANGES = (
    ("dt_fraction", 0.0, 1.0, False),
    ("skin_fraction", 0.0, math.inf, False),
    ("seed", 0, math.inf, True),
)

RANGES = (
    ("stl_scale", 0.0, math.inf, False),
    ("drum_radius", 0.0, math.inf, False),
    ("drum_length", 0.0, math.inf, False),
    ("edge_length", 0.0, math.inf, False),
    ("lifters", 0, math.inf, True),
    ("lifter_height", 0.0, math.inf, False),
    ("lifter_width", 0.0, math.inf, False),
    *GRAIN_RANGES,
    ("spin_up", 0.0, math.inf, True),
    ("sample_time", 0.0, math.inf, False),
    ("samples", 1, math.inf, True),
    ("torque_every", 1, math.inf, True),
    *STEP_RANGES,
)

#: the drum's axis in the world (its file frame's z is turned onto it)
AXIS = np.array([0.0, 1.0, 0.0])
#: turns the file frame's z (the drum axis) onto +y: a rotation by -90 degrees about x
FILE_TO_WORLD = ((1.0, 0.0, 0.0), -0.5 * math.pi)


# ---------------------------------------------------------------------------- geometry

def box_surface(lo, hi, edge_length: float) -> Mesh:
    """The closed surface of the box [lo, hi] (3-vectors, m), each face a grid of
    triangles with edges at most about ``edge_length`` (twice that along the diagonals),
    wound outward. Corner and edge vertices repeat on the faces that share them (an STL
    file stores them so); ``validate_mesh`` merges them."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    counts = np.maximum(1, np.ceil((hi - lo) / edge_length).astype(int))
    grids = [np.linspace(lo[a], hi[a], counts[a] + 1) for a in range(3)]
    vertices, triangles, base = [], [], 0
    for a in range(3):
        u, v = (a + 1) % 3, (a + 2) % 3          # (u, v, a) is right-handed
        for side, sign in ((lo[a], -1.0), (hi[a], 1.0)):
            gu, gv = np.meshgrid(grids[u], grids[v], indexing="ij")
            p = np.empty(gu.shape + (3,))
            p[..., a], p[..., u], p[..., v] = side, gu, gv
            nu, nv = gu.shape
            idx = np.arange(nu * nv).reshape(nu, nv) + base
            q0, q1, q2, q3 = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
            t = np.concatenate([np.stack([q0, q1, q2], -1).reshape(-1, 3),
                                np.stack([q0, q2, q3], -1).reshape(-1, 3)])
            if sign < 0:                          # u x v = +a: flip for the low face
                t = t[:, [0, 2, 1]]
            vertices.append(p.reshape(-1, 3))
            triangles.append(t)
            base += nu * nv
    return Mesh(np.concatenate(vertices), np.concatenate(triangles))


def drum_mesh(radius: float, length: float, edge_length: float, lifters: int = 0,
              lifter_height: float = 0.0, lifter_width: float = 0.0) -> Mesh:
    """A closed drum of axis z, its inside between z = -length/2 and length/2, with
    `lifters` bars (closed boxes, one component each) along its inner wall, evenly spaced
    in angle starting on +x. Each bar reaches from radius - lifter_height to a little
    beyond the wall and a little beyond both caps, so that grains inside meet only its
    three inner faces, never a face lying in the drum's own surface."""
    drum = cylinder(radius, length, edge_length, caps=True, center=(0.0, 0.0, -0.5 * length))
    parts = [drum]
    if lifters > 0:
        if not 0 < lifter_height < 0.5 * radius:
            raise ConfigValueError(f"lifter_height {lifter_height} m must lie in (0, drum_radius/2 "
                                   f"= {0.5 * radius} m): lower it or set lifters=0")
        out = 0.25 * edge_length                  # beyond the wall and the caps
        bar = box_surface((radius - lifter_height, -0.5 * lifter_width, -0.5 * length - out),
                          (radius + out, 0.5 * lifter_width, 0.5 * length + out),
                          edge_length)
        for k in range(lifters):
            a = 2.0 * math.pi * k / lifters
            rot = np.array([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0],
                            [0.0, 0.0, 1.0]])
            parts.append(Mesh(bar.vertices @ rot.T, bar.triangles))
    offsets = np.cumsum([0] + [len(m.vertices) for m in parts[:-1]])
    return Mesh(np.concatenate([m.vertices for m in parts]),
                np.concatenate([m.triangles + o for m, o in zip(parts, offsets)]))


def fill_positions(cfg: dict, rng) -> np.ndarray:
    """`particles` grain centres on a jittered cubic lattice (spacing 2.2 radius_max) inside
    the drum clear of its wall and lifters, the lowest first (the drum fills from the
    bottom); world frame (axis y, centre at the origin)."""
    rmax, n = cfg["radius_max"], cfg["particles"]
    spacing = 2.2 * rmax
    reach = cfg["drum_radius"] - 1.1 * rmax - (cfg["lifter_height"] if cfg["lifters"] else 0.0)
    half_length = 0.5 * cfg["drum_length"] - 1.1 * rmax
    if reach <= 0 or half_length < 0:
        raise ConfigValueError(f"the drum (radius {cfg['drum_radius']} m, length "
                               f"{cfg['drum_length']} m) cannot hold grains of radius {rmax} m: "
                               "enlarge it or use smaller grains")
    xs = np.arange(-reach, reach + 1e-12, spacing)
    ys = np.arange(-half_length, half_length + 1e-12, spacing)
    x, y, z = np.meshgrid(xs, ys, xs, indexing="ij")
    pos = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    pos = pos[pos[:, 0] ** 2 + pos[:, 2] ** 2 <= reach * reach]
    if len(pos) < n:
        raise ConfigValueError(f"the drum holds at most {len(pos)} grains on the insertion "
                               f"lattice, not particles = {n}: lower particles or enlarge the "
                               "drum")
    order = np.lexsort((pos[:, 1], pos[:, 0], pos[:, 2]))
    pos = pos[order[:n]]
    return pos + rng.uniform(-0.05, 0.05, pos.shape) * spacing


def time_step(cfg: dict) -> float:
    return cfg["dt_fraction"] * float(rayleigh_time(cfg["radius_min"], cfg["density"],
                                                    cfg["youngs_modulus"], cfg["poisson_ratio"]))


def drum_source(cfg: dict):
    """(the mesh or file add_mesh_wall loads, its scale): the generated drum, or ``stl``."""
    if cfg["stl"]:
        return cfg["stl"], cfg["stl_scale"]
    return drum_mesh(cfg["drum_radius"], cfg["drum_length"], cfg["edge_length"],
                     cfg["lifters"], cfg["lifter_height"], cfg["lifter_width"]), 1.0


def build_world(cfg: dict, position, radius, velocity=None, rate: float = 0.0,
                comm=None, law=None, wall_law=None) -> World:
    """The drum (turning at `rate` rad/s about +y through the origin from t = 0; 0: at rest)
    with grains at `position` (world frame); `law`: the contact law (default: a
    ``HertzMindlinLaw`` mixing the species' constants); `wall_law`: the drum's, if another
    (a wet law for the grains, which mesh walls refuse)."""
    source, scale = drum_source(cfg)
    margin = 0.5 * cfg["edge_length"] + 2.0 * cfg["radius_max"]
    half = math.hypot(cfg["drum_radius"] + 0.25 * cfg["edge_length"],
                      0.5 * cfg["lifter_width"]) + margin
    half_y = 0.5 * cfg["drum_length"] + margin
    box = Box((-half, -half_y, -half), (half, half_y, half))
    world = World(box, dt=time_step(cfg), skin=cfg["skin_fraction"] * cfg["radius_max"],
                  comm=comm)
    grain = add_species(world, youngs_modulus=cfg["youngs_modulus"],
                        poisson_ratio=cfg["poisson_ratio"], density=cfg["density"],
                        restitution=cfg["restitution"], friction=cfg["friction"],
                        rolling_friction=cfg["rolling_friction"])
    motion = Rotation((0.0, 0.0, 0.0), tuple(AXIS), float(rate)) if rate else None
    try:
        add_mesh_wall(world, source, species=grain, scale=scale, rotate=FILE_TO_WORLD,
                      motion=motion)
    except InputError as exc:
        if cfg["stl"]:
            raise InputError(f"{exc} (the drum file's frame: axis z through the origin, "
                             "inside between z = -drum_length/2 and drum_length/2; stl_scale "
                             "turns its unit into metres)") from None
        raise
    add_particles(world, position, radius, grain, velocity=velocity)
    add_grain_systems(world, cfg["gravity"], law=law, wall_law=wall_law)
    return world


def add_grain_systems(world, gravity, planar_walls: bool = False, law=None,
                      wall_law=None) -> None:
    """The time step of grains under gravity (a number: m/s^2 along -z; or the vector, m/s^2)
    among mesh walls (and planar walls): one contact law for every contact (`law`, default a
    ``HertzMindlinLaw``), or `wall_law` for the mesh walls."""
    law = HertzMindlinLaw() if law is None else law
    first, second = velocity_verlet()
    world.add_system(first)
    world.add_system(NeighborSearch())
    world.add_system(Gravity((0.0, 0.0, -gravity) if np.ndim(gravity) == 0 else
                             tuple(float(g) for g in gravity)))
    world.add_system(ContactForces(law))
    if planar_walls:
        world.add_system(WallContacts(law))
    world.add_system(MeshWallContacts(law if wall_law is None else wall_law))
    world.add_system(second)


# ---------------------------------------------------------------------------- measures

def surface_angle(x, z, r, drum_radius: float, bin_width: float, rate: float) -> float:
    """Dynamic angle of repose (degrees) of grains at (x, z) of radii r (module docstring):
    a line fitted to the top of each bin of width `bin_width` over |x| < 0.6 drum_radius,
    positive when it rises towards the lifting side (-x for rate > 0). NaN with fewer
    than three filled bins."""
    reach = 0.6 * drum_radius
    edges = np.arange(-reach, reach + 1e-12, bin_width)
    k = np.digitize(x, edges) - 1
    inside = (k >= 0) & (k < len(edges) - 1)
    top = np.full(len(edges) - 1, -np.inf)
    np.maximum.at(top, k[inside], (z + r)[inside])
    filled = np.isfinite(top)
    if filled.sum() < 3:
        return math.nan
    centres = 0.5 * (edges[:-1] + edges[1:])
    slope = np.polyfit(centres[filled], top[filled], 1)[0]
    return math.degrees(math.atan(-slope * (1.0 if rate >= 0 else -1.0)))


def settle(cfg: dict, comm=None, law=None):
    """The bed after ``settle_time`` in the drum at rest (contact law `law`, as
    ``build_world``): (position, radius, velocity) of every grain in gid order, on every
    rank."""
    rng = np.random.default_rng(cfg["seed"])
    pos = fill_positions(cfg, rng)
    radius = rng.uniform(cfg["radius_min"], cfg["radius_max"], len(pos))
    world = build_world(cfg, pos, radius, comm=comm, law=law)
    world.setup()
    run_or_stop(world, int(round(cfg["settle_time"] / world.dt)), "the settling")
    p = world.particles
    return observe.gather_by_gid(world, p, ("position", "radius", "velocity"), root=None)


def run_speed(cfg: dict, bed, rate: float, comm=None) -> dict:
    """Rotate the settled `bed` at `rate` rad/s; the measures of one speed (module docstring)."""
    position, radius, velocity = bed
    world = build_world(cfg, position, radius, velocity, rate, comm)
    world.setup()
    dt = world.dt
    spin = int(round(cfg["spin_up"] / dt))
    sampled = max(int(round(cfg["sample_time"] / dt)), 1)
    every = int(cfg["torque_every"])
    per_sample = max(sampled // int(cfg["samples"]), 1)
    run_or_stop(world, spin, f"the spin-up at {rate} rad/s")
    p = world.particles
    torques, angles, x_cm, done = [], [], [], 0
    mass = observe.total(world, p.mass)
    while done < sampled:
        chunk = min(every, sampled - done)
        run_or_stop(world, chunk, f"the sampling at {rate} rad/s")
        done += chunk
        torques.append(-float(world.mesh_walls.torque[0] @ AXIS))
        if done % per_sample < chunk or done == sampled:
            x = observe.concatenated(world, p.position[:, [0, 2]])
            r = observe.concatenated(world, p.radius)
            angles.append(surface_angle(x[:, 0], x[:, 1], r, cfg["drum_radius"],
                                        2.0 * cfg["radius_max"], rate))
            x_cm.append(observe.total(world, p.mass * p.position[:, 0]) / mass)
    angles = np.asarray(angles)
    torques = np.asarray(torques)
    good = angles[np.isfinite(angles)]
    tau = float(torques.mean())
    gravity_torque = -mass * cfg["gravity"] * float(np.mean(x_cm))
    return {"speed": rate, "rpm": rate * 30.0 / math.pi,
            "froude": rate * rate * cfg["drum_radius"] / cfg["gravity"],
            "angle": float(good.mean()) if good.size else math.nan,
            "angle_sd": float(good.std()) if good.size else math.nan,
            "torque": tau, "torque_sd": float(torques.std()), "power": tau * rate,
            "gravity_torque": gravity_torque, "x_cm": float(np.mean(x_cm)),
            "mass": mass, "angle_samples": int(good.size), "torque_samples": int(torques.size),
            "steps": world.step}


# ---------------------------------------------------------------------------- driver

HEADER = ("speed_rad_s", "rpm", "froude", "angle_deg", "angle_sd_deg", "drive_torque_Nm",
          "drive_torque_sd_Nm", "power_W", "gravity_torque_Nm", "bed_x_cm_m", "bed_mass_kg")
KEYS = ("speed", "rpm", "froude", "angle", "angle_sd", "torque", "torque_sd", "power",
        "gravity_torque", "x_cm", "mass")


def number_list(cfg: dict, key: str, accept, wanted: str) -> list[float]:
    """The comma-separated numbers of config key `key`, each of which `accept` must take;
    else a ConfigValueError asking for `wanted`."""
    try:
        values = [float(v) for v in str(cfg[key]).split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) and accept(v) for v in values):
        raise ConfigValueError(f"config key '{key}' = {cfg[key]!r}: give {wanted}")
    return values


def speeds_of(cfg: dict) -> list[float]:
    return number_list(cfg, "speeds", lambda v: v != 0,
                       "non-zero rotation speeds in rad/s, comma-separated, such as 1,2,4")


def check(cfg: dict) -> None:
    speeds_of(cfg)
    if not 0 < cfg["radius_min"] <= cfg["radius_max"]:
        raise ConfigValueError(f"need 0 < radius_min <= radius_max (got {cfg['radius_min']}, "
                               f"{cfg['radius_max']}): swap them or set them equal")
    out = Path(cfg["output"])
    problem = unwritable(out / "rotating_drum.csv")
    if problem:
        raise InputError(problem)
    if cfg["stl"] and not Path(cfg["stl"]).is_file():
        raise InputError(f"stl {cfg['stl']!r} is not a file: give the drum's surface file, "
                         "or stl=\"\" to generate one")
    check_particle_count(cfg["particles"], default_comm())
    fill_positions(cfg, np.random.default_rng(0))  # the drum holds them


def write_outputs(results: list[dict], out: Path) -> None:
    """The CSV and the plot (not collective: rank 0 writes them)."""
    from ecs_dem.driver import write_csv

    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "rotating_drum.csv", HEADER, [[r[k] for k in KEYS] for r in results],
              ".6g")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = np.array([r["speed"] for r in results])
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(6, 6), sharex=True)
    ax1.errorbar(s, [r["angle"] for r in results], [r["angle_sd"] for r in results],
                 marker="o", capsize=3)
    ax1.set_ylabel("dynamic angle of repose (deg)")
    ax2.errorbar(s, [r["torque"] for r in results], [r["torque_sd"] for r in results],
                 marker="o", capsize=3, label="drive torque")
    ax2.plot(s, [r["gravity_torque"] for r in results], "x--", label="-M g x_cm")
    ax2.set_ylabel("torque (N m)")
    ax2.set_xlabel("rotation speed (rad/s)")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(out / "rotating_drum.png", dpi=120)
    plt.close(fig)


def run(job) -> int:
    cfg = job.cfg
    out = Path(cfg["output"])
    speeds = speeds_of(cfg)
    results: list[dict] = []
    job.on_stop = lambda: (f"nothing written ({len(results)} of {len(speeds)} speeds had "
                           "finished; the CSV is written after the last)")
    if not cfg["stl"]:
        mesh = drum_source(cfg)[0]
        job.write(write_mesh, out / "drum.stl", mesh, binary=False)
        job.print(f"drum: {len(mesh.triangles)} triangles ({cfg['lifters']} lifters), "
                  f"written to {out / 'drum.stl'}")
    dt = time_step(cfg)
    job.print(f"rotating drum: {cfg['particles']} grains, dt = {dt:.3g} s; settling "
              f"{cfg['settle_time']} s")
    bed = settle(cfg, job.comm)
    for rate in speeds:
        r = run_speed(cfg, bed, rate, job.comm)
        results.append(r)
        job.print(f"speed {rate:g} rad/s ({r['rpm']:.3g} rpm, Froude {r['froude']:.3g}): "
                  f"angle {r['angle']:.2f} +- {r['angle_sd']:.2f} deg, drive torque "
                  f"{r['torque']:.4g} +- {r['torque_sd']:.2g} N m (gravity on the bed "
                  f"{r['gravity_torque']:.4g} N m), power {r['power']:.3g} W")
    job.write(write_outputs, results, out)
    job.print(f"wrote {out / 'rotating_drum.csv'} and {out / 'rotating_drum.png'}")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run,
                      description=__doc__.splitlines()[0], soft_kill=True)


if __name__ == "__main__":
    sys.exit(main())
