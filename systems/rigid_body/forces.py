"""The force and torque on each body: the sum over its pebbles.

F = sum F_p;  T = sum (R(q) b_p) x F_p + T_p

with the arm R(q) b_p from the orientation and the pebble's body-frame offset, never
from positions (periodic images are then harmless). Each rank adds its owned pebbles'
shares into the body's row here (owned, or the ghost row its anchor brings); the engine
sums ghost shares into the owner (``force`` and ``torque`` are REVERSE fields of
``bodies``). Gravity adds M g to the owned bodies itself (``integration.gravity``).

Runs last among the force systems: ``integrator.BodyFirstHalf`` adds it at the end of the
system list in its set-up, so the set-up's force pass sums the first forces too.
"""
from __future__ import annotations

from ecs_dem.jit import kernel
from ecs_dem.system import Stage

from .placement import PebbleSystem
from .quaternion import rotate


@kernel
def sum_onto_bodies(pebbles, rows, offset, orientation, body_force, body_torque, force, torque):
    for t in range(pebbles.size):
        i = pebbles[t]
        k = rows[t]
        q = orientation[k]
        r0, r1, r2 = rotate(q[0], q[1], q[2], q[3], offset[i, 0], offset[i, 1], offset[i, 2])
        f0, f1, f2 = force[i, 0], force[i, 1], force[i, 2]
        body_force[k, 0] += f0
        body_force[k, 1] += f1
        body_force[k, 2] += f2
        body_torque[k, 0] += (r1 * f2 - r2 * f1) + torque[i, 0]
        body_torque[k, 1] += (r2 * f0 - r0 * f2) + torque[i, 1]
        body_torque[k, 2] += (r0 * f1 - r1 * f0) + torque[i, 2]


class BodyForces(PebbleSystem):
    stage = Stage.FORCES
    reads = {"particles": ("force", "torque", "body", "body_offset")}
    reads_ghosts = {"bodies": ("orientation",)}
    accumulates = {"bodies": ("force", "torque")}
    body_fields = ("orientation", "force", "torque")
    pebble_fields = ("force", "torque")
    kernel = staticmethod(sum_onto_bodies)
