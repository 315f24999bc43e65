"""Contacts of particles with rigid objects of one kind (planes, cylinders, ...): a base class.

A rigid-object kind is a table every rank holds whole (the ``walls`` table
for planes), a *shape* (a template module of ``systems.contact.rigid_objects``:
the surface normal and distance at a particle, the surface velocity, and
``moved_within``) and this system, subclassed with four class attributes::

    class WallContacts(RigidObjectContacts):
        shape = plane                # systems.walls.plane
        table_name = "walls"         # its table: the shape's FIELDS, "species", "force"
        history_prefix = "wall_"     # per-particle history fields: wall_<law history>
        attached_field = "wall"      # particle field naming the object a particle rides on

The history of a particle's contact with object w is the particle field
``<prefix><history>[w]`` (LOCAL: it moves with its row through sorting and
migration). ``<table>.force`` receives this rank's share of the particles'
force on each object (a SUM field: the engine sums the shares over ranks
when something reads them). Material: the object's ``species``, or the rigid
material (``systems.contact.law.rigid_material``) for -1.

Near list: a step tests only the particles that were within ``2 skin`` of an
object's surface (gap r - h > -2 skin, plus what a model may add to a
contact's reach, and the law's reach) when the list was built, by a sweep over every owned
particle (``rigid_objects.build_near_list``). The list is built again after
every domain rebuild or structural change, and when an object has moved
more than ``skin`` since (``shape.moved_within``). In between, a particle
moves less than ``skin`` (less than skin/2 from the domain's reference at
both ends: the rebuild rule) and the object less than ``skin``, so a particle
left out has gap < 0 and no contact. Radii change only with a domain
rebuild (the pair lists need it too). The candidates give the contacts of a
sweep over every particle, in the same order: the same forces and history,
bit for bit. LAMMPS's ``fix wall/gran`` tests every particle every step.

``optional=True``: a world without objects of this kind is accepted (the
system then does nothing); without it, set-up stops with an error.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.table import Field, Table

from ecs_dem.systems.contact import rigid_objects
from ecs_dem.systems.contact.contact_system import ContactSystem, history_columns, merged
from ecs_dem.systems.contact.law import rigid_material

PARTICLE_ARRAYS = ("position", "velocity", "angular_velocity", "radius", "mass", "species")


class RigidObjectContacts(ContactSystem):
    """Contacts of owned particles with every object of one rigid kind (module docstring)."""

    geometry = rigid_objects
    supports_reach = True
    shape: ModuleType = None
    table_name: str = None
    history_prefix: str = None
    attached_field: str | None = None

    def __init__(self, law, check_time_step: bool = True, model=None, optional: bool = False):
        super().__init__(law, model, check_time_step)
        self.templates = (self.shape,)
        self.optional = bool(optional)
        self.n_objects = None
        self.near_builds = 0
        self._arguments_key = None
        self._arguments = ()
        self.reads = {"particles": PARTICLE_ARRAYS,
                      self.table_name: (*self.shape.FIELDS, "species")}
        self.writes = {"particles": tuple(f"{self.history_prefix}{f.name}" for f in law.history)}
        self.accumulates = {self.table_name: ("force",)}
        self.accumulates_owned = {"particles": ("force", "torque")}

    @property
    def contact_key(self) -> str:
        return self.table_name

    def objects(self, world) -> Table | None:
        """This kind's table, or None if the world has none of its objects."""
        table = world.tables.get(self.table_name)
        return table if table is not None and table.n_owned else None

    def history_field(self, f) -> Field:
        return Field(f"{self.history_prefix}{f.name}", f.dtype, (self.n_objects, *f.shape), f.halo,
                     f.default, f.unit, f"{f.doc}, with each object of '{self.table_name}'")

    def setup(self, world) -> None:
        objects = self.objects(world)
        if objects is None:
            if not self.optional:
                raise InputError(f"{self.name}: the world has no {self.table_name} (add them "
                                 "before the first step)")
            self.n_objects = 0
            return
        self.n_objects = objects.n_owned
        self.setup_contacts(world, [world.particles])
        self._near_rows = np.zeros(0, dtype=np.int64)
        self._near_objects = np.zeros(0, dtype=np.int64)
        self.near_count = 0
        self._near_key = None  # (structure version, rebuild count) the list was built at
        self._near_objects_then = None  # the shape's arrays then

    def declare(self, world) -> None:
        if not self.n_objects:  # optional, and the world has none of its objects
            self.reads = self.writes = self.accumulates = self.accumulates_owned = {}
            return
        if self.attached_field and world.particles.has_field(self.attached_field):
            self.reads = merged(self.reads, {"particles": (self.attached_field,)})
        super().declare(world)

    def law_changed(self, bound) -> None:
        self._arguments_key = None
        self._near_key = None

    def near_margin(self, world) -> float:
        """How far below zero a gap may be for the particle to stay a candidate (m)."""
        reach = self.model.reach_bound if self.model is not None else 0.0
        if self.bound is not None and self.bound.reach > 0.0:  # a law acting beyond contact
            reach = reach + self.bound.reach
        return 2.0 * world.skin + reach

    def attached(self, world) -> np.ndarray:
        """Each owned particle's attached object (it never touches it), or -1 for none."""
        p = world.particles
        if self.attached_field and p.has_field(self.attached_field):
            return p.views((self.attached_field,))[0]
        return np.full(p.n_owned, -1, dtype=np.int32)

    def _geometry_arrays(self, world) -> tuple:
        """The geometry tuple's arrays (``rigid_objects``) but the near list, cached until some
        table changes structurally (``Table.structure_version``) or an object's species
        changes (its material index into the bound law's parameters)."""
        objects = world.tables[self.table_name]
        key = (Table.structure_version, objects.species.tobytes())
        if key != self._arguments_key:
            p = world.particles
            material = objects.species
            species = world.tables.get("species")
            bad = (material < -1) | (material >= rigid_material(species))
            if np.any(bad):
                raise InputError(
                    f"{self.table_name}.species[{int(np.argmax(bad))}] = "
                    f"{int(material[bad][0])} is not a species: give a row of the species "
                    "table, or -1 for a rigid object")
            self._material = np.where(material >= 0, material, rigid_material(
                species)).astype(np.int64)
            names = tuple(f"{self.history_prefix}{f}" for f in self.bound.function.history)
            n = p.n_owned
            self._arguments = (
                (self.n_objects, self.attached(world), *p.views(PARTICLE_ARRAYS), self._material,
                 objects.views(self.shape.FIELDS), *p.views(("force", "torque")), objects.force),
                history_columns(p, names, n, self.n_objects),
                self._scratch.flags(p, names, self.n_objects).reshape(-1))
            self._arguments_key = key
        return self._arguments

    def near_list_stale(self, world, O) -> bool:
        """Whether the near list must be built again (module docstring); `O`: the shape's
        arrays now."""
        key = (Table.structure_version, world.domain.rebuild_count)
        return not (key == self._near_key
                    and self.shape.moved_within(O, self._near_objects_then, world.skin))

    def _near_list(self, world, kernels, arrays, history, flags) -> None:
        """Build the near list again if it is stale."""
        O = arrays[9]
        if not self.near_list_stale(world, O):
            return
        n = world.particles.n_owned * self.n_objects
        if self._near_rows.size < n:
            size = max(n, int(1.25 * self._near_rows.size))
            self._near_rows = np.zeros(size, dtype=np.int64)
            self._near_objects = np.zeros(size, dtype=np.int64)
        G = (self._near_rows, self._near_objects, 0, *arrays)
        self.near_count = kernels.build_near_list(G, history, flags, self.near_margin(world),
                                                  self._near_rows, self._near_objects)
        self._near_key = (Table.structure_version, world.domain.rebuild_count)
        self._near_objects_then = tuple(a.copy() for a in O)
        self.near_builds += 1

    def geometry_tuple(self, world, kernels) -> tuple:
        """The pipeline's geometry tuple of this step (``rigid_objects``), the near list
        current; with its history columns and flags."""
        objects = world.tables[self.table_name]
        if objects.n_owned != self.n_objects:
            raise InputError(f"{self.table_name} were added after set-up; add every one before "
                             "the first step")
        arrays, history, flags = self._geometry_arrays(world)
        self._near_list(world, kernels, arrays, history, flags)
        return (self._near_rows, self._near_objects, self.near_count, *arrays), history, flags

    def separations(self, world, direction, distance) -> None:
        """For every owned particle and object: the unit vector from the particle's centre
        toward the surface (``direction`` (n, objects, 3)) and the centre's distance from it
        (``distance`` (n, objects), m), from the current positions (MC-DEM's contact points:
        ``systems.multicontact``)."""
        kernels = self.kernels(world)
        arrays = self._geometry_arrays(world)[0]
        kernels.separations((self._near_rows, self._near_objects, 0, *arrays), direction, distance)

    def run(self, world) -> None:
        if not self.n_objects:
            return
        kernels = self.kernels(world)
        G, history, flags = self.geometry_tuple(world, kernels)
        M = self.model.arrays(self, world, world.particles) if self.model is not None else ()
        self.touching = self.evaluate(world, kernels, G, M, history, flags)

    def recorded_bodies(self, world, contacts):
        """Contact c = row * n_objects + object: the particle row and the object's row."""
        n = max(int(self.n_objects or 0), 1)
        return contacts // n, None, contacts % n


__all__ = ["RigidObjectContacts", "PARTICLE_ARRAYS"]
