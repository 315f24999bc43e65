"""The triaxial sample: a random packing of grains in a cylinder without overlaps.

Procedure (Goetz & Poeschel 2023, Sect. 3.1: random insertion without
contacts, then the Lubachevsky-Stillinger algorithm), reproducible from the
seed:

1. Radii uniform in [radius_min, radius_max], or drawn from the size
   distribution ``psd`` names (ecs_dem.components.insertion: uniform, normal
   or lognormal between the diameters 2 radius_min and 2 radius_max, by
   ``psd_basis``, or a CSV file whose sizes lie in that range); the grain
   count fills the cylinder (radius R, height h) to ``solid_fraction``
   (``grains`` > 0 sets it instead).
2. Insertion: at ``prep_start_scale`` of their radii, grains are placed at
   random, uniformly in the cylinder, rejecting any that would touch an
   earlier one, and given random velocities of ``prep_speed``. With a
   ``psd`` the insertion module places them, largest first, with its cell
   grid.
3. Growth (Lubachevsky-Stillinger): the radii grow linearly to their full
   size over ``prep_grow_time``, in steps of at most an eighth of the skin
   with a neighbour rebuild at each, while the grains collide (Hertz,
   frictionless, soft: ``prep_modulus``, ``prep_restitution``) inside rigid
   walls: a fixed MSS_patch cylinder of radius R (the triaxial membrane's
   mesh) between two fixed platens. No gravity.
4. Relaxation for ``prep_relax_time`` at full size, the velocities damped
   by the low restitution.
5. The overlaps left (grain-grain, grain-platen, grain-cylinder, measured
   exactly on the gathered packing) are removed by scaling every radius by
   one factor: the packing starts the test without overlaps, and the solid
   fraction reached is printed.

Clumps (``grain_shape`` a shape of ``components.clumps.library``): each grain is a
rigid clump whose volume-equivalent radius is the drawn radius (the sphere of the
same solid volume: the count for a solid fraction stays the spheres'). Step 2
places the clumps' bounding spheres at ``prep_start_scale``, each clump in a
random orientation; step 3 grows every body about its centre of mass (pebble
radii and offsets, mass, moments; the angular velocity kept) as the radii grow;
step 5 shrinks every body about its centre by one factor, again until no pebble
overlaps a pebble of another body, the platens or the cylinder. The cache
(``<case>_seed<seed>_<shape>_packing.npz``) holds each body's centre of mass,
orientation and scale factor of the unit-pebble template.

The result depends on the seed and on the parameters, and (through the
chaos of the collisions) on the number of ranks; it is cached in
``<output stem>_packing.npz`` with the parameters that made it, so that a
restart, the other membrane model and later runs start from the same
packing. The cache is written whole or not at all (a disk without room
leaves none, and the run goes on); one that cannot be read is prepared again.
"""
from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path

import numba
import numpy as np

from ecs_dem import Box, InputError, World, observe
from ecs_dem.components.clumps import library
from ecs_dem.components.clumps.bodies import add_clumps, template_id
from ecs_dem.components.clumps.shapes import equivalent_diameter
from ecs_dem.components.clumps.template import rotation_matrix
from ecs_dem.errors import ConfigValueError
from ecs_dem.components.insertion.insert import random_quaternions
from ecs_dem.components.insertion.insert import InsertionError, place_spheres
from ecs_dem.components.insertion.psd import psd_from_config
from ecs_dem.components.insertion.regions import CylinderRegion
from ecs_dem.components.membranes import add_membrane
from ecs_dem.components.mesh.generators import cylinder
from ecs_dem.components.particles import add_particles, create_particle_table, fix_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.driver import on_rank_0
from ecs_dem.runner import run_or_stop
from ecs_dem.system import Stage, System
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.membrane.patch_contacts import PatchContacts
from ecs_dem.systems.membrane.patch_geometry import closest_point
from ecs_dem.systems.membrane.patch_search import PatchSearch
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.rigid_body import rigid_bodies
from ecs_dem.systems.rigid_body.placement import BodyRows
from ecs_dem.systems.walls.contacts import WallContacts
from ecs_dem.table import Field, Halo

PREPARATION_DEFAULTS = {
    "solid_fraction": 0.58,        # of the cylinder, sets the grain count (Table 3: about 0.58)
    "grains": 0,                   # > 0: this many grains instead
    "prep_start_scale": 0.5,       # radii at insertion, relative to their full size
    "prep_speed": 0.2,             # m/s, random initial speed
    "prep_modulus": 5e7,           # Pa, soft grains for a long time step
    "prep_restitution": 0.3,
    "prep_grow_time": 0.03,        # s
    "prep_relax_time": 0.02,       # s
}

#: the size distribution (strings: kept out of the float key of the packing cache, which
#: gets the distribution's classes instead)
PSD_DEFAULTS = {
    "psd": "",                     # "": uniform radii; uniform, normal, lognormal or a CSV file
    "psd_basis": "number",         # number, length, surface or volume
    "psd_mean": 0.0,               # m, diameter: normal mean, lognormal median
    "psd_spread": 0.0,             # normal: std of the diameter (m); lognormal: std of ln d
}

#: the grains' shape (a string: the packing cache's key gets its index in SHAPE_NAMES)
SHAPE_DEFAULTS = {"grain_shape": "sphere"}  # or a clump of components.clumps.library

#: the keys a cached packing must match
PACKING_KEYS = ("seed", "radius", "height", "radius_min", "radius_max", "grain_density",
                "patch_edge", *PREPARATION_DEFAULTS)

FULL_RADIUS = Field("full_radius", np.float64, (), Halo.LOCAL, 0.0, "m", "radius at full size")
FULL_SCALE = Field("full_scale", np.float64, (), Halo.LOCAL, 0.0, "",
                   "the body's template scale factor at full size")
#: grain_shape values: sphere, then the clump library's shapes
SHAPE_NAMES = ("sphere", *sorted(library.SHAPES))


def grain_template(cfg: dict):
    """The clump template of ``grain_shape`` with unit pebble radius, or None (spheres)."""
    name = str(cfg.get("grain_shape", "sphere"))
    if name == "sphere":
        return None
    if name not in library.SHAPES:
        raise ConfigValueError(f"config key 'grain_shape' = {name!r}: use one of "
                               f"{', '.join(SHAPE_NAMES)}")
    return library.shape(name, 1.0)


def bounding_factor(template) -> float:
    """The bounding radius of a grain over its volume-equivalent radius (1 for spheres)."""
    return 1.0 if template is None else template.extent / (0.5 * equivalent_diameter(template))


class GrowRadii(System):
    """Lubachevsky-Stillinger growth: grain radii from `start` times their full size to full
    size, linearly in time until `duration`, in jumps of at most `max_jump` (m) with a
    neighbour rebuild at each (the neighbour lists stay exact); mass and inertia follow."""

    stage = Stage.INTEGRATE_FIRST
    reads = {"particles": ("full_radius", "kind")}
    writes = {"particles": ("radius", "mass", "inertia")}

    def __init__(self, start: float, duration: float, max_jump: float, density: float):
        self.start, self.duration, self.density = float(start), float(duration), float(density)
        self.max_jump = float(max_jump)
        self.scale = self.start
        self.jump = 0.0

    def setup(self, world) -> None:
        r_max = observe.largest(world, world.particles.full_radius, empty=0.0)
        self.jump = self.max_jump / max(r_max, 1e-300)

    def run(self, world) -> None:
        target = min(self.start + (1 - self.start) * world.time / self.duration, 1.0)
        if target == self.scale or (target - self.scale < self.jump and target < 1.0):
            return
        p = world.particles
        grains = p.kind[:p.n_owned] == 0
        self.scale = target
        r = p.full_radius[:p.n_owned][grains] * target
        p.radius[:p.n_owned][grains] = r
        p.mass[:p.n_owned][grains] = self.density * 4.0 / 3.0 * math.pi * r**3
        p.inertia[:p.n_owned][grains] = 0.4 * p.mass[:p.n_owned][grains] * r**2
        world.request_rebuild()


class GrowBodies(System):
    """GrowRadii for clumps: every body grows about its centre of mass by the same factor as
    the target scale moves (pebble radii and body-frame offsets, the pebbles moved along
    their arms; body mass s^3, moments and angular momentum s^5, so the angular velocity
    stays), in the same jumps with a neighbour rebuild at each."""

    stage = Stage.INTEGRATE_FIRST
    reads = {"particles": ("body",), "bodies": ("full_scale",)}
    reads_ghosts = {"bodies": ("orientation",)}
    writes = {"particles": ("radius", "mass", "position", "body_offset"),
              "bodies": ("mass", "moments", "angular_momentum")}

    def __init__(self, start: float, duration: float, max_jump: float, full_reach: float):
        self.start, self.duration = float(start), float(duration)
        self.max_jump, self.full_reach = float(max_jump), float(full_reach)
        self.scale = self.start
        self.jump = 0.0
        self.body_rows = BodyRows()

    def setup(self, world) -> None:
        self.jump = self.max_jump / max(self.full_reach, 1e-300)

    def run(self, world) -> None:
        target = min(self.start + (1 - self.start) * world.time / self.duration, 1.0)
        if target == self.scale or (target - self.scale < self.jump and target < 1.0):
            return
        ratio = target / self.scale
        self.scale = target
        p, b = world.particles, world.tables["bodies"]
        m = b.n_owned
        b.mass[:m] *= ratio**3
        b.moments[:m] *= ratio**5
        b.angular_momentum[:m] *= ratio**5
        pebbles, rows = self.body_rows(world)
        arm = np.einsum("nij,nj->ni", rotation_matrix(b.with_ghosts("orientation")[rows]),
                        p.body_offset[pebbles])
        p.position[pebbles] += (ratio - 1.0) * arm
        p.body_offset[pebbles] *= ratio
        p.radius[pebbles] *= ratio
        p.mass[pebbles] *= ratio**3
        world.request_rebuild()


def size_distribution(cfg: dict):
    """The PSD the config names (diameters between 2 radius_min and 2 radius_max), or None
    (radii uniform in [radius_min, radius_max])."""
    if not str(cfg.get("psd", "")).strip():
        return None
    lo, hi = 2 * cfg["radius_min"], 2 * cfg["radius_max"]
    psd = psd_from_config(cfg["psd"], d_min=lo, d_max=hi, basis=cfg["psd_basis"],
                          mean=cfg["psd_mean"], spread=cfg["psd_spread"])
    if psd.d_min < lo * (1 - 1e-12) or psd.d_max > hi * (1 + 1e-12):
        raise InputError(f"triaxial: the PSD's diameters {psd.d_min:.6g}-{psd.d_max:.6g} m leave "
                         f"[2 radius_min, 2 radius_max] = [{lo:.6g}, {hi:.6g}] m: set radius_min "
                         "and radius_max to cover them (the time step and skin follow from them)")
    return psd


def grain_count(cfg: dict) -> int:
    if int(cfg["grains"]) > 0:
        return int(cfg["grains"])
    a, b = cfg["radius_min"], cfg["radius_max"]
    psd = size_distribution(cfg)
    if psd is not None:
        mean_cube = psd.moment(3) / 8
    else:
        mean_cube = (b**4 - a**4) / (4 * (b - a)) if b > a else a**3
    volume = math.pi * cfg["radius"] ** 2 * cfg["height"]
    return max(int(round(cfg["solid_fraction"] * volume / (4 / 3 * math.pi * mean_cube))), 1)


def packing_key(cfg: dict) -> np.ndarray:
    """What a cached packing must match: the PACKING_KEYS and, with a psd, its classes."""
    key = [float(cfg[k]) for k in PACKING_KEYS]
    psd = size_distribution(cfg)
    if psd is not None:
        key += [float(psd.basis), *psd.edges, *psd.weights]
    if grain_template(cfg) is not None:
        key += [float(SHAPE_NAMES.index(cfg["grain_shape"]))]
    return np.array(key)


def packing_path(cfg: dict, directory: Path) -> Path:
    """The packing cache of a case, seed (and clump shape) in `directory`."""
    shape = "" if grain_template(cfg) is None else f"_{cfg['grain_shape']}"
    return Path(directory) / f"{cfg['case']}_seed{cfg['seed']}{shape}_packing.npz"


def insert(cfg: dict, rng) -> tuple[np.ndarray, np.ndarray]:
    """Random positions without contacts at the start scale (of the bounding spheres, for
    clumps), radii at full size (volume-equivalent, for clumps)."""
    n = grain_count(cfg)
    R, h, s0 = cfg["radius"], cfg["height"], cfg["prep_start_scale"]
    b = bounding_factor(grain_template(cfg))
    psd = size_distribution(cfg)
    if psd is not None:
        radius = psd.sample_radii(n, rng)
        try:
            position = place_spheres(CylinderRegion((0.0, 0.0, 0.0), R, h), s0 * b * radius, rng)
        except InsertionError as exc:
            raise InputError(f"triaxial preparation: {exc}. Here: lower prep_start_scale "
                             f"({s0}) or the solid fraction") from exc
        return position, radius
    radius = rng.uniform(cfg["radius_min"], cfg["radius_max"], n)
    position = np.empty((n, 3))
    for k in range(n):
        r = s0 * b * radius[k]
        for _ in range(100000):
            rho = (R - r) * math.sqrt(rng.uniform())
            phi = rng.uniform(0, 2 * math.pi)
            x = np.array([rho * math.cos(phi), rho * math.sin(phi), rng.uniform(r, h - r)])
            if k == 0 or np.all(np.sum((position[:k] - x) ** 2, axis=1)
                                > (s0 * b * (radius[:k] + radius[k])) ** 2):
                position[k] = x
                break
        else:
            raise InputError(f"triaxial preparation: no room for grain {k} of {n} at "
                             f"prep_start_scale = {s0}; lower it or the solid fraction")
    return position, radius


def preparation_world(cfg: dict, comm=None) -> World:
    rng = np.random.default_rng(cfg["seed"])
    position, radius = insert(cfg, rng)
    R, h = cfg["radius"], cfg["height"]
    nu = cfg["grain_poisson"]
    s0 = cfg["prep_start_scale"]
    dt = cfg["dt_fraction"] * float(rayleigh_time(s0 * cfg["radius_min"], cfg["grain_density"],
                                                   cfg["prep_modulus"], nu))
    skin = 0.2 * cfg["radius_min"]
    world = World(Box((-1.2 * R, -1.2 * R, -0.1 * h), (1.2 * R, 1.2 * R, 1.1 * h)), dt=dt,
                  skin=skin, comm=comm, seed=cfg["seed"])
    soft = add_species(world, youngs_modulus=cfg["prep_modulus"], poisson_ratio=nu,
                       density=cfg["grain_density"], restitution=cfg["prep_restitution"])
    create_particle_table(world)
    container = add_membrane(world, cylinder(R, h, cfg["patch_edge"]), youngs_modulus=1e6,
                             thickness=1e-4, density=1000.0, species=soft)
    first_vertex = int(world.membranes.first_vertex[container])
    fix_particles(world, np.arange(first_vertex, first_vertex + int(world.membranes.vertex_count[0])))
    speed = cfg["prep_speed"] * rng.normal(size=(radius.size, 3)) / math.sqrt(3)
    template = grain_template(cfg)
    if template is None:
        rows = add_particles(world, position, s0 * radius, soft, velocity=speed)
        world.particles.add_field(FULL_RADIUS)
        world.particles.full_radius[rows] = radius
        grow, bodies = GrowRadii(s0, cfg["prep_grow_time"], skin / 8, cfg["grain_density"]), []
    else:
        full = 2.0 * radius / equivalent_diameter(template)
        add_clumps(world, template, position, random_quaternions(radius.size, rng), soft,
                   velocity=speed, scale=s0 * full)
        template_id(world, template, float(full.max()))  # the ghost width of full size
        world.bodies.add_field(FULL_SCALE)
        world.bodies.full_scale[:world.bodies.n_owned] = full
        grow = GrowBodies(s0, cfg["prep_grow_time"], skin / 8, template.extent * float(full.max()))
        bodies = rigid_bodies()
    add_wall(world, (0, 0, 0), (0, 0, 1), species=soft)
    add_wall(world, (0, 0, h), (0, 0, -1), species=soft)
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    for s in (*bodies, first, grow,
              NeighborSearch(), PatchSearch(), ContactForces(law), PatchContacts(law),
              WallContacts(law), second):
        world.add_system(s)
    return world


@numba.njit(cache=True)
def _cylinder_overlaps(position, radius, vertices, triangles, reach):
    """Largest overlap / radius of each grain with the triangles (grains within `reach` of
    the surface only)."""
    out = np.zeros(position.shape[0])
    for i in range(position.shape[0]):
        px, py, pz = position[i, 0], position[i, 1], position[i, 2]
        if math.hypot(px, py) < reach:
            continue
        for t in range(triangles.shape[0]):
            a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
            qx, qy, qz, _, _, _ = closest_point(px, py, pz, vertices[a, 0], vertices[a, 1],
                                                vertices[a, 2], vertices[b, 0], vertices[b, 1],
                                                vertices[b, 2], vertices[c, 0], vertices[c, 1],
                                                vertices[c, 2])
            d = math.sqrt((px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2)
            out[i] = max(out[i], (radius[i] - d) / radius[i])
    return out


def largest_overlap(position, radius, height, mesh, body=None) -> float:
    """Largest overlap of the packing relative to the contact's radius sum (pairs) or the
    grain's radius (platens, cylinder); <= 0 means no overlap. With `body` (a label per
    sphere), spheres of one label never count as a pair (a clump's pebbles)."""
    worst = -1.0
    for k in range(0, radius.size, 512):
        d = np.linalg.norm(position[k:k + 512, None, :] - position[None, :, :], axis=2)
        s = radius[k:k + 512, None] + radius[None, :]
        ratio = (s - d) / s
        for m in range(ratio.shape[0]):
            ratio[m, k + m] = -1.0
        if body is not None:
            ratio[body[k:k + 512, None] == body[None, :]] = -1.0
        worst = max(worst, float(ratio.max()))
    worst = max(worst, float(np.max((radius - position[:, 2]) / radius)),
                float(np.max((position[:, 2] + radius - height) / radius)))
    reach = 0.5 * float(np.hypot(mesh.vertices[:, 0], mesh.vertices[:, 1]).min())
    cyl = _cylinder_overlaps(position, radius, mesh.vertices, mesh.triangles.astype(np.int64), reach)
    return max(worst, float(cyl.max(initial=-1.0)))


def gather_grains(world) -> tuple[np.ndarray, np.ndarray]:
    """Positions and radii of every grain on every rank, in gid order."""
    p = world.particles
    return observe.gather_by_gid(world, p, ("position", "radius"), where=p.kind == 0, root=None)


def prepare(cfg: dict, comm=None, log=print) -> dict:
    """Run steps 1-5 of the module docstring; returns position, radius, solid_fraction,
    shrink (the radius factor of step 5) and the largest overlap before it."""
    world = preparation_world(cfg, comm)
    steps = int(math.ceil((cfg["prep_grow_time"] + cfg["prep_relax_time"]) / world.dt))
    log(f"preparation: {grain_count(cfg)} grains, growth from {cfg['prep_start_scale']:g} of "
        f"their size, {steps} steps of {world.dt:.3g} s")
    run_or_stop(world, steps, "during the preparation")
    if "bodies" in world.tables:
        return shrink_clumps(world, cfg)
    position, radius = gather_grains(world)
    worst = largest_overlap(position, radius, cfg["height"],
                            cylinder(cfg["radius"], cfg["height"], cfg["patch_edge"]))
    shrink = 1.0 - max(worst, 0.0) - 1e-9
    radius = radius * shrink
    fraction = float(np.sum(4 / 3 * math.pi * radius**3) / (math.pi * cfg["radius"] ** 2 * cfg["height"]))
    return {"position": position, "radius": radius, "solid_fraction": fraction,
            "shrink": shrink, "overlap": worst}


def shrink_clumps(world, cfg: dict) -> dict:
    """Step 5 for clumps: shrink every body about its centre by one factor until no pebble
    overlaps (each shrink the largest overlap found; the pebbles move towards their centres,
    so it repeats until none is left). Returns position (centres of mass), orientation,
    scale (of the unit-pebble template), radius (volume-equivalent), solid_fraction, shrink
    and overlap."""
    template = grain_template(cfg)
    gid, com, orientation, full = observe.gather_by_gid(
        world, "bodies", ("gid", "com", "orientation", "full_scale"), root=None)
    p = world.particles
    x, r, body = observe.gather_by_gid(world, p, ("position", "radius", "body"),
                                       where=p.kind == 0, root=None)
    arm = x - com[np.searchsorted(gid, body)]
    centre = x - arm
    mesh = cylinder(cfg["radius"], cfg["height"], cfg["patch_edge"])
    shrink, first = 1.0, None
    for _ in range(100):
        worst = largest_overlap(centre + shrink * arm, shrink * r, cfg["height"], mesh, body)
        first = worst if first is None else first
        if worst <= 0.0:
            break
        shrink *= 1.0 - worst - 1e-9
    else:
        raise InputError("triaxial preparation: the clumps still overlap after 100 shrinks: "
                         "lower solid_fraction")
    scale = full * shrink
    radius = 0.5 * equivalent_diameter(template) * scale
    fraction = float(np.sum(template.volume * scale**3)
                     / (math.pi * cfg["radius"] ** 2 * cfg["height"]))
    return {"position": com, "orientation": orientation, "scale": scale, "radius": radius,
            "solid_fraction": fraction, "shrink": shrink, "overlap": first}


def packing(cfg: dict, path: Path, comm, log=print) -> dict:
    """The cached packing at `path` if it was made with these parameters, else a new one
    (written to `path` by rank 0)."""
    key = packing_key(cfg)
    if path.is_file():
        try:
            with np.load(path) as f:
                if f["key"].shape == key.shape and np.array_equal(f["key"], key):
                    return {k: f[k] if f[k].ndim else float(f[k]) for k in f.files if k != "key"}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            log(f"  the cached packing {path} cannot be read ({type(exc).__name__}): "
                "preparing it again")
    result = prepare(cfg, comm, log)
    on_rank_0(comm, save_packing, path, key, result, log, wait=True)
    return result


def save_packing(path: Path, key: np.ndarray, result: dict, log=print) -> None:
    """The packing cache, written whole or not at all: a half-written cache would stop every
    later run; a disk without room leaves none (and says so), and the run goes on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    try:
        np.savez(tmp, key=key, **result)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        log(f"  the packing could not be cached at {path} ({exc.strerror or exc}): "
            "the run goes on; the next one prepares it again")
