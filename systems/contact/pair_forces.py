"""Particle-particle contact forces with a pluggable contact law.

The law object (``HertzMindlinLaw``, ``LinearSpringDashpotLaw``, or any law of
the interface in ``systems.contact.law``) supplies the physics of one
contact; this system evaluates it on the pair list with the pair geometry of
the contact pipeline (``systems.contact.pair_geometry``), keeps the law's
history fields in the ``pairs`` table (declared, so the scheduler and the
debug guard know it writes them), checks the time step and the initial
overlaps, and does not advance history in the set-up force pass.

Pairs across a rank boundary (``newton=False``, the default without a
model, LAMMPS's ``newton off``): each side evaluates the pair and adds the
force to its own particle only, so no contact force travels back to its
owner (the reverse reduction of the particles' forces needs no message
unless some other system adds into copies of other ranks' rows). The rank of
the lower gid evaluates the pair from ``pairs``, the other from
``pair_mirrors``; both advance the same history from the same inputs. Pairs
with a periodic image of a row of the same rank are evaluated once, and the
image's share goes straight to its own row (``Domain.home_rows``): the
system adds into owned rows only (``accumulates_owned``), so no reverse of
forces runs unless another system adds into ghost rows.

With ``newton=True`` every pair is evaluated once, by the rank of its lower
gid; a share for a periodic image of an own row goes to that row, a share for
a copy of another rank's row into the copy, and the reverse reduction brings
it home (``accumulates``). A contact model (``model=``, MC-DEM's
``MultiContact``) keeps per-pair state on the pair's one row, so it runs
with ``newton=True`` (its default then).

Where the system is its force pass's first contribution to force or torque
and nothing adds into ghost rows (``System.assigns_owned``), the kernel sets
those owned rows to zero before adding the pairs' shares, in place of the
scheduler's zeroing call: the same bits (the chute's torque, its force when
no body force comes first).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.table import Table

from ecs_dem.systems.contact import pair_geometry
from ecs_dem.systems.contact.contact_system import ContactSystem, history_columns
from ecs_dem.systems.contact.initial_overlaps import check_initial_overlaps
from ecs_dem.systems.neighbors.search import mirror_table, pair_table

CONTACT_READS = ("position", "velocity", "angular_velocity", "radius", "mass", "species", "fixed")
ACCUMULATED = ("force", "torque")


class ContactForces(ContactSystem):
    """Contact forces and torques of every pair in the neighbour list.

    Parameters
    ----------
    law : contact law object (``systems.contact.law``)
    max_initial_overlap : float
        Largest initial overlap accepted, as a fraction of the smaller radius.
    check_time_step : bool
        Refuse a time step above the law's stable limit.
    newton : bool, optional
        Evaluate each pair once and send the shares of other ranks' particles home (module
        docstring); default False, True with a model.
    model : a contact model (``MultiContact``), optional
    """

    geometry = pair_geometry
    supports_reach = True
    reads_ghosts = {"particles": CONTACT_READS}

    def __init__(self, law, max_initial_overlap: float = 0.05, check_time_step: bool = True,
                 newton: bool | None = None, model=None):
        super().__init__(law, model, check_time_step)
        if newton is None:
            newton = model is not None
        if model is not None and not newton:
            raise InputError(f"ContactForces: the contact model {model.name} keeps its state on "
                             "each pair's one row; use newton=True (its default)")
        self.max_initial_overlap = float(max_initial_overlap)
        self.newton = bool(newton)
        history = tuple(f.name for f in law.history)
        self.reads = {"pairs": ("i", "j")}
        self.writes = {"pairs": history}
        if self.newton:  # each pair once; forces on copies of other ranks' rows go home
            self.accumulates = {"particles": ACCUMULATED}
        else:
            self.reads["pair_mirrors"] = ("i", "j")
            self.writes["pair_mirrors"] = history
            self.accumulates_owned = {"particles": ACCUMULATED}
            # where the scheduler lets it (the pass's first contribution, nothing added into
            # ghost rows), the kernel zeroes the owned rows itself: one call and pass fewer
            self.assigns_owned = {"particles": ACCUMULATED}
        self._home_key = None
        self._home = np.zeros(0, dtype=np.int32)
        self._calls_key = None
        self._calls = []
        self._mirror_flags = None

    @property
    def late_contacts(self) -> int:
        """Contacts of this system's pairs that the model found the neighbour list missed
        (MC-DEM: from deformation; 0 without a model)."""
        return self.model.events_of(self) if self.model is not None else 0

    @property
    def contact_key(self) -> str:
        return "pairs"

    @property
    def pair_reach(self) -> float:
        """How far beyond contact the law acts (m, its reach: ``systems.contact.law``); the
        neighbour search lists pairs that much farther apart."""
        return self.bound.reach if self.bound is not None else 0.0

    def interaction_range(self, world) -> float:
        r = world.particles.radius
        return 2.0 * float(r.max()) + self.pair_reach if r.size else 0.0

    def setup(self, world) -> None:
        tables = [pair_table(world)] + ([] if self.newton else [mirror_table(world)])
        self.setup_contacts(world, tables)
        self._mirror_flags = type(self._scratch)(0)  # the mirrors' history flags

    def law_changed(self, bound) -> None:
        self._calls_key = None

    def _home_rows(self, world) -> np.ndarray:
        """Per particle row, the row that takes its share of a pair's force (module docstring):
        without newton, -1 for a copy of another rank's row; with newton, that row itself."""
        home = world.domain.home_rows(world.particles)
        if not self.newton:
            return home
        if self._home_key is not home:
            self._home = np.where(home >= 0, home, np.arange(home.size, dtype=np.int32))
            self._home_key = home
        return self._home

    def _kernel_calls(self, world) -> list:
        """Per list (pairs, then mirrors): its rows and the geometry tuple without the zeroing
        counts, the history columns and flags, cached until some table changes structurally
        (``Table.structure_version``): building them costs more than the kernel on a few
        thousand particles."""
        key = Table.structure_version
        if key != self._calls_key:
            p = world.particles
            lists = [world.pairs] + ([] if self.newton else [world.pair_mirrors])
            names = self.bound.function.history
            particle_arrays = p.views(CONTACT_READS, ghosts=True)
            home = self._home_rows(world)
            force, torque = p.views(ACCUMULATED, ghosts=True)
            self._calls = [
                (t, (t.owned("i"), t.owned("j"), *particle_arrays, home, force, torque),
                 history_columns(t, names, t.n_owned), flags.flags(t, names))
                for t, flags in zip(lists, (self._scratch, self._mirror_flags))]
            self._calls_key = key
        return self._calls

    def run(self, world) -> None:
        if world.setup_phase:
            check_initial_overlaps(world, self.max_initial_overlap)
        kernels = self.kernels(world)
        p = world.particles
        assigning = self.assigning
        zero_force = p.n_owned if assigning and ("particles", "force") in assigning else 0
        zero_torque = p.n_owned if assigning and ("particles", "torque") in assigning else 0
        for k, (table, arrays, history, flags) in enumerate(self._kernel_calls(world)):
            if k and not table.n_owned:
                continue  # no mirrors (one rank, or no pair across a rank boundary)
            M = self.model.arrays(self, world, table) if self.model is not None else ()
            touching = self.evaluate(world, kernels, (*arrays, zero_force, zero_torque), M,
                                     history, flags, slot=k)
            zero_force = zero_torque = 0  # the first call (the pairs) set the owned rows
            if k == 0:  # contacts are counted once, by the rank of the lower gid
                self.touching = touching

    #: a snapshot's contact network: pairs, each once (``pairs``, the rank of the lower gid)
    snapshot_group = "contacts"
    snapshot_reads = {"particles": ("gid", "position"), "pairs": ("i", "j")}

    def recorded_bodies(self, world, contacts):
        pairs = world.pairs
        return pairs.owned("i")[contacts], pairs.owned("j")[contacts], None


__all__ = ["ContactForces", "CONTACT_READS"]
