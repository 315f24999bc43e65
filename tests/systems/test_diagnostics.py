"""systems.diagnostics.kinetic_energy: 1/2 sum m v^2 over a selection of particles, derived here
for particles of chosen masses and speeds, and the time series' compiled sum agrees with it."""
import numpy as np
import pytest

from ecs_dem.systems.diagnostics import kinetic_energies, kinetic_energy
from helpers import add_particles, make_world


def test_kinetic_energy_of_a_selection():
    world = make_world()
    # masses 1, 2, 3 kg at speeds 2, 1, 0.5 m/s: 2 J, 1 J, 0.375 J
    add_particles(world, [[0, 0, 0], [0.1, 0, 0], [0.2, 0, 0]], 0.01,
                  velocity=[[2.0, 0, 0], [0, -1.0, 0], [0, 0.3, 0.4]], mass=[1.0, 2.0, 3.0])
    assert kinetic_energy(world) == pytest.approx(3.375, rel=1e-15)
    p = world.particles
    assert kinetic_energy(world, p.mass > 1.5) == pytest.approx(1.375, rel=1e-15)
    assert kinetic_energy(world, np.array([0])) == 2.0
    assert kinetic_energy(world, np.zeros(3, bool)) == 0.0
    compiled = kinetic_energies(p.velocity, p.angular_velocity, p.mass, p.inertia)[0]
    assert compiled == pytest.approx(kinetic_energy(world), rel=1e-15)


def test_a_spinning_clump_counts_once_from_its_body():
    """A dimer (two touching pebbles of radius r, density rho) moving at v and spinning at w
    about an axis that is no principal axis, beside a free sphere: the energies are the
    body's 1/2 M v^2 and 1/2 w^T I w, with M = 2 rho 4/3 pi r^3 and I derived here from the
    pebbles by the parallel-axis rule, plus the sphere's; the pebbles (each carrying the
    body's mass) are not counted. Without forces both stay constant over 200 steps."""
    import math

    from ecs_dem.components.clumps import library
    from ecs_dem.components.clumps.bodies import add_clumps
    from ecs_dem.components.clumps.template import rotation_matrix
    from ecs_dem.systems.diagnostics import Diagnostics
    from clump_scenarios import add_clump_systems

    r, rho = 1e-3, 2500.0
    world = make_world(material=dict(density=rho), box_lo=(-0.05, -0.05, -0.05),
                       box_hi=(0.05, 0.05, 0.05))
    q = np.array([0.9, 0.3, -0.2, 0.25])
    q /= np.linalg.norm(q)
    v, w = np.array([0.3, -0.1, 0.2]), np.array([40.0, -25.0, 60.0])
    add_clumps(world, library.dimer(r), [[0, 0, 0]], [q], velocity=v, angular_velocity=w)
    add_particles(world, [[0.02, 0, 0]], r, velocity=[[0.5, 0, 0]], angular_velocity=[[0, 0, 9]])
    # the dimer's pebbles at -r and +r on its body axis x
    m = rho * 4 / 3 * math.pi * r**3
    corners = np.array([[-r, 0, 0], [r, 0, 0]])
    inertia = sum(m * (0.4 * r**2 * np.eye(3) + (c @ c) * np.eye(3) - np.outer(c, c))
                  for c in corners)
    rot = rotation_matrix(q)
    inertia = rot @ inertia @ rot.T
    sphere_t, sphere_r = 0.5 * m * 0.25, 0.5 * 0.4 * m * r**2 * 81
    expected_t = 0.5 * 2 * m * v @ v + sphere_t
    expected_r = 0.5 * w @ inertia @ w + sphere_r
    diag = Diagnostics(every=100)
    add_clump_systems(world)
    world.add_system(diag)
    world.setup()
    world.run(200)
    assert len(diag.records) >= 2
    for rec in diag.records:
        assert rec["kinetic_energy"] == pytest.approx(expected_t, rel=1e-12)
        assert rec["rotational_energy"] == pytest.approx(expected_r, rel=1e-9)
    assert kinetic_energy(world) == pytest.approx(expected_t, rel=1e-12)
    pebbles = world.particles.body[:world.particles.n_owned] >= 0
    assert kinetic_energy(world, pebbles) == pytest.approx(expected_t - sphere_t, rel=1e-12)
    assert kinetic_energy(world, ~pebbles) == pytest.approx(sphere_t, rel=1e-12)
