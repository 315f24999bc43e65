"""Particle-wall contact forces with the same contact law as the particle pairs.

The history of a particle's contact with wall w is the particle field
``wall_<history>[w]`` (LOCAL: it moves with its row through sorting and
migration). ``walls.force`` receives the total force of the particles on each
wall, summed over ranks. A particle attached to a wall
(``components.particles.attach_to_wall``: a membrane's end ring on its
platen) moves with it and does not touch it. Walls move by their mode (velocity, servo): if the
world has no ``WallMotion`` system, set-up adds one, so a moving wall never
stands still for want of a system.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Table

from . import contact_kernels
from .contact_chunks import PairScratch
from .contact_forces import check_time_step, history_columns
from .contact_law import law_kernels, rigid_material
from .wall_motion import ensure_wall_motion


PARTICLE_ARRAYS = ("position", "velocity", "angular_velocity", "radius", "mass", "species")


class WallContacts(System):
    """Contacts of owned particles with every planar wall."""

    stage = Stage.FORCES
    reads = {"particles": ("position", "velocity", "angular_velocity", "radius", "mass", "species"),
             "walls": ("point", "normal", "velocity", "species")}
    accumulates_owned = {"particles": ("force", "torque")}

    def __init__(self, law, check_time_step: bool = True):
        self.law = law
        self.check_time_step = bool(check_time_step)
        self.n_walls = None
        self.touching = 0
        self._arguments_key = None
        self._arguments = ()
        self.writes = {"particles": tuple(f"wall_{f.name}" for f in law.history),
                       "walls": ("force",)}

    @property
    def name(self) -> str:
        return f"WallContacts({self.law.name})"

    def setup(self, world) -> None:
        if "walls" not in world.tables or world.walls.n_owned == 0:
            raise InputError("WallContacts: the world has no walls (components.walls.add_wall)")
        self.n_walls = world.walls.n_owned
        for f in self.law.history:
            world.particles.add_field(Field(
                f"wall_{f.name}", f.dtype, (self.n_walls, *f.shape), f.halo, f.default, f.unit,
                f"{f.doc}, with each wall"))
        if world.particles.has_field("wall"):
            self.reads = dict(self.reads, particles=(*self.reads["particles"], "wall"))
        check_time_step(world, self.law, self.check_time_step)
        species = world.tables.get("species")
        self._bound = self.law.bind(species)
        self._kernels = law_kernels(contact_kernels, self._bound.function)
        self._scratch = PairScratch(self._kernels.COLUMNS)
        ws = world.walls.species
        self._wall_material = np.where(ws >= 0, ws, rigid_material(species)).astype(np.int64)
        self._on_walls = np.zeros((self.n_walls, 3))  # this rank's force on each wall
        ensure_wall_motion(world)

    @staticmethod
    def attached_walls(p, n: int) -> np.ndarray:
        """Each particle's attached wall (it never touches that wall), or -1 for none."""
        return p.views(("wall",))[0] if p.has_field("wall") else np.full(n, -1, dtype=np.int32)

    def _kernel_arguments(self, world) -> tuple:
        """The kernel's arguments up to the history flags, cached until some table changes
        structurally (``Table.structure_version``; building them costs more than a small
        subdomain's kernel)."""
        key = Table.structure_version
        if key != self._arguments_key:
            p, walls = world.particles, world.walls
            bound, s = self._bound, self._scratch
            names = tuple(f"wall_{f}" for f in bound.function.history)
            n = p.n_owned
            self._arguments = (
                n, *p.views(PARTICLE_ARRAYS), self.attached_walls(p, n),
                *walls.views(("point", "normal", "velocity")),
                self._wall_material, bound.parameters, bound.constants,
                history_columns(p, names, n, self.n_walls),
                s.flags(p, names, self.n_walls).reshape(-1))
            self._arguments_key = key
        return self._arguments

    def run(self, world) -> None:
        walls = world.walls
        if walls.n_owned != self.n_walls:
            raise InputError("walls were added after set-up; add every wall before the first step")
        s = self._scratch
        force, torque = world.particles.views(("force", "torque"))
        self._on_walls[...] = 0.0
        self.touching = self._kernels.wall_contacts(
            *self._kernel_arguments(world), not world.setup_phase, world.dt, force, torque,
            self._on_walls, s.buf, s.sel)
        walls.force[...] = world.comm.sum(self._on_walls)
