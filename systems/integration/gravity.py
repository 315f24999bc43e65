"""Uniform body force: gravity, or any constant acceleration (LAMMPS ``fix gravity``)."""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System


@kernel
def add_body_force(mass, fixed, acceleration, force, assign=False, inertia=None):
    """force[i] += mass[i] * acceleration for rows that are not fixed [N]; with ``assign``
    force[i] = 0.0 + mass[i] * acceleration instead (the body force as the first
    contribution of a force pass, in place of zeroing the column: ``System.assigns_owned``;
    the same bits as a zero and an addition, -0.0 products included).

    A fixed row adds 0 * acceleration instead of being skipped: no branch per row over the
    flat force column, which LLVM vectorises; the same bits. With ``inertia`` (a world with
    rigid bodies) rows of negative inertia (pebbles, whose body carries their weight) add
    0 as well; without it numba compiles the test away."""
    # components in registers: otherwise every store to force reloads them (possible aliasing)
    g0 = acceleration[0]
    g1 = acceleration[1]
    g2 = acceleration[2]
    f = force.reshape(3 * mass.size)
    for i in range(mass.size):
        m = 0.0 if fixed[i] else mass[i]
        if inertia is not None:
            m = 0.0 if inertia[i] < 0.0 else m
        f[3 * i] = (0.0 if assign else f[3 * i]) + m * g0
        f[3 * i + 1] = (0.0 if assign else f[3 * i + 1]) + m * g1
        f[3 * i + 2] = (0.0 if assign else f[3 * i + 2]) + m * g2


class Gravity(System):
    """Add m g to every free owned particle; ``acceleration`` in m/s^2.

    In a world with rigid bodies (components.clumps) it adds M g to each owned body and
    nothing to its pebbles (their ``mass`` is the body's, for the contact laws).

    As the first contribution to the force of its pass it sets the owned rows instead,
    and the pass skips zeroing the force (``assigns_owned``; about 1.5 % of the chute's
    step at 32,000 particles, a pass over the whole column)."""

    stage = Stage.FORCES
    reads = {"particles": ("mass", "fixed")}
    accumulates_owned = {"particles": ("force",)}
    assigns_owned = {"particles": ("force",)}

    def __init__(self, acceleration=(0.0, 0.0, -9.81)):
        self.acceleration = np.asarray(acceleration, dtype=np.float64).reshape(3)
        self._free = np.zeros(0, dtype=np.bool_)  # bodies are never fixed
        if not np.all(np.isfinite(self.acceleration)):
            raise InputError(f"gravity: acceleration must be finite (got {acceleration})")

    @classmethod
    def chute(cls, magnitude: float, angle_degrees: float) -> "Gravity":
        """Gravity tilted by `angle` about y, as LAMMPS ``fix gravity ... chute``: (sin a, 0, -cos a) g."""
        a = np.radians(angle_degrees)
        return cls(magnitude * np.array([np.sin(a), 0.0, -np.cos(a)]))

    def declare(self, world) -> None:
        if "bodies" in world.tables:
            self.reads = {"particles": ("mass", "fixed", "inertia"), "bodies": ("mass",)}
            self.accumulates_owned = {"particles": ("force",), "bodies": ("force",)}
            self.assigns_owned = {"particles": ("force",)}

    def run(self, world) -> None:
        mass, fixed, force = world.particles.views(("mass", "fixed", "force"))
        bodies = world.tables.get("bodies")
        if bodies is None:
            add_body_force(mass, fixed, self.acceleration, force, bool(self.assigning))
            return
        add_body_force(mass, fixed, self.acceleration, force, bool(self.assigning),
                       world.particles.inertia[:world.particles.n_owned])
        m, f = bodies.views(("mass", "force"))
        if self._free.size < m.size:
            self._free = np.zeros(2 * m.size, dtype=np.bool_)
        add_body_force(m, self._free[:m.size], self.acceleration, f)
