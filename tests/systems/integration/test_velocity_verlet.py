"""Velocity Verlet with rotation: a constant torque spins a sphere up as w = T t / I; a row of
zero inertia (a membrane vertex) has no rotational freedom and keeps w = 0 under any torque.
"""
import numpy as np
import pytest

from ecs_dem import Box, Stage, System, World
from ecs_dem.components.membranes import add_membrane
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.particles import KIND_MEMBRANE_VERTEX, add_particles, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.systems.integration.velocity_verlet import NO_REFERENCE, kick, kick_drift, velocity_verlet

TORQUE = np.array([1e-6, -2e-6, 3e-6])  # N m


class ConstantTorque(System):
    stage = Stage.FORCES
    accumulates = {"particles": ("torque",)}

    def run(self, world) -> None:
        world.particles.torque[:] += TORQUE


def spin_world(inertia):
    world = World(Box((-1,) * 3, (1,) * 3), dt=1e-4)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    add_particles(world, [[0.0, 0.0, 0.0], [0.5, 0.0, 0.0]], 0.01)
    world.particles.inertia[1] = inertia
    first, second = velocity_verlet()
    for s in (first, ConstantTorque(), second):
        world.add_system(s)
    return world


@pytest.mark.parametrize("inertia", [0.0, 1e-9])
def test_constant_torque_spins_a_sphere_up_and_leaves_a_zero_inertia_row_still(inertia):
    world = spin_world(inertia)
    steps = 50
    world.run(steps)
    p = world.particles
    i0 = 0.4 * p.mass[0] * 0.01**2
    np.testing.assert_allclose(p.angular_velocity[0], TORQUE * steps * world.dt / i0, rtol=1e-12)
    if inertia == 0.0:
        assert np.all(p.angular_velocity[1] == 0.0)
    else:
        np.testing.assert_allclose(p.angular_velocity[1], TORQUE * steps * world.dt / inertia,
                                   rtol=1e-12)
    assert np.all(np.isfinite(p.position)) and np.all(p.position[:, 1:] == 0.0)


def test_membrane_vertices_get_no_rotational_freedom():
    world = World(Box((-1,) * 3, (1,) * 3), dt=1e-6)
    create_particle_table(world)
    add_membrane(world, flat_sheet(1e-3, width=4e-3, height=4e-3), youngs_modulus=1e6,
                 thickness=3e-4, density=1000.0, contact="particle", vertex_radius=5e-4)
    p = world.particles
    vertices = p.kind[:p.n_owned] == KIND_MEMBRANE_VERTEX
    assert vertices.sum() > 4
    assert np.all(p.inertia[:p.n_owned][vertices] == 0.0)
    assert np.all(p.mass[:p.n_owned][vertices] > 0.0)


def first_half_rows(rng, n):
    return (rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 3)),
            rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.uniform(1.0, 2.0, n),
            rng.uniform(0.0, 1.0, n), rng.random(n) < 0.2)


@pytest.mark.parametrize("n", [1, 7, 500])
def test_first_half_reports_numpys_largest_squared_displacement_of_the_drifted_rows(n):
    rng = np.random.default_rng(n)
    rows = first_half_rows(rng, n)
    reference = rows[0] + rng.normal(scale=0.1, size=(n, 3))
    expected_rows = tuple(a.copy() for a in rows)
    worst, bad = kick_drift(*rows, 1e-2, reference)
    kick_drift(*expected_rows, 1e-2, NO_REFERENCE)  # the same update without the check
    for got, want in zip(rows, expected_rows):
        assert np.array_equal(got, want)
    assert bad == -1
    assert worst == np.max(np.sum((rows[0] - reference) ** 2, axis=1))


def test_first_half_reports_the_first_non_finite_row_and_the_largest_finite_displacement():
    rng = np.random.default_rng(3)
    rows = first_half_rows(rng, 40)
    rows[3][[9, 25]] = np.inf  # force: the velocity and then the position become non-finite
    rows[7][[9, 25]] = False
    reference = rows[0].copy()
    worst, bad = kick_drift(*rows, 1e-2, reference)
    finite = np.all(np.isfinite(rows[0]), axis=1)
    assert bad == 9 and not finite[9] and not finite[25] and finite.sum() == 38
    assert worst == np.max(np.sum((rows[0] - reference)[finite] ** 2, axis=1))


def test_first_half_without_a_reference_reports_nothing():
    rows = first_half_rows(np.random.default_rng(4), 10)
    assert kick_drift(*rows, 1e-2, NO_REFERENCE) == (0.0, -1)


def expected_half_kick(velocity, angular_velocity, force, torque, mass, inertia, fixed, dt):
    """v + dt/2 F/m and w + dt/2 T/I on free rows (w unchanged where I = 0); fixed rows keep
    both (module docstring of systems.integration.velocity_verlet)."""
    free = ~fixed[:, None]
    v = np.where(free, velocity + 0.5 * dt * force / mass[:, None], velocity)
    spins = free & (inertia[:, None] > 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(spins, angular_velocity + 0.5 * dt * torque / inertia[:, None],
                     angular_velocity)
    return v, w


@pytest.mark.parametrize("n", [1, 13, 300])
def test_both_halves_kick_free_rows_drift_every_row_and_leave_fixed_rows_unkicked(n):
    rng = np.random.default_rng(10 + n)
    dt = 1e-2
    rows = first_half_rows(rng, n)
    rows[6][::4] = 0.0  # rows without rotational freedom
    position, velocity, angular_velocity, force, torque, mass, inertia, fixed = (
        a.copy() for a in rows)
    v, w = expected_half_kick(velocity, angular_velocity, force, torque, mass, inertia, fixed, dt)
    kick_drift(*rows, dt, NO_REFERENCE)
    np.testing.assert_allclose(rows[1], v, rtol=1e-14, atol=0)
    np.testing.assert_allclose(rows[2], w, rtol=1e-14, atol=0)
    np.testing.assert_allclose(rows[0], position + dt * v, rtol=1e-14, atol=1e-15)
    assert np.array_equal(rows[1][fixed], velocity[fixed])  # a fixed row moves at its own v
    v2, w2 = expected_half_kick(rows[1], rows[2], force, torque, mass, inertia, fixed, dt)
    kick(*rows[1:], dt)
    np.testing.assert_allclose(rows[1], v2, rtol=1e-14, atol=0)
    np.testing.assert_allclose(rows[2], w2, rtol=1e-14, atol=0)
    assert np.array_equal(rows[2][fixed], angular_velocity[fixed])
