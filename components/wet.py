"""Liquid on particles: the film each particle carries and the liquid balance's terms.

Fields of the ``particles`` table, added on first use (``liquid_fields``),
saved in checkpoints and migrated with their rows like every field:

* ``liquid_film`` (m^3, FORWARD): the liquid a particle carries outside its
  bridges;
* ``liquid_inserted`` (m^3, LOCAL): the liquid ever given to the particle
  by ``add_liquid`` (a spray droplet it absorbs joins its film only: the
  nozzle counted it as ``sprayed``, ``components.droplets``);
* ``liquid_lost`` (m^3, LOCAL): the liquid it lost to walls (a bridge with a
  wall returns only the particle's half at rupture);
* ``bridges_starting`` (FORWARD): the bridges the particle starts this step
  (``systems.wet.migration``: its film is shared among them).

The bridges' liquid is the per-contact ``bridge_volume`` of the wet laws
(``systems.wet.laws``). Conserved: sum of films + bridges + airborne droplets + lost =
sum of inserted + sprayed (``systems.wet.balance``).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.table import Field, Halo

FILM = Field("liquid_film", np.float64, (), Halo.FORWARD, 0.0, "m^3",
             "liquid film volume the particle carries")
INSERTED = Field("liquid_inserted", np.float64, (), Halo.LOCAL, 0.0, "m^3",
                 "liquid ever given to the particle")
LOST = Field("liquid_lost", np.float64, (), Halo.LOCAL, 0.0, "m^3",
             "liquid the particle lost to walls")
STARTING = Field("bridges_starting", np.int32, (), Halo.FORWARD, 0, "",
                 "liquid bridges the particle starts this step")
LIQUID_FIELDS = (FILM, INSERTED, LOST, STARTING)


def liquid_fields(world) -> None:
    """Add the liquid fields to the particles (idempotent)."""
    for f in LIQUID_FIELDS:
        world.particles.add_field(f)


def add_liquid(world, volume, rows=None) -> None:
    """Give liquid (m^3, >= 0; scalar or one per row) to the owned particles `rows` (all
    when None): it joins their film and their inserted total."""
    liquid_fields(world)
    p = world.particles
    rows = np.arange(p.n_owned) if rows is None else np.asarray(rows)
    volume = np.broadcast_to(np.asarray(volume, dtype=np.float64), rows.shape)
    if not np.all(np.isfinite(volume)) or np.any(volume < 0.0):
        raise InputError(f"add_liquid: liquid volumes must be finite and >= 0 m^3 (got "
                         f"{float(np.min(volume))}); a particle cannot carry negative liquid")
    p.liquid_film[rows] += volume
    p.liquid_inserted[rows] += volume


__all__ = ["FILM", "INSERTED", "LOST", "STARTING", "LIQUID_FIELDS", "liquid_fields",
           "add_liquid"]
