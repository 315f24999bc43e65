"""Confining stress on membranes (Goetz & Poeschel Eqs. (18)-(19)).

Each triangle (outward winding, components.membranes) with current area A
and outward unit normal n^ carries F = -sigma A n^ (Eq. (18) with the sign of
docs/physics.md, Confining stress: the load acts inward, sigma > 0
compresses, sigma < 0 inflates), a third of it on each vertex (Eq. (19)).
With N = (x1 - x0) x (x2 - x0) = 2 A n^ that is F_vertex = -sigma N / 6: with
current areas and normals the forces equal -sigma dV/dx_i, so a closed
surface feels no net force or torque, and -sum x_i . F_i = 3 sigma V.

sigma(t) follows each membrane's schedule (components.membranes.set_stress:
a value, or a linear ramp then a hold). The work the stress does on each
triangle's vertices, F . v dt summed over steps, is kept per triangle
(``membrane_triangles.stress_work``, J) and summed by the diagnostics.

Each triangle is evaluated by the owner of its first vertex; forces on ghost
vertices come home through the reverse reduction. A triangle that has lost
(nearly) all its area stops the run with an error naming it.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.components.membranes import element_span, stresses_at
from ecs_dem.errors import StateError
from ecs_dem.jit import kernel, row
from ecs_dem.system import Stage, System

from ecs_dem.systems.membrane.triangle import triangle_normal


TRIANGLE_COLUMNS = ("rows", "membrane", "rest_area", "stress_work")
VERTEX_COLUMNS = ("position", "velocity", "force")


@kernel
def pressure_forces(rows, membrane, rest_area, sigma, position, velocity, force, work, dt,
                    update):
    """F = -sigma N / 6 on each vertex of every triangle; work[t] += F . (v0 + v1 + v2) dt.

    Returns the first triangle whose area fell below 1e-8 of its rest area (-1 if none);
    it contributes no force.
    """
    bad = -1
    for t in range(rows.shape[0]):
        a = row(rows[t, 0])
        b = row(rows[t, 1])
        c = row(rows[t, 2])
        n0, n1, n2 = triangle_normal(position, a, b, c)
        if not (n0 * n0 + n1 * n1 + n2 * n2 > (2e-8 * rest_area[t]) ** 2):
            if bad < 0:
                bad = t
            continue
        s = -sigma[membrane[t]] / 6.0
        f0 = s * n0
        f1 = s * n1
        f2 = s * n2
        for v in (a, b, c):
            force[v, 0] += f0
            force[v, 1] += f1
            force[v, 2] += f2
        if update:
            vs0 = velocity[a, 0] + velocity[b, 0] + velocity[c, 0]
            vs1 = velocity[a, 1] + velocity[b, 1] + velocity[c, 1]
            vs2 = velocity[a, 2] + velocity[b, 2] + velocity[c, 2]
            work[t] += (f0 * vs0 + f1 * vs1 + f2 * vs2) * dt
    return bad


class MembranePressure(System):
    """The confining stress of every membrane on its triangles (module docstring)."""

    stage = Stage.FORCES
    reads = {"membrane_triangles": ("rows", "membrane", "rest_area"),
             "membranes": ("stress_start", "stress_end", "ramp_start", "ramp_end")}
    reads_ghosts = {"particles": ("position", "velocity")}
    writes = {"membrane_triangles": ("stress_work",)}
    accumulates = {"particles": ("force",)}

    def __init__(self, max_stretch: float = 1.5):
        self.max_stretch = float(max_stretch)

    def interaction_range(self, world) -> float:
        """The longest initial edge of a triangle, stretched."""
        return self.max_stretch * element_span(world, "membrane_triangles")

    def run(self, world) -> None:
        t = world.membrane_triangles
        p = world.particles
        stresses = stresses_at(world.membranes, world.time)
        if not any(stresses):
            return
        sigma = np.array(stresses)
        rows, membrane, rest_area, work = t.views(TRIANGLE_COLUMNS)
        position, velocity, force = p.views(VERTEX_COLUMNS, ghosts=True)
        bad = pressure_forces(rows, membrane, rest_area, sigma, position, velocity, force, work,
                              world.dt, not world.setup_phase)
        if bad >= 0:
            raise StateError(
                f"step {world.step}: membrane {int(t.membrane[bad])}, triangle on vertices "
                f"{t.vertices[bad].tolist()} has collapsed to (nearly) zero area under the "
                "confining stress: lower dt or the stress ramp rate, or refine the mesh; the last "
                "output and checkpoint are intact")
