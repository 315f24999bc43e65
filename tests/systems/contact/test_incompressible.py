"""Hertz-Mindlin with incompressible grains (nu = 0.5, hydrogels and rubber) against closed forms.

An isotropic material has -1 < nu <= 0.5; at nu = 0.5 the moduli stay finite:
G = E / (2 (1 + nu)) = E / 3, 1/E* = sum of (1 - nu^2)/E = (3/4)/E per body, 1/G* = sum of
(2 - nu)/G = (9/2)/E per body (Hertz and Mindlin, docs/physics.md). A rigid wall adds nothing.
Each test also derives the nu = 0.3 value, which the measurement must miss, so that a law that
ignored nu or clipped it would fail. The head-on Hertz collision at nu = 0.5 is in
test_hertz_mindlin.py (it shares that file's collision).
"""
import math

import numpy as np
import pytest

from helpers import add_particles, add_standard_systems, make_world

from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.walls.contacts import WallContacts
from ecs_dem.errors import InputError
from ecs_dem import Box, World

R = 1e-3  # m
E = 1e8  # Pa
RHO = 2500.0  # kg/m^3
G_ACC = 9.81  # m/s^2
MASS = RHO * 4.0 / 3.0 * math.pi * R**3
BOX = dict(box_lo=(-0.05,) * 3, box_hi=(0.05,) * 3)


def compliances(nu):
    """(1 - nu^2)/E and (2 - nu)/G of one body."""
    return (1.0 - nu * nu) / E, (2.0 - nu) * 2.0 * (1.0 + nu) / E


def material(nu, **kw):
    return dict(youngs_modulus=E, poisson_ratio=nu, density=RHO, **kw)


def test_add_species_takes_one_half_and_refuses_beyond():
    world = World(Box((0, 0, 0), (1, 1, 1)), dt=1e-5)
    assert add_species(world, **material(0.5)) == 0
    assert world.species.poisson_ratio[0] == 0.5
    with pytest.raises(InputError, match=r"poisson_ratio must lie in \(-1, 0.5\]"):
        add_species(world, **material(0.5 + 1e-9))


def test_mindlin_sticking_oscillation_on_a_wall_at_nu_one_half():
    """A sphere resting on a rigid wall under gravity, pushed sideways at v0 with rotation
    suppressed, rings tangentially at omega_0^2 = (2/3) k_t / m with k_t = 8 G* sqrt(R delta),
    G* = G / (2 - nu) = 2E/9 and delta the static Hertz overlap (E* = 4E/3). eps = 1: no
    damping, so x = (v0 / omega_0) sin(omega_0 t). v0 keeps the force at a tenth of mu F_n
    (no sliding). Frequency and amplitude to 3e-3 (nu = 0.3 would be 4 % off)."""
    mu, dt = 0.5, 2e-6

    def omega(nu):
        c_e, c_g = compliances(nu)
        delta = (3.0 * MASS * G_ACC * c_e / (4.0 * math.sqrt(R))) ** (2.0 / 3.0)
        return delta, math.sqrt(2.0 / 3.0 * 8.0 / c_g * math.sqrt(R * delta) / MASS)

    delta, omega_0 = omega(0.5)
    assert 1.0 / compliances(0.5)[1] == pytest.approx(2.0 * E / 9.0, rel=1e-15)
    v0 = 0.1 * mu * MASS * G_ACC / (MASS * omega_0)
    world = make_world(**BOX, dt=dt, skin=1e-4, sort=False,
                       material=material(0.5, restitution=1.0, friction=mu))
    add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    add_particles(world, [[0.0, 0.0, R - delta]], R, velocity=[[v0, 0.0, 0.0]])
    world.particles.inertia[:] = 1e30
    law = HertzMindlinLaw()
    add_standard_systems(world, law, WallContacts(law), Gravity((0.0, 0.0, -G_ACC)))
    world.setup()
    p = world.particles
    period = 2.0 * math.pi / omega_0
    t, x = [0.0], [0.0]
    for _ in range(int(3 * period / dt)):
        world.step_once()
        t.append(world.time)
        x.append(p.position[0, 0])
    t, x = np.array(t), np.array(x)
    k = np.flatnonzero((np.abs(x[1:-1]) > np.abs(x[:-2])) & (np.abs(x[1:-1]) >= np.abs(x[2:]))) + 1
    a, b, c = x[k - 1], x[k], x[k + 1]
    s = 0.5 * (a - c) / (a - 2 * b + c)
    tp, amplitude = t[k] + s * dt, np.abs(b - 0.25 * (a - c) * s)
    assert tp.size >= 5
    measured = np.pi / np.diff(tp).mean()
    assert measured == pytest.approx(omega_0, rel=3e-3)
    assert abs(measured / omega(0.3)[1] - 1.0) > 0.03
    np.testing.assert_allclose(amplitude, v0 / omega_0, rtol=3e-3)
    assert R - p.position[0, 2] == pytest.approx(delta, rel=1e-3)
