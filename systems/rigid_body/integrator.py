"""Rigid bodies: kick-drift-kick with the free rotor split into rotations about the
principal axes (Dullweber, Leimkuhler & McLachlan, J. Chem. Phys. 107 (1997) 5840).

First half (INTEGRATE_FIRST), on owned bodies:

    v += dt/2 F/M;  L += dt/2 T          (space frame: the torque about the centre)
    free rotor over dt:  R1(dt/2) R2(dt/2) R3(dt) R2(dt/2) R1(dt/2)
    com += dt v;  w = R I^-1 R^T L

where Rk(h) is the exact flow of H_k = pi_k^2 / (2 I_k) with pi = R^T L the body-frame
angular momentum: the body turns by theta = h pi_k / I_k about its axis k
(q <- q (cos theta/2, sin theta/2 e_k)) and pi turns by -theta about e_k. Each Rk keeps
the space-frame L = R pi exactly, so a free body conserves L to round-off; the splitting
is symplectic and time-reversible and its energy error stays bounded, O(dt^2). The
quaternion is normalised after each step. Second half (INTEGRATE_SECOND):
v += dt/2 F/M; L += dt/2 T; w = R I^-1 R^T L.

The first half also records what the pebbles' placement needs on every rank
(``placement``): the centre's displacement dt v and the orientation before the turn.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.jit import inline, kernel
from ecs_dem.system import Stage, System

from .quaternion import multiply, rotate, rotate_back


@inline
def turn(q0, q1, q2, q3, p0, p1, p2, axis, angle):
    """The body turned by `angle` about its principal `axis`, and pi (body frame) turned by
    -angle about it."""
    c = math.cos(angle)
    s = math.sin(angle)
    ch = math.cos(0.5 * angle)
    sh = math.sin(0.5 * angle)
    if axis == 0:
        q0, q1, q2, q3 = multiply(q0, q1, q2, q3, ch, sh, 0.0, 0.0)
        p1, p2 = c * p1 + s * p2, c * p2 - s * p1
    elif axis == 1:
        q0, q1, q2, q3 = multiply(q0, q1, q2, q3, ch, 0.0, sh, 0.0)
        p0, p2 = c * p0 - s * p2, c * p2 + s * p0
    else:
        q0, q1, q2, q3 = multiply(q0, q1, q2, q3, ch, 0.0, 0.0, sh)
        p0, p1 = c * p0 + s * p1, c * p1 - s * p0
    return q0, q1, q2, q3, p0, p1, p2


@inline
def free_rotor(q, L, I0, I1, I2, dt):
    """The orientation after dt of free rotation with space-frame angular momentum L
    (the symmetric splitting R1 R2 R3 R2 R1), normalised."""
    q0, q1, q2, q3 = q[0], q[1], q[2], q[3]
    p0, p1, p2 = rotate_back(q0, q1, q2, q3, L[0], L[1], L[2])
    h = 0.5 * dt
    q0, q1, q2, q3, p0, p1, p2 = turn(q0, q1, q2, q3, p0, p1, p2, 0, h * p0 / I0)
    q0, q1, q2, q3, p0, p1, p2 = turn(q0, q1, q2, q3, p0, p1, p2, 1, h * p1 / I1)
    q0, q1, q2, q3, p0, p1, p2 = turn(q0, q1, q2, q3, p0, p1, p2, 2, dt * p2 / I2)
    q0, q1, q2, q3, p0, p1, p2 = turn(q0, q1, q2, q3, p0, p1, p2, 1, h * p1 / I1)
    q0, q1, q2, q3, p0, p1, p2 = turn(q0, q1, q2, q3, p0, p1, p2, 0, h * p0 / I0)
    norm = 1.0 / math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    return q0 * norm, q1 * norm, q2 * norm, q3 * norm


@inline
def spin(q, L, moments, w):
    """w = R I^-1 R^T L."""
    p0, p1, p2 = rotate_back(q[0], q[1], q[2], q[3], L[0], L[1], L[2])
    w[0], w[1], w[2] = rotate(q[0], q[1], q[2], q[3], p0 / moments[0], p1 / moments[1],
                              p2 / moments[2])


@inline
def kick(b, half, mass, force, torque, velocity, momentum):
    """v += dt/2 F/M; L += dt/2 T of body b."""
    dtfm = half / mass[b]
    for a in range(3):
        velocity[b, a] += dtfm * force[b, a]
        momentum[b, a] += half * torque[b, a]


@kernel
def first_half(n, mass, moments, force, torque, com, velocity, orientation, momentum,
               angular_velocity, displacement, previous, dt):
    """The first half on bodies [0, n) (module docstring)."""
    half = 0.5 * dt
    for b in range(n):
        kick(b, half, mass, force, torque, velocity, momentum)
        for a in range(4):
            previous[b, a] = orientation[b, a]
        q0, q1, q2, q3 = free_rotor(orientation[b], momentum[b], moments[b, 0], moments[b, 1],
                                    moments[b, 2], dt)
        orientation[b, 0] = q0
        orientation[b, 1] = q1
        orientation[b, 2] = q2
        orientation[b, 3] = q3
        for a in range(3):
            d = dt * velocity[b, a]
            displacement[b, a] = d
            com[b, a] += d
        spin(orientation[b], momentum[b], moments[b], angular_velocity[b])


@kernel
def second_half(n, mass, moments, force, torque, velocity, orientation, momentum,
                angular_velocity, dt):
    half = 0.5 * dt
    for b in range(n):
        kick(b, half, mass, force, torque, velocity, momentum)
        spin(orientation[b], momentum[b], moments[b], angular_velocity[b])


FIRST = ("mass", "moments", "force", "torque", "com", "velocity", "orientation",
         "angular_momentum", "angular_velocity", "displacement", "previous_orientation")
SECOND = ("mass", "moments", "force", "torque", "velocity", "orientation", "angular_momentum",
          "angular_velocity")


class BodyFirstHalf(System):
    """Kick, free rotor and drift of the owned bodies (module docstring). Its set-up adds
    the force summation (``forces.BodyForces``) at the end of the system list, after
    every force system the driver added."""

    stage = Stage.INTEGRATE_FIRST
    reads = {"bodies": ("mass", "moments", "force", "torque")}
    writes = {"bodies": ("com", "velocity", "orientation", "angular_momentum",
                         "angular_velocity", "displacement", "previous_orientation")}

    def setup(self, world) -> None:
        from .forces import BodyForces

        if "bodies" not in world.tables:
            from ecs_dem.components.clumps.bodies import create_body_tables
            create_body_tables(world)
        if not world.has_system(BodyForces):
            world.add_system(BodyForces())

    def run(self, world) -> None:
        b = world.tables["bodies"]
        first_half(b.n_owned, *b.views(FIRST), world.dt)


class BodySecondHalf(System):
    stage = Stage.INTEGRATE_SECOND
    reads = {"bodies": ("mass", "moments", "force", "torque", "orientation")}
    writes = {"bodies": ("velocity", "angular_momentum", "angular_velocity")}

    def run(self, world) -> None:
        b = world.tables["bodies"]
        second_half(b.n_owned, *b.views(SECOND), world.dt)


def rotational_energy(orientation, momentum, moments) -> np.ndarray:
    """1/2 pi . I^-1 pi of each body (pi = R^T L), numpy: for tests and diagnostics."""
    from ecs_dem.components.clumps.template import rotation_matrix

    pi = np.einsum("nji,nj->ni", rotation_matrix(orientation), momentum)
    return 0.5 * (pi * pi / moments).sum(axis=1)
