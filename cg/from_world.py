"""Coarse-graining a running World from the contact forces of its own force pass.

The contact systems record, on the steps asked for (``ContactSystem.record_contacts``),
each touching contact's force and contact point as the step's force pass computed them
(``systems.contact.pipeline``, ``record=True``): the same numbers a snapshot's contact
network holds (``SnapshotWriter(contacts=True)``), so fields from here and from the
output file (``cg.from_output``) agree to round-off::

    sums = world_sums(world, grid, kernel)     # collective; cg.fields.Sums on every rank

:class:`RecordedFields` is an OUTPUT system that does this every ``every`` steps and keeps
the fields (optionally averaged over the last ``window`` evaluations) for a driver:
``fields`` holds ``{step: (time, {name: field})}``.

Each rank adds its owned particles and the contacts its contact systems evaluated for
its particles (a pair once: ``ContactForces``' ``pairs`` table, the rank of the lower
gid; its partner may be a ghost row, a periodic image included, so the branch vector is
the image's), and the sums are added over the ranks (one reduction).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.system import Stage, System

from ecs_dem.cg.fields import Sums, TimeAverage, coarse_grain, derive


def contact_systems(world) -> list:
    """The world's systems that record their contacts (``record_contacts``)."""
    return [s for s in world.systems if callable(getattr(s, "record_contacts", None))]


def world_sums(world, grid, kernel, contacts: bool = True) -> Sums:
    """The sums of the world's particles and its contact systems' contacts recorded at
    this step (collective: every rank calls it; the sums on every rank)."""
    p = world.particles
    n = p.n_owned
    position, radius = p.with_ghosts("position"), p.with_ghosts("radius")
    rows = position.shape[0]
    velocity = np.zeros((rows, 3))
    velocity[:n] = p.owned("velocity")
    mass = np.zeros(rows)
    mass[:n] = p.owned("mass")
    groups: dict = {"contacts": [], "boundary_contacts": []}
    if contacts:
        systems = contact_systems(world)
        if not systems:
            raise InputError("coarse-graining: the world has no contact system to record; "
                             "add one (ContactForces) or coarse-grain without contacts")
        for s in systems:
            for group, part in s.snapshot_contacts(world, rows=True).items():
                groups[group].append(part)

    def joined(group, names):
        parts = groups[group]
        return tuple(np.concatenate([part[k] for part in parts]) for k in names)

    pairs = joined("contacts", ("i", "j", "force", "branch")) if groups["contacts"] else None
    boundary = (joined("boundary_contacts", ("i", "force", "contact_point"))
                if groups["boundary_contacts"] else None)
    sums = coarse_grain(grid, kernel, position, velocity, mass, radius, n=n, pairs=pairs,
                        boundary=boundary)
    if world.comm.size > 1:
        sums = Sums.from_flat(grid, world.comm.sum(sums.flat()))
    return sums


class RecordedFields(System):
    """Fields of the world every `every` steps, from the recorded contact forces (module
    docstring); with `window` > 1 each entry of ``fields`` is the mean of that many
    evaluations' sums (the velocity is then the mean momentum over the mean density)."""

    stage = Stage.OUTPUT

    def __init__(self, grid, kernel, every: int, window: int = 1, contacts: bool = True):
        if int(every) < 1 or int(window) < 1:
            raise InputError(f"RecordedFields: every = {every} and window = {window} must be "
                             "whole numbers >= 1")
        self.grid, self.kernel = grid, kernel
        self.every, self.window = int(every), int(window)
        self.contacts = bool(contacts)
        self.fields: dict = {}
        self._average = TimeAverage(grid)
        self.reads = {"particles": ("position", "velocity", "mass", "radius")}
        self.reads_ghosts = {"particles": ("position", "radius")}
        grid.check(kernel)

    def declare(self, world) -> None:
        if not self.contacts:
            return
        for s in contact_systems(world):
            s.record_contacts(self.every)
            for label in ("reads", "reads_ghosts"):
                mine = dict(getattr(self, label))
                for t, names in getattr(s, f"snapshot_{label}", {}).items():
                    mine[t] = tuple(dict.fromkeys((*mine.get(t, ()), *names)))
                setattr(self, label, mine)

    def run(self, world) -> None:
        self._average.add(world_sums(world, self.grid, self.kernel, self.contacts))
        if self._average.count >= self.window:
            self.fields[world.step] = (world.time, derive(self._average.mean()))
            self._average = TimeAverage(self.grid)


__all__ = ["RecordedFields", "contact_systems", "world_sums"]
