"""Grains dropped onto a membrane clamped at its rim: they settle in the dimple they make.

A circular rubber sheet (MSS_patch: grains touch its triangles) is clamped
at its rim and along the foot of four walls that stand on it (a square box
of side 1.4 times the sheet's radius, which clamp the sheet under and behind
them); grains of three sizes fall onto it under gravity inside the walls and
come to rest in the dimple. Grain-grain, grain-wall and grain-membrane
contacts use the same Hertz-Mindlin law. Output for ParaView:
``output/membrane_drop.h5`` and ``.xdmf`` (grains as points, the membrane as
a surface).

    python run/membrane_drop.py                  # about 7 s here
    python run/membrane_drop.py --set grains=400 --set duration=0.5
    python run/membrane_drop.py --set mesh=sheet.stl --set mesh_scale=1e-3   # a file in mm
    mpiexec.mpich -n 2 .venv/bin/python run/membrane_drop.py

Your own sheet: ``mesh`` names an open surface in any format meshio reads
(STL, OBJ, PLY, VTK, Gmsh, ...), coordinates times ``mesh_scale`` in metres,
placed as it is in the file (gravity along -z). It replaces the disc
(``sheet_radius``, ``edge``); its boundary, every vertex on an edge of one
triangle, is clamped; the walls stand at 0.7 of half its smaller horizontal
extent around the centre of its bounding box and clamp it there as they
clamp the disc, and the grains start above its highest point. It is
validated first (``add_membrane``): a closed, non-manifold or unreadable
mesh is an error that names the problem.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ecs_dem import Box, InputError, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.membranes import add_membrane, membrane_ranges, membrane_vertices
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.mesh.io import read_mesh
from ecs_dem.components.mesh.validation import boundary_edges, validate_mesh
from ecs_dem.components.particles import add_particles, create_particle_table, fix_particles
from ecs_dem.components.species import add_species, species_ranges
from ecs_dem.components.walls import add_wall
from ecs_dem.driver import run_driver
from ecs_dem.errors import ConfigValueError
from ecs_dem.memory import check_particle_count
from ecs_dem.runner import RUN_DEFAULTS
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.diagnostics import Diagnostics, kinetic_energy
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.membrane.diagnostics import MembraneDiagnostics
from ecs_dem.systems.membrane.systems import membrane_snapshot_writer, membrane_systems
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.membrane.patch_contacts import PatchContacts
from ecs_dem.systems.membrane.patch_search import PatchSearch
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

DEFAULTS = {
    "grains": 150,
    "radii": "1.5e-3,2.5e-3,4e-3",     # m, three sizes, equal numbers
    "sheet_radius": 0.04,             # m
    "edge": 4e-3,                     # m, patch side
    "mesh": "",                       # an open sheet from a file instead of the disc (docstring)
    "mesh_scale": 1.0,                # the file's unit in m (1e-3 for mm)
    "membrane_modulus": 1.25e6,       # Pa
    "membrane_thickness": 1e-3,       # m
    "membrane_density": 1100.0,       # kg/m^3
    "membrane_damping": 0.3,          # damping ratio of its springs
    "bending_stiffness": 1e-5,        # N m
    "grain_modulus": 5e6,             # Pa (soft, for a larger time step)
    "grain_density": 2500.0,          # kg/m^3
    "restitution": 0.3,
    "friction": 0.5,
    "gravity": 9.81,
    "duration": 0.6,                  # s (settled: kinetic energy about 1e-5 J)
    "dt_fraction": 0.15,              # of the Rayleigh time of the smallest grain
    "seed": 2,
    "output": "output/membrane_drop.h5",
    "snapshot_every": 1000,
    "diagnostics_every": 500,
    **RUN_DEFAULTS,
    "progress": False,
}

#: (key, low, high, bounds included): the values a run can use (ecs_dem.config.check_ranges)
RANGES = (
    ("grains", 1, math.inf, True),
    ("sheet_radius", 0.0, math.inf, False),
    ("edge", 0.0, math.inf, False),
    ("mesh_scale", 0.0, math.inf, False),
    *species_ranges(membrane_modulus="youngs_modulus", membrane_density="density",
                    grain_modulus="youngs_modulus", grain_density="density",
                    restitution="restitution", friction="friction"),
    *membrane_ranges(membrane_thickness="thickness", membrane_damping="damping_ratio",
                     bending_stiffness="bending_stiffness"),
    ("gravity", 0.0, math.inf, True),
    ("duration", 0.0, math.inf, False),
    ("dt_fraction", 0.0, 1.0, False),
    ("seed", 0, math.inf, True),
    ("snapshot_every", 0, math.inf, True),
    ("diagnostics_every", 1, math.inf, True),
    ("checkpoint_every", 0, math.inf, True),
)
#: what a restart must share with its checkpoint (ecs_dem.runner.check_restart)
IDENTITY = ("grains", "radii", "sheet_radius", "edge", "mesh", "mesh_scale", "membrane_modulus",
            "membrane_thickness", "membrane_density", "membrane_damping", "bending_stiffness",
            "grain_modulus", "grain_density", "restitution", "friction", "gravity", "seed")


def grain_radii(text: str) -> np.ndarray:
    """The ``radii`` key: comma-separated positive radii in m."""
    try:
        radii = np.array([float(r) for r in str(text).split(",")])
    except ValueError:
        radii = np.zeros(0)
    if radii.size == 0 or not np.all(np.isfinite(radii) & (radii > 0)):
        raise ConfigValueError(f"config key 'radii' = {text!r}: give positive radii in m "
                               "separated by commas, e.g. 1.5e-3,2.5e-3,4e-3")
    return radii


def sheet(cfg: dict) -> tuple[Mesh, np.ndarray, np.ndarray, float]:
    """The membrane's surface (validated), the mesh indices of its clamped rim, the centre of
    the drop (above the sheet's highest point) and the radius a the walls and the box scale
    with: the disc of ``sheet_radius``, or the open surface of the ``mesh`` file (module
    docstring; a is half its smaller horizontal extent)."""
    if not cfg["mesh"]:
        mesh = validate_mesh(flat_sheet(cfg["edge"], radius=cfg["sheet_radius"]))
        centre, a = np.zeros(3), float(cfg["sheet_radius"])
    else:
        mesh = validate_mesh(read_mesh(cfg["mesh"]).scaled(cfg["mesh_scale"]))
        lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
        centre = np.array([0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), hi[2]])
        a = 0.5 * float(min(hi[0] - lo[0], hi[1] - lo[1]))
        if not a > 0:
            raise InputError(f"config key 'mesh' = {cfg['mesh']!r}: the sheet has no horizontal "
                             "extent (it stands upright); lay it out across x and y, gravity "
                             "acts along -z")
    rim = np.unique(boundary_edges(mesh))
    if rim.size == 0:
        raise InputError(f"config key 'mesh' = {cfg['mesh']!r}: the surface is closed, so it has "
                         "no rim to clamp; give an open sheet (a surface with a boundary)")
    return mesh, rim, centre, a


def build_world(cfg: dict, output=None, comm=None) -> World:
    rng = np.random.default_rng(cfg["seed"])
    radii = grain_radii(cfg["radii"])
    surface, rim, centre, a = sheet(cfg)
    lo, hi = surface.vertices.min(axis=0), surface.vertices.max(axis=0)
    r_min, r_max = radii.min(), radii.max()
    dt = cfg["dt_fraction"] * float(rayleigh_time(r_min, cfg["grain_density"],
                                                   cfg["grain_modulus"], 0.3))
    # grains on a loose lattice above the centre, sizes shuffled
    n = int(cfg["grains"])
    spacing = 2.2 * r_max
    half = 0.7 * a  # the walls
    side = max(int(np.floor(2 * half / spacing)) - 1, 1)
    k = np.arange(n)
    pos = np.stack([k % side, (k // side) % side, k // side**2], axis=1) * spacing
    pos[:, :2] -= 0.5 * (side - 1) * spacing
    pos[:, 2] += 2.0 * r_max
    pos += rng.uniform(-0.05, 0.05, pos.shape) * spacing
    pos += centre
    top = max(centre[2] + 2 * a, float(pos[:, 2].max()) + 4 * r_max)
    # the disc's box, (-1.5 a, 1.5 a) across and a below the sheet, grown to hold a longer mesh
    box_lo, box_hi = centre - 1.5 * a, centre + 1.5 * a
    if cfg["mesh"]:
        box_lo, box_hi = np.minimum(box_lo, lo - 0.5 * a), np.maximum(box_hi, hi + 0.5 * a)
    box_lo[2], box_hi[2] = lo[2] - a, top
    world = World(Box(tuple(box_lo), tuple(box_hi)), dt=dt, skin=0.3 * r_min, comm=comm)
    grain = add_species(world, youngs_modulus=cfg["grain_modulus"], poisson_ratio=0.3,
                        density=cfg["grain_density"], restitution=cfg["restitution"],
                        friction=cfg["friction"])
    rubber = add_species(world, youngs_modulus=cfg["membrane_modulus"], poisson_ratio=1 / 3,
                         density=cfg["membrane_density"], restitution=cfg["restitution"],
                         friction=cfg["friction"])
    create_particle_table(world)
    add_membrane(world, surface, youngs_modulus=cfg["membrane_modulus"],
                 thickness=cfg["membrane_thickness"], density=cfg["membrane_density"],
                 damping_ratio=cfg["membrane_damping"], bending_stiffness=cfg["bending_stiffness"],
                 species=rubber)
    # clamped: the rim, and the sheet under and behind the walls (its vertex spheres, of
    # radius half the thickness, would touch the walls: a wall is a half-space, and it
    # launched the sheet's outer ring at 40 m/s in the first step)
    reach = half - 0.5 * cfg["membrane_thickness"]
    under_walls = membrane_vertices(world, 0, where=lambda x: np.max(
        np.abs(x[:, :2] - centre[:2]), axis=1) >= reach)
    fix_particles(world, np.union1d(membrane_vertices(world, 0, indices=rim), under_walls))
    add_particles(world, pos, rng.permutation(np.resize(radii, n)), grain)
    for axis in (0, 1):
        for sign in (1.0, -1.0):
            point, normal = centre.copy(), np.zeros(3)
            point[axis], normal[axis] = centre[axis] - sign * half, sign
            add_wall(world, point, normal)
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    contacts = ContactForces(law)
    patches = PatchContacts(law)
    walls = WallContacts(law)
    for s in (first, NeighborSearch(), PatchSearch(), Gravity((0, 0, -cfg["gravity"])), contacts,
              patches, walls, *membrane_systems(), second):
        world.add_system(s)
    world.add_system(Diagnostics(cfg["diagnostics_every"], output, (contacts, patches, walls)))
    world.add_system(MembraneDiagnostics(cfg["diagnostics_every"], output))
    if output is not None and cfg["snapshot_every"] > 0:
        world.add_system(membrane_snapshot_writer(output, cfg["snapshot_every"]))
    return world


def check(cfg: dict) -> None:
    """The grains must fit in memory (every rank holds them all until the set-up)."""
    check_particle_count(cfg["grains"], default_comm(), "grains")


def run(job) -> int:
    cfg = job.cfg
    with job.open_output(cfg["output"]) as output:
        world = build_world(cfg, output, job.comm)
        p = world.particles  # before the set-up every rank holds every vertex
        start_lowest = float(p.position[p.membrane >= 0, 2].min())
        steps = int(round(cfg["duration"] / world.dt))
        job.print(f"membrane_drop: {cfg['grains']} grains, dt = {world.dt:.3g} s, {steps} steps")
        status = job.run_world(world, steps, identity=IDENTITY)
        if world.stop_requested:
            return status
    p = world.particles
    grains = p.membrane < 0
    ke = kinetic_energy(world, grains)
    lowest = observe.smallest(world, p.position[:, 2], where=~grains)
    # the depth below the sheet's lowest point at the start
    job.print(f"done in {job.elapsed:.1f} s: grains' kinetic energy {ke:.3g} J, dimple depth "
              f"{(start_lowest - lowest) * 1e3:.2f} mm; {cfg['output']} (open the .xdmf in "
              "ParaView)")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run,
                      description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
