"""Particle-particle contact forces with a pluggable contact law.

The law object (``HertzMindlinLaw``, ``LinearSpringDashpotLaw``) holds the
parameters and calls its numba kernel; this system owns the bookkeeping that
every law shares: per-pair history fields in the ``pairs`` table, the
time-step check, the initial-overlap check, and not advancing history in the
set-up force pass.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import UnstableTimeStepError
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo

from .contact_geometry import check_initial_overlaps
from .neighbor_search import pair_table

CONTACT_READS = ("position", "velocity", "angular_velocity", "radius", "mass", "species", "fixed")


def check_time_step(world, law, enabled: bool) -> None:
    """Refuse a time step above the law's stable limit (unless the check is disabled)."""
    limit, advice = law.time_step_limit(world)
    if enabled and world.dt > limit:
        raise UnstableTimeStepError(
            f"time step dt = {world.dt:.4g} exceeds the stable limit {limit:.4g} of the "
            f"{law.name} contact law: {advice}. Lower dt, or pass check_time_step=False "
            "to the contact system if you know better")


class ContactForces(System):
    """Contact forces and torques of every pair in the neighbour list.

    Parameters
    ----------
    law : contact law object
    max_initial_overlap : float
        Largest initial overlap accepted, as a fraction of the smaller radius.
    check_time_step : bool
        Refuse a time step above the law's stable limit.
    """

    stage = Stage.FORCES
    reads_ghosts = {"particles": CONTACT_READS}
    accumulates = {"particles": ("force", "torque")}

    def __init__(self, law, max_initial_overlap: float = 0.05, check_time_step: bool = True):
        self.law = law
        self.max_initial_overlap = float(max_initial_overlap)
        self.check_time_step = bool(check_time_step)
        self.touching = 0

    @property
    def name(self) -> str:
        return f"ContactForces({self.law.name})"

    def interaction_range(self, world) -> float:
        r = world.particles.radius
        return 2.0 * float(r.max()) if r.size else 0.0

    def setup(self, world) -> None:
        pairs = pair_table(world)
        for f in self.law.history_fields:
            pairs.add_field(Field(f, np.float64, (3,), Halo.LOCAL, 0.0, "m", "contact history"))
        check_time_step(world, self.law, self.check_time_step)

    def run(self, world) -> None:
        if world.setup_phase:
            check_initial_overlaps(world, self.max_initial_overlap)
        self.touching = self.law.apply_pairs(world, update=not world.setup_phase)
