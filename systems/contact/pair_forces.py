"""Particle-particle contact forces with a pluggable contact law.

The law object (``HertzMindlinLaw``, ``LinearSpringDashpotLaw``, or any law of
the interface in ``systems.contact.law``) supplies the physics of one
contact; this system owns what every law shares: the law's history fields in
the ``pairs`` table (declared, so the scheduler and the debug guard know it
writes them), the pair kernel compiled for the law
(``systems.contact.kernels``), the time-step check, the initial-overlap
check, and not advancing history in the set-up force pass.

Pairs across a rank boundary (``newton=False``, the default, LAMMPS's
``newton off``): each side evaluates the pair and adds the force to its own
particle only, so no contact force travels back to its owner (the reverse
reduction of the particles' forces needs no message unless some other system
adds into copies of other ranks' rows). The rank of the lower gid evaluates
the pair from ``pairs``, the other from ``pair_mirrors``; both advance the
same history from the same inputs. Pairs with a periodic image of a row of
the same rank are evaluated once, and the image's share goes straight to its
own row (``Domain.home_rows``): the system adds into owned rows only
(``accumulates_owned``), so no reverse of forces runs unless another system
adds into ghost rows. With ``newton=True`` every pair is evaluated once and
every row, ghost or not, takes its own share (``accumulates``: a full reverse
follows).

Where the system is its force pass's first contribution to force or torque
and nothing adds into ghost rows (``System.assigns_owned``), the kernel sets
those owned rows to zero before adding the pairs' shares, in place of the
scheduler's zeroing call: the same bits (the chute's torque, its force when
no body force comes first).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import UnstableTimeStepError
from ecs_dem.system import Stage, System
from ecs_dem.table import Table

from ecs_dem.systems.contact import kernels as contact_kernels
from ecs_dem.systems.contact.chunks import PairScratch
from ecs_dem.systems.contact.kinematics import check_initial_overlaps
from ecs_dem.systems.contact.law import law_kernels
from ecs_dem.systems.neighbors.search import mirror_table, pair_table

CONTACT_READS = ("position", "velocity", "angular_velocity", "radius", "mass", "species", "fixed")
ACCUMULATED = ("force", "torque")


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
    arrays (``per_row`` contacts per row: walls)."""
    out = []
    for name in names:
        col = table.column(name)[:rows]
        out.append(col.reshape(rows * per_row, -1) if rows else
                   np.zeros((0, int(np.prod(table.fields[name].shape)) // per_row)))
    return tuple(out)


class ContactForces(System):
    """Contact forces and torques of every pair in the neighbour list.

    Parameters
    ----------
    law : contact law object (``systems.contact.law``)
    max_initial_overlap : float
        Largest initial overlap accepted, as a fraction of the smaller radius.
    check_time_step : bool
        Refuse a time step above the law's stable limit.
    """

    stage = Stage.FORCES
    reads_ghosts = {"particles": CONTACT_READS}

    def __init__(self, law, max_initial_overlap: float = 0.05, check_time_step: bool = True,
                 newton: bool = False):
        self.law = law
        self.max_initial_overlap = float(max_initial_overlap)
        self.check_time_step = bool(check_time_step)
        self.newton = bool(newton)
        self.touching = 0
        history = tuple(f.name for f in law.history)
        self.reads = {"pairs": ("i", "j")}
        self.writes = {"pairs": history}
        if self.newton:  # each pair once; forces on copies of other ranks' rows go home
            self.accumulates = {"particles": ("force", "torque")}
        else:
            self.reads["pair_mirrors"] = ("i", "j")
            self.writes["pair_mirrors"] = history
            self.accumulates_owned = {"particles": ("force", "torque")}
            # where the scheduler lets it (the pass's first contribution, nothing added into
            # ghost rows), the kernel zeroes the owned rows itself: one call and pass fewer
            self.assigns_owned = {"particles": ("force", "torque")}
        self._bound = None
        self._all_rows = np.zeros(0, dtype=np.int32)
        self._calls_key = None
        self._calls = []

    @property
    def name(self) -> str:
        return f"ContactForces({self.law.name})"

    def interaction_range(self, world) -> float:
        r = world.particles.radius
        return 2.0 * float(r.max()) if r.size else 0.0

    def setup(self, world) -> None:
        tables = [pair_table(world)] + ([] if self.newton else [mirror_table(world)])
        for table in tables:
            for f in self.law.history:
                table.add_field(f)
        check_time_step(world, self.law, self.check_time_step)
        self._bound = self.law.bind(world.tables.get("species"))
        self._kernels = law_kernels(contact_kernels, self._bound.function)
        self._scratch = PairScratch(self._kernels.COLUMNS)
        self._mirror_flags = PairScratch(0)  # the mirrors' history flags (buffers: _scratch's)

    def _home_rows(self, world) -> np.ndarray:
        """Per particle row, the row that takes its share of a pair's force, -1 for none
        (module docstring)."""
        if not self.newton:
            return world.domain.home_rows(world.particles)
        n = world.particles.n
        if self._all_rows.size < n:
            self._all_rows = np.arange(max(n, int(1.25 * self._all_rows.size)), dtype=np.int32)
        return self._all_rows

    def _kernel_calls(self, world) -> list:
        """Per list (pairs, then mirrors): its rows and the kernel's arguments up to the
        history flags (views, history columns, flags, the rows that take forces), cached until
        some table changes structurally (``Table.structure_version``): building them costs
        more than the kernel on a few thousand particles."""
        key = Table.structure_version
        if key != self._calls_key:
            p = world.particles
            lists = [world.pairs] + ([] if self.newton else [world.pair_mirrors])
            bound = self._bound
            names = bound.function.history
            particle_arrays = p.views(CONTACT_READS, ghosts=True)
            home = self._home_rows(world)
            self._calls = [
                (t.n_owned, (t.owned("i"), t.owned("j"), *particle_arrays, bound.parameters,
                             bound.constants, history_columns(t, names, t.n_owned),
                             flags.flags(t, names), home))
                for t, flags in zip(lists, (self._scratch, self._mirror_flags))]
            self._calls_key = key
        return self._calls

    def run(self, world) -> None:
        if world.setup_phase:
            check_initial_overlaps(world, self.max_initial_overlap)
        s = self._scratch
        p = world.particles
        force, torque = p.views(ACCUMULATED, ghosts=True)
        update = not world.setup_phase
        assigning = self.assigning
        zero_force = p.n_owned if assigning and ("particles", "force") in assigning else 0
        zero_torque = p.n_owned if assigning and ("particles", "torque") in assigning else 0
        for k, (rows, args) in enumerate(self._kernel_calls(world)):
            if k and not rows:
                continue  # no mirrors (one rank, or no pair across a rank boundary)
            touching = self._kernels.pair_contacts(*args, update, world.dt, force, torque,
                                                   s.buf, s.sel, zero_force, zero_torque)
            zero_force = zero_torque = 0  # the first call (the pairs) set the owned rows
            if k == 0:  # contacts are counted once, by the rank of the lower gid
                self.touching = touching
