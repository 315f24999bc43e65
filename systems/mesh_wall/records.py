"""Records of mesh walls: the surface with its per-triangle data in the HDF5 snapshots.

``MeshWallSnapshotWriter(output, every)`` writes, every `every` steps, the mesh walls'
vertices and triangles (every rank its owned rows, gathered collectively into one file) in
the snapshot's subgroup ``/snapshots/<step>/mesh_walls/``::

    gid            (n,)     int64    the vertex's id
    position       (n, 3)   float64  m, where it is now (worn, moved)
    wall           (n,)     int32    the mesh wall (row of mesh_walls)
    wear_depth     (n,)     float64  m, depth worn at the vertex (with MeshWear)
    triangles      (m, 3)   int64    rows of this subgroup's datasets: the vertices of
                                     triangle k are position[triangles[k]]
    triangle_gid             (m,)  int64    the triangle's id
    triangle_wall            (m,)  int32    its mesh wall
    triangle_contacts        (m,)  int64    contact-steps with grains so far
    triangle_normal_work     (m,)  float64  J, sum of |F_n v_n| dt so far
    triangle_friction_work   (m,)  float64  J, sum of |F_t . v_t| dt so far
    triangle_wear_volume     (m,)  float64  m^3, volume worn away under it (with MeshWear)
    triangle_wear_depth      (m,)  float64  m, that volume over the triangle's area

The XDMF sidecar shows the subgroup as the surface ``mesh_walls``: ParaView colours it by
any ``triangle_*`` dataset (a cell attribute) or by the vertices' ``wear_depth``. The walls'
force and torque are time series of ``Diagnostics`` (``mesh_wall_force``,
``mesh_wall_torque``).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.system import Stage, System

SUBGROUP = "mesh_walls"
TRIANGLE_FIELDS = ("wall", "contacts", "normal_work", "friction_work")


class MeshWallSnapshotWriter(System):
    """Write the mesh walls' surface and per-triangle data every `every` steps (module
    docstring); collective, like ``SnapshotWriter``. Give it the every of the particles'
    SnapshotWriter to find both in the same snapshot group."""

    stage = Stage.OUTPUT

    def __init__(self, output, every: int, subgroup: str = SUBGROUP):
        self.output = output
        self.every = max(int(every), 1)
        self.subgroup = subgroup

    def declare(self, world) -> None:
        verts, tri = world.mesh_vertices, world.mesh_triangles
        self.worn = verts.has_field("wear_depth") and tri.has_field("wear_volume")
        self.vertex_fields = ("gid", "position", "wall") + (("wear_depth",) if self.worn else ())
        self.triangle_fields = TRIANGLE_FIELDS + (("wear_volume",) if self.worn else ())
        self.reads = {"mesh_vertices": self.vertex_fields,
                      "mesh_triangles": ("vertices", "rows") + self.triangle_fields}
        self.reads_ghosts = {"mesh_vertices": ("position",)}

    def run(self, world) -> None:
        verts, tri = world.mesh_vertices, world.mesh_triangles
        data = {"triangle_gid": tri.owned("gid")}
        data.update({f"triangle_{name}": tri.owned(name) for name in self.triangle_fields})
        if self.worn:
            x = verts.with_ghosts("position")[tri.owned("rows")]
            area = 0.5 * np.linalg.norm(np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]), axis=1)
            data["triangle_wear_depth"] = tri.owned("wear_volume") / np.where(area > 0, area, 1.0)
        self.output.write_snapshot(world.step, world.time, verts, self.vertex_fields,
                                   {"triangles": tri.owned("vertices")}, data,
                                   subgroup=self.subgroup)


__all__ = ["MeshWallSnapshotWriter", "SUBGROUP"]
