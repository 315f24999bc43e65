"""Confining stress (systems/membrane/pressure.py): Eqs. (18)-(19) with current areas and normals.

On a closed surface the forces F_i = -sigma dV/dx_i: no net force, no net torque, and the
virial -sum x_i . F_i = 3 sigma V (V from the test's own triple products), whatever the shape.
"""
import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.membranes import add_membrane, set_stress, stress_at
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.species import add_species
from ecs_dem.systems.membrane.systems import membrane_systems


def icosahedron(radius=0.01):
    p = (1 + 5**0.5) / 2
    v = np.array([[-1, p, 0], [1, p, 0], [-1, -p, 0], [1, -p, 0], [0, -1, p], [0, 1, p],
                  [0, -1, -p], [0, 1, -p], [p, 0, -1], [p, 0, 1], [-p, 0, -1], [-p, 0, 1]], float)
    f = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4],
         [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8],
         [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]]
    return Mesh(radius * v / np.linalg.norm(v[0]), np.array(f))


def membrane_world(mesh, sigma):
    world = World(Box((-0.1,) * 3, (0.1,) * 3), dt=1e-7)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    add_membrane(world, mesh, youngs_modulus=1e6, thickness=1e-3, density=1000.0, stress=sigma)
    for s in membrane_systems():
        world.add_system(s)
    return world


def test_closed_surface_feels_no_net_force_or_torque_and_the_virial_is_3_sigma_v(rng):
    mesh = icosahedron()
    perturbed = Mesh(mesh.vertices * rng.uniform(0.8, 1.2, (12, 1)) + rng.normal(0, 1e-3, (12, 3)),
                     mesh.triangles)
    sigma = 2.5e3
    world = membrane_world(perturbed, sigma)
    world.setup()  # springs at rest length (the perturbed mesh is the rest shape): pressure only
    p = world.particles
    x, f = p.position, p.force
    scale = np.abs(f).max()
    assert scale > 0
    np.testing.assert_allclose(f.sum(axis=0), 0.0, atol=1e-12 * scale)
    np.testing.assert_allclose(np.cross(x, f).sum(axis=0), 0.0, atol=1e-12 * scale * 0.02)
    tri = perturbed.triangles
    xv = perturbed.vertices
    volume = np.einsum("ij,ij->i", xv[tri[:, 0]], np.cross(xv[tri[:, 1]], xv[tri[:, 2]])).sum() / 6
    assert volume > 0
    assert -np.einsum("ij,ij->", x, f) == pytest.approx(3 * sigma * volume, rel=1e-12)
    # compressive stress pushes every vertex of a convex-ish body inward on average
    assert np.einsum("ij,ij->", x - x.mean(axis=0), f) < 0


def test_stress_schedule_ramps_then_holds_and_negative_stress_inflates():
    world = membrane_world(icosahedron(), 0.0)
    set_stress(world, 0, -100.0, ramp=(1e-3, 3e-3), start=0.0)
    m = world.membranes
    np.testing.assert_allclose(stress_at(m, 0.0), 0.0)
    np.testing.assert_allclose(stress_at(m, 2e-3), -50.0)
    np.testing.assert_allclose(stress_at(m, 1.0), -100.0)
    world.time = 2e-3  # before set-up, the schedule decides the set-up forces
    world.setup()
    p = world.particles
    outward = np.einsum("ij,ij->i", p.position, p.force)
    assert np.all(outward > 0)  # sigma < 0: the surface is pushed outward


def test_membrane_without_bending_runs_though_its_hinges_reach_farther():
    """Springs and pressure without bending: the ghost width is the springs' and pressure's
    reach, shorter than a hinge's span; the hinges no system uses are not held to it (the
    world runs), while a table a system uses still is (tests/engine/test_references.py)."""
    from ecs_dem import Box, World
    from ecs_dem.components.membranes import add_membrane
    from ecs_dem.components.mesh.generators import icosphere
    from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
    from ecs_dem.systems.membrane.pressure import MembranePressure
    from ecs_dem.systems.membrane.springs import SpringForces

    world = World(Box((-0.05,) * 3, (0.05,) * 3), dt=1e-6, skin=1e-4)
    add_membrane(world, icosphere(0.02, 2), youngs_modulus=1e6, thickness=1e-3, density=1000.0,
                 stress=-10.0)
    first, second = velocity_verlet()
    for s in (first, SpringForces(), MembranePressure(), second):
        world.add_system(s)
    hinge_span = 0.0
    p = world.particles
    for quad in world.membrane_hinges.vertices:
        x = p.position[p.rows_of(quad)]
        hinge_span = max(hinge_span, float(np.linalg.norm(x[1:] - x[0], axis=1).max()))
    world.run(2)
    assert hinge_span > world.domain.ghost_width  # the case the check used to refuse
    assert np.all(np.isfinite(p.position))
