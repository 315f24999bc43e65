"""The ``springs`` table: linear springs between particles, referenced by gid.

A row joins two particles (``vertices``: gids) with a rest length, a
stiffness and a dashpot; it is anchored to its first vertex (it lives and
migrates with it and is evaluated by its owner) and the engine keeps
``rows`` at the two vertices' local rows (the image of the second nearest
the first; ``ecs_dem.references``). Membrane edges are springs with their
membrane id (``components.membranes``); others have -1. The force law is
systems.membrane.springs (Goetz & Poeschel Eq. (6)). Units: N/m, N s/m, m.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.table import Field, Halo, Table

SPRING_FIELDS = (
    Field("vertices", np.int64, (2,), Halo.LOCAL, -1, "", "gids of the two particles"),
    Field("rows", np.int32, (2,), Halo.LOCAL, -1, "", "local rows of the two particles"),
    Field("rest_length", np.float64, (), Halo.LOCAL, 0.0, "m", "rest length"),
    Field("stiffness", np.float64, (), Halo.LOCAL, 0.0, "N/m", "spring constant k"),
    Field("damping", np.float64, (), Halo.LOCAL, 0.0, "N s/m", "dashpot coefficient c"),
    Field("membrane", np.int32, (), Halo.LOCAL, -1, "", "membrane id (-1: not a membrane edge)"),
)


def create_spring_table(world) -> Table:
    if "springs" not in world.tables:
        world.add_table(Table("springs", SPRING_FIELDS, capacity=256,
                              anchor=("particles", "vertices"), references={"rows": "vertices"}))
    return world.tables["springs"]


def add_springs(world, vertex_a, vertex_b, stiffness, damping=0.0, rest_length=None,
                membrane: int = -1) -> slice:
    """Join particle gids pairwise; rest lengths default to the current distances."""
    a = np.atleast_1d(np.asarray(vertex_a, dtype=np.int64))
    b = np.atleast_1d(np.asarray(vertex_b, dtype=np.int64))
    if a.shape != b.shape or np.any(a == b):
        raise InputError("springs: vertex_a and vertex_b must be equally long and distinct")
    p = world.particles
    if rest_length is None:
        rest_length = np.linalg.norm(p.position[p.rows_of(a)] - p.position[p.rows_of(b)], axis=1)
    values = dict(stiffness=stiffness, damping=damping, rest_length=rest_length)
    for name, v in values.items():
        v = np.asarray(v, dtype=np.float64)
        if not np.all(np.isfinite(v)) or np.any(v < 0):
            raise InputError(f"springs: {name} must be finite and >= 0")
    return create_spring_table(world).append(a.size, vertices=np.stack([a, b], axis=1),
                                             membrane=membrane, **values)


__all__ = ["add_springs", "create_spring_table", "SPRING_FIELDS"]
