"""Prescribed motion of rigid mesh walls (components.mesh_walls): translation, rotation,
vibration, a function of time, and a servo on the force along an axis.

Each step, for every moving wall, the rigid motion at the end of the step,
t = time + dt (the time of the positions the forces then see), is T(t), R(t)
with velocity V and angular velocity Omega (components.mesh_walls gives each
kind), and every owned vertex is set to

    x = origin + T + R x0,   v = V + Omega x (R x0)

from its body-frame position x0: exact at every step, with no drift however
long the run. The velocity is that of the material point, so grains feel a
spinning drum drag them. On periodic axes positions are wrapped into the box;
on the others a vertex leaving the box is an error naming the wall.

Servo: v = clip(gain (target - push), +-max_speed) along the axis, with
push = -F.axis the grains' push against the wall's advance (the force of the
previous step, summed over ranks); T advances by dt v.

The engine's rebuild rule counts the vertices' motion like the particles'
(``mesh_vertices`` is a spatial table): the candidate lists are built again
when a vertex has moved half the skin.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError, StateError
from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System

from ecs_dem.components.mesh_walls import (FIXED, FUNCTION, ROTATION, SERVO, TRANSLATION,
                                           VIBRATION, axis_angle_matrix, check_rotation,
                                           motion_function)


@kernel
def place_vertices(wall, x0, moving, origin, translation, rotation, velocity, angular_velocity,
                   lo, length, periodic, position, vertex_velocity):
    """Set every vertex of a moving wall from x0 (module docstring); returns the first row
    outside the box on a non-periodic axis, or -1."""
    outside = -1
    for k in range(wall.shape[0]):
        w = wall[k]
        if not moving[w]:
            continue
        r = np.empty(3)
        for a in range(3):
            r[a] = rotation[w, a, 0] * x0[k, 0] + rotation[w, a, 1] * x0[k, 1] + (
                rotation[w, a, 2] * x0[k, 2])
        om = angular_velocity[w]
        vertex_velocity[k, 0] = velocity[w, 0] + om[1] * r[2] - om[2] * r[1]
        vertex_velocity[k, 1] = velocity[w, 1] + om[2] * r[0] - om[0] * r[2]
        vertex_velocity[k, 2] = velocity[w, 2] + om[0] * r[1] - om[1] * r[0]
        for a in range(3):
            x = origin[w, a] + translation[w, a] + r[a]
            u = (x - lo[a]) / length[a]
            if periodic[a]:
                x = lo[a] + (u - math.floor(u)) * length[a]
                if x >= lo[a] + length[a]:
                    x = lo[a]
            elif (u < 0.0 or u >= 1.0) and outside < 0:
                outside = k
            position[k, a] = x
    return outside


def rotation_rate(r_minus: np.ndarray, r_plus: np.ndarray, span: float) -> np.ndarray:
    """Omega from two rotations `span` (s) apart: the axis-angle of R+ R-^T over span."""
    d = r_plus @ r_minus.T
    angle = math.acos(min(max(0.5 * (np.trace(d) - 1.0), -1.0), 1.0))
    axis = np.array([d[2, 1] - d[1, 2], d[0, 2] - d[2, 0], d[1, 0] - d[0, 1]])
    s = math.sin(angle)
    if s < 1e-12:
        return 0.5 * axis / span  # small angle: the skew part is the rotation vector
    return axis * (angle / (2.0 * s)) / span


def _function_state(world, w: int, t: float):
    """(T, R, V, Omega) of a wall moved by a function of time (components.mesh_walls)."""
    f = motion_function(world, w)
    if f is None:
        raise InputError(f"mesh wall {w} moves by a function of time that this process does "
                         "not have: pass motion=f to add_mesh_wall again when you rebuild the "
                         "world (e.g. before a restart)")

    def call(time):
        out = f(time)
        if not isinstance(out, (tuple, list)) or len(out) not in (2, 4):
            raise InputError(f"mesh wall {w}: its motion function must return (T, R) or "
                             "(T, R, V, Omega)")
        T = np.asarray(out[0], dtype=np.float64)
        R = np.asarray(out[1], dtype=np.float64)
        if T.shape != (3,) or not np.all(np.isfinite(T)):
            raise InputError(f"mesh wall {w}: its motion function gave T = {out[0]!r} at "
                             f"t = {time}; it must be a finite 3-vector (m)")
        check_rotation(f"the rotation of wall {w} at t = {time}", R)
        return T, R, out
    T, R, out = call(t)
    if len(out) == 4:
        return T, R, np.asarray(out[2], dtype=np.float64), np.asarray(out[3], dtype=np.float64)
    h = 0.5 * world.dt
    T0, R0, _ = call(t - h)
    T1, R1, _ = call(t + h)
    return T, R, (T1 - T0) / (2.0 * h), rotation_rate(R0, R1, 2.0 * h)


def wall_state(world, w: int, t: float, servo_step: float = 0.0):
    """(T, R, V, Omega) of wall `w` at time `t`; a servo advances by `servo_step` (s)."""
    walls = world.mesh_walls
    kind = int(walls.motion[w])
    s = max(t - float(walls.start[w]), 0.0)
    started = t >= float(walls.start[w])
    zero = np.zeros(3)
    if kind == TRANSLATION:
        v = walls.drive_velocity[w]
        return v * s, np.eye(3), (v.copy() if started else zero), zero
    if kind == ROTATION:
        axis = walls.axis[w]
        rate = float(walls.rate[w])
        return zero, axis_angle_matrix(axis, rate * s), zero, (rate * axis if started else zero)
    if kind == VIBRATION:
        phase = 2.0 * math.pi * float(walls.frequency[w]) * s
        a = walls.amplitude[w]
        omega = 2.0 * math.pi * float(walls.frequency[w])
        return a * math.sin(phase), np.eye(3), (a * omega * math.cos(phase) if started
                                                else zero), zero
    if kind == FUNCTION:
        return _function_state(world, w, t)
    if kind == SERVO:
        axis = walls.axis[w]
        speed = 0.0
        if servo_step > 0.0 and started:
            push = -float(walls.force[w] @ axis)
            speed = min(max(float(walls.servo_gain[w]) * (float(walls.target_force[w]) - push),
                            -float(walls.max_speed[w])), float(walls.max_speed[w]))
        return walls.translation[w] + servo_step * speed * axis, np.eye(3), speed * axis, zero
    return walls.translation[w].copy(), walls.rotation[w].copy(), zero, zero


class MeshWallMotion(System):
    """Move every moving mesh wall to the end of the step (module docstring)."""

    stage = Stage.INTEGRATE_FIRST
    reads = {"mesh_walls": ("motion", "start", "origin", "drive_velocity", "axis", "rate",
                            "amplitude", "frequency", "target_force", "servo_gain",
                            "max_speed"),
             "mesh_vertices": ("wall", "x0")}
    writes = {"mesh_walls": ("reference", "translation", "rotation", "velocity",
                             "angular_velocity"),
              "mesh_vertices": ("position", "velocity")}

    def setup(self, world) -> None:
        walls = world.tables.get("mesh_walls")
        if walls is None:
            raise InputError("MeshWallMotion: the world has no mesh wall")
        self._servo = bool(np.any(walls.motion == SERVO))
        # the state at the current time (the set-up's force pass sees the walls' velocities)
        self._move(world, float(world.time), 0.0)

    def run(self, world) -> None:
        if self._servo:  # the force of the last step, summed over ranks
            world.complete_sums((("mesh_walls", "force"),))
        self._move(world, float(world.time) + world.dt, world.dt)

    def _move(self, world, t: float, servo_step: float) -> None:
        walls, verts = world.mesh_walls, world.mesh_vertices
        moving = walls.motion != FIXED
        for w in np.flatnonzero(moving):
            T, R, V, Om = wall_state(world, int(w), t, servo_step)
            walls.translation[w] = T
            walls.rotation[w] = R
            walls.velocity[w] = V
            walls.angular_velocity[w] = Om
            walls.reference[w] = walls.origin[w] + T
        box = world.box
        n = verts.n_owned
        outside = place_vertices(verts.wall[:n], verts.x0[:n], moving, walls.origin,
                                 walls.translation, walls.rotation, walls.velocity,
                                 walls.angular_velocity, box.lo, box.length, box.periodic_mask,
                                 verts.position[:n], verts.velocity[:n])
        if outside >= 0:
            w = int(verts.wall[outside])
            raise StateError(
                f"mesh wall {w} moved outside the box at t = {t:.6g} s: its vertex gid "
                f"{int(verts.gid[outside])} is at {verts.position[outside].tolist()}, beyond "
                f"[{box.lo.tolist()}, {box.hi.tolist()}) on a non-periodic axis. Enlarge the "
                "box, or limit the motion (its amplitude, duration or servo speed)")


__all__ = ["MeshWallMotion", "place_vertices", "wall_state", "rotation_rate"]
