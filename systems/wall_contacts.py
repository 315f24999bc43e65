"""Particle-wall contact forces with the same contact law as the particle pairs.

The history of a particle's contact with wall w is the particle field
``wall_<history>[w]`` (LOCAL: it moves with its row through sorting and
migration). ``walls.force`` receives the total force of the particles on each
wall, summed over ranks.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo

from .contact_forces import check_time_step


class WallContacts(System):
    """Contacts of owned particles with every planar wall."""

    stage = Stage.FORCES
    reads = {"particles": ("position", "velocity", "angular_velocity", "radius", "mass", "species"),
             "walls": ("point", "normal", "velocity", "species")}
    writes = {"walls": ("force",)}
    accumulates = {"particles": ("force", "torque")}

    def __init__(self, law, check_time_step: bool = True):
        self.law = law
        self.check_time_step = bool(check_time_step)
        self.n_walls = None
        self.touching = 0

    @property
    def name(self) -> str:
        return f"WallContacts({self.law.name})"

    def setup(self, world) -> None:
        if "walls" not in world.tables or world.walls.n_owned == 0:
            raise InputError("WallContacts: the world has no walls (components.walls.add_wall)")
        self.n_walls = world.walls.n_owned
        for f in self.law.history_fields:
            world.particles.add_field(Field(
                f"wall_{f}", np.float64, (self.n_walls, 3), Halo.LOCAL, 0.0, "m",
                "contact history with each wall"))
        check_time_step(world, self.law, self.check_time_step)

    def run(self, world) -> None:
        walls = world.walls
        if walls.n_owned != self.n_walls:
            raise InputError("walls were added after set-up; add every wall before the first step")
        local = np.zeros((walls.n_owned, 3))
        self.touching = self.law.apply_walls(world, not world.setup_phase, local)
        walls.force[...] = world.comm.sum(local)
