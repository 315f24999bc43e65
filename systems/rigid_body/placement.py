"""Pebbles follow their bodies: the owner of each pebble places it from its body's row
(owned, or the ghost row its anchor pebble brings), so a body's pebbles may live on any
ranks.

First half (INTEGRATE_FIRST, after the bodies' drift), per owned pebble with body-frame
offset b and body row k (d: the centre's displacement, q': the orientation before the
drift; ``integrator``)::

    x += d_k + R(q_k) b - R(q'_k) b
    v = v_k + w_k x R(q_k) b;   w = w_k

The position moves by the body's motion rather than being set from the centre: the
centre is unwrapped, the pebble's row wraps at periodic boundaries, and either way it
stays rigidly at R b from the centre to round-off. Second half (INTEGRATE_SECOND, after
the bodies' kick): the velocities again. The pebble -> body row map (``body_rows``) is
kept until some table changes structure.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import StateError
from ecs_dem.jit import inline, kernel
from ecs_dem.system import Stage, System
from ecs_dem.table import Table

from .quaternion import rotate


class BodyRows:
    """Owned pebble rows and the local row of each one's body, kept per structure."""

    def __init__(self):
        self.key = None
        self.value = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    def __call__(self, world) -> tuple[np.ndarray, np.ndarray]:
        key = Table.structure_version
        if self.key == key:
            return self.value
        p, bodies = world.particles, world.tables["bodies"]
        body = p.body[:p.n_owned]
        pebbles = np.flatnonzero(body >= 0).astype(np.int64)
        rows = bodies.lookup().rows(body[pebbles]).astype(np.int64)
        if np.any(rows < 0):
            k = int(np.flatnonzero(rows < 0)[0])
            raise StateError(
                f"pebble gid {int(p.gid[pebbles[k]])} (rank {world.comm.rank}) finds no row of "
                f"its body {int(body[pebbles[k]])}: the body's anchor pebble is not within the "
                "ghost width; the rigid-body systems must be in the world (systems.rigid_body."
                "rigid_bodies), or the run blew up (lower the time step)")
        self.key = key
        self.value = (pebbles, rows)
        return self.value


@inline
def move_with(i, k, r0, r1, r2, body_velocity, body_spin, velocity, angular_velocity):
    """Pebble i moves with body k at arm r: v = v_k + w_k x r, w = w_k."""
    w0, w1, w2 = body_spin[k, 0], body_spin[k, 1], body_spin[k, 2]
    velocity[i, 0] = body_velocity[k, 0] + (w1 * r2 - w2 * r1)
    velocity[i, 1] = body_velocity[k, 1] + (w2 * r0 - w0 * r2)
    velocity[i, 2] = body_velocity[k, 2] + (w0 * r1 - w1 * r0)
    angular_velocity[i, 0] = w0
    angular_velocity[i, 1] = w1
    angular_velocity[i, 2] = w2


@kernel
def place(pebbles, rows, offset, displacement, orientation, previous, body_velocity,
          body_spin, position, velocity, angular_velocity):
    for t in range(pebbles.size):
        i = pebbles[t]
        k = rows[t]
        b0, b1, b2 = offset[i, 0], offset[i, 1], offset[i, 2]
        q = orientation[k]
        r0, r1, r2 = rotate(q[0], q[1], q[2], q[3], b0, b1, b2)
        q = previous[k]
        s0, s1, s2 = rotate(q[0], q[1], q[2], q[3], b0, b1, b2)
        position[i, 0] += displacement[k, 0] + (r0 - s0)
        position[i, 1] += displacement[k, 1] + (r1 - s1)
        position[i, 2] += displacement[k, 2] + (r2 - s2)
        move_with(i, k, r0, r1, r2, body_velocity, body_spin, velocity, angular_velocity)


@kernel
def set_velocities(pebbles, rows, offset, orientation, body_velocity, body_spin, velocity,
                   angular_velocity):
    for t in range(pebbles.size):
        i = pebbles[t]
        k = rows[t]
        q = orientation[k]
        r0, r1, r2 = rotate(q[0], q[1], q[2], q[3], offset[i, 0], offset[i, 1], offset[i, 2])
        move_with(i, k, r0, r1, r2, body_velocity, body_spin, velocity, angular_velocity)


class PebbleSystem(System):
    """A system that runs `kernel(pebbles, rows, body_offset, *bodies' body_fields with
    ghosts, *particles' pebble_fields)` over the owned pebbles."""

    body_fields: tuple = ()
    pebble_fields: tuple = ()
    kernel = None

    def __init__(self):
        self.body_rows = BodyRows()

    def run(self, world) -> None:
        pebbles, rows = self.body_rows(world)
        if pebbles.size == 0:
            return
        p, b = world.particles, world.tables["bodies"]
        self.kernel(pebbles, rows, p.body_offset, *(b.with_ghosts(f) for f in self.body_fields),
                    *p.views(self.pebble_fields))


PLACE_BODY = ("displacement", "orientation", "previous_orientation", "velocity",
              "angular_velocity")
PLACE_PEBBLE = ("position", "velocity", "angular_velocity")


class PlacePebbles(PebbleSystem):
    """Positions and velocities of the owned pebbles after the bodies' first half."""

    stage = Stage.INTEGRATE_FIRST
    reads = {"particles": ("body", "body_offset")}
    reads_ghosts = {"bodies": PLACE_BODY}
    writes = {"particles": PLACE_PEBBLE}
    body_fields, pebble_fields, kernel = PLACE_BODY, PLACE_PEBBLE, staticmethod(place)

    def interaction_range(self, world) -> float:
        from ecs_dem.components.clumps.bodies import body_reach
        return body_reach(world)


class PebbleVelocities(PebbleSystem):
    """Velocities of the owned pebbles after the bodies' second half."""

    stage = Stage.INTEGRATE_SECOND
    reads = {"particles": ("body", "body_offset")}
    reads_ghosts = {"bodies": ("orientation", "velocity", "angular_velocity")}
    writes = {"particles": ("velocity", "angular_velocity")}
    body_fields = ("orientation", "velocity", "angular_velocity")
    pebble_fields = ("velocity", "angular_velocity")
    kernel = staticmethod(set_velocities)
