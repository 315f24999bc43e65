"""The liquid balance: a diagnostic time series of where the liquid is.

Every ``every`` steps (OUTPUT stage) it records, summed over ranks (m^3):
``films`` (the particles' films), ``bridges`` (the bridges of the pairs:
each bridge once, from the ``pairs`` table; and with walls, kept by each
wall's particle), ``airborne`` (spray droplets in flight,
``systems.wet.droplets``), ``lost_at_walls`` (the particles' wall bridges'
share and the droplets lost at walls or out of the domain), ``inserted``
(everything ever given to the particles by ``add_liquid`` and sprayed by the
nozzles) and ``imbalance`` = films + bridges + airborne + lost_at_walls -
inserted, which liquid migration and the droplet systems keep at round-off. Rows go to ``records`` (a list of dicts with ``step`` and
``time``); ``liquid_totals(world)`` gives the same terms at any time.
"""
from __future__ import annotations

import numpy as np

from ecs_dem import observe
from ecs_dem.system import Stage, System

from ecs_dem.components.wet import liquid_fields
from ecs_dem.systems.wet.droplets import airborne_volume


def liquid_totals(world) -> dict:
    """The balance's terms now, summed over ranks (collective: every rank calls it)."""
    p = world.particles
    pairs = world.tables.get("pairs")
    bridges = 0.0
    if pairs is not None and pairs.has_field("bridge_volume"):
        bridges = float(np.sum(pairs.owned("bridge_volume")))
    if p.has_field("wall_bridge_volume"):
        bridges += float(np.sum(p.owned("wall_bridge_volume")))
    films, bridges, airborne, lost, inserted = observe.sum_of(
        world, float(np.sum(p.owned("liquid_film"))), bridges, airborne_volume(world),
        float(np.sum(p.owned("liquid_lost"))), float(np.sum(p.owned("liquid_inserted"))))
    nozzles = world.tables.get("nozzles")
    if nozzles is not None:  # replicated: the same totals on every rank, counted once
        lost += float(np.sum(nozzles.owned("lost")))
        inserted += float(np.sum(nozzles.owned("sprayed")))
    return {"films": films, "bridges": bridges, "airborne": airborne, "lost_at_walls": lost,
            "inserted": inserted, "imbalance": films + bridges + airborne + lost - inserted}


class LiquidBalance(System):
    """Records the liquid balance every ``every`` steps (module docstring)."""

    stage = Stage.OUTPUT
    reads = {"particles": ("liquid_film", "liquid_lost", "liquid_inserted")}

    def __init__(self, every: int = 100):
        self.every = int(every)
        self.records: list[dict] = []

    def setup(self, world) -> None:
        liquid_fields(world)

    def run(self, world) -> None:
        row = {"step": world.step, "time": world.time, **liquid_totals(world)}
        self.records.append(row)


__all__ = ["LiquidBalance", "liquid_totals"]
