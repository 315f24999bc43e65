"""Particle-particle Hertz-Mindlin tangential and rolling springs against analytic values.

Law (systems/contact/hertz_mindlin.py; docs/physics.md, Hertz-Mindlin), for
the pair (i, j) with n the unit normal from j to i and overlap delta:

* F_n = (4/3) E* sqrt(R* delta) delta (restitution 1: no damping),
* tangential: xi += v_t dt with v_t the relative tangential velocity of the
  contact points, v_i - v_j - (a_i w_i + a_j w_j) x n, a = r - delta/2 (contact
  point at mid-overlap); F_t = -(2/3) k_t xi with k_t = 8 G* sqrt(R* delta) while
  |F_t| <= mu F_n, else |F_t| = mu F_n along -xi and |xi| = mu F_n / ((2/3) k_t);
  xi is turned into the current tangent plane each step, keeping its length,
* rolling: xi_r += v_r dt with v_r = -R* (w_i - w_j) x n, F_r = -k_r xi_r,
  k_r = (2/3) k_t, capped at mu_r F_n; torque -R* n x F_r on i, the opposite on j,
* torque of the contact force on i: (-a_i n) x F_i, on j: (a_j n) x F_j (both
  lever arms end at the contact point).

Prescribed kinematics: particle i (gid 0, r = 1.2 mm) is fixed, so it is never
integrated and keeps the angular velocity we give it; particle j (gid 1,
r = 0.8 mm) has a mass of 1e20 kg, so the contact forces (0.05 N) change its
velocity and spin by less than 1e-20 of their values: it moves exactly as
prescribed. With restitution 1 the law has no damping (beta_n = 0), so M*
does not enter. The history is then a pure integral of the prescribed
relative motion, and every force follows from the formulas above evaluated on
the current geometry. Unequal radii make R* = 0.48 mm differ from both radii
and from the lever arms, so a mix-up among them fails.

Material: E = 1e8 Pa, nu = 0.3 (1/E* = 2 (1-nu^2)/E, 1/G* = 2 (2-nu)/G,
G = E / (2 (1+nu))), mu = 0.5, mu_r = 0.1. Overlap 1e-5 m: F_n = 0.0508 N,
k_t = 6270 N/m, sliding after |xi| = 6.07 um.
"""
import math

import numpy as np
import pytest

from helpers import add_particles, add_standard_systems, make_world

from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw

E, NU, RHO = 1e8, 0.3, 2500.0
G = E / (2.0 * (1.0 + NU))
ESTAR = 1.0 / (2.0 * (1.0 - NU**2) / E)
GSTAR = 1.0 / (2.0 * (2.0 - NU) / G)
R_I, R_J = 1.2e-3, 0.8e-3  # m
RSTAR = R_I * R_J / (R_I + R_J)
DELTA = 1e-5  # m
HEAVY = 1e20  # kg
DT = 1e-6  # s
BOX = dict(box_lo=(-0.01,) * 3, box_hi=(0.01,) * 3)


def normal_force(delta):
    return 4.0 / 3.0 * ESTAR * math.sqrt(RSTAR * delta) * delta


def k_el(delta):
    """(2/3) k_t = (2/3) 8 G* sqrt(R* delta): the elastic tangential (and rolling) stiffness."""
    return 2.0 / 3.0 * 8.0 * GSTAR * math.sqrt(RSTAR * delta)


def pair_world(*, w_i=(0, 0, 0), w_j=(0, 0, 0), v_j=(0, 0, 0), mu=0.5, mu_roll=0.1):
    """Fixed sphere i at the origin, heavy sphere j above it (+z) overlapping by DELTA."""
    world = make_world(**BOX, dt=DT, skin=1e-4, sort=False,
                       material=dict(youngs_modulus=E, poisson_ratio=NU, density=RHO,
                                     restitution=1.0, friction=mu, rolling_friction=mu_roll))
    add_particles(world, [[0.0, 0.0, 0.0]], R_I, angular_velocity=[w_i], fixed=True)
    add_particles(world, [[0.0, 0.0, R_I + R_J - DELTA]], R_J, velocity=[v_j],
                  angular_velocity=[w_j], mass=HEAVY)
    add_standard_systems(world, HertzMindlinLaw())
    world.setup()
    assert world.pairs.n_owned == 1 and world.particles.gid.tolist() == [0, 1]
    return world


def geometry(world):
    """n (unit, from j to i), overlap and lever arms from the current positions."""
    x = world.particles.position
    d = x[0] - x[1]
    r = np.linalg.norm(d)
    delta = R_I + R_J - r
    return d / r, delta, R_I - 0.5 * delta, R_J - 0.5 * delta


def split(f, n):
    """Normal magnitude along n and tangential part of a force."""
    fn = f @ n
    return fn, f - fn * n


def test_tangential_spring_sticks_then_slides():
    """Both spheres spin at w = 10 rad/s about y: the contact points slide, the centres stay.

    v_t = -(a_i + a_j) w y x n = (a_i + a_j) w x (n = -z), so after k steps
    xi = k (a_i + a_j) w dt x exactly (no rolling: w_i - w_j = 0). While
    (2/3) k_t |xi| <= mu F_n: F_t on i = -(2/3) k_t xi and
    pairs.tangential_spring = xi (1e-12); from the first step beyond,
    |F_t| = mu F_n and |xi| = mu F_n / ((2/3) k_t) (1e-12). F_n is Hertz's,
    the forces on i and j are opposite, the torques are the lever arms
    crossed with the forces (1e-12), the rolling history stays zero.
    """
    w = 10.0
    world = pair_world(w_i=(0, w, 0), w_j=(0, w, 0))
    p, q = world.particles, world.pairs
    n, delta, a_i, a_j = geometry(world)
    np.testing.assert_array_equal(n, [0.0, 0.0, -1.0])
    fn_exact = normal_force(delta)
    cap = 0.5 * fn_exact
    step_xi = (a_i + a_j) * w * DT
    slip_step = math.floor(cap / (k_el(delta) * step_xi)) + 1
    assert 250 < slip_step < 350
    for k in range(1, 400):
        world.step_once()
        f_i, f_j = p.force[0], p.force[1]
        fn, ft = split(f_i, n)
        assert fn == pytest.approx(fn_exact, rel=1e-12)
        np.testing.assert_allclose(f_j, -f_i, rtol=0, atol=1e-15 * fn_exact)
        xi = q.tangential_spring[0]
        assert abs(xi[1]) + abs(xi[2]) < 1e-20 * abs(xi[0])
        if k < slip_step:
            assert xi[0] == pytest.approx(k * step_xi, rel=1e-12)
            np.testing.assert_allclose(ft, -k_el(delta) * xi, rtol=1e-12, atol=1e-15 * fn_exact)
        else:
            assert np.linalg.norm(ft) == pytest.approx(cap, rel=1e-12)
            assert ft[0] < 0.0
            assert xi[0] == pytest.approx(cap / k_el(delta), rel=1e-12)
        np.testing.assert_allclose(p.torque[0], np.cross(-a_i * n, f_i), rtol=1e-12,
                                   atol=1e-15 * fn_exact * R_I)
        np.testing.assert_allclose(p.torque[1], np.cross(a_j * n, f_j), rtol=1e-12,
                                   atol=1e-15 * fn_exact * R_I)
        np.testing.assert_array_equal(q.rolling_spring[0], 0.0)
    # the heavy sphere really followed its prescribed motion
    np.testing.assert_allclose(p.position[1], [0.0, 0.0, R_I + R_J - DELTA], rtol=1e-15,
                               atol=1e-25)
    np.testing.assert_allclose(p.angular_velocity, [[0, w, 0], [0, w, 0]], rtol=1e-15)


def test_history_follows_the_turning_contact_plane():
    """j translates at v = 0.02 m/s along x past i: the contact normal turns.

    n(t) = -(v t, 0, d)/r(t) with r = sqrt(d^2 + v^2 t^2), and the tangential
    relative velocity has magnitude v d / r. xi stays in the tangent plane
    with its length kept when the plane turns, so its length is the
    integrated relative tangential displacement, sum over steps of
    v d / r_k dt (1e-11; measured 2e-14) = d asinh(v t / d) (1e-9); plain v t
    is 5e-6 too long once the plane has turned by 5.5 mrad, so a history
    that is not kept in the tangent plane fails.
    mu = 1 keeps the contact stuck over 550 steps: F_t = -(2/3) k_t(delta(t)) xi
    with the current overlap delta(t) = r_i + r_j - r(t) (1e-12).
    """
    v = 0.02
    world = pair_world(v_j=(v, 0, 0), mu=1.0)
    p, q = world.particles, world.pairs
    d = p.position[1, 2]
    travelled = 0.0
    for k in range(1, 551):
        world.step_once()
        n, delta, _, _ = geometry(world)
        r = R_I + R_J - delta
        travelled += v * d / r * DT
        xi = q.tangential_spring[0]
        length = np.linalg.norm(xi)
        assert length == pytest.approx(travelled, rel=1e-11)
        assert length == pytest.approx(d * math.asinh(v * k * DT / d), rel=1e-9)
        assert abs(xi @ n) < 1e-12 * length
        assert xi[0] < 0.0  # i moves along -x relative to j
        fn, ft = split(p.force[0], n)
        assert fn == pytest.approx(normal_force(delta), rel=1e-9)
        np.testing.assert_allclose(ft, -k_el(delta) * xi, rtol=1e-9, atol=1e-12 * fn)
        assert np.linalg.norm(ft) < fn  # still stuck (mu = 1)
    assert abs(v * world.time - length) > 4e-6 * length  # the plane turned enough to matter
    assert p.position[1, 0] == pytest.approx(v * world.time, rel=1e-12)


def test_rolling_spring_and_its_cap():
    """Counter-rotation without sliding: a_i w_i + a_j w_j = 0, so only the rolling spring acts.

    w_i = 10 rad/s about y, w_j = -(a_i/a_j) w_i: v_t = 0 and
    v_r = -R* (w_i - w_j) x n = R* w_i (1 + a_i/a_j) x. After k steps
    xi_r = k v_r dt = pairs.rolling_spring (1e-12); torque on i
    -R* n x F_r with F_r = -(2/3) k_t xi_r, i.e. -R* (2/3) k_t |xi_r| y, and the
    opposite on j, until it reaches the cap mu_r F_n R* (1e-12), after which
    |xi_r| = mu_r F_n / ((2/3) k_t). No tangential force (below 1e-9 F_n).
    """
    w = 10.0
    mu_r = 0.1
    world = pair_world(w_i=(0, w, 0), mu_roll=mu_r)
    p, q = world.particles, world.pairs
    n, delta, a_i, a_j = geometry(world)
    p.angular_velocity[1] = (0.0, -a_i / a_j * w, 0.0)
    fn_exact = normal_force(delta)
    vr = RSTAR * w * (1.0 + a_i / a_j)
    slip_step = math.floor(mu_r * fn_exact / (k_el(delta) * vr * DT)) + 1
    assert 50 < slip_step < 150
    for k in range(1, 200):
        world.step_once()
        xr = q.rolling_spring[0]
        assert abs(xr[1]) + abs(xr[2]) < 1e-20 * abs(xr[0])
        if k < slip_step:
            assert xr[0] == pytest.approx(k * vr * DT, rel=1e-12)
            f_r = -k_el(delta) * xr
        else:
            assert xr[0] == pytest.approx(mu_r * fn_exact / k_el(delta), rel=1e-12)
            f_r = -mu_r * fn_exact * xr / np.linalg.norm(xr)
        torque_i = -RSTAR * np.cross(n, f_r)
        assert torque_i[1] < 0.0
        np.testing.assert_allclose(p.torque[0], torque_i, rtol=1e-12, atol=1e-12 * abs(torque_i[1]))
        np.testing.assert_allclose(p.torque[1], -torque_i, rtol=1e-12, atol=1e-12 * abs(torque_i[1]))
        fn, ft = split(p.force[0], n)
        assert fn == pytest.approx(fn_exact, rel=1e-12)
        assert np.linalg.norm(ft) < 1e-9 * fn
        assert np.linalg.norm(q.tangential_spring[0]) < 1e-9 * np.linalg.norm(xr)
    assert np.linalg.norm(p.torque[0]) == pytest.approx(RSTAR * mu_r * fn_exact, rel=1e-12)


def test_rolling_friction_zero_gives_no_rolling_torque():
    """mu_r = 0 (the default): the same counter-rotation leaves the torque zero (1e-12 of mu_r = 0.1's)."""
    w = 5.0
    world = pair_world(w_i=(0, w, 0), mu_roll=0.0)
    p = world.particles
    n, delta, a_i, a_j = geometry(world)
    p.angular_velocity[1] = (0.0, -a_i / a_j * w, 0.0)
    world.run(100)
    assert np.abs(p.torque).max() < 1e-12 * RSTAR * 0.1 * normal_force(delta)
