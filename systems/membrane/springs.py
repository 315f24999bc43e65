"""Linear spring-dashpots between particles: membrane stretching (Goetz & Poeschel Eqs. (6)-(7)).

Each row of the ``springs`` table (components.springs) joins two particles
(membrane vertices, or any particles). Force on the first, a (Eq. (6) with
the sign of docs/physics.md, Membrane springs, as MercuryDPM):

    F_a = -d^ [k (|d| - L0) + c d^ . (v_a - v_b)],   d = x_a - x_b,   F_b = -F_a

with c = 2 gamma sqrt(k m_eff) for a membrane edge (gamma the damping ratio
of the two-body oscillator, m_eff = m_a m_b / (m_a + m_b)) and
k = sqrt(3)/2 E d (Eq. (7): an equilateral lattice is then a sheet of 2D
modulus E d and Poisson ratio 1/3). Units: N/m for k, N s/m for c.

The spring is evaluated by the owner of its first vertex; a force on a
ghost second vertex comes home through the reverse reduction. A spring
whose ends coincide (length 0: no direction) stops the run with an error
naming it, before a NaN reaches the state.

Time step: velocity Verlet integrates a damped two-body oscillator (stiffness
k, effective mass m_eff, damping ratio zeta = c / (2 sqrt(k m_eff))) stably
for dt < (2 / omega) (sqrt(1 + zeta^2) - zeta), omega = sqrt(k / m_eff)
(Belytschko, Liu & Moran, Nonlinear Finite Elements, Sect. 6.3). A spring in
a network vibrates at least that fast (the Rayleigh quotient of its own
stretching mode), so a dt above the smallest of these limits is unstable for
certain and is refused at the first force evaluation with the spring and
the limit named (``check_time_step``). The network's own limit can be lower,
by about 1.4 for a lattice of equal springs: the check catches a wrong time
step, not one at the edge.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import StateError, UnstableTimeStepError
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


def spring_time_step_limits(rows, stiffness, damping, mass, fixed) -> np.ndarray:
    """Per spring, the largest stable dt [s] of its damped two-body oscillator under velocity
    Verlet (module docstring); a fixed end has infinite mass; inf (not checked) for a spring
    between two fixed ends and for one without stiffness (a pure dashpot)."""
    m = np.where(fixed[rows], np.inf, mass[rows])  # (springs, 2)
    both_free = np.isfinite(m).all(axis=1)
    m_eff = np.where(both_free, m.prod(axis=1) / np.where(both_free, m.sum(axis=1), 1.0),
                     np.where(np.isfinite(m[:, 0]), m[:, 0], m[:, 1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        omega = np.sqrt(stiffness / m_eff)
        zeta = damping / (2.0 * np.sqrt(stiffness * m_eff))
        limit = 2.0 / omega * (np.sqrt(1.0 + zeta * zeta) - zeta)
    return np.where((stiffness > 0.0) & np.isfinite(m_eff), limit, np.inf)


class SpringForces(System):
    """Forces of every spring in the ``springs`` table (membrane stretching, Eq. (6)).

    ``max_stretch``: the longest a spring may get, as a multiple of its rest
    length; it sets the ghost width this system needs. ``check_time_step``:
    refuse a time step above a spring's stable limit (module docstring).
    """

    stage = Stage.FORCES
    reads = {"springs": ("rows", "rest_length", "stiffness", "damping", "membrane")}
    reads_ghosts = {"particles": ("position", "velocity", "mass", "fixed")}
    accumulates = {"particles": ("force",)}

    def __init__(self, max_stretch: float = 1.5, check_time_step: bool = True):
        self.max_stretch = float(max_stretch)
        self.check_time_step = bool(check_time_step)
        self._checked_dt = None  # the time step last checked (a restart may change it)

    def interaction_range(self, world) -> float:
        L = world.springs.rest_length
        return self.max_stretch * float(L.max()) if L.size else 0.0

    def run(self, world) -> None:
        p = world.particles
        s = world.springs
        if self.check_time_step and world.dt != self._checked_dt:
            self._check_time_step(world)
        bad = spring_forces(s.rows, s.rest_length, s.stiffness, s.damping,
                            p.with_ghosts("position"), p.with_ghosts("velocity"),
                            p.with_ghosts("force"))
        if bad >= 0:
            raise StateError(
                f"step {world.step}: spring {int(s.gid[bad])} (membrane {int(s.membrane[bad])}, "
                f"particles {s.vertices[bad].tolist()}) has collapsed to zero length: the membrane "
                "folded onto itself; lower the time step or the load, or stiffen the membrane")

    def _check_time_step(self, world) -> None:
        """At the first force evaluation (rows resolved, ghost masses present) and after a
        change of dt; the smallest limit over all ranks, so every rank decides alike."""
        p, s = world.particles, world.springs
        limits = spring_time_step_limits(s.rows, s.stiffness, s.damping,
                                         p.with_ghosts("mass"), p.with_ghosts("fixed"))
        k = int(np.argmin(limits)) if limits.size else -1
        mine = float(limits[k]) if k >= 0 else np.inf
        limit = -float(world.comm.max(-mine)) if world.comm.size > 1 else mine
        self._checked_dt = world.dt
        if world.dt > limit:
            where = (f": spring {int(s.gid[k])} (membrane {int(s.membrane[k])}, particles "
                     f"{s.vertices[k].tolist()}, k = {s.stiffness[k]:.4g} N/m)"
                     if mine == limit else "")
            raise UnstableTimeStepError(
                f"time step dt = {world.dt:.4g} exceeds the stable limit {limit:.4g} s of the "
                f"stiffest spring{where}. Lower dt below it (a network of springs needs about "
                "0.7 of it), or pass check_time_step=False to SpringForces if you know better")
