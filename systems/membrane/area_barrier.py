"""A barrier against in-plane triangle collapse of a membrane's spring network.

Why: Goetz & Poeschel's membrane resists stretching with edge springs only
(Eq. (6)), and a triangle's edge lengths do not tell it from its mirror
image, so nothing resists a vertex crossing its opposite edge: under strong
local in-plane compression (a membrane held by friction to grains that
approach each other) a triangle is squeezed flat, and the bending forces,
which scale as 1/area, blow up. This term is not in the paper. It acts only
on a triangle whose area has fallen below ``threshold`` times its rest area,
so the sheet's small-strain elasticity stays the paper's.

Energy per triangle, with a = A / A0 (current over rest area):

    U = 1/2 K A0 (a_c - a)^2   for a < a_c,   0 otherwise,

and forces F_i = -dU/dx_i = K (a_c - a) dA/dx_i, with
dA/dx_0 = 1/2 n^ x (x_2 - x_1) and its cyclic permutations (n^ the unit
normal of the winding): in the triangle's plane, perpendicular to the
opposite edge, pushing each vertex away from it. The three forces sum to
zero (momentum kept) and do no work on a rigid motion. K = ``stiffness``
times the membrane's 2D modulus E d (N/m); ``membrane_triangles.rest_area``
gives A0. U is not part of the diagnostics' stretching energy
(systems.membrane.diagnostics): it is zero unless a triangle is squeezed.

A triangle that still gets squeezed below ``collapse`` times its rest area
(default 0.05: flat, about to invert in its plane) stops the run with an
error naming it, before the bending forces blow up; this check runs even
with the barrier off (``stiffness`` 0, the paper's model).

Each triangle is evaluated by the owner of its first vertex; forces on ghost
vertices come home through the reverse reduction.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.components.membranes import element_span
from ecs_dem.errors import InputError, StateError
from ecs_dem.jit import kernel, row
from ecs_dem.system import Stage, System

from ecs_dem.systems.membrane.triangle import triangle_normal


@kernel
def area_barrier_forces(rows, membrane, rest_area, modulus, threshold, collapse, position,
                        force):
    """Add K (a_c - a) dA/dx_i to each vertex of every triangle with a < a_c (module docstring).

    ``modulus[m]``: K of membrane m (N/m). Returns (the number of triangles the barrier acted
    on, the first triangle with a < ``collapse`` or -1).
    """
    acting = 0
    collapsed = -1
    for t in range(rows.shape[0]):
        i0 = row(rows[t, 0])
        i1 = row(rows[t, 1])
        i2 = row(rows[t, 2])
        n0, n1, n2 = triangle_normal(position, i0, i1, i2)
        nlen = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        a = 0.5 * nlen / rest_area[t]
        if a < collapse and collapsed < 0:
            collapsed = t
        k = modulus[membrane[t]]
        if a >= threshold or k == 0.0 or nlen == 0.0:
            continue
        acting += 1
        g = 0.5 * k * (threshold - a) / nlen  # K (a_c - a) / 2, over |n| to use the raw normal
        for v, j, l in ((i0, i1, i2), (i1, i2, i0), (i2, i0, i1)):
            e0 = position[l, 0] - position[j, 0]
            e1 = position[l, 1] - position[j, 1]
            e2 = position[l, 2] - position[j, 2]
            force[v, 0] += g * (n1 * e2 - n2 * e1)
            force[v, 1] += g * (n2 * e0 - n0 * e2)
            force[v, 2] += g * (n0 * e1 - n1 * e0)
    return acting, collapsed


class MembraneAreaBarrier(System):
    """The collapse barrier on every membrane triangle (module docstring).

    ``threshold``: a_c, the fraction of its rest area below which a triangle
    is pushed back (default 0.3). ``stiffness``: K over the membrane's E d
    (default 4; 0 turns the barrier off). ``collapse``: the area fraction at
    which the run stops (default 0.05).
    """

    stage = Stage.FORCES
    reads = {"membrane_triangles": ("rows", "membrane", "rest_area"),
             "membranes": ("youngs_modulus", "thickness")}
    reads_ghosts = {"particles": ("position",)}
    accumulates = {"particles": ("force",)}

    def __init__(self, threshold: float = 0.3, stiffness: float = 4.0, collapse: float = 0.05,
                 max_stretch: float = 1.5):
        if not 0.0 <= collapse < threshold <= 1.0 or stiffness < 0.0:
            raise InputError(f"membrane area barrier: need 0 <= collapse < threshold <= 1 and "
                             f"stiffness >= 0 (got collapse {collapse}, threshold {threshold}, "
                             f"stiffness {stiffness})")
        self.threshold = float(threshold)
        self.stiffness = float(stiffness)
        self.collapse = float(collapse)
        self.max_stretch = float(max_stretch)
        self.acting = 0
        self._modulus = None  # ((epoch, rows), K per membrane): fixed once membranes exist

    def _moduli(self, membranes) -> np.ndarray:
        key = (membranes.epoch, membranes.n_owned)
        if self._modulus is None or self._modulus[0] != key:
            self._modulus = (key, np.ascontiguousarray(
                self.stiffness * membranes.youngs_modulus * membranes.thickness))
        return self._modulus[1]

    def interaction_range(self, world) -> float:
        """The longest initial edge of a triangle, stretched."""
        return self.max_stretch * element_span(world, "membrane_triangles")

    def run(self, world) -> None:
        t = world.membrane_triangles
        p = world.particles
        self.acting, bad = area_barrier_forces(t.rows, t.membrane, t.rest_area,
                                               self._moduli(world.membranes),
                                               self.threshold, self.collapse,
                                               p.with_ghosts("position"), p.with_ghosts("force"))
        if bad >= 0:
            corners = p.with_ghosts("position")[t.rows[bad]]
            raise StateError(
                f"step {world.step}: membrane {int(t.membrane[bad])}, triangle {int(t.gid[bad])} "
                f"on vertices {t.vertices[bad].tolist()} near "
                f"{np.round(corners.mean(axis=0), 6).tolist()} m was squeezed flat in its plane "
                f"(below {self.collapse:g} of its rest area), about to invert: the membrane is "
                "compressed locally more than its edge springs and the area barrier hold. Raise "
                "the barrier's stiffness (collapse_stiffness), coarsen the mesh, or lower the "
                "load; the last output and checkpoint are intact")
