"""Spray droplets and the nozzles that make them: tables and the builder.

A nozzle sprays liquid droplets into the domain (MercuryDPM's DropletBoundary,
Thornton et al. 2023, Sect. 6); a droplet flies under gravity until it touches
a particle, which absorbs it into its film, or a wall or the domain's edge,
where it is lost (``systems.wet.droplets``). Two tables:

``nozzles``   replicated (every rank holds every nozzle): where and how it
              sprays, and its running totals (``emitted`` droplets,
              ``sprayed`` volume, ``lost`` volume at walls and out of the
              domain), identical on every rank and saved in checkpoints
``droplets``  decomposed by ``position`` like the particles (a spatial table:
              migrated to the rank that owns its position, saved in
              checkpoints), never in the grains' contact search: position,
              velocity, radius, volume, its nozzle and its ``state``
              (``AIRBORNE``; ``ABSORBED`` or ``LOST`` for the rest of the step
              it ended in, then removed)

Spray shapes (``add_nozzle``), about the unit ``direction`` d:

* ``"cone"``: a full cone of half-angle ``half_angle``: directions uniform
  over the spherical cap (cos of the angle to d uniform in [cos a, 1], the
  azimuth uniform);
* ``"fan"``: a flat fan: the direction is d + tan(u) e1 + tan(w) e2,
  normalised, with u uniform in [-fan_angle, fan_angle] (in the fan's plane,
  spanned by d and ``fan_axis`` e1) and w uniform in [-thickness_angle,
  thickness_angle] (across it, e2 = d x e1): the angle of a droplet's path
  projected on either plane is then uniform in its range.

The rate is ``rate`` droplets per second or ``volume_rate`` m^3/s (one of
the two); all droplets of a nozzle have the radius ``droplet_radius`` and the
speed ``speed``. From ``start`` to ``stop`` (s) the nozzle has emitted
floor(rate (t - start)) droplets by time t: they appear at the nozzle at the
end of the step in which they are due. Random numbers come from the
nozzle's ``seed`` and its emitted count, so every rank, and a restart, draws
the same droplets. Units: SI.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.table import Field, Halo, Table

AIRBORNE, ABSORBED, LOST = 0, 1, 2
CONE, FAN = 0, 1
SHAPES = {"cone": CONE, "fan": FAN}

NOZZLE_FIELDS = (
    Field("location", np.float64, (3,), Halo.LOCAL, 0.0, "m",
          "where droplets appear (not 'position': the table is not decomposed)"),
    Field("direction", np.float64, (3,), Halo.LOCAL, 0.0, "1", "unit axis of the spray"),
    Field("fan_axis", np.float64, (3,), Halo.LOCAL, 0.0, "1",
          "unit vector across the axis in the fan's plane (a cone: any normal)"),
    Field("shape", np.int8, (), Halo.LOCAL, CONE, "", "0 full cone, 1 flat fan"),
    Field("angle", np.float64, (), Halo.LOCAL, 0.0, "rad",
          "cone: half-angle; fan: half the fan's opening"),
    Field("thickness_angle", np.float64, (), Halo.LOCAL, 0.0, "rad",
          "fan: half its opening across the fan's plane"),
    Field("rate", np.float64, (), Halo.LOCAL, 0.0, "1/s", "droplets per second"),
    Field("droplet_radius", np.float64, (), Halo.LOCAL, 0.0, "m", "radius of the droplets"),
    Field("speed", np.float64, (), Halo.LOCAL, 0.0, "m/s", "speed of the droplets"),
    Field("start", np.float64, (), Halo.LOCAL, 0.0, "s", "spraying begins"),
    Field("stop", np.float64, (), Halo.LOCAL, np.inf, "s", "spraying ends"),
    Field("seed", np.int64, (), Halo.LOCAL, 0, "", "random seed of the directions"),
    Field("emitted", np.int64, (), Halo.LOCAL, 0, "", "droplets emitted so far"),
    Field("sprayed", np.float64, (), Halo.LOCAL, 0.0, "m^3", "liquid emitted so far"),
    Field("lost", np.float64, (), Halo.LOCAL, 0.0, "m^3",
          "liquid of its droplets lost at walls or out of the domain so far"),
)

DROPLET_FIELDS = (
    Field("position", np.float64, (3,), Halo.FORWARD, 0.0, "m", "position"),
    Field("velocity", np.float64, (3,), Halo.FORWARD, 0.0, "m/s", "velocity"),
    Field("radius", np.float64, (), Halo.FORWARD, 0.0, "m", "radius"),
    Field("volume", np.float64, (), Halo.FORWARD, 0.0, "m^3", "liquid volume"),
    Field("nozzle", np.int32, (), Halo.FORWARD, -1, "", "row of its nozzle"),
    Field("state", np.int8, (), Halo.FORWARD, AIRBORNE, "",
          "0 airborne, 1 absorbed, 2 lost (this step; removed at the next)"),
)


def droplet_tables(world) -> tuple[Table, Table]:
    """The ``nozzles`` and ``droplets`` tables (made on first use)."""
    if "nozzles" not in world.tables:
        world.add_table(Table("nozzles", NOZZLE_FIELDS, capacity=4))
    if "droplets" not in world.tables:
        world.add_table(Table("droplets", DROPLET_FIELDS, capacity=256))
    return world.tables["nozzles"], world.tables["droplets"]


def _unit(v, what: str) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    n = float(np.linalg.norm(v)) if v.shape == (3,) else 0.0
    if not (n > 0 and math.isfinite(n)):
        raise InputError(f"nozzle: {what} must be a finite non-zero 3-vector (got {v.tolist()})")
    return v / n


def _positive(value, what: str, unit: str) -> float:
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"nozzle: {what} must be finite and > 0 {unit} (got {value})")
    return value


def _angle(value, what: str, upper: float) -> float:
    """`value` degrees in [0, upper degrees), in radians."""
    value = float(value)
    if not 0 <= value < upper:
        raise InputError(f"nozzle: {what} must lie in [0, {upper:g}) degrees "
                         f"(got {value:g})")
    return math.radians(value)


def add_nozzle(world, position, direction, *, droplet_radius, speed, rate=None,
               volume_rate=None, shape: str = "cone", half_angle: float = 0.0,
               fan_angle: float = 0.0, thickness_angle: float = 0.0, fan_axis=None,
               start: float = 0.0, stop: float = math.inf, seed: int = 0) -> int:
    """Add a nozzle (module docstring; angles in degrees) and return its row.

    The nozzle must lie inside the domain (on every axis). Give ``rate``
    (droplets/s) or ``volume_rate`` (m^3/s), not both. ``fan_axis``: for a
    fan, a vector in the fan's plane (its part across ``direction`` is used);
    default: the axis least aligned with ``direction``, made normal to it.
    Build nozzles before the first step, identically on every rank."""
    if world.is_setup:
        raise InputError("nozzle: add nozzles before the first step (World.setup)")
    x = np.asarray(position, dtype=np.float64).reshape(-1)
    if x.shape != (3,) or not np.all(np.isfinite(x)):
        raise InputError(f"nozzle: position must be a finite 3-vector (got {position})")
    box = world.domain.box
    if np.any(x < box.lo) or np.any(x > box.hi):
        raise InputError(f"nozzle: position {x.tolist()} lies outside the domain "
                         f"[{box.lo.tolist()}, {box.hi.tolist()}]: move the nozzle inside "
                         "or enlarge the box")
    d = _unit(direction, "direction")
    if shape not in SHAPES:
        raise InputError(f"nozzle: shape {shape!r} is not one of {sorted(SHAPES)}")
    r = _positive(droplet_radius, "droplet_radius", "m")
    speed = float(speed)
    if not (speed >= 0 and math.isfinite(speed)):
        raise InputError(f"nozzle: speed must be finite and >= 0 m/s (got {speed})")
    volume = 4.0 / 3.0 * math.pi * r**3
    if (rate is None) == (volume_rate is None):
        raise InputError("nozzle: give either rate (droplets per second) or volume_rate "
                         "(m^3/s), not both nor neither")
    rate = (_positive(rate, "rate", "droplets/s") if rate is not None
            else _positive(volume_rate, "volume_rate", "m^3/s") / volume)
    if not (math.isfinite(float(start)) and float(stop) > float(start)):
        raise InputError(f"nozzle: need a finite start before stop (got start {start} s, "
                         f"stop {stop} s)")
    if SHAPES[shape] == CONE:
        angle, thick = _angle(half_angle, "half_angle", 180.0), 0.0
    else:
        angle = _angle(fan_angle, "fan_angle", 90.0)
        thick = _angle(thickness_angle, "thickness_angle", 90.0)
    if fan_axis is None:
        fan_axis = np.eye(3)[int(np.argmin(np.abs(d)))]
    e1 = np.asarray(fan_axis, dtype=np.float64).reshape(-1)
    if e1.shape != (3,):
        raise InputError(f"nozzle: fan_axis must be a 3-vector (got {fan_axis})")
    e1 = e1 - (e1 @ d) * d
    e1 = _unit(e1, "fan_axis (its part across direction)")
    nozzles, _ = droplet_tables(world)
    rows = nozzles.append(1, location=x, direction=d, fan_axis=e1, shape=SHAPES[shape],
                          angle=angle, thickness_angle=thick, rate=rate, droplet_radius=r,
                          speed=speed, start=float(start), stop=float(stop), seed=int(seed))
    return rows.start


def spray_directions(direction, fan_axis, shape: int, angle: float, thickness: float,
                     u: np.ndarray) -> np.ndarray:
    """Unit directions of a spray (module docstring) from uniform numbers u (n, 2) in [0, 1)."""
    d = np.asarray(direction, dtype=np.float64)
    e1 = np.asarray(fan_axis, dtype=np.float64)
    e2 = np.cross(d, e1)
    if shape == CONE:
        cos_t = 1.0 - u[:, 0] * (1.0 - math.cos(angle))
        sin_t = np.sqrt(np.maximum(1.0 - cos_t * cos_t, 0.0))
        phi = 2.0 * math.pi * u[:, 1]
        return (cos_t[:, None] * d + (sin_t * np.cos(phi))[:, None] * e1
                + (sin_t * np.sin(phi))[:, None] * e2)
    a = np.tan((2.0 * u[:, 0] - 1.0) * angle)
    b = np.tan((2.0 * u[:, 1] - 1.0) * thickness)
    v = d + a[:, None] * e1 + b[:, None] * e2
    return v / np.linalg.norm(v, axis=1)[:, None]


__all__ = ["AIRBORNE", "ABSORBED", "LOST", "CONE", "FAN", "NOZZLE_FIELDS", "DROPLET_FIELDS",
           "droplet_tables", "add_nozzle", "spray_directions"]
