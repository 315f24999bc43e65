"""Per-membrane diagnostics: volume, area, stretching and bending energy, work of the stress.

Every ``every`` steps, for each membrane (arrays indexed by membrane id,
summed over ranks)::

    membrane_volume       m^3, enclosed by a closed membrane, or by an open one
                          closed with a flat fan over each boundary loop from the
                          loop's centroid (a triaxial sleeve between its platens):
                          V = 1/6 sum_t x_a . (x_b x x_c) + 1/6 sum_L c_L . sum_(a->b in L) x_b x x_a
                          (triangles wound outward; boundary edges as in their triangle)
    membrane_area         m^2, current area of the triangles
    membrane_stretching_energy      J, 1/2 k (|d| - L0)^2 over the edge springs
    membrane_bending_energy         J, systems.membrane.bending.bending_energies
    membrane_stress_work            J, work of the confining stress so far
                                    (systems.membrane.pressure)
    membrane_kinetic_energy         J, 1/2 m v^2 of the vertices

Each element uses its own vertices' images (``rows``), so areas and energies
are right across periodic faces; a volume is meaningful for a membrane that
does not cross a periodic face. Records go to ``records`` and to an
Hdf5Output's time series if given.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System

from ecs_dem.systems.membrane.springs import spring_energies
from ecs_dem.systems.membrane.bending import bending_energies, membrane_constants


@kernel
def surface_sums(rows, membrane, position, n_membranes):
    """(1/6 sum x_a . (x_b x x_c), area) per membrane over triangles."""
    volume = np.zeros(n_membranes)
    area = np.zeros(n_membranes)
    for t in range(rows.shape[0]):
        a, b, c = rows[t, 0], rows[t, 1], rows[t, 2]
        xa0, xa1, xa2 = position[a, 0], position[a, 1], position[a, 2]
        p0, p1, p2 = position[b, 0] - xa0, position[b, 1] - xa1, position[b, 2] - xa2
        q0, q1, q2 = position[c, 0] - xa0, position[c, 1] - xa1, position[c, 2] - xa2
        n0 = p1 * q2 - p2 * q1
        n1 = p2 * q0 - p0 * q2
        n2 = p0 * q1 - p1 * q0
        m = membrane[t]
        # x_a . (x_b x x_c) = x_a . ((x_b - x_a) x (x_c - x_a))
        volume[m] += (xa0 * n0 + xa1 * n1 + xa2 * n2) / 6.0
        area[m] += 0.5 * np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    return volume, area


@kernel
def loop_sums(rows, loop_id, position):
    """Per boundary-edge row id: (sum of first-vertex positions, edge count, sum x_b x x_a)."""
    n = loop_id.max() + 1 if loop_id.size else 0
    centre = np.zeros((n, 3))
    count = np.zeros(n)
    cross = np.zeros((n, 3))
    for e in range(rows.shape[0]):
        a, b = rows[e, 0], rows[e, 1]
        k = loop_id[e]
        for c in range(3):
            centre[k, c] += position[a, c]
        count[k] += 1.0
        cross[k, 0] += position[b, 1] * position[a, 2] - position[b, 2] * position[a, 1]
        cross[k, 1] += position[b, 2] * position[a, 0] - position[b, 0] * position[a, 2]
        cross[k, 2] += position[b, 0] * position[a, 1] - position[b, 1] * position[a, 0]
    return centre, count, cross


def membrane_measures(world) -> dict[str, np.ndarray]:
    """The module docstring's quantities, summed over ranks (collective)."""
    comm = world.comm
    p = world.particles
    mem = world.membranes
    n = mem.n_owned
    x = p.with_ghosts("position")
    t = world.membrane_triangles
    volume, area = surface_sums(t.rows, t.membrane, x, n)
    b = world.membrane_boundaries
    # loops are numbered per membrane: one global id per (membrane, loop)
    n_loops = int(comm.max(int(b.loop.max()) + 1 if b.n_owned else 0))
    key = b.membrane.astype(np.int64) * max(n_loops, 1) + b.loop
    centre, count, cross = loop_sums(b.rows, key, x)
    size = n * max(n_loops, 1)
    pad = lambda a, shape: np.concatenate([a, np.zeros((size - a.shape[0],) + shape)])  # noqa: E731
    centre = comm.sum(pad(centre, (3,)))
    count = comm.sum(pad(count, ()))
    cross = comm.sum(pad(cross, (3,)))
    has = count > 0
    caps = np.zeros(size)
    caps[has] = np.einsum("ij,ij->i", centre[has] / count[has, None], cross[has]) / 6.0
    volume = comm.sum(volume) + caps.reshape(n, -1).sum(axis=1)
    s = world.springs
    stretching = spring_energies(s.rows, s.rest_length, s.stiffness, s.membrane, x, n)[:n]
    h = world.membrane_hinges
    k_el, _, factor = membrane_constants(mem)
    bending = bending_energies(h.rows, h.rest_angle, h.membrane, k_el, factor, x, n)
    work = np.bincount(t.membrane, weights=t.stress_work, minlength=n)[:n]
    vertex = p.membrane >= 0
    kinetic = np.bincount(p.membrane[vertex], minlength=n,
                          weights=0.5 * p.mass[vertex] * np.sum(p.velocity[vertex] ** 2, axis=1))
    return {"membrane_volume": volume, "membrane_area": comm.sum(area),
            "membrane_stretching_energy": comm.sum(stretching),
            "membrane_bending_energy": comm.sum(bending),
            "membrane_stress_work": comm.sum(work), "membrane_kinetic_energy": comm.sum(kinetic)}


class MembraneDiagnostics(System):
    """Record ``membrane_measures`` every `every` steps (module docstring)."""

    stage = Stage.OUTPUT
    reads = {"particles": ("position", "velocity", "mass", "membrane"),
             "membrane_triangles": ("rows", "membrane", "stress_work"),
             "membrane_boundaries": ("rows", "loop", "membrane"),
             "membrane_hinges": ("rows", "rest_angle", "membrane"),
             "springs": ("rows", "rest_length", "stiffness", "membrane"),
             "membranes": ("bending_stiffness", "bending_convention")}
    reads_ghosts = {"particles": ("position",)}

    def __init__(self, every: int, output=None):
        self.every = max(int(every), 1)
        self.output = output
        self.records: list[dict] = []

    def run(self, world) -> None:
        rec = membrane_measures(world)
        self.records.append({"step": world.step, "time": world.time, **rec})
        if self.output is not None:
            self.output.append(world.step, world.time, rec)
