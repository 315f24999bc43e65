"""Motion of planar walls: prescribed velocity, or a servo on the normal stress.

Servo (triaxial platen): the compressive stress the particles put on the wall
is sigma = -F.n / A (F: force of the particles on the wall, n: wall normal into
the particles, A: ``area``). The wall moves along +n (into the sample) at
v = gain (sigma_target - sigma), limited to ``max_speed``: it advances while
the sample pushes less than the target and retreats when it pushes more. It
uses the force of the previous step (explicit control).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.system import Stage, System

from ecs_dem.components.walls import SERVO, VELOCITY


def servo_speed(force, normal, area, target, gain, max_speed):
    """Normal speed (m/s, + into the sample) of servo walls; arrays over walls."""
    sigma = -np.einsum("ij,ij->i", force, normal) / area
    return np.clip(gain * (target - sigma), -max_speed, max_speed)


class WallMotion(System):
    """Move velocity-driven and servo walls by one time step."""

    stage = Stage.INTEGRATE_FIRST
    reads = {"walls": ("mode", "normal", "force", "target_stress", "area", "servo_gain", "max_speed")}
    writes = {"walls": ("point", "velocity")}

    def run(self, world) -> None:
        w = world.walls
        servo = w.mode == SERVO
        if np.any(servo):
            v = servo_speed(w.force[servo], w.normal[servo], w.area[servo], w.target_stress[servo],
                            w.servo_gain[servo], w.max_speed[servo])
            w.velocity[servo] = v[:, None] * w.normal[servo]
        moving = (w.mode == VELOCITY) | servo
        w.point[moving] += world.dt * w.velocity[moving]
