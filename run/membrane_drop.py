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
mesh is an error that names the problem. ``sheet = "grid"`` makes a square
sheet of ``grid_vertices`` x ``grid_vertices`` vertices and side
``sheet_side`` at z = 0, each square cut into two right triangles (as an STL
grid from a CAD program).

Clamping (``clamp``): "rim" (the boundary), "none", or a condition on the
vertices' initial coordinates x, y, z and r = sqrt(x^2 + y^2) (m), e.g.
``"abs(x) > 0.05 or abs(y) > 0.05"`` (comparisons, and/or/not, ``+ - * / **``,
abs, sqrt); ``clamp_file`` adds the vertices whose mesh indices a text file
lists (numbers separated by spaces, commas or lines; ``#`` starts a comment).
With ``walls`` (default true) the sheet under and behind the four walls is
clamped too; ``walls = false`` leaves them out.

Grains (``grains_file``): a text file with one grain a line, x y z r [vx vy
vz] (m, m/s; spaces or commas, ``#`` comments), all of the grain species;
without it, ``grains`` grains of the ``radii`` on a loose lattice above the
centre. A relative path of ``mesh``, ``clamp_file`` or ``grains_file`` not
found from the working directory is looked up in ``run/configs/``.

Every constant is a key: the membrane's (``membrane_*``, ``vertex_mass``:
"lumped", "uniform" or a mass in kg; ``spring_damping`` > 0 gives the
springs' coefficient in N s/m in place of the ratio ``membrane_damping``;
``bending_*``), the species' (``grain_*``, ``membrane_restitution``, ...),
the effective mass of grain-membrane contacts (``patch_effective_mass``:
"patch", "grain", "triangle"; systems.membrane.patch_contacts) and the
Hertz-Mindlin constants of each pair, which replace the mixing rules where
given: ``[pair.grain_grain]``, ``[pair.grain_membrane]``,
``[pair.grain_wall]`` with ``estar``, ``gstar`` (Pa), ``beta_n``, ``beta_t``,
``mu``, ``mu_roll`` (systems.contact.pair_constants; ``pair_explicit`` asks
for a complete table). ``dt`` > 0 sets the time step in s in place of
``dt_fraction``.

MercuryDPM's MembraneDemo (a 225-vertex sheet clamped on its rim, 8 grains
dropped 4 mm): ``--config run/configs/membrane_demo.toml``
(docs/user-guide/coming-from-mercurydpm-lammps.md).
"""
from __future__ import annotations

import ast
import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import Box, InputError, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.membranes import (BENDING_CONVENTIONS, add_membrane, membrane_ranges,
                                          membrane_vertices)
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
from ecs_dem.systems.contact.pair_constants import RIGID
from ecs_dem.systems.membrane.diagnostics import MembraneDiagnostics
from ecs_dem.systems.membrane.systems import membrane_snapshot_writer, membrane_systems
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.membrane.patch_contacts import EFFECTIVE_MASS, PatchContacts
from ecs_dem.systems.membrane.patch_search import PatchSearch
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

#: the material pairs whose constants a run may give, and the constants (docstring)
PAIRS = ("grain_grain", "grain_membrane", "grain_wall")
PAIR_KEYS = HertzMindlinLaw.PAIR_CONSTANTS
CLAMPS = ("rim", "none")

DEFAULTS = {
    "grains": 150,
    "radii": "1.5e-3,2.5e-3,4e-3",     # m, three sizes, equal numbers
    "grains_file": "",                # grains from a file instead (docstring)
    "sheet": "disc",                  # "disc" (sheet_radius) or "grid" (sheet_side)
    "sheet_radius": 0.04,             # m
    "edge": 4e-3,                     # m, patch side
    "sheet_side": 0.1,                # m, side of the "grid" sheet
    "grid_vertices": 15,              # vertices along a side of the "grid" sheet
    "mesh": "",                       # an open sheet from a file instead of the disc (docstring)
    "mesh_scale": 1.0,                # the file's unit in m (1e-3 for mm)
    "clamp": "rim",                   # "rim", "none" or a condition on x, y, z, r (docstring)
    "clamp_file": "",                 # mesh indices of more vertices to clamp
    "walls": True,                    # four walls standing on the sheet
    "membrane_modulus": 1.25e6,       # Pa
    "membrane_thickness": 1e-3,       # m
    "membrane_density": 1100.0,       # kg/m^3
    "membrane_damping": 0.3,          # damping ratio of its springs
    "spring_damping": 0.0,            # N s/m; > 0 replaces membrane_damping
    "vertex_mass": "lumped",          # "lumped", "uniform" or a mass in kg
    "bending_stiffness": 1e-5,        # N m
    "bending_damping": 0.0,           # N s
    "bending_convention": "paper",    # "paper" or "mercurydpm" (components.membranes)
    "membrane_poisson": 1 / 3,        # the membrane species' nu in contacts
    "membrane_restitution": 0.3,
    "membrane_friction": 0.5,
    "grain_modulus": 5e6,             # Pa (soft, for a larger time step)
    "grain_density": 2500.0,          # kg/m^3
    "grain_poisson": 0.3,
    "restitution": 0.3,               # the grains'
    "friction": 0.5,                  # the grains'
    "patch_effective_mass": "patch",  # "patch", "grain" or "triangle"
    **{f"pair.{pair}.{key}": None for pair in PAIRS for key in PAIR_KEYS},
    "pair_explicit": False,           # every pair of species must be given
    "gravity": 9.81,
    "duration": 0.6,                  # s (settled: kinetic energy about 1e-5 J)
    "dt": 0.0,                        # s; > 0 replaces dt_fraction
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
    ("sheet_side", 0.0, math.inf, False),
    ("grid_vertices", 2, math.inf, True),
    *species_ranges(membrane_modulus="youngs_modulus", membrane_density="density",
                    grain_modulus="youngs_modulus", grain_density="density",
                    restitution="restitution", friction="friction",
                    grain_poisson="poisson_ratio", membrane_poisson="poisson_ratio",
                    membrane_restitution="restitution", membrane_friction="friction"),
    *membrane_ranges(membrane_thickness="thickness", membrane_damping="damping_ratio",
                     bending_stiffness="bending_stiffness", bending_damping="bending_damping",
                     spring_damping="damping_ratio"),
    ("dt", 0.0, math.inf, True),
    ("gravity", 0.0, math.inf, True),
    ("duration", 0.0, math.inf, False),
    ("dt_fraction", 0.0, 1.0, False),
    ("seed", 0, math.inf, True),
    ("snapshot_every", 0, math.inf, True),
    ("diagnostics_every", 1, math.inf, True),
    ("checkpoint_every", 0, math.inf, True),
)
#: what a restart must share with its checkpoint (ecs_dem.runner.check_restart)
IDENTITY = ("grains", "radii", "grains_file", "sheet", "sheet_radius", "edge", "sheet_side",
            "grid_vertices", "mesh", "mesh_scale", "clamp", "clamp_file", "walls",
            "membrane_modulus", "membrane_thickness", "membrane_density", "membrane_damping",
            "spring_damping", "vertex_mass", "bending_stiffness", "bending_damping",
            "bending_convention", "membrane_poisson", "membrane_restitution", "membrane_friction",
            "grain_modulus", "grain_density", "grain_poisson", "restitution", "friction",
            "patch_effective_mass", *(k for k in DEFAULTS if k.startswith("pair")), "gravity",
            "dt", "seed")


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


CONFIGS = Path(__file__).resolve().parent / "configs"


def data_path(cfg: dict, key: str) -> Path:
    """The file a key names: as given, or, relative and not found there, in run/configs/."""
    path = Path(cfg[key])
    if not path.is_absolute() and not path.exists() and (CONFIGS / path).exists():
        path = CONFIGS / path
    if not path.is_file():
        raise InputError(f"config key '{key}' = {cfg[key]!r}: the file does not exist (looked "
                         f"in the working directory and in {CONFIGS})")
    return path


def grid_sheet(side: float, n: int) -> Mesh:
    """A square sheet of n x n vertices and this side (m) at z = 0, centred on the origin,
    each square cut into two right triangles along the same diagonal."""
    t = np.linspace(-0.5 * side, 0.5 * side, n)
    x, y = np.meshgrid(t, t, indexing="xy")
    vertices = np.stack([x.ravel(), y.ravel(), np.zeros(n * n)], axis=1)
    k = np.arange(n - 1)
    a = (k[None, :] + n * k[:, None]).ravel()  # lower-left corner of every square
    triangles = np.concatenate([np.stack([a, a + 1, a + n + 1], axis=1),
                                np.stack([a, a + n + 1, a + n], axis=1)])
    return Mesh(vertices, triangles)


def sheet(cfg: dict) -> tuple[Mesh, np.ndarray, np.ndarray, float]:
    """The membrane's surface (validated), the mesh indices of its rim, the centre of
    the drop (above the sheet's highest point) and the radius a the walls and the box scale
    with: the disc of ``sheet_radius``, the square ``grid``, or the open surface of the
    ``mesh`` file (module docstring; a is half its smaller horizontal extent)."""
    if cfg["sheet"] not in ("disc", "grid"):
        raise InputError(f"config key 'sheet' = {cfg['sheet']!r}: give \"disc\" or \"grid\" (or "
                         "a mesh file with the key 'mesh')")
    if not cfg["mesh"] and cfg["sheet"] == "disc":
        mesh = validate_mesh(flat_sheet(cfg["edge"], radius=cfg["sheet_radius"]))
        centre, a = np.zeros(3), float(cfg["sheet_radius"])
    else:
        if cfg["mesh"]:
            mesh = validate_mesh(read_mesh(data_path(cfg, "mesh")).scaled(cfg["mesh_scale"]))
        else:
            mesh = validate_mesh(grid_sheet(cfg["sheet_side"], cfg["grid_vertices"]))
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


_CLAMP_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
                ast.UAdd, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Compare,
                ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.Name, ast.Load,
                ast.Constant, ast.Call)
_CLAMP_FUNCTIONS = {"abs": np.abs, "sqrt": np.sqrt}


def clamp_condition(text: str, x: np.ndarray) -> np.ndarray:
    """The ``clamp`` condition (module docstring) on positions x (n, 3): one bool per row."""
    def bad(why):
        return InputError(f"config key 'clamp' = {text!r}: {why}; give \"rim\", \"none\" or a "
                          "condition on x, y, z, r such as \"abs(x) > 0.05 or abs(y) > 0.05\"")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise bad("not a condition") from None
    names = {"x": x[:, 0], "y": x[:, 1], "z": x[:, 2], "r": np.hypot(x[:, 0], x[:, 1])}
    for node in ast.walk(tree):
        if not isinstance(node, _CLAMP_NODES):
            raise bad(f"{type(node).__name__} is not allowed")
        if isinstance(node, ast.Name) and node.id not in names and node.id not in _CLAMP_FUNCTIONS:
            raise bad(f"unknown name {node.id!r}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _CLAMP_FUNCTIONS):
            raise bad("only abs() and sqrt() may be called")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise bad(f"{node.value!r} is not a number")

    def value(node):
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return names[node.id]
        if isinstance(node, ast.Call):
            return _CLAMP_FUNCTIONS[node.func.id](*(value(a) for a in node.args))
        if isinstance(node, ast.UnaryOp):
            v = value(node.operand)
            return np.logical_not(v) if isinstance(node.op, ast.Not) else (
                -v if isinstance(node.op, ast.USub) else v)
        if isinstance(node, ast.BoolOp):
            join = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            out = value(node.values[0])
            for v in node.values[1:]:
                out = join(out, value(v))
            return out
        if isinstance(node, ast.BinOp):
            ops = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
                   ast.Div: np.divide, ast.Pow: np.power}
            return ops[type(node.op)](value(node.left), value(node.right))
        left, out = value(node.left), True  # a comparison, possibly chained
        ops = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater,
               ast.GtE: np.greater_equal, ast.Eq: np.equal, ast.NotEq: np.not_equal}
        for op, right in zip(node.ops, node.comparators):
            r = value(right)
            out = np.logical_and(out, ops[type(op)](left, r))
            left = r
        return out

    mask = np.broadcast_to(np.asarray(value(tree)), (x.shape[0],))
    if mask.dtype != bool:
        raise bad("it gives numbers, not true or false")
    return np.array(mask)


def numbers_in(path: Path, key: str) -> list[list[float]]:
    """The rows of numbers of a text file (spaces or commas, ``#`` comments, blank lines)."""
    rows = []
    for k, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.split("#", 1)[0].replace(",", " ").split()
        if not line:
            continue
        try:
            rows.append([float(v) for v in line])
        except ValueError:
            raise InputError(f"config key '{key}': {path} line {k} is not numbers: "
                             f"{' '.join(line)!r}") from None
    return rows


def clamped_indices(cfg: dict, mesh: Mesh, rim: np.ndarray) -> np.ndarray:
    """Mesh indices of the vertices ``clamp`` and ``clamp_file`` clamp (module docstring)."""
    if cfg["clamp"] == "rim":
        chosen = rim
    elif cfg["clamp"] == "none":
        chosen = np.zeros(0, dtype=np.int64)
    else:
        chosen = np.flatnonzero(clamp_condition(cfg["clamp"], mesh.vertices))
    if cfg["clamp_file"]:
        path = data_path(cfg, "clamp_file")
        ids = np.array([v for row in numbers_in(path, "clamp_file") for v in row])
        n = mesh.vertices.shape[0]
        if ids.size and (np.any(ids != np.round(ids)) or ids.min() < 0 or ids.max() >= n):
            raise InputError(f"config key 'clamp_file': {path} must list vertex indices, whole "
                             f"numbers in [0, {n}) (the mesh's vertices after merging)")
        chosen = np.union1d(chosen, ids.astype(np.int64))
    return chosen.astype(np.int64)


def grains_from_file(cfg: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, radii and velocities of the ``grains_file`` (module docstring)."""
    path = data_path(cfg, "grains_file")
    rows = numbers_in(path, "grains_file")
    if not rows or any(len(r) not in (4, 7) for r in rows) or len({len(r) for r in rows}) > 1:
        raise InputError(f"config key 'grains_file': {path} needs one grain a line, 4 numbers "
                         "(x y z r) or 7 (x y z r vx vy vz), the same on every line")
    data = np.array(rows)
    if not np.all(np.isfinite(data)) or np.any(data[:, 3] <= 0):
        raise InputError(f"config key 'grains_file': {path} has a radius <= 0 or a value that "
                         "is not finite")
    velocity = data[:, 4:7] if data.shape[1] == 7 else np.zeros((data.shape[0], 3))
    return data[:, :3], data[:, 3], velocity


def vertex_mass(cfg: dict):
    """The ``vertex_mass`` key for add_membrane: "lumped", "uniform" or a mass in kg."""
    text = str(cfg["vertex_mass"]).strip()
    if text in ("lumped", "uniform"):
        return text
    try:
        return float(text)
    except ValueError:
        raise InputError(f"config key 'vertex_mass' = {text!r}: give \"lumped\", \"uniform\" or "
                         "a mass in kg") from None


def pair_constants(cfg: dict) -> dict:
    """{pair: {constant: value}} of the ``pair.*`` keys that are set (floats)."""
    out = {}
    for pair in PAIRS:
        for key in PAIR_KEYS:
            value = cfg[f"pair.{pair}.{key}"]
            if value is None:
                continue
            try:
                out.setdefault(pair, {})[key] = float(value)
            except (TypeError, ValueError):
                raise InputError(f"config key 'pair.{pair}.{key}' takes a number (got "
                                 f"{value!r})") from None
    return out


def contact_law(cfg: dict, grain: int, rubber: int) -> HertzMindlinLaw:
    """Hertz-Mindlin, with the ``pair.*`` constants written over the mixing rules."""
    law = HertzMindlinLaw()
    partner = {"grain_grain": grain, "grain_membrane": rubber, "grain_wall": RIGID}
    for pair, constants in pair_constants(cfg).items():
        law.set_pair(grain, partner[pair], **constants)
    if cfg["pair_explicit"]:
        law.pair_table(explicit=True)
    return law


def build_world(cfg: dict, output=None, comm=None) -> World:
    rng = np.random.default_rng(cfg["seed"])
    surface, rim, centre, a = sheet(cfg)
    lo, hi = surface.vertices.min(axis=0), surface.vertices.max(axis=0)
    if cfg["grains_file"]:
        pos, radius, velocity = grains_from_file(cfg)
        r_min, r_max = radius.min(), radius.max()
    else:
        radii = grain_radii(cfg["radii"])
        r_min, r_max = radii.min(), radii.max()
        # grains on a loose lattice above the centre, sizes shuffled
        n = int(cfg["grains"])
        spacing = 2.2 * r_max
        side = max(int(np.floor(2 * 0.7 * a / spacing)) - 1, 1)
        k = np.arange(n)
        pos = np.stack([k % side, (k // side) % side, k // side**2], axis=1) * spacing
        pos[:, :2] -= 0.5 * (side - 1) * spacing
        pos[:, 2] += 2.0 * r_max
        pos += rng.uniform(-0.05, 0.05, pos.shape) * spacing
        pos += centre
        radius = rng.permutation(np.resize(radii, n))
        velocity = np.zeros((n, 3))
    dt = cfg["dt"] if cfg["dt"] > 0 else cfg["dt_fraction"] * float(rayleigh_time(
        r_min, cfg["grain_density"], cfg["grain_modulus"], cfg["grain_poisson"]))
    half = 0.7 * a  # the walls
    top = max(centre[2] + 2 * a, float(pos[:, 2].max()) + 4 * r_max)
    # the disc's box, (-1.5 a, 1.5 a) across and a below the sheet, grown to hold a longer mesh
    # and the grains
    box_lo, box_hi = centre - 1.5 * a, centre + 1.5 * a
    if cfg["mesh"] or cfg["sheet"] == "grid":
        box_lo, box_hi = np.minimum(box_lo, lo - 0.5 * a), np.maximum(box_hi, hi + 0.5 * a)
    if cfg["grains_file"]:
        box_lo = np.minimum(box_lo, pos.min(axis=0) - 2 * r_max)
        box_hi = np.maximum(box_hi, pos.max(axis=0) + 2 * r_max)
    box_lo[2], box_hi[2] = min(lo[2] - a, box_lo[2]), top
    world = World(Box(tuple(box_lo), tuple(box_hi)), dt=dt, skin=0.3 * r_min, comm=comm)
    grain = add_species(world, youngs_modulus=cfg["grain_modulus"],
                        poisson_ratio=cfg["grain_poisson"], density=cfg["grain_density"],
                        restitution=cfg["restitution"], friction=cfg["friction"])
    rubber = add_species(world, youngs_modulus=cfg["membrane_modulus"],
                         poisson_ratio=cfg["membrane_poisson"], density=cfg["membrane_density"],
                         restitution=cfg["membrane_restitution"],
                         friction=cfg["membrane_friction"])
    create_particle_table(world)
    if cfg["bending_convention"] not in BENDING_CONVENTIONS:
        raise InputError(f"config key 'bending_convention' = {cfg['bending_convention']!r}: give "
                         f"one of {', '.join(map(repr, BENDING_CONVENTIONS))}")
    coefficient = cfg["spring_damping"] if cfg["spring_damping"] > 0 else None
    add_membrane(world, surface, youngs_modulus=cfg["membrane_modulus"],
                 thickness=cfg["membrane_thickness"], density=cfg["membrane_density"],
                 damping_ratio=0.0 if coefficient else cfg["membrane_damping"],
                 spring_damping=coefficient, vertex_mass=vertex_mass(cfg),
                 bending_stiffness=cfg["bending_stiffness"],
                 bending_damping=cfg["bending_damping"], bending=cfg["bending_convention"],
                 species=rubber)
    clamped = membrane_vertices(world, 0, indices=clamped_indices(cfg, surface, rim))
    if cfg["walls"]:
        # the sheet under and behind the walls is clamped too (its vertex spheres, of radius
        # half the thickness, would touch the walls: a wall is a half-space, and it launched
        # the sheet's outer ring at 40 m/s in the first step)
        reach = half - 0.5 * cfg["membrane_thickness"]
        clamped = np.union1d(clamped, membrane_vertices(world, 0, where=lambda x: np.max(
            np.abs(x[:, :2] - centre[:2]), axis=1) >= reach))
    fix_particles(world, clamped)
    add_particles(world, pos, radius, grain, velocity=velocity)
    if cfg["walls"]:
        for axis in (0, 1):
            for sign in (1.0, -1.0):
                point, normal = centre.copy(), np.zeros(3)
                point[axis], normal[axis] = centre[axis] - sign * half, sign
                add_wall(world, point, normal)
    if cfg["patch_effective_mass"] not in EFFECTIVE_MASS:
        raise InputError(f"config key 'patch_effective_mass' = {cfg['patch_effective_mass']!r}: "
                         f"give one of {', '.join(map(repr, EFFECTIVE_MASS))}")
    law = contact_law(cfg, grain, rubber)
    first, second = velocity_verlet()
    contacts = ContactForces(law)
    patches = PatchContacts(law, effective_mass=cfg["patch_effective_mass"])
    walls = [WallContacts(law)] if cfg["walls"] else []
    for s in (first, NeighborSearch(), PatchSearch(), Gravity((0, 0, -cfg["gravity"])), contacts,
              patches, *walls, *membrane_systems(), second):
        world.add_system(s)
    world.add_system(Diagnostics(cfg["diagnostics_every"], output, (contacts, patches, *walls)))
    world.add_system(MembraneDiagnostics(cfg["diagnostics_every"], output))
    if output is not None and cfg["snapshot_every"] > 0:
        world.add_system(membrane_snapshot_writer(output, cfg["snapshot_every"]))
    return world


def check(cfg: dict) -> None:
    """The grains must fit in memory (every rank holds them all until the set-up); the pair
    constants are numbers (made floats here: a ``--set`` gives text)."""
    check_particle_count(cfg["grains"], default_comm(), "grains")
    for pair, constants in pair_constants(cfg).items():
        for key, value in constants.items():
            cfg[f"pair.{pair}.{key}"] = value


def run(job) -> int:
    cfg = job.cfg
    with job.open_output(cfg["output"]) as output:
        world = build_world(cfg, output, job.comm)
        p = world.particles  # before the set-up every rank holds every vertex
        start_lowest = float(p.position[p.membrane >= 0, 2].min())
        steps = int(round(cfg["duration"] / world.dt))
        grains = int(np.count_nonzero(p.membrane < 0))
        job.print(f"membrane_drop: {grains} grains, dt = {world.dt:.3g} s, {steps} steps")
        status = job.run_world(world, steps, identity=IDENTITY)
        if world.stop_requested:
            return status
    p = world.particles
    grains = p.membrane < 0
    ke = kinetic_energy(world, grains)
    lowest = observe.smallest(world, p.position[:, 2], where=~grains)
    n = observe.count(world, grains)
    mean_z = observe.total(world, p.position[:, 2], where=grains) / max(n, 1)
    low_z = observe.smallest(world, p.position[:, 2], where=grains)
    # the depth below the sheet's lowest point at the start
    job.print(f"done in {job.elapsed:.1f} s ({job.elapsed / max(steps, 1) * 1e6:.1f} us a step): "
              f"grains' kinetic energy {ke:.3g} J, dimple depth "
              f"{(start_lowest - lowest) * 1e3:.3f} mm, grain centres at z = "
              f"{mean_z * 1e3:.3f} mm on average, {low_z * 1e3:.3f} mm the lowest; "
              f"{cfg['output']} (open the .xdmf in ParaView)")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run,
                      description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
