"""Rigid walls made of triangles (a CAD surface: STL, OBJ, ...): tables and the builder.

A mesh wall is a rigid triangulated surface that grains touch through its
triangles, with the same contact laws and the same selection of face, edge
and vertex contacts as membrane patches (systems.mesh_wall). It is infinitely
massive and moves only by its prescribed motion. Three tables:

``mesh_walls``      replicated (every rank holds every wall): material, motion
                    and its parameters, the rigid motion now (translation T,
                    rotation R, velocity V, angular velocity Omega), the
                    reference point, and the particles' ``force`` and
                    ``torque`` on the wall (SUM fields, like ``walls.force``;
                    the torque is about the current reference point)
``mesh_vertices``   decomposed by ``position`` like the particles: the engine
                    migrates the vertices to the rank that owns their
                    position and copies them as ghosts within the ghost width;
                    ``x0`` is a vertex's position in the wall's body frame:
                    x = origin + T + R x0 at every step, exactly
``mesh_triangles``  anchored to their first vertex (they migrate with it), the
                    vertex gids and their local rows (``rows``), the wall; per
                    triangle the contacts and the work the grains did on it
                    (``contacts``, ``normal_work``, ``friction_work``), summed
                    over the run on the triangle's owner (for wear and records)

Each rank thus holds only the vertices and triangles of its subdomain and of
the ghost layer around it, not a copy of every mesh. Build mesh walls before
the first step, identically on every rank (like particles): ``add_mesh_wall``.

Motion (``motion=`` of ``add_mesh_wall``), from ``start`` (s, default 0: the
wall stands still before)::

    None                         fixed
    Translation(velocity)        T = V (t - start)
    Rotation(point, axis, rate)  R = rotation by rate (t - start) about the axis
                                 through point (the reference point)
    Vibration(amplitude, freq)   T = A sin(2 pi f (t - start))
    Servo(axis, force, gain)     moves along the axis at v = gain (force - F_push),
                                 F_push = -F.axis the grains' push against it
    a function f(t)              returns (T, R) (a 3-vector in m and a 3 x 3
                                 rotation matrix) or (T, R, V, Omega): x = T + R X
                                 for the placed positions X (about the world's
                                 origin, unless ``reference`` says otherwise);
                                 without the rates they are taken by central
                                 differences over one time step

``MeshWallMotion`` (systems.mesh_wall.motion) applies them; the contact
system adds it when some wall moves. Units: SI.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.table import Field, Halo, Table

from ecs_dem.components.mesh.io import read_mesh
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.validation import MeshError, boundary_edges, validate_mesh

FIXED, TRANSLATION, ROTATION, VIBRATION, FUNCTION, SERVO = range(6)
MOTION_NAMES = ("fixed", "translation", "rotation", "vibration", "function", "servo")


@dataclass(frozen=True)
class Translation:
    """Constant velocity (m/s)."""
    velocity: tuple


@dataclass(frozen=True)
class Rotation:
    """Rotation at ``rate`` (rad/s, right-handed about ``axis``) about the axis through
    ``point`` (m), which becomes the wall's reference point."""
    point: tuple
    axis: tuple
    rate: float


@dataclass(frozen=True)
class Vibration:
    """Sinusoidal translation T = amplitude sin(2 pi frequency (t - start)), m and Hz."""
    amplitude: tuple
    frequency: float


@dataclass(frozen=True)
class Servo:
    """Motion along ``axis`` that holds the grains' push against the wall, -F.axis, at
    ``force`` (N): v = gain (force - push) along the axis (gain in m/(s N)), at most
    ``max_speed`` (m/s). The wall advances while the grains push less than the target."""
    axis: tuple
    force: float
    gain: float
    max_speed: float = math.inf


MESH_WALL_FIELDS = (
    Field("species", np.int32, (), Halo.LOCAL, -1, "", "wall material, -1 for the rigid one"),
    Field("motion", np.int8, (), Halo.LOCAL, FIXED, "",
          "0 fixed, 1 translation, 2 rotation, 3 vibration, 4 function, 5 servo"),
    Field("start", np.float64, (), Halo.LOCAL, 0.0, "s", "time the motion starts"),
    Field("origin", np.float64, (3,), Halo.LOCAL, 0.0, "m", "reference point when added"),
    Field("reference", np.float64, (3,), Halo.LOCAL, 0.0, "m",
          "reference point now (origin + T); torques are about it"),
    Field("translation", np.float64, (3,), Halo.LOCAL, 0.0, "m", "T of x = origin + T + R x0"),
    Field("rotation", np.float64, (3, 3), Halo.LOCAL, 0.0, "1", "R of x = origin + T + R x0"),
    Field("velocity", np.float64, (3,), Halo.LOCAL, 0.0, "m/s", "dT/dt"),
    Field("angular_velocity", np.float64, (3,), Halo.LOCAL, 0.0, "rad/s", "Omega, dR/dt = [Omega]x R"),
    Field("drive_velocity", np.float64, (3,), Halo.LOCAL, 0.0, "m/s", "translation: its velocity"),
    Field("axis", np.float64, (3,), Halo.LOCAL, 0.0, "1", "rotation, servo: unit axis"),
    Field("rate", np.float64, (), Halo.LOCAL, 0.0, "rad/s", "rotation: angular speed"),
    Field("amplitude", np.float64, (3,), Halo.LOCAL, 0.0, "m", "vibration: amplitude vector"),
    Field("frequency", np.float64, (), Halo.LOCAL, 0.0, "Hz", "vibration: frequency"),
    Field("target_force", np.float64, (), Halo.LOCAL, 0.0, "N", "servo: push to hold"),
    Field("servo_gain", np.float64, (), Halo.LOCAL, 0.0, "m/(s N)", "servo: speed per force error"),
    Field("max_speed", np.float64, (), Halo.LOCAL, np.inf, "m/s", "servo: speed limit"),
    Field("first_vertex", np.int64, (), Halo.LOCAL, -1, "", "gid of mesh vertex 0"),
    Field("vertex_count", np.int64, (), Halo.LOCAL, 0, "", "vertices: gids first_vertex + index"),
    Field("first_triangle", np.int64, (), Halo.LOCAL, -1, "", "gid of mesh triangle 0"),
    Field("triangle_count", np.int64, (), Halo.LOCAL, 0, "", "triangles: gids first_triangle + index"),
    Field("longest_edge", np.float64, (), Halo.LOCAL, 0.0, "m", "longest triangle edge"),
    Field("closed", np.bool_, (), Halo.LOCAL, False, "", "the surface encloses a volume"),
    Field("force", np.float64, (3,), Halo.SUM, 0.0, "N", "force of the particles on the wall"),
    Field("torque", np.float64, (3,), Halo.SUM, 0.0, "N m",
          "torque of the particles on the wall about its reference point"),
)
MESH_VERTEX_FIELDS = (
    Field("position", np.float64, (3,), Halo.FORWARD, 0.0, "m", "position"),
    Field("velocity", np.float64, (3,), Halo.FORWARD, 0.0, "m/s", "velocity"),
    Field("wall", np.int32, (), Halo.FORWARD, -1, "", "mesh wall (row of mesh_walls)"),
    Field("x0", np.float64, (3,), Halo.LOCAL, 0.0, "m",
          "position in the wall's body frame: x = origin + T + R x0"),
)
MESH_TRIANGLE_FIELDS = (
    Field("vertices", np.int64, (3,), Halo.FORWARD, -1, "", "vertex gids (mesh_vertices)"),
    Field("rows", np.int32, (3,), Halo.LOCAL, -1, "", "local rows of the vertices"),
    Field("wall", np.int32, (), Halo.FORWARD, -1, "", "mesh wall (row of mesh_walls)"),
    Field("step_contacts", np.float64, (), Halo.REVERSE, 0.0, "1",
          "contacts with grains at this step (summed onto the owner)", scratch=True),
    Field("step_normal_work", np.float64, (), Halo.REVERSE, 0.0, "J",
          "|F_n v_n| dt of this step's contacts", scratch=True),
    Field("step_friction_work", np.float64, (), Halo.REVERSE, 0.0, "J",
          "|F_t . v_t| dt of this step's contacts", scratch=True),
    Field("contacts", np.int64, (), Halo.LOCAL, 0, "", "contact-steps so far (owner)"),
    Field("normal_work", np.float64, (), Halo.LOCAL, 0.0, "J",
          "sum of |F_n v_n| dt over the contacts so far (owner)"),
    Field("friction_work", np.float64, (), Halo.LOCAL, 0.0, "J",
          "sum of |F_t . v_t| dt over the contacts so far (owner): wear's input"),
)

#: user motion functions per world: {wall: f(t)} (a function is not table data)
_FUNCTIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def create_mesh_wall_tables(world) -> None:
    """Add the three tables (idempotent)."""
    if "mesh_walls" in world.tables:
        return
    world.add_table(Table("mesh_walls", MESH_WALL_FIELDS, capacity=4))
    world.add_table(Table("mesh_vertices", MESH_VERTEX_FIELDS, capacity=256))
    world.add_table(Table("mesh_triangles", MESH_TRIANGLE_FIELDS, capacity=256,
                          anchor=("mesh_vertices", "vertices"), references={"rows": "vertices"}))


def motion_function(world, wall: int):
    """The function of time that moves `wall` (``motion=`` a callable), or None."""
    return _FUNCTIONS.get(world, {}).get(int(wall))


def _vector(name: str, value, unit: bool = False) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise InputError(f"mesh wall: {name} must be a finite 3-vector (got {value!r})")
    if unit:
        norm = float(np.linalg.norm(v))
        if not norm > 0:
            raise InputError(f"mesh wall: {name} must be a non-zero 3-vector (got {value!r})")
        v = v / norm
    return v


def _rotation_matrix(rotate) -> np.ndarray:
    """A 3 x 3 rotation: a matrix, or (axis, angle in rad)."""
    if rotate is None:
        return np.eye(3)
    m = np.asarray(rotate, dtype=object) if not isinstance(rotate, np.ndarray) else rotate
    if isinstance(rotate, (tuple, list)) and len(rotate) == 2 and np.ndim(rotate[1]) == 0:
        axis = _vector("rotate axis", rotate[0], unit=True)
        return axis_angle_matrix(axis, float(rotate[1]))
    m = np.asarray(m, dtype=np.float64)
    check_rotation("rotate", m)
    return m


def check_rotation(name: str, m: np.ndarray) -> None:
    """Refuse anything but a proper 3 x 3 rotation matrix."""
    if m.shape != (3, 3) or not np.all(np.isfinite(m)):
        raise InputError(f"mesh wall: {name} must be a 3 x 3 rotation matrix or (axis, angle)")
    if not (np.allclose(m @ m.T, np.eye(3), atol=1e-9) and np.linalg.det(m) > 0):
        raise InputError(f"mesh wall: {name} is not a rotation (R R^T = I, det R = 1); "
                         "give an orthonormal right-handed matrix or (axis, angle in rad)")


def axis_angle_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by `angle` (rad, right-handed) about the unit `axis` (Rodrigues)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _motion_values(motion, world) -> dict:
    if motion is None:
        return {"motion": FIXED}
    if isinstance(motion, Translation):
        return {"motion": TRANSLATION, "drive_velocity": _vector("velocity", motion.velocity)}
    if isinstance(motion, Rotation):
        if not math.isfinite(motion.rate):
            raise InputError(f"mesh wall: rotation rate must be finite (got {motion.rate})")
        return {"motion": ROTATION, "origin": _vector("rotation point", motion.point),
                "axis": _vector("rotation axis", motion.axis, unit=True), "rate": float(motion.rate)}
    if isinstance(motion, Vibration):
        if not (math.isfinite(motion.frequency) and motion.frequency >= 0):
            raise InputError(f"mesh wall: vibration frequency must be >= 0 Hz (got {motion.frequency})")
        return {"motion": VIBRATION, "amplitude": _vector("amplitude", motion.amplitude),
                "frequency": float(motion.frequency)}
    if isinstance(motion, Servo):
        if not (motion.gain > 0 and motion.max_speed > 0):
            raise InputError("mesh wall: a servo needs gain > 0 (m/(s N)) and max_speed > 0 (m/s)")
        if not math.isfinite(motion.force):
            raise InputError(f"mesh wall: servo force must be finite (got {motion.force})")
        return {"motion": SERVO, "axis": _vector("servo axis", motion.axis, unit=True),
                "target_force": float(motion.force), "servo_gain": float(motion.gain),
                "max_speed": float(motion.max_speed)}
    if callable(motion):
        return {"motion": FUNCTION}
    raise InputError(f"mesh wall: motion {motion!r} is not None, Translation, Rotation, "
                     "Vibration, Servo or a function of time returning (T, R)")


def add_mesh_wall(world, mesh_or_path, *, species: int = -1, scale: float = 1.0,
                  translate=(0.0, 0.0, 0.0), rotate=None, motion=None, closed: bool | None = None,
                  start: float = 0.0, reference=None,
                  merge_tolerance: float | None = None) -> int:
    """Add a rigid mesh wall and return its id (its row of ``mesh_walls``).

    Parameters
    ----------
    mesh_or_path : Mesh or path
        A ``components.mesh.surface.Mesh`` or a file in any format meshio reads
        (``components.mesh.io.read_mesh``: STL, OBJ, PLY, ...). Validated
        (``components.mesh.validation``: duplicate vertices merged, degenerate,
        duplicate and non-manifold triangles refused, winding made consistent;
        a closed surface wound outward: grains live outside it).
    species : int
        Material of the wall in contacts (a row of ``species``), or -1 for the
        rigid material (infinitely stiff: E* and G* of the grain alone).
    scale, translate, rotate :
        Placement: x = R (scale x_file) + translate; ``rotate`` is a 3 x 3
        rotation matrix or (axis, angle in rad), about the origin of the file.
    motion : None, Translation, Rotation, Vibration, Servo, or f(t) -> (T, R)
        (module docstring), from time ``start`` (s).
    closed : bool, optional
        True: refuse an open surface; False: refuse a closed one; None: either.
    reference : 3-vector, optional
        The wall's reference point (m) when added: its torque is about this
        point (as it moves with the wall). Default: the axis point of a
        Rotation, the world's origin for a function of time (x = T + R x_placed),
        else the mean of the vertices.
    merge_tolerance : float, optional
        Vertices closer than this (m, after scaling) are merged
        (``validate_mesh``'s default: 1e-9 of the bounding-box diagonal).

    The placed mesh must lie inside the box on its non-periodic axes.
    """
    if "particles" not in world.tables:
        from .particles import create_particle_table
        create_particle_table(world)
    if world.is_setup:
        raise InputError("mesh wall: add mesh walls before the first step")
    if isinstance(mesh_or_path, (str, Path)):
        mesh = read_mesh(mesh_or_path)
        source = f"'{mesh_or_path}'"
    elif isinstance(mesh_or_path, Mesh):
        mesh, source = mesh_or_path, "the mesh"
    else:
        raise InputError(f"mesh wall: give a Mesh or a file path, not {type(mesh_or_path).__name__}")
    if not (math.isfinite(scale) and scale > 0):
        raise InputError(f"mesh wall: scale must be > 0 (got {scale}); 1e-3 reads a file in mm")
    if species != -1 and ("species" not in world.tables or not 0 <= species < world.species.n_owned):
        raise InputError(f"mesh wall: species {species} does not exist; add it with "
                         "components.species.add_species, or give -1 for a rigid wall")
    values = _motion_values(motion, world)
    rot = _rotation_matrix(rotate)
    shift = _vector("translate", translate)
    placed = Mesh(mesh.vertices * float(scale) @ rot.T + shift, mesh.triangles)
    try:
        placed = validate_mesh(placed, merge_tolerance)
    except MeshError as e:
        raise MeshError(f"mesh wall from {source}: {e}") from None
    is_closed = boundary_edges(placed).shape[0] == 0
    if closed is True and not is_closed:
        edge = boundary_edges(placed)[0]
        raise MeshError(f"mesh wall from {source}: the surface is open (boundary edge between "
                        f"vertices {int(edge[0])} and {int(edge[1])}, {boundary_edges(placed).shape[0]} "
                        "boundary edges) but closed=True asks for a closed one: close the holes "
                        "in a mesh tool, or pass closed=None")
    if closed is False and is_closed:
        raise MeshError(f"mesh wall from {source}: the surface is closed but closed=False asks "
                        "for an open one")
    x = placed.vertices
    box = world.box
    outside = np.flatnonzero(np.any(((x < box.lo) | (x >= box.hi)) & ~box.periodic_mask, axis=1))
    if outside.size:
        k = int(outside[0])
        raise InputError(
            f"mesh wall from {source}: {outside.size} of {x.shape[0]} vertices lie outside the box "
            f"[{box.lo.tolist()}, {box.hi.tolist()}) (vertex {k} at {x[k].tolist()}): move the mesh "
            "(translate, scale: a file in mm needs scale=1e-3) or enlarge the box")
    create_mesh_wall_tables(world)
    walls, verts, tris = world.mesh_walls, world.mesh_vertices, world.mesh_triangles
    wall = walls.n_owned
    if "origin" in values and reference is not None:
        raise InputError("mesh wall: a Rotation's point is its reference point; leave "
                         "reference=None")
    default = np.zeros(3) if values["motion"] == FUNCTION else x.mean(axis=0)
    origin = values.pop("origin", default if reference is None else
                        _vector("reference", reference))
    tri = placed.triangles
    edges = x[tri[:, [1, 2, 0]]] - x[tri]
    longest = float(np.linalg.norm(edges, axis=2).max())
    vrows = verts.append(x.shape[0], position=x, wall=wall, x0=x - origin)
    vgid = verts.gid[vrows]
    trows = tris.append(tri.shape[0], vertices=vgid[tri], wall=wall)
    walls.append(1, species=species, start=float(start), origin=origin, reference=origin,
                 rotation=np.eye(3), first_vertex=int(vgid[0]), vertex_count=x.shape[0],
                 first_triangle=int(tris.gid[trows][0]), triangle_count=tri.shape[0],
                 longest_edge=longest, closed=is_closed, **values)
    if callable(motion) and not isinstance(motion, (Translation, Rotation, Vibration, Servo)):
        _FUNCTIONS.setdefault(world, {})[wall] = motion
    return wall


def mesh_wall_surface(world, wall: int) -> Mesh:
    """The current surface of `wall` from this rank's owned rows (every rank before the first
    step; for a running world gather the rows first)."""
    walls, verts, tris = world.mesh_walls, world.mesh_vertices, world.mesh_triangles
    if not 0 <= wall < walls.n_owned:
        raise InputError(f"mesh wall {wall} does not exist")
    v = np.flatnonzero(verts.wall[:verts.n_owned] == wall)
    order = np.argsort(verts.gid[v])
    v = v[order]
    t = np.flatnonzero(tris.wall[:tris.n_owned] == wall)
    t = t[np.argsort(tris.gid[t])]
    index = np.searchsorted(verts.gid[v], tris.vertices[t])
    return Mesh(verts.position[v], index)


__all__ = ["add_mesh_wall", "Translation", "Rotation", "Vibration", "Servo",
           "create_mesh_wall_tables", "motion_function", "mesh_wall_surface",
           "axis_angle_matrix", "check_rotation", "FIXED", "TRANSLATION", "ROTATION",
           "VIBRATION", "FUNCTION", "SERVO", "MOTION_NAMES"]
