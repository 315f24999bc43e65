"""Snapshots of wet matter for ParaView: films on the particles, bridges as lines, droplets as
points.

``WetSnapshots(output, every)`` (OUTPUT stage, collective) writes every
``every`` steps into ``/snapshots/<step>/`` of an ``Hdf5Output``:

* the particles' ``fields`` (by default gid, position, velocity, radius and
  ``liquid_film``), one row per particle, as ``SnapshotWriter`` does;
* ``lines`` (m, 2): the liquid bridges between two particles, as rows of
  this snapshot's particles (each bridge once, from the ``pairs`` table, on
  any number of ranks), with ``line_bridge_volume`` (m, m^3): the XDMF
  sidecar draws them as a collection "lines" of Polyline cells from centre
  to centre (a bridge across a periodic boundary is drawn across the box);
* the subgroup ``droplets/`` (when there is a spray): the droplets' gid,
  position, velocity, radius, volume and state, shown as points.

In ParaView: open the ``.xdmf`` file, show "particles" as spheres scaled by
``radius`` and coloured by ``liquid_film``, "lines" as tubes coloured by
``bridge_volume``, "droplets" as points.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.system import Stage, System

from ecs_dem.components.wet import liquid_fields

DROPLET_FIELDS = ("gid", "position", "velocity", "radius", "volume", "state")


class WetSnapshots(System):
    """Particles with their films, bridges as lines, droplets as points (module docstring)."""

    stage = Stage.OUTPUT

    def __init__(self, output, every: int,
                 fields=("gid", "position", "velocity", "radius", "liquid_film")):
        self.output = output
        self.every = max(int(every), 1)
        self.fields = tuple(fields)
        self.reads = {"particles": self.fields}

    def setup(self, world) -> None:
        liquid_fields(world)

    def declare(self, world) -> None:
        pairs = world.tables.get("pairs")
        if pairs is not None and pairs.has_field("bridge_volume"):
            self.reads = {**self.reads, "pairs": ("gid_i", "gid_j", "bridge_volume")}
        if "droplets" in world.tables:
            self.reads = {**self.reads, "droplets": DROPLET_FIELDS}

    def run(self, world) -> None:
        lines = np.zeros((0, 2), dtype=np.int64)
        volume = np.zeros(0)
        if "pairs" in self.reads:
            pairs = world.pairs
            v = pairs.owned("bridge_volume")[:, 0]
            held = v > 0.0
            lines = np.stack([pairs.owned("gid_i")[held], pairs.owned("gid_j")[held]], axis=1)
            volume = v[held]
        self.output.write_snapshot(world.step, world.time, world.particles, self.fields,
                                   connectivity={"lines": lines},
                                   element_data={"line_bridge_volume": volume})
        if "droplets" in self.reads:
            self.output.write_snapshot(world.step, world.time, world.tables["droplets"],
                                       DROPLET_FIELDS, subgroup="droplets")


__all__ = ["WetSnapshots"]
