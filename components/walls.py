"""The ``walls`` table: infinite planes that confine particles.

A wall is the plane through ``point`` with unit ``normal`` pointing into the
region where particles live. Motion modes::

    FIXED     never moves
    VELOCITY  moves at its prescribed velocity (m/s)
    SERVO     moves along its normal to hold the normal stress on it at
              target_stress (Pa) over area (m^2): the platen of a
              triaxial test (systems.walls.motion gives the control law).

``force`` is the total force the particles exert on the wall (N), refreshed
every step by the wall-contact system. The table is small and replicated on
every rank; ``force`` is a SUM field: each rank adds its particles' share, and
the engine sums the shares over ranks when something reads them (a servo, an
output, the end of ``World.run``; ``ecs_dem.world``).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.table import Field, Halo, Table

FIXED, VELOCITY, SERVO = 0, 1, 2
_MODES = {"fixed": FIXED, "velocity": VELOCITY, "servo": SERVO}

WALL_FIELDS = (
    Field("point", np.float64, (3,), Halo.LOCAL, 0.0, "m", "a point on the plane"),
    Field("initial_point", np.float64, (3,), Halo.LOCAL, 0.0, "m", "the point when the wall was added"),
    Field("normal", np.float64, (3,), Halo.LOCAL, 0.0, "1", "unit normal, into the particle region"),
    Field("velocity", np.float64, (3,), Halo.LOCAL, 0.0, "m/s", "current velocity"),
    Field("mode", np.int8, (), Halo.LOCAL, FIXED, "", "0 fixed, 1 velocity, 2 servo"),
    Field("species", np.int32, (), Halo.LOCAL, -1, "", "wall material, -1 for a rigid wall"),
    Field("target_stress", np.float64, (), Halo.LOCAL, 0.0, "Pa", "servo: compressive stress to hold"),
    Field("area", np.float64, (), Halo.LOCAL, 0.0, "m^2", "servo: area the stress acts on"),
    Field("servo_gain", np.float64, (), Halo.LOCAL, 0.0, "m/(s Pa)", "servo: speed per stress error"),
    Field("max_speed", np.float64, (), Halo.LOCAL, np.inf, "m/s", "servo: speed limit"),
    Field("force", np.float64, (3,), Halo.SUM, 0.0, "N", "force of the particles on the wall"),
)


def create_wall_table(world) -> Table:
    if "walls" in world.tables:
        return world.tables["walls"]
    return world.add_table(Table("walls", WALL_FIELDS, capacity=8))


def add_wall(world, point, normal, *, mode: str = "fixed", velocity=(0.0, 0.0, 0.0),
             species: int = -1, target_stress: float = 0.0, area: float = 0.0,
             servo_gain: float = 0.0, max_speed: float = np.inf) -> int:
    """Add a planar wall and return its row (= wall id)."""
    if mode not in _MODES:
        raise InputError(f"wall: mode '{mode}' is not one of {sorted(_MODES)}")
    normal = np.asarray(normal, dtype=np.float64)
    norm = np.linalg.norm(normal)
    if normal.shape != (3,) or not norm > 0:
        raise InputError(f"wall: normal must be a non-zero 3-vector (got {normal})")
    if mode == "servo":
        if not (area > 0 and servo_gain > 0):
            raise InputError("wall: a servo wall needs area > 0 (m^2) and servo_gain > 0 (m/(s Pa))")
        if target_stress < 0:
            raise InputError("wall: target_stress is compressive and must be >= 0 Pa")
    if mode != "velocity" and np.any(np.asarray(velocity) != 0):
        raise InputError(f"wall: a '{mode}' wall takes no prescribed velocity; use mode='velocity'")
    if species >= 0 and ("species" not in world.tables or species >= world.tables["species"].n_owned):
        raise InputError(f"wall: species {species} does not exist")
    table = create_wall_table(world)
    rows = table.append(1, point=np.asarray(point, dtype=np.float64),
                        initial_point=np.asarray(point, dtype=np.float64), normal=normal / norm,
                        velocity=np.asarray(velocity, dtype=np.float64), mode=_MODES[mode],
                        species=species, target_stress=target_stress, area=area,
                        servo_gain=servo_gain, max_speed=max_speed)
    return rows.start
