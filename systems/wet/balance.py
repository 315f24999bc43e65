"""The liquid balance: a diagnostic time series of where the liquid is.

Every ``every`` steps (OUTPUT stage) it records, summed over ranks (m^3):
``films`` (the particles' films), ``bridges`` (the bridges of the pairs:
each bridge once, from the ``pairs`` table; and with walls, kept by each
wall's particle), ``lost_at_walls``, ``inserted``
(everything ever given to the particles) and ``imbalance`` = films +
bridges + lost_at_walls - inserted, which liquid migration keeps at
round-off. Rows go to ``records`` (a list of dicts with ``step`` and
``time``); ``liquid_totals(world)`` gives the same terms at any time.
"""
from __future__ import annotations

import numpy as np

from ecs_dem import observe
from ecs_dem.system import Stage, System

from ecs_dem.components.wet import liquid_fields


def liquid_totals(world) -> dict:
    """The balance's terms now, summed over ranks (collective: every rank calls it)."""
    p = world.particles
    pairs = world.tables.get("pairs")
    bridges = 0.0
    if pairs is not None and pairs.has_field("bridge_volume"):
        bridges = float(np.sum(pairs.owned("bridge_volume")))
    if p.has_field("wall_bridge_volume"):
        bridges += float(np.sum(p.owned("wall_bridge_volume")))
    films, bridges, lost, inserted = observe.sum_of(
        world, float(np.sum(p.owned("liquid_film"))), bridges,
        float(np.sum(p.owned("liquid_lost"))), float(np.sum(p.owned("liquid_inserted"))))
    return {"films": films, "bridges": bridges, "lost_at_walls": lost, "inserted": inserted,
            "imbalance": films + bridges + lost - inserted}


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
