"""Linear springs between particles, referenced by gid: the bonded-element mechanism.

A ``springs`` row joins particles ``vertex_a`` and ``vertex_b`` (gids) with a
rest length, a stiffness and a dashpot. It is anchored to ``vertex_a``: it
lives and migrates with that particle and is evaluated once by its owner.
The engine keeps ``row_a`` and ``row_b`` at the local rows of the two
vertices (``row_b`` the owned or ghost image nearest to ``vertex_a``:
``ecs_dem.references``). Forces on a ghost ``vertex_b`` come home through the
reverse reduction. The membrane's springs, hinges and patches follow the
same pattern.

Force on a (Goetz & Poeschel Eq. (6) with the sign of PHYSICS-NOTES):
F_a = -d_hat [k (|d| - L0) + c d_hat.(v_a - v_b)], d = x_a - x_b; F_b = -F_a.
Units: N/m for k, N s/m for c.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo, Table

SPRING_FIELDS = (
    Field("vertex_a", np.int64, (), Halo.LOCAL, -1, "", "gid of the anchor particle"),
    Field("vertex_b", np.int64, (), Halo.LOCAL, -1, "", "gid of the other particle"),
    Field("row_a", np.int32, (), Halo.LOCAL, -1, "", "local row of vertex_a (engine-resolved)"),
    Field("row_b", np.int32, (), Halo.LOCAL, -1, "", "local row of vertex_b (engine-resolved)"),
    Field("rest_length", np.float64, (), Halo.LOCAL, 0.0, "m", "rest length"),
    Field("stiffness", np.float64, (), Halo.LOCAL, 0.0, "N/m", "spring constant k"),
    Field("damping", np.float64, (), Halo.LOCAL, 0.0, "N s/m", "dashpot coefficient c"),
)


def add_springs(world, vertex_a, vertex_b, stiffness, damping=0.0, rest_length=None):
    """Join particle gids pairwise; rest lengths default to the current distances."""
    if "springs" not in world.tables:
        world.add_table(Table("springs", SPRING_FIELDS, capacity=256, anchor=("particles", "vertex_a"),
                              references={"row_a": "vertex_a", "row_b": "vertex_b"}))
    a = np.asarray(vertex_a, dtype=np.int64)
    b = np.asarray(vertex_b, dtype=np.int64)
    if a.shape != b.shape or np.any(a == b):
        raise InputError("springs: vertex_a and vertex_b must be equally long and distinct")
    p = world.particles
    if rest_length is None:
        d = p.position[p.rows_of(a)] - p.position[p.rows_of(b)]
        rest_length = np.linalg.norm(d, axis=1)
    return world.springs.append(a.size, vertex_a=a, vertex_b=b, rest_length=rest_length,
                                stiffness=stiffness, damping=damping)


@kernel
def spring_forces(row_a, row_b, rest_length, stiffness, damping, position, velocity, force):
    """Accumulate linear spring-dashpot forces on both ends (see module docstring)."""
    for s in range(row_a.size):
        a = row_a[s]
        b = row_b[s]
        dx = position[a, 0] - position[b, 0]
        dy = position[a, 1] - position[b, 1]
        dz = position[a, 2] - position[b, 2]
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        nx = dx / r
        ny = dy / r
        nz = dz / r
        vn = ((velocity[a, 0] - velocity[b, 0]) * nx + (velocity[a, 1] - velocity[b, 1]) * ny
              + (velocity[a, 2] - velocity[b, 2]) * nz)
        f = -(stiffness[s] * (r - rest_length[s]) + damping[s] * vn)
        force[a, 0] += f * nx
        force[a, 1] += f * ny
        force[a, 2] += f * nz
        force[b, 0] -= f * nx
        force[b, 1] -= f * ny
        force[b, 2] -= f * nz


class SpringForces(System):
    """Forces of every spring in the ``springs`` table."""

    stage = Stage.FORCES
    reads = {"springs": ("row_a", "row_b", "rest_length", "stiffness", "damping")}
    reads_ghosts = {"particles": ("position", "velocity")}
    accumulates = {"particles": ("force",)}

    def __init__(self, max_stretch: float = 1.5):
        self.max_stretch = float(max_stretch)

    def interaction_range(self, world) -> float:
        L = world.springs.rest_length
        return self.max_stretch * float(L.max()) if L.size else 0.0

    def run(self, world) -> None:
        p = world.particles
        s = world.springs
        spring_forces(s.row_a, s.row_b, s.rest_length, s.stiffness, s.damping,
                      p.with_ghosts("position"), p.with_ghosts("velocity"), p.with_ghosts("force"))
