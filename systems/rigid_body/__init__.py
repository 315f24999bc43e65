"""Rigid bodies made of pebbles (clumps): integrator, pebble placement, force summation.

``for s in rigid_bodies(): world.add_system(s)`` adds them (before or after
``velocity_verlet()``; before it, velocity Verlet's pass over the positions also
measures the pebbles' displacement for the rebuild check). Tables and
``add_clumps``: ``ecs_dem.components.clumps``; conventions: docs/user-guide/clumps.md.
Snapshots of the bodies: ``output.body_snapshot_writer``.
"""
from ecs_dem.system import System

from .forces import BodyForces
from .integrator import BodyFirstHalf, BodySecondHalf
from .placement import PebbleVelocities, PlacePebbles


def rigid_bodies() -> list[System]:
    """The systems that move clumps, in order; the force summation joins the world's
    systems at set-up, after every force system (``forces``)."""
    return [BodyFirstHalf(), PlacePebbles(), BodySecondHalf(), PebbleVelocities()]


__all__ = ["rigid_bodies", "BodyFirstHalf", "BodySecondHalf", "PlacePebbles",
           "PebbleVelocities", "BodyForces"]
