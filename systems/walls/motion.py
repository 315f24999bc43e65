"""Motion of planar walls: prescribed velocity, or a servo on the normal stress.

Servo (triaxial platen): the compressive stress the particles put on the wall
is sigma = -F.n / A (F: force of the particles on the wall, n: wall normal into
the particles, A: ``area``). The wall moves along +n (into the sample) at
v = gain (sigma_target - sigma), limited to ``max_speed``: it advances while
the sample pushes less than the target and retreats when it pushes more. It
uses the force of the previous step (explicit control). ``walls.force`` is a
SUM field (``components.walls``): this system has it summed over ranks only
while some wall is a servo (``World.complete_sums``; the modes are the same
on every rank, and the kernel tells), so fixed and driven walls cost no
message per step.

Particles attached to a wall (``components.particles.attach_to_wall``: fixed
particles with a ``wall`` field) get that wall's velocity every step, so the
integrator moves them with it: this system must run before the integrator's
first half (``ensure_wall_motion`` puts it there).
"""
from __future__ import annotations

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System

from ecs_dem.components.walls import SERVO, VELOCITY

from ecs_dem.systems.integration.velocity_verlet import IntegrateFirstHalf


@kernel
def move_walls(mode, normal, force, target, area, gain, max_speed, point, velocity, dt, summed):
    """Servo walls get v = clip(gain (target - sigma), +-max_speed) n with
    sigma = -F.n / A (module docstring); servo and velocity walls move by dt v.
    Returns False, having moved nothing, when some wall is a servo and ``force`` is not
    ``summed`` (it holds this rank's share): the caller sums it and calls again."""
    if not summed:
        for k in range(mode.shape[0]):
            if mode[k] == SERVO:
                return False
    for k in range(mode.shape[0]):
        if mode[k] == SERVO:
            sigma = -(force[k, 0] * normal[k, 0] + force[k, 1] * normal[k, 1]
                      + force[k, 2] * normal[k, 2]) / area[k]
            v = min(max(gain[k] * (target[k] - sigma), -max_speed[k]), max_speed[k])
            for c in range(3):
                velocity[k, c] = v * normal[k, c]
        if mode[k] == SERVO or mode[k] == VELOCITY:
            for c in range(3):
                point[k, c] += dt * velocity[k, c]
    return True


@kernel
def follow_walls(wall, velocity, wall_velocity):
    """velocity[i] = wall_velocity[wall[i]] for every particle attached to a wall (wall >= 0)."""
    for i in range(wall.shape[0]):
        k = wall[i]
        if k >= 0:
            velocity[i, 0] = wall_velocity[k, 0]
            velocity[i, 1] = wall_velocity[k, 1]
            velocity[i, 2] = wall_velocity[k, 2]


WALL_FIELDS = ("mode", "normal", "force", "target_stress", "area", "servo_gain", "max_speed",
               "point", "velocity")
ATTACHED = ("wall", "velocity")


class WallMotion(System):
    """Move velocity-driven and servo walls by one time step; attached particles follow."""

    stage = Stage.INTEGRATE_FIRST
    # and walls.force, summed through World.complete_sums while a wall is a servo
    reads = {"walls": ("mode", "normal", "target_stress", "area", "servo_gain", "max_speed")}
    writes = {"walls": ("point", "velocity")}

    def setup(self, world) -> None:
        p = world.tables.get("particles")
        self.attached = p is not None and p.has_field("wall")
        if self.attached:
            integrator = next((s for s in world.systems if isinstance(s, IntegrateFirstHalf)), None)
            if integrator is not None and world.systems.index(integrator) < world.systems.index(self):
                raise InputError("WallMotion must run before the integrator's first half when "
                                 "particles are attached to walls: add it first (or let "
                                 "WallContacts add it)")

    def declare(self, world) -> None:
        if self.attached:
            self.reads = dict(self.reads, particles=("wall",))
            self.writes = dict(self.writes, particles=("velocity",))

    def run(self, world) -> None:
        # the servo test runs in the kernel: a numpy test on the few walls takes 10-20 us in a
        # step, its code and data evicted by the contact kernels
        columns = world.walls.views(WALL_FIELDS)
        if not move_walls(*columns, world.dt, world.is_summed("walls", "force")):
            world.complete_sums((("walls", "force"),))
            move_walls(*columns, world.dt, True)
        if self.attached:
            p = world.particles
            follow_walls(*p.views(ATTACHED), world.walls.velocity)


def ensure_wall_motion(world) -> None:
    """Add a WallMotion system before the integrator if the world has none (walls must move
    by their mode without the user remembering a system)."""
    if not world.has_system(WallMotion):
        world.add_system(WallMotion(), before=IntegrateFirstHalf)
