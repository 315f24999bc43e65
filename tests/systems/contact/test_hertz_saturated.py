"""Hertz normal force with saturated friction (systems/contact/hertz_saturated.py).

References: Hertz's static force (4/3) E* sqrt(R*) delta^(3/2) with the Hertz E*
(docs/physics.md, Hertz-Mindlin), and the friction law of Brodu
et al. 2015, Sect. V: |F_t| = mu |F_n| against the slip velocity of the
contact points, whatever its size; torques from the lever arm r - delta/2.
"""
import math

import numpy as np
import pytest

from helpers import add_particles, add_standard_systems, make_world

from ecs_dem.components.walls import add_wall
from ecs_dem.errors import InputError
from ecs_dem.systems.contact.hertz_saturated import SaturatedHertzLaw
from ecs_dem.systems.walls.contacts import WallContacts

R = 1e-3
E = 1e7
NU = 0.3
MU = 0.4
MATERIAL = dict(youngs_modulus=E, poisson_ratio=NU, density=1000.0, restitution=0.8, friction=MU)


def slip_velocity(v, w_i, w_j, n, a_i, a_j):
    """Tangential velocity of i's contact point relative to the partner's (n from partner to i)."""
    vc = v - np.cross(a_i * w_i + a_j * w_j, n)
    return vc - (vc @ n) * n


@pytest.mark.parametrize("speed", [1e-9, 0.3])
def test_friction_is_mu_fn_against_the_slip_at_any_speed(speed):
    """Two spheres at rest overlap by delta with a tangential slip (translation and spin): the
    force on i is F_n n - mu F_n s_hat, F_n = (4/3) E* sqrt(R*) delta^1.5 (no normal motion, so no
    damping), and the torques are -a n x F_t with a = r - delta/2; the pair sums to zero force."""
    world = make_world(dt=1e-7, skin=1e-4, sort=False, material=MATERIAL)
    delta = 0.02 * R
    rj = 0.8 * R
    d = R + rj - delta
    v_i = np.array([speed, -0.5 * speed, 0.0])
    w_i = np.array([0.0, 0.0, 300.0 * speed])
    w_j = np.array([100.0 * speed, 0.0, 0.0])
    add_particles(world, [[0.0, 0.0, d], [0.0, 0.0, 0.0]], [R, rj], velocity=[v_i, [0, 0, 0]],
                  angular_velocity=[w_i, w_j])
    add_standard_systems(world, SaturatedHertzLaw())
    world.setup()
    n = np.array([0.0, 0.0, 1.0])
    estar = E / (2.0 * (1.0 - NU**2))
    fn = 4.0 / 3.0 * estar * math.sqrt(R * rj / (R + rj)) * delta**1.5
    a_i, a_j = R - 0.5 * delta, rj - 0.5 * delta
    slip = slip_velocity(v_i, w_i, w_j, n, a_i, a_j)
    ft = -MU * fn * slip / np.linalg.norm(slip)
    p = world.particles
    k = np.argsort(p.gid)
    force, torque = p.force[k], p.torque[k]
    np.testing.assert_allclose(force[0], fn * n + ft, rtol=1e-12, atol=1e-15 * fn)
    np.testing.assert_allclose(force[1], -force[0], rtol=0, atol=0)
    np.testing.assert_allclose(torque[0], -a_i * np.cross(n, ft), rtol=1e-12, atol=1e-15 * fn * R)
    np.testing.assert_allclose(torque[1], -a_j * np.cross(n, ft), rtol=1e-12, atol=1e-15 * fn * R)
    assert np.linalg.norm(ft) == pytest.approx(MU * fn, rel=1e-12)


def test_no_friction_without_slip_and_rigid_wall_hertz():
    """A sphere at rest on a rigid wall (species -1): E* = E/(1-nu^2), R* = r, no tangential force."""
    world = make_world(dt=1e-7, skin=1e-4, sort=False, material=MATERIAL)
    delta = 0.01 * R
    add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    add_particles(world, [[0.0, 0.0, R - delta]], R)
    law = SaturatedHertzLaw()
    add_standard_systems(world, law, WallContacts(law))
    world.setup()
    fn = 4.0 / 3.0 * E / (1.0 - NU**2) * math.sqrt(R) * delta**1.5
    np.testing.assert_allclose(world.particles.force[0], [0.0, 0.0, fn], rtol=1e-12, atol=0)
    np.testing.assert_array_equal(world.particles.torque[0], 0.0)
    np.testing.assert_allclose(world.walls.force[0], [0.0, 0.0, -fn], rtol=1e-12, atol=0)


def test_rolling_friction_is_refused_with_the_fix():
    world = make_world(material=dict(MATERIAL, rolling_friction=0.1))
    with pytest.raises(InputError, match="rolling_friction = 0"):
        SaturatedHertzLaw().bind(world.species)
