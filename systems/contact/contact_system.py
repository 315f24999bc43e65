"""What every contact system shares: its law bound to the species, its kernels, its scratch.

A contact system (``ContactForces``, ``WallContacts``, ``PatchContacts``, or a
new geometry's) is a :class:`ContactSystem` with a ``geometry`` (a template
module of the contact pipeline, ``systems.contact.pipeline``) and, for a
rigid object kind, its ``shape``. This base class

* binds the law to the world's species at set-up, and again when a species
  constant changes (``systems.contact.law.LawBinding``), refusing a time
  step above the law's limit each time (unless ``check_time_step=False``);
* compiles the pipeline for the geometry, the law function and the model
  (``contact_kernels``), with its scratch (``PairScratch``);
* adds the law's history fields to the system's contact table, and the law's
  input fields to its ghost reads;
* hands the model (``model=``, e.g. MC-DEM's ``MultiContact``) its part:
  its per-contact arrays and declarations.

A subclass supplies ``setup`` (calling ``setup_contacts``) and ``run``
(calling ``evaluate`` with its geometry tuple).

The contact network of a snapshot (``SnapshotWriter(contacts=True)``,
``ecs_dem.io.hdf5_output``): ``record_contacts(every)`` makes ``evaluate`` run
kernels compiled with ``record=True`` on the steps divisible by ``every``
(the other steps run the plain kernels: nothing changes, nothing costs);
they keep each touching contact's force on its particle and its contact
point, which ``snapshot_contacts`` hands to the writer, by the subclass's
``recorded_bodies`` (which particle, which partner each contact joins).
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from ecs_dem.errors import InputError, UnstableTimeStepError
from ecs_dem.system import Stage, System
from ecs_dem.table import Table

from ecs_dem.systems.contact.chunks import PairScratch
from ecs_dem.systems.contact.law import LawBinding
from ecs_dem.systems.contact.pipeline import contact_kernels


def check_time_step(world, law, enabled: bool) -> None:
    """Refuse a time step above the law's stable limit (unless the check is disabled)."""
    limit, advice = law.time_step_limit(world)
    if enabled and world.dt > limit:
        raise UnstableTimeStepError(
            f"time step dt = {world.dt:.4g} exceeds the stable limit {limit:.4g} of the "
            f"{law.name} contact law: {advice}. Lower dt, or pass check_time_step=False "
            "to the contact system if you know better")


def history_columns(table, names, rows: int, per_row: int = 1) -> tuple:
    """The named history fields of `table`'s first `rows` rows as 2-D (contacts, components)
    arrays (``per_row`` contacts per row: one per rigid object)."""
    out = []
    for name in names:
        col = table.column(name)[:rows]
        out.append(col.reshape(rows * per_row, -1) if rows else
                   np.zeros((0, max(int(np.prod(table.fields[name].shape)) // per_row, 1)),
                            dtype=col.dtype))
    return tuple(out)


def merged(*declarations) -> dict:
    """Declarations (table -> field names) merged, each field once, in order."""
    out: dict[str, tuple] = {}
    for d in declarations:
        for table, names in d.items():
            out[table] = tuple(dict.fromkeys(out.get(table, ()) + tuple(names)))
    return out


class ContactSystem(System):
    """Base class of the contact systems (module docstring)."""

    stage = Stage.FORCES
    #: the pipeline geometry (a template module)
    geometry: ModuleType = None
    #: further template modules the geometry uses (a rigid object's shape)
    templates: tuple = ()
    #: the geometry's candidate search covers a law's reach (``systems.contact.law``)
    supports_reach: bool = False

    def __init__(self, law, model=None, check_time_step: bool = True):
        self.law = law
        self.model = model
        self.check_time_step = bool(check_time_step)
        self.touching = 0
        self._binding = LawBinding(law, self._bound_again, self._check_time_step)
        self._kernels = None
        self._scratch = None
        self._bound = None
        self._checked_step = None
        self._inputs_key = None
        self._inputs = ()
        self._record_every = 0
        self._recording = None  # the kernels compiled with record=True
        self._records: dict = {}  # slot -> (step, touched (n,) uint8, values (n, 6))

    @property
    def name(self) -> str:
        extra = f", {self.model.name}" if self.model is not None else ""
        return f"{type(self).__name__}({self.law.name}{extra})"

    @property
    def bound(self):
        """The law bound to the species (``systems.contact.law.BoundLaw``)."""
        return self._bound

    def _check_time_step(self, world) -> None:
        check_time_step(world, self.law, self.check_time_step)

    def _bound_again(self, bound) -> None:
        if bound.reach > 0.0 and not self.supports_reach:
            raise InputError(f"{type(self).__name__}: the {self.law.name} law acts beyond contact "
                             f"(reach {bound.reach:.3g} m), which this geometry's candidate "
                             "search does not cover; use it with particle pairs (ContactForces) "
                             "or walls (WallContacts), and a law without a reach here")
        kernels = contact_kernels(self.geometry, bound.function,
                                  self.model.template if self.model is not None else None,
                                  self.templates)
        if self._scratch is None or kernels.COLUMNS != self._kernels.COLUMNS:
            self._scratch = PairScratch(kernels.COLUMNS)
        self._kernels = kernels
        self._recording = None
        self._bound = bound
        self._inputs_key = None
        self.law_changed(bound)

    def law_changed(self, bound) -> None:
        """Called after every binding of the law (set-up, a species change): a subclass drops
        what it derived from the old one (cached kernel arguments, material indices)."""

    def setup_contacts(self, world, tables) -> None:
        """Add the law's history fields to `tables` (the contact tables: fields per contact,
        or per particle and object with ``history_field``), bind the law, let the model
        attach (``declare`` then adds the law's and the model's fields to the declarations)."""
        twice = [s.name for s in world.systems if s is not self and isinstance(s, ContactSystem)
                 and s.contact_key == self.contact_key]
        if twice:
            raise InputError(f"{self.name}: {twice[0]} evaluates the same contacts "
                             f"({self.contact_key}); keep one of them (with MC-DEM, the systems "
                             "of multicontact(law, gamma) replace the plain ones)")
        for table in tables:
            for f in self.law.history:
                table.add_field(self.history_field(f))
        self._binding.bind(world)
        if self.model is not None:
            self.model.attach(self, world)

    def declare(self, world) -> None:
        """The law's input fields join the ghost reads, the model's declarations the reads
        and writes (the law was bound and the model attached in ``setup``)."""
        if self.bound is None:
            return
        inputs = self.bound.function.inputs
        if inputs:
            self.reads_ghosts = merged(self.reads_ghosts, {"particles": inputs})
        if self.model is not None:
            extra = self.model.declarations(self, world)
            self.reads = merged(self.reads, extra.get("reads", {}))
            self.writes = merged(self.writes, extra.get("writes", {}))

    @property
    def contact_key(self) -> str:
        """The contacts this system evaluates (its contact table, or its object table): two
        systems with one key would count every contact twice."""
        return type(self).__name__

    def history_field(self, f):
        """The table field that holds law history field `f` (itself, for a contact table)."""
        return f

    def kernels(self, world):
        """The compiled pipeline, after binding the law again if the species changed (asked
        once per step)."""
        if world.step != self._checked_step:
            self._binding.current(world)
            self._checked_step = world.step
        return self._kernels

    def law_inputs(self, world) -> tuple:
        """The law's input fields, owned and ghost rows (``systems.contact.law``), kept until
        some table changes structurally."""
        key = Table.structure_version
        if key != self._inputs_key:
            p = world.particles
            self._inputs = tuple(p.with_ghosts(name) for name in self._bound.function.inputs)
            self._inputs_key = key
        return self._inputs

    def evaluate(self, world, kernels, G, M, history, flags, slot: int = 0) -> int:
        """Run the pipeline on geometry tuple G; returns the touching count (model events go
        to the model). On a recording step (``record_contacts``) the touching contacts'
        forces and contact points are kept under `slot` (a system with several contact
        lists numbers them: ``ContactForces``' pairs 0, mirrors 1)."""
        bound, s = self._bound, self._scratch
        R = ()
        if self._record_every and world.step % self._record_every == 0:
            if self._recording is None:
                self._recording = contact_kernels(
                    self.geometry, bound.function,
                    self.model.template if self.model is not None else None, self.templates,
                    record=True)
            kernels = self._recording
            R = (np.zeros(flags.size, dtype=np.uint8), np.zeros((flags.size, 6)))
            self._records[slot] = (world.step, *R)
        touching, events = kernels.contacts(
            G, M, self.law_inputs(world), bound.parameters, bound.constants, history, flags,
            not (world.setup_phase or world.iteration_pass), world.dt, s.buf, s.sel, R)
        if events and self.model is not None:
            self.model.count_events(self, int(events))
        return int(touching)

    # -- the contact network of a snapshot (module docstring) --------------------------------

    #: the snapshot subgroup of this system's contacts: "contacts" (particle pairs) or
    #: "boundary_contacts" (a particle and a wall, a membrane patch, a mesh triangle)
    snapshot_group = "boundary_contacts"
    #: what ``snapshot_contacts`` reads (the writer declares it): the particles' gids and
    #: positions, of ghost rows too (a pair's partner)
    snapshot_reads = {"particles": ("gid", "position")}
    snapshot_reads_ghosts = {"particles": ("gid", "position")}

    def record_contacts(self, every: int) -> None:
        """Keep the touching contacts' forces and contact points on the steps divisible by
        `every` (``snapshot_contacts`` returns them); 0 stops recording."""
        every = int(every)
        if every < 0:
            raise InputError(f"{self.name}: record_contacts(every={every}): give a step "
                             "interval >= 1, or 0 to stop recording")
        if self._record_every and every and every != self._record_every:
            every = int(np.gcd(every, self._record_every))  # two writers: both steps
        self._record_every = every

    def recorded_bodies(self, world, contacts: np.ndarray) -> tuple:
        """(particle rows i, partner particle rows j or None, partner index) of the given
        contact indices (the rows of the arrays ``evaluate`` recorded, slot 0)."""
        raise NotImplementedError(f"{type(self).__name__} does not say which bodies its "
                                  "contacts join (recorded_bodies)")

    def snapshot_contacts(self, world, rows: bool = False) -> dict:
        """This rank's contacts of the last recorded evaluation, for a snapshot:
        ``{snapshot_group: {dataset: rows}}`` (``SnapshotWriter(contacts=True)``).

        Pairs (``"contacts"``): ``i``, ``j`` (gids), ``force`` (on i, N),
        ``contact_point`` (m), ``branch`` (x_i - x_j, m, from j's centre to i's: across a
        periodic boundary, to the image's; ``ecs_dem.cg.fields`` takes it so). Boundary
        contacts: ``i`` (gid), ``force`` (on i), ``contact_point``, ``partner`` (the wall's,
        triangle's or object's index or gid in its table). Each contact is written by one
        rank (the one that evaluated it for its particle, ``ContactForces``: the rank of the
        lower gid). `rows`: ``i`` and ``j`` are the particles' local rows (owned or ghost:
        a periodic image's own row) instead of their gids."""
        p = world.particles
        if not self._record_every or world.step % self._record_every:
            raise InputError(f"{self.name}: no contacts recorded at step {world.step}: they are "
                             "recorded on the steps record_contacts(every) names (a snapshot "
                             "writer with contacts=True asks for its own steps); call it before "
                             "the run")
        step, touched, values = self._records.get(0, (None, None, None))
        if step != world.step:  # the system did not run this step (no objects): no contacts
            none = np.zeros(0, dtype=np.int64)
            i, j, partner = none, (none if self.snapshot_group == "contacts" else None), none
            values = np.zeros((0, 6))
            contacts = none
        else:
            contacts = np.flatnonzero(touched)
            i, j, partner = self.recorded_bodies(world, contacts)
        gid = p.with_ghosts("gid")
        position = p.with_ghosts("position")
        name = (lambda k: np.asarray(k, dtype=np.int64)) if rows else \
            (lambda k: gid[k].astype(np.int64))
        out = {"i": name(i), "force": values[contacts, :3].copy(),
               "contact_point": position[i] + values[contacts, 3:]}
        if j is not None:
            out["j"] = name(j)
            out["branch"] = position[i] - position[j]
        else:
            out["partner"] = np.asarray(partner, dtype=np.int64)
        return {self.snapshot_group: out}


__all__ = ["ContactSystem", "check_time_step", "history_columns", "merged"]
