"""The barrier against in-plane triangle collapse (systems/membrane/area_barrier.py).

* Its forces are minus the gradient of U = 1/2 K A0 (a_c - a)^2 (a = A / A0), which the test
  differentiates itself by central differences; they sum to zero with zero torque.
* An equilateral triangle whose apex is driven at its fixed base along the median turns where
  the springs and the barrier have stored its kinetic energy: the test solves
  U_springs(h) + U_barrier(h) = E_kin for the apex height h along that path. With the same
  energy and no barrier the springs alone cannot stop it: the run stops with an error naming
  the flattened triangle.
"""
import math

import numpy as np
import pytest

from ecs_dem import Box, InputError, StateError, World
from ecs_dem.components.membranes import add_membrane
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.particles import create_particle_table
from ecs_dem.systems.membrane.area_barrier import MembraneAreaBarrier, area_barrier_forces
from ecs_dem.systems.membrane.systems import membrane_systems
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

E, D, RHO, L = 1e6, 1e-3, 1000.0, 0.01  # Pa, m, kg/m^3, m (edge)
THRESHOLD, STIFFNESS = 0.3, 4.0
K = STIFFNESS * E * D  # N/m


def barrier_energy(x, rest_area, threshold=THRESHOLD, k=K):
    a = 0.5 * np.linalg.norm(np.cross(x[1] - x[0], x[2] - x[0])) / rest_area
    return 0.5 * k * rest_area * (threshold - a) ** 2 if a < threshold else 0.0


def kernel_forces(x, rest_area, threshold=THRESHOLD, k=K):
    force = np.zeros((3, 3))
    acting, collapsed = area_barrier_forces(
        np.array([[0, 1, 2]], np.int32), np.zeros(1, np.int32), np.array([rest_area]),
        np.array([k]), threshold, 0.0, x, force)
    return force, acting, collapsed


def test_barrier_forces_are_minus_the_gradient_of_its_energy(rng):
    rest = np.array([[0.0, 0.0, 0.0], [L, 0.0, 0.0], [0.5 * L, 0.5 * math.sqrt(3) * L, 0.0]])
    rest_area = 0.25 * math.sqrt(3) * L**2
    rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    squashed = rest * [1.2, 0.15, 1.0] + rng.normal(0, 1e-4, (3, 3))  # a about 0.18
    x = squashed @ rotation.T + rng.normal(0, 1e-2, 3)
    force, acting, _ = kernel_forces(x, rest_area)
    assert acting == 1
    h = 1e-8
    gradient = np.zeros((3, 3))
    for i in range(3):
        for c in range(3):
            up, down = x.copy(), x.copy()
            up[i, c] += h
            down[i, c] -= h
            gradient[i, c] = (barrier_energy(up, rest_area)
                              - barrier_energy(down, rest_area)) / (2 * h)
    scale = np.abs(force).max()
    assert scale > 0
    np.testing.assert_allclose(force, -gradient, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(force.sum(axis=0), 0.0, atol=1e-12 * scale)
    np.testing.assert_allclose(np.cross(x, force).sum(axis=0), 0.0, atol=1e-12 * scale)


def test_barrier_is_silent_above_its_threshold_and_flags_a_flat_triangle():
    rest_area = 0.5 * L * L
    x = np.array([[0.0, 0.0, 0.0], [L, 0.0, 0.0], [0.0, 0.31 * L, 0.0]])  # a = 0.31
    force, acting, collapsed = kernel_forces(x, rest_area)
    assert acting == 0 and collapsed == -1 and not force.any()
    x[2, 1] = 0.29 * L
    force, acting, _ = kernel_forces(x, rest_area)
    assert acting == 1 and force[2, 1] > 0  # the apex is pushed away from its base
    flat = x.copy()
    flat[2, 1] = 0.0
    force = np.zeros((3, 3))
    _, collapsed = area_barrier_forces(np.array([[0, 1, 2]], np.int32), np.zeros(1, np.int32),
                                       np.array([rest_area]), np.array([K]), THRESHOLD, 0.05,
                                       flat, force)
    assert collapsed == 0 and np.all(np.isfinite(force))


def triangle_world(stiffness, speed, dt=2e-7):
    """One equilateral triangle, apex 0 driven at the fixed base 1-2 along the median."""
    h0 = 0.5 * math.sqrt(3) * L
    mesh = Mesh(np.array([[0.0, h0, 0.0], [-0.5 * L, 0.0, 0.0], [0.5 * L, 0.0, 0.0]]),
                np.array([[0, 1, 2]]))
    world = World(Box((-0.1,) * 3, (0.1,) * 3), dt=dt)
    create_particle_table(world)
    add_membrane(world, mesh, youngs_modulus=E, thickness=D, density=RHO)
    first, second = velocity_verlet()
    world.add_system(first)
    for s in membrane_systems(collapse_threshold=THRESHOLD, collapse_stiffness=stiffness):
        world.add_system(s)
    world.add_system(second)
    world.setup()  # sorts the rows: find the apex after it
    p = world.particles
    apex = p.gid == world.membranes.first_vertex[0]
    p.velocity[apex] = (0.0, -speed, 0.0)
    p.fixed[~apex] = True
    return world, apex


def turning_height(kinetic, h0):
    """Apex height above the base where the springs and the barrier hold `kinetic` (J)."""
    k_spring = 0.5 * math.sqrt(3) * E * D  # Eq. (7)

    def stored(h):
        side = math.hypot(0.5 * L, h)
        a = h / h0
        barrier = 0.5 * K * (0.5 * L * h0) * (THRESHOLD - a) ** 2 if a < THRESHOLD else 0.0
        return 2 * 0.5 * k_spring * (side - L) ** 2 + barrier

    lo, hi = 0.0, h0  # stored(lo) > kinetic > stored(hi) = 0
    assert stored(lo) > kinetic
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if stored(mid) > kinetic else (lo, mid)
    return 0.5 * (lo + hi)


# kinetic energy between what the springs alone hold at the flat triangle (k L^2 / 4) and
# what springs and barrier hold (k L^2 / 4 + 1/2 K A0 a_c^2)
KINETIC = 0.25 * E * D * L**2


def apex_speed():
    mass = RHO * D * 0.25 * math.sqrt(3) * L**2 / 3  # a third of the triangle's
    return math.sqrt(2 * KINETIC / mass)


def test_apex_driven_at_its_base_turns_where_springs_and_barrier_store_its_kinetic_energy():
    h0 = 0.5 * math.sqrt(3) * L
    expected = turning_height(KINETIC, h0)
    assert expected < THRESHOLD * h0  # the barrier takes part
    world, apex = triangle_world(STIFFNESS, apex_speed())
    p = world.particles
    lowest = h0
    for _ in range(2000):
        world.step_once()
        height = p.position[apex, 1][0] - p.position[~apex, 1].mean()
        lowest = min(lowest, height)
        if p.velocity[apex, 1][0] > 0:  # turned back
            break
    else:
        pytest.fail("the apex never turned")
    assert lowest == pytest.approx(expected, rel=2e-3)
    assert lowest > 0.05 * h0


def test_without_the_barrier_the_apex_flattens_the_triangle_and_the_run_stops_naming_it():
    world, _ = triangle_world(0.0, apex_speed())
    with pytest.raises(StateError, match=r"triangle \d+ on vertices \[0, 1, 2\].*squeezed flat"):
        world.run(2000)


@pytest.mark.parametrize("args", [dict(threshold=0.05, collapse=0.05), dict(stiffness=-1.0),
                                  dict(threshold=1.5)])
def test_bad_barrier_parameters_are_refused(args):
    with pytest.raises(InputError, match="area barrier"):
        MembraneAreaBarrier(**args)
