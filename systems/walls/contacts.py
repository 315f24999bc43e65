"""Particle-wall contact forces with the same contact law as the particle pairs.

The history of a particle's contact with wall w is the particle field
``wall_<history>[w]`` (LOCAL: it moves with its row through sorting and
migration). ``walls.force`` receives this rank's share of the particles' force on
each wall (a SUM field: the engine sums the shares over ranks when
something reads them). A particle attached to a wall
(``components.particles.attach_to_wall``: a membrane's end ring on its
platen) moves with it and does not touch it. Walls move by their mode (velocity, servo): if the
world has no ``WallMotion`` system, set-up adds one, so a moving wall never
stands still for want of a system.

Near lists: a step tests only the particles that were within ``2 skin`` of a
wall's plane (gap r - h > -2 skin) when the list was built, by a sweep over
every owned particle. The list is built again after every domain rebuild or
structural change, and when a wall has moved more than ``skin`` along its
normal (or turned) since. In between, a particle moves less than ``skin``
(less than skin/2 from the domain's reference at both ends: the rebuild
rule) and the wall less than ``skin``, so a particle left out has gap < 0 and
no contact. Radii change only with a domain rebuild (the pair lists need it
too: GrowRadii asks for one). Both sweeps select the same contacts in the
same order, so the forces are the same bit for bit
(``contact_kernels.wall_contacts``); LAMMPS's ``fix wall/gran`` tests every
particle every step.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Table

from ecs_dem.systems.contact import kernels as contact_kernels
from ecs_dem.systems.contact.chunks import PairScratch
from ecs_dem.systems.contact.pair_forces import check_time_step, history_columns
from ecs_dem.systems.contact.law import law_kernels, rigid_material
from ecs_dem.systems.walls.motion import ensure_wall_motion


PARTICLE_ARRAYS = ("position", "velocity", "angular_velocity", "radius", "mass", "species")


@kernel
def walls_within(point, normal, then, limit):
    """Whether every wall is within `limit` (m) of where it was, along its normal, and has not
    turned: `then` holds the points and normals of that time."""
    for w in range(point.shape[0]):
        moved = 0.0
        for a in range(3):
            if normal[w, a] != then[1, w, a]:
                return False
            moved += (point[w, a] - then[0, w, a]) * normal[w, a]
        if not abs(moved) <= limit:
            return False
    return True


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
        self.writes = {"particles": tuple(f"wall_{f.name}" for f in law.history)}
        self.accumulates = {"walls": ("force",)}

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
        self._near_start = np.zeros(self.n_walls + 1, dtype=np.int64)
        self._near_rows = np.zeros(0, dtype=np.int64)
        self._near_key = None  # (structure version, rebuild count) the list was built at
        self._near_walls = np.zeros((2, self.n_walls, 3))  # wall points and normals then
        self.near_builds = 0
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

    def _near_list_stale(self, world, point, normal) -> bool:
        """Whether the near list must be built again (module docstring); if so, note the
        state it is built at and make room for it."""
        key = (Table.structure_version, world.domain.rebuild_count)
        if key == self._near_key and walls_within(point, normal, self._near_walls, world.skin):
            return False
        self._near_key = key
        self._near_walls[0] = point
        self._near_walls[1] = normal
        n = world.particles.n_owned * self.n_walls
        if self._near_rows.size < n:
            self._near_rows = np.zeros(max(n, int(1.25 * self._near_rows.size)), dtype=np.int64)
        self.near_builds += 1
        return True

    def run(self, world) -> None:
        walls = world.walls
        if walls.n_owned != self.n_walls:
            raise InputError("walls were added after set-up; add every wall before the first step")
        s = self._scratch
        force, torque = world.particles.views(("force", "torque"))
        arguments = self._kernel_arguments(world)
        build = self._near_list_stale(world, walls.point, walls.normal)
        self.touching = self._kernels.wall_contacts(
            *arguments, not world.setup_phase, world.dt, force, torque, walls.force, s.buf,
            s.sel, 2.0 * world.skin, self._near_start, self._near_rows, build)
