"""Membrane stretching: the edge springs of Goetz & Poeschel Eqs. (6)-(7) (systems/membrane/springs.py).

A spring between two free vertices is a two-body oscillator: undamped period
T = 2 pi sqrt(m_eff / k), m_eff = m1 m2 / (m1 + m2); with c = 2 gamma sqrt(k m_eff) the
amplitude falls by exp(-2 pi gamma / sqrt(1 - gamma^2)) per period (docs/physics.md: gamma is
the damping ratio of the two-body oscillator). The builder gives every edge k = sqrt(3)/2 E d
and lumps a third of each triangle's mass on each of its vertices.
"""
import math

import numpy as np
import pytest

from ecs_dem import Box, InputError, StateError, UnstableTimeStepError, World
from ecs_dem.components.membranes import add_membrane
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.systems.membrane.springs import SpringForces, add_springs
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

M1, M2, K, L0 = 2e-4, 5e-4, 40.0, 1e-3  # kg, kg, N/m, m
MEFF = M1 * M2 / (M1 + M2)
OMEGA0 = math.sqrt(K / MEFF)


def oscillator(gamma, stretch=0.05 * L0, steps_per_period=400):
    world = World(Box((-0.01,) * 3, (0.01,) * 3), dt=2 * math.pi / OMEGA0 / steps_per_period)
    add_species(world, youngs_modulus=1e6, poisson_ratio=0.3, density=1000.0)
    add_particles(world, [[0, 0, 0], [L0 + stretch, 0, 0]], 1e-4, mass=[M1, M2])
    add_springs(world, [0], [1], stiffness=K, damping=2 * gamma * math.sqrt(K * MEFF), rest_length=L0)
    first, second = velocity_verlet()
    for s in (first, SpringForces(), second):
        world.add_system(s)
    return world


def extension_history(world, steps):
    p = world.particles
    out = []
    for _ in range(steps):
        world.step_once()
        x = p.position[p.rows_of([0, 1])]
        out.append(np.linalg.norm(x[1] - x[0]) - L0)
    return np.array(out)


def undamped_period(periods=6):
    """(world, measured period, number of upward zero crossings) of the undamped oscillator
    run for `periods` periods: the period from the crossings, linearly interpolated."""
    world = oscillator(0.0)
    s = extension_history(world, 400 * periods)
    t = world.dt * np.arange(1, s.size + 1)
    up = np.flatnonzero((s[:-1] < 0) & (s[1:] >= 0))
    crossings = t[up] - world.dt * s[up + 1] / (s[up + 1] - s[up])  # linear interpolation
    return world, float(np.mean(np.diff(crossings))), len(crossings)


def decay_ratios(gamma, periods=4):
    """(successive peak ratios of the damped oscillator, the two-body oscillator's ratio)."""
    s = extension_history(oscillator(gamma), 400 * periods)
    peaks = [s[k] for k in range(1, s.size - 1) if s[k] > s[k - 1] and s[k] >= s[k + 1]]
    ratios = np.array(peaks[1:]) / np.array(peaks[:-1])
    return ratios, math.exp(-2 * math.pi * gamma / math.sqrt(1 - gamma**2))


def test_undamped_period_is_two_pi_sqrt_meff_over_k():
    world, period, crossings = undamped_period()
    assert crossings >= 4
    assert period == pytest.approx(2 * math.pi / OMEGA0, rel=5e-3)
    # momentum of the free pair is conserved
    p = world.particles
    np.testing.assert_allclose((p.mass[:, None] * p.velocity).sum(axis=0), 0.0, atol=1e-18)


@pytest.mark.parametrize("gamma", [0.02, 0.1])
def test_damped_amplitudes_decay_as_the_two_body_oscillator(gamma):
    ratios, expected = decay_ratios(gamma)
    assert len(ratios) >= 2
    np.testing.assert_allclose(ratios, expected, rtol=1e-2)


def test_builder_gives_eq7_stiffness_damping_ratio_and_lumped_masses():
    E, d, rho, gamma = 2e6, 3e-4, 1100.0, 0.15
    a = 2e-3
    h = a * math.sqrt(3) / 2
    mesh = Mesh([[0, 0, 0], [a, 0, 0], [a / 2, h, 0], [3 * a / 2, h, 0]], [[0, 1, 2], [1, 3, 2]])
    world = World(Box((-0.01,) * 3, (0.01,) * 3), dt=1e-7)
    add_membrane(world, mesh, youngs_modulus=E, thickness=d, density=rho, damping_ratio=gamma)
    p, s = world.particles, world.springs
    area = 0.5 * a * h
    np.testing.assert_allclose(p.mass, np.array([1, 2, 2, 1]) * area * d * rho / 3, rtol=1e-14)
    assert p.mass.sum() == pytest.approx(2 * area * d * rho, rel=1e-14)
    assert world.membranes.mass[0] == pytest.approx(p.mass.sum(), rel=1e-14)
    assert s.n_owned == 5 and world.membrane_hinges.n_owned == 1
    np.testing.assert_allclose(s.stiffness, math.sqrt(3) / 2 * E * d)
    np.testing.assert_allclose(s.rest_length, a)
    m = p.mass[p.rows_of(s.vertices)]
    meff = m[:, 0] * m[:, 1] / m.sum(axis=1)
    np.testing.assert_allclose(s.damping, 2 * gamma * np.sqrt(s.stiffness * meff), rtol=1e-14)
    # the hinge on the shared edge 1-2: wings 0 and 3, edge from 1 to 2 (triangle 0 runs 1 -> 2)
    np.testing.assert_array_equal(world.membrane_hinges.vertices[0], [0, 3, 1, 2])
    assert world.membrane_hinges.rest_angle[0] == pytest.approx(0.0, abs=1e-15)



def two_triangles(**options):
    a = 2e-3
    h = a * math.sqrt(3) / 2
    mesh = Mesh([[0, 0, 0], [a, 0, 0], [a / 2, h, 0], [3 * a / 2, h, 0]], [[0, 1, 2], [1, 3, 2]])
    world = World(Box((-0.01,) * 3, (0.01,) * 3), dt=1e-7)
    add_membrane(world, mesh, youngs_modulus=2e6, thickness=3e-4, density=1100.0, **options)
    return world, 2 * 0.5 * a * h * 3e-4 * 1100.0  # the sheet's mass A d rho


@pytest.mark.parametrize("option, want", [
    ("uniform", lambda total: np.full(4, total / 4)),
    (7e-6, lambda total: np.full(4, 7e-6)),
    ([1e-6, 2e-6, 3e-6, 4e-6], lambda total: np.array([1e-6, 2e-6, 3e-6, 4e-6])),
])
def test_vertex_masses_can_be_uniform_or_given_and_the_damping_ratio_follows_them(option, want):
    gamma = 0.15
    world, total = two_triangles(vertex_mass=option, damping_ratio=gamma)
    p, s = world.particles, world.springs
    np.testing.assert_allclose(p.mass, want(total), rtol=1e-14)
    assert world.membranes.mass[0] == pytest.approx(p.mass.sum(), rel=1e-14)
    m = p.mass[p.rows_of(s.vertices)]
    meff = m[:, 0] * m[:, 1] / m.sum(axis=1)
    np.testing.assert_allclose(s.damping, 2 * gamma * np.sqrt(s.stiffness * meff), rtol=1e-14)


def test_spring_damping_given_as_a_coefficient():
    world, _ = two_triangles(spring_damping=0.02)
    np.testing.assert_array_equal(world.springs.damping, 0.02)


@pytest.mark.parametrize("options, words", [
    (dict(vertex_mass="heavy"), "'heavy' is not 'lumped', 'uniform'"),
    (dict(vertex_mass=[1e-6, 1e-6]), "2 values for 4 vertices"),
    (dict(vertex_mass=-1e-6), "finite and > 0 kg"),
    (dict(spring_damping=-0.1), "spring_damping must be finite and >= 0"),
    (dict(spring_damping=0.1, damping_ratio=0.2), "not both"),
])
def test_bad_membrane_mass_and_damping_options_are_refused(options, words):
    with pytest.raises(InputError, match=words):
        two_triangles(**options)

@pytest.mark.parametrize("gamma", [0.0, 0.15, 1.0])
def test_the_time_step_check_sits_at_the_oscillators_stability_limit(gamma):
    """Velocity Verlet keeps a damped two-body oscillator bounded up to
    dt = (2 / omega) (sqrt(1 + gamma^2) - gamma) and not beyond: the check refuses just above
    it, naming the spring, and lets a run just below it go."""
    limit = 2 / OMEGA0 * (math.sqrt(1 + gamma**2) - gamma)
    below = oscillator(gamma)
    below.dt = 0.99 * limit
    s = extension_history(below, 300)
    assert np.all(np.abs(s) <= 0.05 * L0 * 1.001)
    above = oscillator(gamma)
    above.dt = 1.01 * limit
    with pytest.raises(UnstableTimeStepError, match=r"spring 0 \(membrane -1, particles \[0, 1\]"):
        above.step_once()
    unchecked = oscillator(gamma)
    unchecked.dt = 1.01 * limit
    next(s for s in unchecked.systems if isinstance(s, SpringForces)).check_time_step = False
    with pytest.raises(StateError):  # it grows until the spring leaves the ghost width
        extension_history(unchecked, 300)


def test_a_fixed_end_gives_the_spring_the_free_mass_alone():
    world = oscillator(0.0)
    world.particles.fixed[world.particles.rows_of([1])] = True
    world.dt = 1.01 * 2 / math.sqrt(K / M1)
    with pytest.raises(UnstableTimeStepError):
        world.step_once()
    world = oscillator(0.0)
    world.particles.fixed[world.particles.rows_of([1])] = True
    world.dt = 0.99 * 2 / math.sqrt(K / M1)
    world.run(5)
