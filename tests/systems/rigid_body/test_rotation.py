"""The rigid-body integrator on torque-free tops (systems/rigid_body/integrator.py): the
space-frame angular momentum is conserved to round-off, the energy error is bounded and
falls as dt^2, and rotation about the intermediate axis is unstable (Dzhanibekov)."""
from __future__ import annotations

import numpy as np

from ecs_dem.components.clumps.template import rotation_matrix
from ecs_dem.systems.rigid_body.integrator import first_half, rotational_energy, second_half

MOMENTS = np.array([[1.0, 2.0, 3.5]]) * 1e-9  # kg m^2, an asymmetric top


class Top:
    """One free body driven by the two kernels, as the systems drive them."""

    def __init__(self, omega_body, moments=MOMENTS, q=(1.0, 0.0, 0.0, 0.0)):
        self.moments = moments.copy()
        self.q = np.array([q], dtype=float) / np.linalg.norm(q)
        rot = rotation_matrix(self.q[0])
        self.L = (rot @ (moments[0] * np.asarray(omega_body, float)))[None].copy()
        self.mass = np.array([1e-6])
        self.zero = np.zeros((1, 3))
        self.com, self.v, self.w, self.d = (np.zeros((1, 3)) for _ in range(4))
        self.previous = np.zeros((1, 4))

    def step(self, dt):
        first_half(1, self.mass, self.moments, self.zero, self.zero, self.com, self.v, self.q,
                   self.L, self.w, self.d, self.previous, dt)
        second_half(1, self.mass, self.moments, self.zero, self.zero, self.v, self.q, self.L,
                    self.w, dt)

    @property
    def energy(self):
        return rotational_energy(self.q, self.L, self.moments)[0]

    @property
    def body_momentum(self):
        return rotation_matrix(self.q[0]).T @ self.L[0]


def test_free_top_conserves_momentum_exactly_and_energy_to_a_bound():
    """10^5 steps at omega dt = 0.006 (a Hertz contact of a mm grain needs dt ~ 1e-6 s at
    spins far below 6000 rad/s): L in the space frame keeps its bits (each sub-rotation
    keeps R pi), the energy stays within 1e-5 relative, with no drift."""
    top = Top([3.0, 20.0, 2.0], q=(0.9, 0.1, -0.3, 0.2))
    L0, E0 = top.L.copy(), top.energy
    dt = 3e-4
    errors = []
    for k in range(100_000):
        top.step(dt)
        if k % 500 == 0:
            errors.append(top.energy / E0 - 1)
    assert np.array_equal(top.L, L0)
    errors = np.abs(errors)
    assert errors.max() < 1e-5
    # bounded, not drifting: the last fifth is no worse than the whole run's first half
    n = len(errors)
    assert errors[4 * n // 5:].max() <= 1.5 * errors[:n // 2].max()
    assert abs(np.linalg.norm(top.q) - 1) < 1e-14


def test_splitting_error_falls_as_dt_squared():
    """Energy error and orientation error after a fixed time, at dt and dt/2: ratio ~4."""
    def run(dt, steps, every):
        top = Top([3.0, 20.0, 2.0], q=(0.9, 0.1, -0.3, 0.2))
        e0 = top.energy
        worst = 0.0
        for k in range(steps):
            top.step(dt)
            if k % every == every - 1:  # the same instants at both steps
                worst = max(worst, abs(top.energy / e0 - 1))
        return worst, rotation_matrix(top.q[0])

    reference = run(2.5e-5, 16_000, 16_000)[1]
    (e1, r1), (e2, r2) = run(4e-4, 1000, 5), run(2e-4, 2000, 10)
    assert 3.2 < e1 / e2 < 4.8
    d1, d2 = np.abs(r1 - reference).max(), np.abs(r2 - reference).max()
    assert 3.2 < d1 / d2 < 4.8


def test_rotation_about_the_intermediate_axis_flips_the_others_are_stable():
    """pi_k of a top spun about axis k with a 1e-4 perturbation: about the intermediate axis
    it reverses within a few growth times (Dzhanibekov effect); about the smallest and the
    largest axes it stays within a narrow cone."""
    spin = 20.0
    i1, i2, i3 = MOMENTS[0]
    growth = spin * np.sqrt((i2 - i1) * (i3 - i2) / (i1 * i3))  # 1/s
    dt = 2e-4
    steps = int(60 / growth / dt)
    for axis in range(3):
        omega = np.full(3, 1e-4 * spin)
        omega[axis] = spin
        top = Top(omega)
        norm = np.linalg.norm(top.L)
        along = []
        for k in range(steps):
            top.step(dt)
            if k % 8 == 0:
                along.append(top.body_momentum[axis] / norm)
        along = np.array(along)
        if axis == 1:
            assert along.min() < -0.99  # flipped
            assert np.count_nonzero(np.diff(np.sign(along)) != 0) >= 2  # and back again
        else:
            assert along.min() > 0.999
