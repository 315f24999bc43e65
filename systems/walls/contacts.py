"""Particle-wall contact forces with the same contact law as the particle pairs.

``WallContacts(law)`` is the rigid-object contact system
(``systems.contact.rigid_object_contacts``) for the planes of the ``walls``
table (``components.walls``; the shape ``systems.walls.plane``): the history
of a particle's contact with wall w is the particle field
``wall_<history>[w]``, ``walls.force`` receives each rank's share of the
particles' force on each wall, a near list keeps the particles far from
every wall out of the step, and a particle attached to a wall
(``components.particles.attach_to_wall``: a membrane's end ring on its
platen) moves with it and does not touch it. Walls move by their mode
(velocity, servo): if the world has no ``WallMotion`` system, set-up adds
one, so a moving wall never stands still for want of a system.
"""
from __future__ import annotations

from ecs_dem.systems.contact.rigid_object_contacts import RigidObjectContacts
from ecs_dem.systems.walls import plane
from ecs_dem.systems.walls.motion import ensure_wall_motion


class WallContacts(RigidObjectContacts):
    """Contacts of owned particles with every planar wall (module docstring).

    Parameters
    ----------
    law : contact law (``systems.contact.law``)
    check_time_step : bool
        Refuse a time step above the law's stable limit.
    model : a contact model (MC-DEM's ``MultiContact``), optional
    optional : bool
        Accept a world without walls (the system then does nothing).
    """

    shape = plane
    table_name = "walls"
    history_prefix = "wall_"
    attached_field = "wall"

    def setup(self, world) -> None:
        super().setup(world)
        if self.n_objects:
            ensure_wall_motion(world)


__all__ = ["WallContacts"]
