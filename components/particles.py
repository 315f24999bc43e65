"""The ``particles`` table: everything with mass that is integrated.

Granular spheres and (later) membrane vertices share this table; ``kind``
tells them apart. Units are SI.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.table import Field, Halo, Table

KIND_GRAIN = 0
KIND_MEMBRANE_VERTEX = 1

PARTICLE_FIELDS = (
    Field("position", np.float64, (3,), Halo.FORWARD, 0.0, "m", "centre position"),
    Field("velocity", np.float64, (3,), Halo.FORWARD, 0.0, "m/s", "translational velocity"),
    Field("angular_velocity", np.float64, (3,), Halo.FORWARD, 0.0, "rad/s", "angular velocity"),
    Field("force", np.float64, (3,), Halo.REVERSE, 0.0, "N", "total force, summed each step"),
    Field("torque", np.float64, (3,), Halo.REVERSE, 0.0, "N m", "total torque about the centre"),
    Field("radius", np.float64, (), Halo.FORWARD, 0.0, "m", "sphere radius"),
    Field("mass", np.float64, (), Halo.FORWARD, 0.0, "kg", "mass"),
    Field("inertia", np.float64, (), Halo.FORWARD, 0.0, "kg m^2",
          "moment of inertia (sphere: 2/5 m r^2; 0: no rotational freedom; < 0: a pebble "
          "of a rigid body, moved by its body: components.clumps)"),
    Field("species", np.int32, (), Halo.FORWARD, 0, "", "row of the species table"),
    Field("kind", np.int8, (), Halo.FORWARD, KIND_GRAIN, "", "0 grain, 1 membrane vertex"),
    Field("fixed", np.bool_, (), Halo.FORWARD, False, "",
          "not accelerated by forces: moves at its own velocity (zero: stays put); acts as "
          "infinitely massive in contacts"),
    Field("contact_group", np.int32, (), Halo.FORWARD, -1, "",
          "-1 touches every particle; g >= 0 not those of the same group (a membrane's "
          "vertex spheres); -2 no particle-particle contacts (vertices of a patch membrane)"),
)
#: the wall a fixed particle moves with (``attach_to_wall``); added on first use
WALL_FIELD = Field("wall", np.int32, (), Halo.FORWARD, -1, "",
                   "wall this particle moves with (-1: none)")


def create_particle_table(world, capacity: int = 1024) -> Table:
    """Add an empty ``particles`` table to the world (idempotent)."""
    if "particles" in world.tables:
        return world.tables["particles"]
    return world.add_table(Table("particles", PARTICLE_FIELDS, capacity=capacity))


def add_particles(world, position, radius, species=0, *, velocity=None, angular_velocity=None,
                  fixed=False, mass=None, kind=KIND_GRAIN, gid=None) -> slice:
    """Append spheres; mass and inertia follow from the species density unless given.

    Parameters
    ----------
    position : (n, 3) float [m]
    radius : (n,) or scalar float [m], > 0
    species : (n,) or scalar int, rows of the species table
    velocity, angular_velocity : (n, 3) float [m/s], [rad/s], default 0
    fixed : (n,) or scalar bool
    mass : (n,) or scalar float [kg], default density * 4/3 pi r^3
    gid : (n,) int64, default: fresh ids

    Returns the slice of the new owned rows.
    """
    table = create_particle_table(world)
    position = np.atleast_2d(np.asarray(position, dtype=np.float64))
    n = position.shape[0]
    if position.shape != (n, 3):
        raise InputError(f"particles: position must have shape (n, 3), got {position.shape}")
    radius = np.broadcast_to(np.asarray(radius, dtype=np.float64), (n,)).copy()
    species = np.broadcast_to(np.asarray(species, dtype=np.int32), (n,)).copy()
    if not np.all(np.isfinite(position)):
        i = int(np.flatnonzero(~np.isfinite(position).all(axis=1))[0])
        raise InputError(f"particles: position {i} is not finite: {position[i].tolist()}")
    if not np.all(np.isfinite(radius) & (radius > 0)):
        i = int(np.flatnonzero(~(np.isfinite(radius) & (radius > 0)))[0])
        raise InputError(f"particles: radius {i} is {radius[i]}; every radius must be a positive "
                         "length in metres")
    if "species" not in world.tables or world.tables["species"].n_owned == 0:
        raise InputError("particles: add a species first (components.species.add_species)")
    sp = world.tables["species"]
    if species.min() < 0 or species.max() >= sp.n_owned:
        raise InputError(f"particles: species ids must lie in [0, {sp.n_owned}); got "
                         f"{int(species.min())}..{int(species.max())}")
    if mass is None:
        mass = sp.density[species] * (4.0 / 3.0) * np.pi * radius**3
    mass = np.broadcast_to(np.asarray(mass, dtype=np.float64), (n,)).copy()
    if not np.all(np.isfinite(mass) & (mass > 0)):
        raise InputError("particles: every mass must be positive and finite")
    values = dict(position=position, radius=radius, species=species, mass=mass,
                  inertia=0.4 * mass * radius**2, fixed=fixed, kind=kind)
    for name, v in (("velocity", velocity), ("angular_velocity", angular_velocity)):
        if v is not None:
            v = np.broadcast_to(np.asarray(v, dtype=np.float64), (n, 3))
            if not np.all(np.isfinite(v)):
                raise InputError(f"particles: {name} contains non-finite values")
            values[name] = v
    if gid is not None:
        gid = np.asarray(gid, dtype=np.int64)
        existing = table.gid
        if np.unique(gid).size != gid.size or np.intersect1d(gid, existing).size:
            raise InputError("particles: gids must be unique")
        values["gid"] = gid
    return table.append(n, **values)


# ------------------------------------------------------------ prescribed motion
def fix_particles(world, gids) -> None:
    """Clamp the particles with these gids: fixed, at rest (a clamped membrane rim)."""
    rows = world.particles.rows_of(np.atleast_1d(gids))
    world.particles.fixed[rows] = True
    world.particles.velocity[rows] = 0.0
    world.particles.angular_velocity[rows] = 0.0


def attach_to_wall(world, gids, wall: int) -> None:
    """Make these particles move with a wall (its prescribed or servo velocity, every step):
    the end rings of a triaxial membrane follow the platens. The wall-motion system sets
    their velocity (systems.walls.motion)."""
    if "walls" not in world.tables or not 0 <= int(wall) < world.tables["walls"].n_owned:
        raise InputError(f"attach_to_wall: wall {wall} does not exist (components.walls.add_wall)")
    p = world.particles
    p.add_field(WALL_FIELD)
    rows = p.rows_of(np.atleast_1d(gids))
    p.fixed[rows] = True
    p.wall[rows] = int(wall)
    p.velocity[rows] = world.tables["walls"].velocity[int(wall)]
    p.angular_velocity[rows] = 0.0
