"""Motion of planar walls: prescribed velocity, or a servo on the normal stress.

Servo (triaxial platen): the compressive stress the particles put on the wall
is sigma = -F.n / A (F: force of the particles on the wall, n: wall normal into
the particles, A: ``area``). The wall moves along +n (into the sample) at
v = gain (sigma_target - sigma), limited to ``max_speed``: it advances while
the sample pushes less than the target and retreats when it pushes more. It
uses the force of the previous step (explicit control).

Particles attached to a wall (``components.particles.attach_to_wall``: fixed
particles with a ``wall`` field) get that wall's velocity every step, so the
integrator moves them with it: this system must run before the integrator's
first half (``ensure_wall_motion`` puts it there).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.system import Stage, System

from ecs_dem.components.walls import SERVO, VELOCITY

from .velocity_verlet import IntegrateFirstHalf


def servo_speed(force, normal, area, target, gain, max_speed):
    """Normal speed (m/s, + into the sample) of servo walls; arrays over walls."""
    sigma = -np.einsum("ij,ij->i", force, normal) / area
    return np.clip(gain * (target - sigma), -max_speed, max_speed)


class WallMotion(System):
    """Move velocity-driven and servo walls by one time step; attached particles follow."""

    stage = Stage.INTEGRATE_FIRST
    reads = {"walls": ("mode", "normal", "force", "target_stress", "area", "servo_gain", "max_speed")}
    writes = {"walls": ("point", "velocity")}

    def setup(self, world) -> None:
        p = world.tables.get("particles")
        self.attached = p is not None and p.has_field("wall")
        if self.attached:
            self.reads = dict(self.reads, particles=("wall",))
            self.writes = dict(self.writes, particles=("velocity",))
            integrator = next((s for s in world.systems if isinstance(s, IntegrateFirstHalf)), None)
            if integrator is not None and world.systems.index(integrator) < world.systems.index(self):
                raise InputError("WallMotion must run before the integrator's first half when "
                                 "particles are attached to walls: add it first (or let "
                                 "WallContacts add it)")

    def run(self, world) -> None:
        w = world.walls
        servo = w.mode == SERVO
        moving = (w.mode == VELOCITY) | servo
        if not self.attached and not moving.any():  # walls at rest: nothing to do
            return
        if np.any(servo):
            v = servo_speed(w.force[servo], w.normal[servo], w.area[servo], w.target_stress[servo],
                            w.servo_gain[servo], w.max_speed[servo])
            w.velocity[servo] = v[:, None] * w.normal[servo]
        w.point[moving] += world.dt * w.velocity[moving]
        if self.attached:
            p = world.particles
            on = p.wall >= 0
            p.velocity[on] = w.velocity[p.wall[on]]


def ensure_wall_motion(world) -> None:
    """Add a WallMotion system before the integrator if the world has none (walls must move
    by their mode without the user remembering a system)."""
    if not world.has_system(WallMotion):
        world.add_system(WallMotion(), before=IntegrateFirstHalf)
