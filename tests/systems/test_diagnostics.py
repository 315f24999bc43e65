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
