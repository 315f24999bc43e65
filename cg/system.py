"""On-the-fly coarse-graining: a system that computes fields at an interval, on any ranks.

``CoarseGraining(grid, kernel, every, path=None, window=1)`` runs at the OUTPUT stage
every ``every`` steps (after the step's second half-kick: positions and velocities at the
end of the step). On each rank it coarse-grains (``cg.fields.coarse_grain``)

* its owned particles (mass, momentum, volume),
* the particle pairs of its ``pairs`` table: each touching pair once over all ranks, by
  the rank that evaluates it from ``pairs`` (the rank of the lower gid:
  ``systems.contact.pair_forces``; never from ``pair_mirrors``), with the partner's row
  a ghost row where it lives on another rank (its position is then the ghost's, so the
  branch vector is right across periodic boundaries too);
* the wall contacts of its owned particles (``WallContacts``), with the contact point
  at the foot of the particle's centre on the wall.

Contact forces are those of the step, to round-off: a helper system
(:class:`ContactRecorder`, added at set-up just before the first contact system, on the
same steps) runs the contact pipeline of each contact system's geometry and law with a
recording scatter (``cg.record``) that adds into no force row, on copies of the contact
history and flags, with the inputs the contact system is about to use (positions,
half-step velocities, history before its update). The fields then take positions and
velocities at the end of the step.

The sums of every rank are added with the engine's collective sum (``observe``'s
communicator; one reduction of one array per evaluation), so every rank holds the
whole grid: fields on 1, 2 or 4 ranks agree to round-off. Every ``window`` evaluations
their mean (``cg.fields.TimeAverage``) is derived into fields, kept in ``fields`` (with
``time`` and ``step``) and, with a ``path``, written by rank 0 to that HDF5 file and its
XDMF sidecar (``cg.output``); ``sibling_path(output)`` names the file next to an
``Hdf5Output``'s (``run.h5`` -> ``run_cg.h5``).

Not coarse-grained on the fly: membrane patches, mesh walls and MC-DEM contacts (a
world with them coarse-grains its particles and the other contacts, and says so in
``left_out``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ecs_dem import observe
from ecs_dem.errors import InputError
from ecs_dem.system import Stage, System

from ecs_dem.cg import record
from ecs_dem.cg.fields import Sums, TimeAverage, coarse_grain, derive
from ecs_dem.cg.output import FieldFile
from ecs_dem.systems.contact.chunks import PairScratch
from ecs_dem.systems.contact.contact_system import ContactSystem, history_columns
from ecs_dem.systems.contact.pair_forces import CONTACT_READS, ContactForces
from ecs_dem.systems.contact.pipeline import contact_kernels
from ecs_dem.systems.contact.rigid_object_contacts import PARTICLE_ARRAYS
from ecs_dem.systems.walls.contacts import WallContacts


def sibling_path(output) -> Path:
    """The coarse-graining file next to an Hdf5Output's: ``<name>_cg.h5``."""
    path = Path(output.path)
    return path.with_name(f"{path.stem}_cg.h5")


class CoarseGraining(System):
    """Fields on `grid` with `kernel` every `every` steps (module docstring)."""

    stage = Stage.OUTPUT

    def __init__(self, grid, kernel, every: int, path=None, window: int = 1,
                 attributes: dict | None = None):
        if int(every) < 1:
            raise InputError(f"CoarseGraining: every must be >= 1 step (got {every})")
        if int(window) < 1:
            raise InputError(f"CoarseGraining: window must be >= 1 evaluation (got {window})")
        grid.check(kernel)
        self.grid = grid
        self.kernel = kernel
        self.every = int(every)
        self.window = int(window)
        self.path = Path(path) if path is not None else None
        self.attributes = dict(attributes or {})
        self.reads = {"particles": ("position", "velocity", "mass", "radius")}
        self.reads_ghosts = {}
        self.fields = None
        self.sums = None
        self.time = self.step = None
        self.left_out: list[str] = []
        self._average = TimeAverage(grid)
        self._file = None
        self._pairs = None
        self._walls = None
        self._recorders = {}
        self._recorder_system = None
        self.records = None  # (step, pair contacts, wall contacts) of the ContactRecorder

    def setup(self, world) -> None:
        contacts = [s for s in world.systems if isinstance(s, ContactSystem)]
        self._pairs = next((s for s in contacts if isinstance(s, ContactForces)), None)
        self._walls = next((s for s in contacts if isinstance(s, WallContacts)), None)
        for s in (self._pairs, self._walls):
            if s is not None and s.model is not None:
                self.left_out.append(f"{s.name} (a contact model)")
        if self._pairs is not None and self._pairs.model is not None:
            self._pairs = None
        if self._walls is not None and self._walls.model is not None:
            self._walls = None
        self.left_out += [s.name for s in contacts if s is not self._pairs
                          and s is not self._walls and f"{s.name} (a contact model)"
                          not in self.left_out]
        self.add_recorder(world)

    def declare(self, world) -> None:
        """The particles it reads; with pairs, on ghost rows too (a pair's partner)."""
        if self._pairs is not None:
            self.reads_ghosts = {"particles": ("position", "radius")}


    # ------------------------------------------------------------ contacts
    def add_recorder(self, world) -> None:
        """Add the ContactRecorder just before the first contact system it records."""
        first = next((s for s in world.systems if s is self._pairs or s is self._walls), None)
        if first is not None and self._recorder_system is None:
            self._recorder_system = world.add_system(ContactRecorder(self), before=first)

    def _recorder(self, system):
        """The pipeline for `system`'s geometry and law with the recording scatter."""
        bound = system.bound
        key = (id(system), id(bound.function))
        found = self._recorders.get(key)
        if found is None:
            kernels = contact_kernels(record, bound.function, None,
                                      (*system.templates, system.geometry))
            found = (kernels, PairScratch(kernels.COLUMNS))
            self._recorders[key] = found
        return found

    def _evaluate(self, world, system, G, history, flags, count):
        """Run the recording pipeline on `count` candidates; the record (count, 7). History
        and flags are copied: the contact system's stay as they are, for its own call."""
        kernels, scratch = self._recorder(system)
        bound = system.bound
        rec = np.zeros((count, 7))
        kernels.contacts((*G, rec), (), system.law_inputs(world), bound.parameters,
                         bound.constants, tuple(h.copy() for h in history), flags.copy(),
                         not (world.setup_phase or world.iteration_pass), world.dt,
                         scratch.buf, scratch.sel)
        return rec

    def pair_contacts(self, world):
        """(i, j, force on i, branch x_i - x_j) of this rank's touching pairs, as the pair
        system is about to evaluate them (call it just before it runs)."""
        s = self._pairs
        s.kernels(world)  # binds the law again if a species changed
        pairs = world.pairs
        n = pairs.n_owned
        pi, pj = pairs.owned("i"), pairs.owned("j")
        p = world.particles
        arrays = p.views(CONTACT_READS, ghosts=True)
        names = s.bound.function.history
        history = history_columns(pairs, names, n)
        flags = s._scratch.flags(pairs, names)
        rec = self._evaluate(world, s, (pi, pj, *arrays), history, flags, n)
        touching = rec[:, 6] != 0.0
        return (pi[touching].astype(np.int64), pj[touching].astype(np.int64),
                np.ascontiguousarray(rec[touching, :3]), np.ascontiguousarray(rec[touching, 3:6]))

    def wall_contacts(self, world):
        """(row, force on the particle, contact point) of this rank's touching wall contacts,
        as the wall system is about to evaluate them (call it just before it runs: this
        brings its near list up to date, as its own call would)."""
        s = self._walls
        if not s.n_objects:
            return None
        kernels = s.kernels(world)
        G, history, flags = s.geometry_tuple(world, kernels)
        count = int(G[2])
        rec = self._evaluate(world, s, G, history, flags, count)
        touching = rec[:, 6] != 0.0
        rows = G[0][:count][touching].astype(np.int64)
        position = world.particles.views(("position",))[0]
        point = position[rows] - rec[touching, 3:6]
        return rows, np.ascontiguousarray(rec[touching, :3]), np.ascontiguousarray(point)

    # ------------------------------------------------------------ the step
    def record(self, world) -> None:
        """Record this step's contacts (the ContactRecorder calls it in the force pass)."""
        pairs = self.pair_contacts(world) if self._pairs is not None else None
        walls = self.wall_contacts(world) if self._walls is not None else None
        self.records = (world.step, pairs, walls)

    def local_sums(self, world) -> Sums:
        """This rank's sums (owned particles, its pairs, its particles' wall contacts)."""
        p = world.particles
        position, velocity, mass, radius = p.views(("position", "velocity", "mass", "radius"),
                                                   ghosts=True)
        pairs = walls = None
        if self._recorder_system is not None:
            if self.records is None or self.records[0] != world.step:
                raise RuntimeError("CoarseGraining: no contacts recorded in this step's force "
                                   "pass; keep its ContactRecorder in the world")
            _, pairs, walls = self.records
        return coarse_grain(self.grid, self.kernel, position, velocity, mass, radius,
                            n=p.n_owned, pairs=pairs, boundary=walls)

    def run(self, world) -> None:
        local = self.local_sums(world)
        comm = observe.communicator(world)
        total = Sums.from_flat(self.grid, comm.sum(local.flat()))
        self._average.add(total)
        if self._average.count < self.window:
            return
        self.sums = self._average.mean()
        samples = self._average.count
        self._average = TimeAverage(self.grid)
        self.fields = derive(self.sums)
        self.time, self.step = world.time, world.step
        if self.path is not None and comm.rank == 0:
            if self._file is None:
                self._file = FieldFile(self.path, self.grid, self.kernel, {
                    **self.attributes, "every": self.every, "window": self.window,
                    "left_out": ", ".join(self.left_out)})
            self._file.write(world.step, world.time, self.fields, samples)


class ContactRecorder(System):
    """Records the contacts of a CoarseGraining's step in the force pass, just before the
    contact systems evaluate them (module docstring); it changes nothing they use."""

    stage = Stage.FORCES

    def __init__(self, owner: CoarseGraining):
        self.owner = owner
        self.every = owner.every
        self.reads = {}
        self.reads_ghosts = {}

    @property
    def name(self) -> str:
        return "ContactRecorder"

    def declare(self, world) -> None:
        """The pair rows and the pair law's particle fields on ghost rows; the walls' fields
        and the particles' wall history, which it writes only as the wall system's own
        near-list build would (its resets of contacts left out), just before it."""
        owner = self.owner
        self.reads = {"particles": ("position", "velocity", "mass", "radius")}
        self.reads_ghosts = {}
        self.writes = {}
        pairs, walls = owner._pairs, owner._walls
        if pairs is not None and pairs.bound is not None:
            self.reads["pairs"] = ("i", "j", *pairs.bound.function.history)
            self.reads_ghosts = {"particles": tuple(dict.fromkeys(
                CONTACT_READS + tuple(pairs.bound.function.inputs)))}
        if walls is not None and walls.bound is not None and walls.n_objects:
            history = tuple(f"{walls.history_prefix}{h}" for h in walls.bound.function.history)
            self.reads["particles"] = tuple(dict.fromkeys(
                self.reads["particles"] + PARTICLE_ARRAYS + tuple(walls.bound.function.inputs)
                + history))
            if walls.attached_field and world.particles.has_field(walls.attached_field):
                self.reads["particles"] += (walls.attached_field,)
            self.reads[walls.table_name] = (*walls.shape.FIELDS, "species")
            if history:
                self.writes = {"particles": history}

    def run(self, world) -> None:
        self.owner.record(world)


__all__ = ["CoarseGraining", "ContactRecorder", "sibling_path"]
