"""The membrane's systems in one call, and a snapshot writer that draws its surface.

``membrane_systems()`` gives the force systems of Goetz & Poeschel Sect. 2.3-2.6
in the order a driver adds them (after the contact systems, before the
integrator's second half): stretching (systems.membrane.springs, Eq. 6), the
barrier against in-plane triangle collapse (systems.membrane.area_barrier: not
in the paper; it acts only on triangles squeezed below 0.3 of their rest
area), bending (systems.membrane.bending, Eqs. 8-16, with the fold check) and
the confining stress (systems.membrane.pressure, Eqs. 18-19).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.io.hdf5_output import SnapshotWriter

from ecs_dem.systems.membrane.springs import SpringForces
from ecs_dem.systems.membrane.area_barrier import MembraneAreaBarrier
from ecs_dem.systems.membrane.bending import MembraneBending
from ecs_dem.systems.membrane.pressure import MembranePressure

SNAPSHOT_FIELDS = ("gid", "position", "velocity", "radius", "species", "membrane")


def membrane_systems(max_stretch: float = 1.5, max_fold: float = np.radians(170.0),
                     collapse_threshold: float = 0.3, collapse_stiffness: float = 4.0) -> list:
    """[stretching, collapse barrier, bending, confining stress]; ``max_stretch`` bounds how long
    an element may get relative to its initial size (it sets the ghost width), ``max_fold`` how
    far a hinge may turn from its rest angle before the run stops; ``collapse_threshold`` and
    ``collapse_stiffness`` are the area barrier's a_c and K / (E d) (0: the paper's model)."""
    return [SpringForces(max_stretch),
            MembraneAreaBarrier(collapse_threshold, collapse_stiffness, max_stretch=max_stretch),
            MembraneBending(max_fold, max_stretch), MembranePressure(max_stretch)]


def membrane_snapshot_writer(output, every: int, fields=SNAPSHOT_FIELDS) -> SnapshotWriter:
    """Snapshots of every particle with the membranes' triangles (rows of the snapshot) and
    each triangle's membrane id, for ParaView and ``components.mesh.io.surface_from_snapshot``."""
    return SnapshotWriter(output, every, fields,
                          connectivity={"triangles": ("membrane_triangles", "vertices")},
                          element_data={"triangle_membrane": ("membrane_triangles", "membrane")})
