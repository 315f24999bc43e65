"""Grains sliding over an inclined screen wear it: the screen's mesh before and after, as Fig. 8 of Thornton et al. 2023.

The screen is a perforated plate: an open triangulated sheet in its own frame,
the deck at z = 0 (grains above it), x down the slope from its upper end at
x = 0 to ``screen_length``, y across it between -screen_width/2 and
+screen_width/2. Without ``stl`` the driver generates it (``screen_mesh``: a
grid of squares of side ``edge_length``, each cut into two triangles, with
square holes of side ``hole_size`` every ``hole_pitch`` in both directions
from x = ``solid_length`` on; the upper end, where the grains land, has no
holes). With ``stl = PATH`` it loads that file instead (scaled by
``stl_scale``: 1e-3 for a file in mm), in the same frame: it must lie within
0 <= x <= screen_length, |y| <= screen_width/2, z <= 0 (a plate with a
thickness is a closed surface whose top face is the deck).

Inclination: the screen stays in its frame and gravity is turned instead,
g = g (sin a, 0, -cos a) with a = ``inclination``: the same as a screen
tilted by a, and the mesh files before and after are in the screen's frame.

Feed: ``particles`` grains (Hertz-Mindlin, radii uniform in [radius_min,
radius_max]) fill a feed bin over the upper end, between the back wall
(x = 0) and a gate at x = ``bin_length``, and settle for ``settle_time``
with the gate shut. Then the gate, a plate of triangles across the screen,
stands ``gate_height`` above the deck: the grains run out under it onto
the screen at a steady rate (as from a silo's outlet), slide and roll down,
fall through the holes or off the lower end onto a floor ``drop`` below the
deck. Plane side walls bound the screen and the floor at |y| =
screen_width/2, a plane end wall the floor at x = screen_length +
``runout``. The screen and the gate share the grains' material.

Wear (``systems.mesh_wall.wear.MeshWear``, Reye-Archard-Khrushchov): every
``wear_every`` steps each triangle loses the volume acceleration k W_t, W_t
the frictional work the grains did on it since the last update, k the
``wear_coefficient`` (m^3/J) and ``acceleration`` the factor that lets a run
of a second show the wear of a much longer time. The gate wears as well;
the records below are those of the screen (mesh wall 0).

Check: after every update the screen's worn volume (the sum of the
triangles' removed volumes) equals acceleration k times the frictional work
turned into wear, to round-off (the wear iteration's tolerance, 1e-13): the
CSV has both and their relative difference, and the driver prints the
largest.

    python run/screen_wear.py                     # defaults, a few minutes here
    python run/screen_wear.py --set inclination=30 --set acceleration=2e9
    python run/screen_wear.py --set stl=my_screen.stl --set stl_scale=1e-3
    mpiexec.mpich -n 2 .venv/bin/python run/screen_wear.py

Writes, in ``output``: ``screen_before.stl`` and ``screen_after.stl`` (the
screen before and after the wear), ``screen_wear.h5`` with its ``.xdmf``
(snapshots every ``snapshot_every`` steps of the grains and of the mesh walls
with the worn depth per vertex and per triangle: open the .xdmf in
ParaView), ``screen_wear.csv`` (one row per wear update: the frictional work,
the worn volume, acceleration k W, their relative difference, the deepest
wear) and ``screen_wear.png`` (the worn depth per triangle on the screen,
and its profile along the screen against acceleration k W per area).
SIGINT or SIGTERM stops it after the current step with exit code 128 + the
signal's number (the HDF5 file keeps what was written; the CSV, the STL after
and the picture are written at the end).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.mesh.io import read_mesh, write_mesh
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh_walls import add_mesh_wall
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.driver import run_driver, write_csv
from ecs_dem.errors import ConfigValueError, InputError
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from ecs_dem.io.paths import unwritable
from ecs_dem.memory import check_particle_count
from ecs_dem.run.rotating_drum import (GRAIN_RANGES, STEP_RANGES, add_grain_systems,
                                       box_surface, time_step)
from ecs_dem.runner import run_or_stop
from ecs_dem.systems.mesh_wall.records import MeshWallSnapshotWriter
from ecs_dem.systems.mesh_wall.wear import MeshWear

DEFAULTS = {
    "stl": "",                      # screen surface file; "": generate a perforated plate
    "stl_scale": 1.0,               # factor to metres of the file's coordinates
    "screen_length": 0.16,          # m, along the slope (x)
    "screen_width": 0.04,           # m, across (y)
    "edge_length": 2e-3,            # m, side of the grid squares of the generated plate
    "hole_size": 6e-3,              # m, side of the square holes
    "hole_pitch": 12e-3,            # m, between the holes' centres, both directions
    "solid_length": 0.06,           # m, the upper end without holes
    "inclination": 25.0,            # degrees
    "bin_length": 0.035,            # m, feed bin from the back wall to the gate
    "bin_height": 0.05,             # m, above the deck
    "gate_height": 0.012,           # m, the opening under the gate
    "drop": 0.03,                   # m, from the deck down to the floor
    "runout": 0.02,                 # m, of floor beyond the lower end
    "particles": 500,
    "radius_min": 1.8e-3,           # m
    "radius_max": 2.2e-3,           # m
    "youngs_modulus": 1e7,          # Pa (soft, for a larger time step)
    "poisson_ratio": 0.3,
    "density": 2500.0,              # kg/m^3
    "restitution": 0.5,
    "friction": 0.5,                # grains, screen and gate (one material)
    "rolling_friction": 0.1,        # stands in for the grains' departure from spheres
    "gravity": 9.81,                # m/s^2
    "settle_time": 0.1,             # s in the bin with the gate shut
    "duration": 0.6,                # s of flow over the screen
    "wear_coefficient": 1e-13,      # m^3/J, volume per frictional work (steel: ~1e-13)
    "acceleration": 3e9,            # wear acceleration factor
    "wear_every": 500,              # steps between wear updates
    "snapshot_every": 2000,         # steps between HDF5 snapshots
    "dt_fraction": 0.2,             # dt as a fraction of the Rayleigh time of radius_min
    "skin_fraction": 0.2,           # skin as a fraction of radius_max
    "seed": 1,
    "output": "output/screen_wear",  # folder of the STL, HDF5, CSV and PNG files
}

RANGES = (
    ("stl_scale", 0.0, math.inf, False),
    ("screen_length", 0.0, math.inf, False),
    ("screen_width", 0.0, math.inf, False),
    ("edge_length", 0.0, math.inf, False),
    ("hole_size", 0.0, math.inf, False),
    ("hole_pitch", 0.0, math.inf, False),
    ("solid_length", 0.0, math.inf, True),
    ("inclination", 0.0, 90.0, False),
    ("bin_length", 0.0, math.inf, False),
    ("bin_height", 0.0, math.inf, False),
    ("gate_height", 0.0, math.inf, False),
    ("drop", 0.0, math.inf, False),
    ("runout", 0.0, math.inf, True),
    *GRAIN_RANGES,
    ("duration", 0.0, math.inf, False),
    ("wear_coefficient", 0.0, math.inf, True),
    ("acceleration", 0.0, math.inf, False),
    ("wear_every", 1, math.inf, True),
    ("snapshot_every", 1, math.inf, True),
    *STEP_RANGES,
)

#: mesh wall ids: the screen is added first, the gate second
SCREEN, GATE = 0, 1


# ---------------------------------------------------------------------------- geometry

def cells(length: float, edge_length: float, what: str) -> int:
    """`length` in grid squares of `edge_length`; a ConfigValueError unless it is a whole
    number of them (to 1e-6)."""
    n = length / edge_length
    if abs(n - round(n)) > 1e-6 * max(n, 1.0) or round(n) < 1:
        raise ConfigValueError(f"{what} = {length} m is not a whole number of grid squares "
                               f"(edge_length = {edge_length} m): make it a multiple of "
                               "edge_length")
    return int(round(n))


def hole_mask(cfg: dict) -> np.ndarray:
    """(nx, ny) bool: the grid squares of the generated plate that are holes (module
    docstring): square holes of hole_size every hole_pitch, from solid_length on, the last
    row and column a full pitch clear of the plate's rim."""
    a = cfg["edge_length"]
    nx = cells(cfg["screen_length"], a, "screen_length")
    ny = cells(cfg["screen_width"], a, "screen_width")
    hole = cells(cfg["hole_size"], a, "hole_size")
    pitch = cells(cfg["hole_pitch"], a, "hole_pitch")
    start = cells(cfg["solid_length"], a, "solid_length") if cfg["solid_length"] else 0
    if pitch <= hole:
        raise ConfigValueError(f"hole_pitch {cfg['hole_pitch']} m must exceed hole_size "
                               f"{cfg['hole_size']} m (the plate between the holes): widen "
                               "the pitch or shrink the holes")
    mask = np.zeros((nx, ny), dtype=bool)
    rows = ny // pitch                     # hole rows across, centred
    first_y = (ny - rows * pitch) // 2 + (pitch - hole) // 2
    for i0 in range(start + (pitch - hole) // 2, nx - pitch + 1, pitch):
        for j0 in range(first_y, first_y + rows * pitch, pitch):
            mask[i0:i0 + hole, j0:j0 + hole] = True
    return mask


def screen_mesh(cfg: dict) -> Mesh:
    """The perforated plate (module docstring): the grid squares that are not holes, each
    cut into two triangles along alternating diagonals, wound with normal +z (towards the
    grains). Grid vertices no triangle uses are left out."""
    mask = hole_mask(cfg)
    nx, ny = mask.shape
    half = 0.5 * cfg["screen_width"]
    xs = np.linspace(0.0, cfg["screen_length"], nx + 1)
    ys = np.linspace(-half, half, ny + 1)
    index = np.arange((nx + 1) * (ny + 1)).reshape(nx + 1, ny + 1)
    i, j = np.nonzero(~mask)
    q0, q1, q2, q3 = index[i, j], index[i + 1, j], index[i + 1, j + 1], index[i, j + 1]
    even = (i + j) % 2 == 0                # alternate the diagonal: no preferred direction
    t = np.concatenate([
        np.where(even[:, None], np.stack([q0, q1, q2], 1), np.stack([q0, q1, q3], 1)),
        np.where(even[:, None], np.stack([q0, q2, q3], 1), np.stack([q1, q2, q3], 1))])
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    points = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1)
    used = np.unique(t)
    renumber = np.full(len(points), -1, dtype=np.int64)
    renumber[used] = np.arange(used.size)
    return Mesh(points[used], renumber[t])


def gate_mesh(cfg: dict) -> Mesh:
    """The gate: a closed box across the screen (a little wider than it), from
    x = bin_length to bin_length + edge_length, from gate_height above the deck to the
    bin's top."""
    a, half = cfg["edge_length"], 0.5 * cfg["screen_width"] + cfg["edge_length"]
    top = cfg["bin_height"] + 2.0 * cfg["radius_max"]
    return box_surface((cfg["bin_length"], -half, cfg["gate_height"]),
                       (cfg["bin_length"] + a, half, top), 2.0 * a)


def screen_source(cfg: dict) -> Mesh:
    """The screen in metres, in its frame: generated, or read from ``stl`` and scaled, and
    checked to lie where the module docstring says."""
    if not cfg["stl"]:
        return screen_mesh(cfg)
    mesh = read_mesh(cfg["stl"])
    mesh = Mesh(mesh.vertices * cfg["stl_scale"], mesh.triangles)
    lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
    tol = 1e-9 * max(cfg["screen_length"], cfg["screen_width"])
    half = 0.5 * cfg["screen_width"]
    if (lo[0] < -tol or hi[0] > cfg["screen_length"] + tol or lo[1] < -half - tol
            or hi[1] > half + tol or hi[2] > tol or lo[2] < -cfg["drop"]):
        raise InputError(f"stl {cfg['stl']!r} spans {lo.tolist()} to {hi.tolist()} m (after "
                         f"stl_scale = {cfg['stl_scale']}); the screen's frame asks for 0 <= x "
                         f"<= screen_length = {cfg['screen_length']}, |y| <= screen_width/2 = "
                         f"{half}, -drop = {-cfg['drop']} < z <= 0 (the deck at z = 0, x down "
                         "the slope): move the surface in a mesh tool, set stl_scale (1e-3 for "
                         "mm), or set screen_length and screen_width to its size")
    return mesh


def fill_positions(cfg: dict, rng) -> np.ndarray:
    """`particles` centres on a jittered cubic lattice (spacing 2.2 radius_max) in the feed
    bin, clear of its walls and the deck, the lowest first."""
    rmax, n = cfg["radius_max"], cfg["particles"]
    spacing, clear = 2.2 * rmax, 1.1 * rmax
    half = 0.5 * cfg["screen_width"]
    xs = np.arange(clear, cfg["bin_length"] - clear + 1e-12, spacing)
    ys = np.arange(-half + clear, half - clear + 1e-12, spacing)
    zs = np.arange(clear, cfg["bin_height"] - clear + 1e-12, spacing)
    if min(len(xs), len(ys), len(zs)) == 0 or len(xs) * len(ys) * len(zs) < n:
        raise ConfigValueError(f"the feed bin holds at most {len(xs) * len(ys) * len(zs)} "
                               f"grains on the insertion lattice, not particles = {n}: lower "
                               "particles or enlarge bin_length, bin_height or screen_width")
    x, y, z = np.meshgrid(xs, ys, zs, indexing="ij")
    pos = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    pos = pos[np.lexsort((pos[:, 1], pos[:, 0], pos[:, 2]))[:n]]
    return pos + rng.uniform(-0.05, 0.05, pos.shape) * spacing


def gravity_vector(cfg: dict) -> np.ndarray:
    a = math.radians(cfg["inclination"])
    return cfg["gravity"] * np.array([math.sin(a), 0.0, -math.cos(a)])


def build_world(cfg: dict, screen: Mesh, position, radius, velocity=None, shut: bool = False,
                comm=None) -> World:
    """The screen (mesh wall 0), the gate (mesh wall 1), the plane walls and the grains;
    `shut`: a plane at the gate closes the opening under it."""
    margin = 3.0 * cfg["radius_max"] + cfg["edge_length"]
    half = 0.5 * cfg["screen_width"]
    end = cfg["screen_length"] + cfg["runout"]
    box = Box((-margin, -half - margin, -cfg["drop"] - margin),
              (end + margin, half + margin, cfg["bin_height"] + margin + 2 * cfg["radius_max"]))
    world = World(box, dt=time_step(cfg), skin=cfg["skin_fraction"] * cfg["radius_max"],
                  comm=comm)
    grain = add_species(world, youngs_modulus=cfg["youngs_modulus"],
                        poisson_ratio=cfg["poisson_ratio"], density=cfg["density"],
                        restitution=cfg["restitution"], friction=cfg["friction"],
                        rolling_friction=cfg["rolling_friction"])
    try:
        add_mesh_wall(world, screen, species=grain)
    except InputError as exc:
        if cfg["stl"]:
            raise InputError(f"{exc} (the screen file {cfg['stl']!r})") from None
        raise
    add_mesh_wall(world, gate_mesh(cfg), species=grain, closed=True)
    for point, normal in (((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)),          # back wall
                          ((end, 0.0, 0.0), (-1.0, 0.0, 0.0)),          # end wall
                          ((0.0, -half, 0.0), (0.0, 1.0, 0.0)),         # side walls
                          ((0.0, half, 0.0), (0.0, -1.0, 0.0)),
                          ((0.0, 0.0, -cfg["drop"]), (0.0, 0.0, 1.0))):  # floor
        add_wall(world, point, normal, species=grain)
    if shut:
        add_wall(world, (cfg["bin_length"], 0.0, 0.0), (-1.0, 0.0, 0.0), species=grain)
    add_particles(world, position, radius, grain, velocity=velocity)
    add_grain_systems(world, gravity_vector(cfg), planar_walls=True)
    return world


def settle(cfg: dict, screen: Mesh, comm=None):
    """The grains settled in the shut bin: (position, radius, velocity) in gid order, on
    every rank."""
    rng = np.random.default_rng(cfg["seed"])
    pos = fill_positions(cfg, rng)
    radius = rng.uniform(cfg["radius_min"], cfg["radius_max"], len(pos))
    world = build_world(cfg, screen, pos, radius, shut=True, comm=comm)
    world.setup()
    run_or_stop(world, int(round(cfg["settle_time"] / world.dt)), "the settling")
    return observe.gather_by_gid(world, world.particles, ("position", "radius", "velocity"),
                                 root=None)


# ---------------------------------------------------------------------------- measures

def triangle_areas(x: np.ndarray, tri: np.ndarray) -> np.ndarray:
    return 0.5 * np.linalg.norm(np.cross(x[tri[:, 1]] - x[tri[:, 0]],
                                         x[tri[:, 2]] - x[tri[:, 0]]), axis=1)


def screen_state(world) -> dict:
    """The screen now, gathered on every rank in gid order (collective): vertices
    ``position`` (n, 3) and ``wear_depth`` (n,); triangles ``triangles`` (m, 3) rows of the
    vertices, ``friction_work``, ``worn_work`` (J) and ``wear_volume`` (m^3), ``area``
    (m^2) of the worn triangle and ``depth`` = wear_volume / area (m)."""
    v, t = world.mesh_vertices, world.mesh_triangles
    vgid, x, depth = observe.gather_by_gid(world, v, ("gid", "position", "wear_depth"),
                                           where=v.wall == SCREEN, root=None)
    corners, work, worn, volume = observe.gather_by_gid(
        world, t, ("vertices", "friction_work", "worn_work", "wear_volume"),
        where=t.wall == SCREEN, root=None)
    tri = np.searchsorted(vgid, corners)
    area = triangle_areas(x, tri)
    return {"position": x, "wear_depth": depth, "triangles": tri, "friction_work": work,
            "worn_work": worn, "wear_volume": volume, "area": area, "depth": volume / area}


def record(world, cfg: dict) -> dict:
    """One CSV row (collective): the screen's totals after a wear update."""
    t = world.mesh_triangles
    on = t.wall == SCREEN
    work, worn, volume = (observe.total(world, t.owned(name), where=on)
                          for name in ("friction_work", "worn_work", "wear_volume"))
    v = world.mesh_vertices
    deepest = observe.largest(world, v.owned("wear_depth"), where=v.wall == SCREEN,
                              empty=0.0)
    p = world.particles
    below = observe.count(world, p.position[:, 2] < -p.radius)
    expected = cfg["acceleration"] * cfg["wear_coefficient"] * worn
    difference = abs(volume - expected) / expected if expected > 0 else 0.0
    return {"time": world.time, "friction_work": work, "worn_work": worn, "volume": volume,
            "expected": expected, "difference": difference, "deepest": deepest,
            "passed": below / observe.count(world, p)}


HEADER = ("time_s", "friction_work_J", "worn_work_J", "worn_volume_m3",
          "acceleration_k_work_m3", "relative_difference", "deepest_wear_m",
          "grains_below_deck")
KEYS = ("time", "friction_work", "worn_work", "volume", "expected", "difference", "deepest",
        "passed")


def along_profile(state: dict, cfg: dict, bins: int):
    """(bin centres along x, worn volume per area, acceleration k W per area) of the screen
    in `bins` slices across it: the wear pattern along the screen."""
    x = state["position"][state["triangles"]].mean(axis=1)[:, 0]
    edges = np.linspace(0.0, cfg["screen_length"], bins + 1)
    k = np.clip(np.digitize(x, edges) - 1, 0, bins - 1)
    area = np.bincount(k, state["area"], bins)
    volume = np.bincount(k, state["wear_volume"], bins)
    work = np.bincount(k, state["worn_work"], bins)
    scale = cfg["acceleration"] * cfg["wear_coefficient"]
    with np.errstate(invalid="ignore", divide="ignore"):
        return 0.5 * (edges[:-1] + edges[1:]), volume / area, scale * work / area


def write_outputs(rows: list[dict], state: dict, before: Mesh, cfg: dict, out: Path) -> None:
    """The CSV, the STL after and the picture (not collective: rank 0 writes them)."""
    write_csv(out / "screen_wear.csv", HEADER, [[r[k] for k in KEYS] for r in rows], ".9g")
    write_mesh(out / "screen_after.stl", Mesh(state["position"], state["triangles"]),
               binary=False)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.tri import Triangulation

    x = before.vertices
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6.5), height_ratios=(1.3, 1))
    mesh = Triangulation(x[:, 0] * 1e3, x[:, 1] * 1e3, before.triangles)
    shade = ax1.tripcolor(mesh, facecolors=state["depth"] * 1e6, cmap="inferno_r",
                          edgecolors="none")
    ax1.set_aspect("equal")
    ax1.set_xlabel("x down the slope (mm)")
    ax1.set_ylabel("y (mm)")
    ax1.set_title(f"worn depth per triangle (um) after {rows[-1]['time']:.3g} s x "
                  f"{cfg['acceleration']:.3g}" if rows else "worn depth per triangle (um)")
    fig.colorbar(shade, ax=ax1, fraction=0.025, pad=0.02, shrink=0.6)
    centres, depth, expected = along_profile(state, cfg, max(8, round(cfg["screen_length"]
                                                                      / cfg["hole_pitch"]) * 2))
    ax2.plot(centres * 1e3, depth * 1e6, "o-", label="worn volume / area")
    ax2.plot(centres * 1e3, expected * 1e6, "x--", label="acceleration k W / area")
    ax2.axvline(cfg["bin_length"] * 1e3, color="grey", lw=0.8, ls=":", label="gate")
    ax2.set_xlabel("x down the slope (mm)")
    ax2.set_ylabel("mean worn depth (um)")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(out / "screen_wear.png", dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------- driver

def check(cfg: dict) -> None:
    if not 0 < cfg["radius_min"] <= cfg["radius_max"]:
        raise ConfigValueError(f"need 0 < radius_min <= radius_max (got {cfg['radius_min']}, "
                               f"{cfg['radius_max']}): swap them or set them equal")
    if cfg["gate_height"] >= cfg["bin_height"]:
        raise ConfigValueError(f"gate_height {cfg['gate_height']} m must lie below bin_height "
                               f"{cfg['bin_height']} m: lower the gate or raise the bin")
    if cfg["gate_height"] <= 2.0 * cfg["radius_max"]:
        raise ConfigValueError(f"gate_height {cfg['gate_height']} m lets no grain of radius "
                               f"{cfg['radius_max']} m through: raise it above 2 radius_max "
                               "(several grain diameters flow steadily)")
    if cfg["bin_length"] + cfg["edge_length"] >= cfg["screen_length"]:
        raise ConfigValueError(f"the feed bin (bin_length {cfg['bin_length']} m) must end on "
                               f"the screen (screen_length {cfg['screen_length']} m): shorten "
                               "it or lengthen the screen")
    if cfg["drop"] <= 2.0 * cfg["radius_max"]:
        raise ConfigValueError(f"drop {cfg['drop']} m leaves no room under the deck for grains "
                               f"of radius {cfg['radius_max']} m: raise it")
    if cfg["stl"]:
        if not Path(cfg["stl"]).is_file():
            raise InputError(f"stl {cfg['stl']!r} is not a file: give the screen's surface "
                             "file, or stl=\"\" to generate a perforated plate")
        screen_source(cfg)  # in the screen's frame
    else:
        hole_mask(cfg)
        if cfg["solid_length"] < cfg["bin_length"]:
            raise ConfigValueError(f"solid_length {cfg['solid_length']} m must cover the feed "
                                   f"bin (bin_length {cfg['bin_length']} m): the settled "
                                   "grains would fall through its holes")
    out = Path(cfg["output"])
    for name in ("screen_wear.csv", "screen_wear.h5"):
        problem = unwritable(out / name)
        if problem:
            raise InputError(problem)
    check_particle_count(cfg["particles"], default_comm())
    fill_positions(cfg, np.random.default_rng(0))


def run(job) -> int:
    cfg = job.cfg
    out = Path(cfg["output"])
    rows: list[dict] = []
    job.on_stop = lambda: (f"{out / 'screen_wear.h5'} holds the snapshots so far; the CSV, "
                           "the worn STL and the picture are written at the end")
    screen = screen_source(cfg)
    job.write(write_mesh, out / "screen_before.stl", screen, binary=False)
    job.print(f"screen: {len(screen.triangles)} triangles, written to "
              f"{out / 'screen_before.stl'}")
    dt = time_step(cfg)
    job.print(f"screen wear: {cfg['particles']} grains, dt = {dt:.3g} s, inclination "
              f"{cfg['inclination']} deg; settling {cfg['settle_time']} s in the bin")
    bed = settle(cfg, screen, job.comm)
    output = Hdf5Output(out / "screen_wear.h5", cfg, job.comm)
    with output:
        world = build_world(cfg, screen, *bed, comm=job.comm)
        wear = MeshWear(cfg["wear_coefficient"], cfg["acceleration"], int(cfg["wear_every"]))
        world.add_system(wear)
        world.add_system(SnapshotWriter(output, int(cfg["snapshot_every"]),
                                        fields=("gid", "position", "velocity", "radius")))
        world.add_system(MeshWallSnapshotWriter(output, int(cfg["snapshot_every"])))
        world.setup()
        steps = max(int(round(cfg["duration"] / dt)), 1)
        every = int(cfg["wear_every"])
        job.print(f"flow: {steps} steps ({cfg['duration']} s), wear k = "
                  f"{cfg['wear_coefficient']:.3g} m^3/J x {cfg['acceleration']:.3g} every "
                  f"{every} steps")
        while world.step < steps:
            run_or_stop(world, min(every - world.step % every, steps - world.step),
                        "the flow over the screen")
            if world.step % every == 0:
                rows.append(record(world, cfg))
                r = rows[-1]
                job.print(f"t = {r['time']:.3f} s: frictional work {r['worn_work']:.4g} J, "
                          f"worn {r['volume']:.4g} m^3 (acceleration k W {r['expected']:.4g}),"
                          f" deepest {r['deepest'] * 1e6:.3g} um, "
                          f"{100 * r['passed']:.0f} % of the grains below the deck")
        state = screen_state(world)
    job.write(write_outputs, rows, state, screen, cfg, out)
    worst = max((r["difference"] for r in rows), default=0.0)
    job.print(f"worn volume = acceleration k W to {worst:.2g} (relative, largest over "
              f"{len(rows)} updates); wrote {out / 'screen_after.stl'}, "
              f"{out / 'screen_wear.csv'}, {out / 'screen_wear.png'} and "
              f"{out / 'screen_wear.h5'} (open the .xdmf in ParaView)")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run,
                      description=__doc__.splitlines()[0], soft_kill=True)


if __name__ == "__main__":
    sys.exit(main())
