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


def world_sums(world, grid, kernel, contacts: bool = True, select=None) -> Sums:
    """The sums of the world's particles and its contact systems' contacts recorded at
    this step (collective: every rank calls it; the sums on every rank).

    `select` = (field, value): coarse-grain only the particles whose field has that value
    (``("kind", KIND_GRAIN)``: the grains, not a membrane's vertices; ``("fixed", False)``:
    not a chute's frozen base). The others become the boundary: a contact of a selected
    particle with one of them counts as a boundary contact (its force on the selected
    one, at the contact point), and their own mass and contacts are left out."""
    p = world.particles
    n = p.n_owned
    position, radius = p.with_ghosts("position"), p.with_ghosts("radius").copy()
    rows = position.shape[0]
    velocity = np.zeros((rows, 3))
    velocity[:n] = p.owned("velocity")
    mass = np.zeros(rows)
    mass[:n] = p.owned("mass")
    chosen = None
    if select is not None:
        field, value = select
        chosen = p.with_ghosts(field) == value
        mass[~chosen] = 0.0
        velocity[~chosen] = 0.0
        radius[~chosen] = 0.0  # no volume, no fabric
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
    if chosen is not None:
        pairs, boundary = _split(pairs, boundary,
                                 joined("contacts", ("contact_point",))[0] if pairs else None,
                                 chosen)
    sums = coarse_grain(grid, kernel, position, velocity, mass, radius, n=n, pairs=pairs,
                        boundary=boundary)
    if world.comm.size > 1:
        sums = Sums.from_flat(grid, world.comm.sum(sums.flat()))
    return sums


def _split(pairs, boundary, point, chosen):
    """Pairs between selected rows; a pair with one unselected partner becomes a boundary
    contact of the selected one (``world_sums``' `select`)."""
    bi, bf, bc = [], [], []
    if boundary is not None:
        keep = chosen[boundary[0]]
        bi, bf, bc = [boundary[0][keep]], [boundary[1][keep]], [boundary[2][keep]]
    if pairs is not None:
        i, j, f, b = pairs
        ci, cj = chosen[i], chosen[j]
        for side, sign, other in ((ci & ~cj, 1.0, i), (cj & ~ci, -1.0, j)):
            bi.append(other[side])
            bf.append(sign * f[side])
            bc.append(point[side])
        both = ci & cj
        pairs = (i[both], j[both], f[both], b[both])
    boundary = ((np.concatenate(bi), np.concatenate(bf), np.concatenate(bc)) if bi else None)
    return pairs, boundary


class RecordedFields(System):
    """Fields of the world every `every` steps, from the recorded contact forces (module
    docstring), kept in ``fields`` at the evaluations where ``when(world)`` is true (all by
    default): the mean of the last `window` evaluations' sums (the velocity is then the
    mean momentum over the mean density). `select`: as ``world_sums``'."""

    stage = Stage.OUTPUT

    def __init__(self, grid, kernel, every: int, window: int = 1, contacts: bool = True,
                 select=None, when=None):
        if int(every) < 1 or int(window) < 1:
            raise InputError(f"RecordedFields: every = {every} and window = {window} must be "
                             "whole numbers >= 1")
        self.grid, self.kernel = grid, kernel
        self.every, self.window = int(every), int(window)
        self.contacts = bool(contacts)
        self.select, self.when = select, when
        self.fields: dict = {}
        #: step -> the steps whose sums were averaged into ``fields[step]``
        self.window_steps: dict = {}
        self._recent: list = []  # (step, sums) of the last `window` evaluations
        extra = (select[0],) if select is not None else ()
        self.reads = {"particles": ("position", "velocity", "mass", "radius", *extra)}
        self.reads_ghosts = {"particles": ("position", "radius", *extra)}
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
        sums = world_sums(world, self.grid, self.kernel, self.contacts, self.select)
        self._recent = [*(self._recent[1 - self.window:] if self.window > 1 else ()),
                        (world.step, sums)]
        if self.when is None or self.when(world):
            average = TimeAverage(self.grid)
            for _, recent in self._recent:
                average.add(recent)
            self.fields[world.step] = (world.time, derive(average.mean()))
            self.window_steps[world.step] = [step for step, _ in self._recent]

    def latest(self) -> tuple:
        """(step, time, fields) of the last entry of ``fields``."""
        if not self.fields:
            raise InputError("RecordedFields: no fields yet (the run ended before the first "
                             "evaluation it was asked for)")
        step = max(self.fields)
        return (step, *self.fields[step])


__all__ = ["RecordedFields", "contact_systems", "world_sums"]
