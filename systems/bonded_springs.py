"""Linear spring-dashpots between particles: membrane stretching (Goetz & Poeschel Eqs. (6)-(7)).

Each row of the ``springs`` table (components.springs) joins two particles
(membrane vertices, or any particles). Force on the first, a (Eq. (6) with
the sign of ../shared/PHYSICS-NOTES.md, Membrane springs, as MercuryDPM):

    F_a = -d^ [k (|d| - L0) + c d^ . (v_a - v_b)],   d = x_a - x_b,   F_b = -F_a

with c = 2 gamma sqrt(k m_eff) for a membrane edge (gamma the damping ratio
of the two-body oscillator, m_eff = m_a m_b / (m_a + m_b)) and
k = sqrt(3)/2 E d (Eq. (7): an equilateral lattice is then a sheet of 2D
modulus E d and Poisson ratio 1/3). Units: N/m for k, N s/m for c.

The spring is evaluated by the owner of its first vertex; a force on a
ghost second vertex comes home through the reverse reduction. A spring
whose ends coincide (length 0: no direction) stops the run with an error
naming it, before a NaN reaches the state.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import StateError
from ecs_dem.jit import kernel, row
from ecs_dem.system import Stage, System

from ecs_dem.components.springs import add_springs, create_spring_table  # noqa: F401 (re-export)


@kernel
def spring_forces(rows, rest_length, stiffness, damping, position, velocity, force):
    """Accumulate Eq. (6) on both ends of every spring (module docstring).

    Returns the first spring whose ends coincide (-1 if none); its force is not applied.
    """
    bad = -1
    for s in range(rows.shape[0]):
        a = row(rows[s, 0])
        b = row(rows[s, 1])
        dx = position[a, 0] - position[b, 0]
        dy = position[a, 1] - position[b, 1]
        dz = position[a, 2] - position[b, 2]
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        if not r > 0.0:
            if bad < 0:
                bad = s
            continue
        nx = dx / r
        ny = dy / r
        nz = dz / r
        vn = ((velocity[a, 0] - velocity[b, 0]) * nx + (velocity[a, 1] - velocity[b, 1]) * ny
              + (velocity[a, 2] - velocity[b, 2]) * nz)
        f = -(stiffness[s] * (r - rest_length[s]) + damping[s] * vn)
        force[a, 0] += f * nx
        force[a, 1] += f * ny
        force[a, 2] += f * nz
        force[b, 0] -= f * nx
        force[b, 1] -= f * ny
        force[b, 2] -= f * nz
    return bad


@kernel
def spring_energies(rows, rest_length, stiffness, membrane, position, n_membranes):
    """Elastic energy 1/2 k (|d| - L0)^2 summed per membrane id (J); index n_membranes: others."""
    out = np.zeros(n_membranes + 1)
    for s in range(rows.shape[0]):
        a = rows[s, 0]
        b = rows[s, 1]
        d2 = 0.0
        for c in range(3):
            d = position[a, c] - position[b, c]
            d2 += d * d
        stretch = math.sqrt(d2) - rest_length[s]
        m = membrane[s] if membrane[s] >= 0 else n_membranes
        out[m] += 0.5 * stiffness[s] * stretch * stretch
    return out


class SpringForces(System):
    """Forces of every spring in the ``springs`` table (membrane stretching, Eq. (6)).

    ``max_stretch``: the longest a spring may get, as a multiple of its rest
    length; it sets the ghost width this system needs.
    """

    stage = Stage.FORCES
    reads = {"springs": ("rows", "rest_length", "stiffness", "damping", "membrane")}
    reads_ghosts = {"particles": ("position", "velocity")}
    accumulates = {"particles": ("force",)}

    def __init__(self, max_stretch: float = 1.5):
        self.max_stretch = float(max_stretch)

    def interaction_range(self, world) -> float:
        L = world.springs.rest_length
        return self.max_stretch * float(L.max()) if L.size else 0.0

    def run(self, world) -> None:
        p = world.particles
        s = world.springs
        bad = spring_forces(s.rows, s.rest_length, s.stiffness, s.damping,
                            p.with_ghosts("position"), p.with_ghosts("velocity"),
                            p.with_ghosts("force"))
        if bad >= 0:
            raise StateError(
                f"step {world.step}: spring {int(s.gid[bad])} (membrane {int(s.membrane[bad])}, "
                f"particles {s.vertices[bad].tolist()}) has collapsed to zero length: the membrane "
                "folded onto itself; lower the time step or the load, or stiffen the membrane")
