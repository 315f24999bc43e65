"""Rigid bodies in the HDF5 snapshots and the XDMF sidecar.

``body_snapshot_writer(output, every)`` writes, every `every` steps, the owned rows of
``bodies`` into the snapshot's subgroup ``bodies/``: ``gid``, ``position`` (the centre
of mass, unwrapped), ``orientation`` (unit quaternion w, x, y, z: body -> space),
``velocity``, ``angular_velocity``, ``mass`` and ``template`` (row of
``clump_templates``). The XDMF sidecar shows them as a point set ``bodies`` (velocity
and angular velocity as vectors; the quaternion, four numbers, stays in the HDF5
file). Give the particles' snapshot writer the fields of ``particle_fields``: they
add ``body`` (the body's gid, -1 for a free grain), so that ParaView colours the
pebbles by their body. Checkpoints hold the bodies whole without this (every table
is checkpointed).
"""
from __future__ import annotations

from ecs_dem.io.hdf5_output import SnapshotWriter

BODY_FIELDS = ("gid", "com", "orientation", "velocity", "angular_velocity", "mass", "template")


def body_snapshot_writer(output, every: int, fields=BODY_FIELDS) -> SnapshotWriter:
    """The bodies' snapshot (module docstring), written beside the particles' at each step."""
    return SnapshotWriter(output, every, fields, table="bodies", subgroup="bodies",
                          names={"com": "position"})


def particle_fields(world, fields) -> tuple:
    """`fields` with ``body`` added when the world has rigid bodies."""
    fields = tuple(fields)
    if "bodies" in world.tables and "body" not in fields:
        fields += ("body",)
    return fields


__all__ = ["body_snapshot_writer", "particle_fields", "BODY_FIELDS"]
