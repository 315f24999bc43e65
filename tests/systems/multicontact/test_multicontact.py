"""Multi-contact DEM (systems/multicontact/systems.py, systems/multicontact/kernels.py) against Eq. (1).

References, derived here:

* Brodu et al. 2015 Eq. (1) as printed, in vector form (``eq1``): n_k, n_c into
  the grain, u_kc from contact point k to c (docs/physics.md,
  Multi-contact DEM); and its closed form for two points at the same
  distance s from the centre, at an angle theta (``on_sphere``; with
  h = sin(theta/2): n_k.u = h, n_c.u = -h, n_k.n_c = cos theta, d = 2 s h):
  opposite contacts gamma (1+nu)(3-2nu) F / (4 pi E s), a flat face
  -gamma (1-nu^2) F / (pi E d) in the limit theta -> 0.
* Hertz: F = (4/3) E* sqrt(R*) Delta^(3/2), E* = E/(1-nu^2) against a rigid
  wall, E/(2(1-nu^2)) between two grains of one material.
* The lagged scheme: the forces of step n use W = sum_k delta_{k->c} of the
  forces and W of step n-1, with contact points at the mean of the deformed
  surfaces, s = (r + W + h)/2 from the centre for a wall at distance h.
  The set-up pass has W = 0 (independent contacts); step 1 is "one pass"; the
  static state is the fixed point F = K (delta + A F)^(3/2).
"""
import math

import numpy as np
import pytest

from helpers import straight_and_resumed
from mpi_scenarios import gather_pair_data
from multicontact_scenarios import compressed_packing

from ecs_dem import Box, World
from ecs_dem.comm import SerialComm
from ecs_dem.components.particles import add_particles, attach_to_wall, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.errors import InputError, StateError
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.hertz_saturated import SaturatedHertzLaw
from ecs_dem.systems.multicontact.systems import (
    MultiContact, MultiContactDisplacements, influence_coefficients, multicontact,
    point_force_displacement)
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

E = 23.3e3  # Pa, the hydrogel of Brodu et al.
NU = 0.3  # every term of Eq. (1) counts (1 - 2 nu != 0)
RHO = 1000.0
R = 5e-3  # m
GAMMA = 1.19
ESTAR_WALL = E / (1.0 - NU**2)
ESTAR_PAIR = E / (2.0 * (1.0 - NU**2))
K_WALL = 4.0 / 3.0 * ESTAR_WALL * math.sqrt(R)


# ------------------------------------------------------------------ references
def eq1(force, xk, nk, xc, nc, gamma=GAMMA):
    """delta_{k->c} of Eq. (1) as printed (n into the grain, u from k to c)."""
    u = np.asarray(xc, float) - np.asarray(xk, float)
    d = np.linalg.norm(u)
    u = u / d
    nk, nc = np.asarray(nk, float), np.asarray(nc, float)
    bracket = ((nk @ u) * (nc @ u) + (3 - 4 * NU) * (nk @ nc)
               - (1 - 2 * NU) * ((nk + u) @ nc) / (1 + nk @ u))
    return -gamma * (1 + NU) * force / (2 * math.pi * E * d) * bracket


def on_sphere(theta, s, force, gamma=GAMMA):
    """Eq. (1) for two points at distance s from the centre, theta apart (module docstring)."""
    h = math.sin(theta / 2)
    bracket = -h * h + (3 - 4 * NU) * math.cos(theta) - (1 - 2 * NU) * (math.cos(theta) - h) / (1 + h)
    return -gamma * (1 + NU) * force * bracket / (2 * math.pi * E * 2 * s * h)


def bisect(f, lo, hi):
    """Root of f in [lo, hi] (f changes sign), to the last bit (at most 200 halvings)."""
    flo = f(lo)
    assert flo * f(hi) < 0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if (f(mid) < 0) == (flo < 0):
            lo, flo = mid, f(mid)
        else:
            hi = mid
    return 0.5 * (lo + hi)


def lagged_wall_steps(normals, overlaps, steps, gamma=GAMMA):
    """(W, F) of a fixed grain at the origin touching walls with these inward normals and
    overlaps, for the set-up pass and `steps` lagged steps, from eq1 (module docstring)."""
    normals = np.asarray(normals, float)
    h = R - np.asarray(overlaps, float)
    W = np.zeros(len(h))
    F = K_WALL * (R - h) ** 1.5
    out = [(W.copy(), F.copy())]
    for _ in range(steps):
        points = -(0.5 * (R + W + h))[:, None] * normals
        W = np.array([sum(eq1(F[k], points[k], normals[k], points[c], normals[c], gamma)
                          for k in range(len(h)) if k != c) for c in range(len(h))])
        F = K_WALL * (R - h + W) ** 1.5
        out.append((W.copy(), F.copy()))
    return out


# ------------------------------------------------------------------ worlds
def mc_world(dt=2e-4, skin=0.2 * R, half=0.05, restitution=1.0, friction=0.03):
    world = World(Box((-half,) * 3, (half,) * 3), dt=dt, skin=skin, sort=False)
    add_species(world, youngs_modulus=E, poisson_ratio=NU, density=RHO, restitution=restitution,
                friction=friction)
    create_particle_table(world)
    return world


def add_mc(world, gamma=GAMMA, law=None, *extra):
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *extra, *multicontact(law or SaturatedHertzLaw(), gamma),
              second):
        world.add_system(s)
    return world


def grain_in_walls(normals, overlaps, gamma=GAMMA):
    world = mc_world()
    add_particles(world, [[0.0, 0.0, 0.0]], R, fixed=True)
    for n, delta in zip(normals, overlaps):
        n = np.asarray(n, float)
        add_wall(world, -(R - delta) * n, n)
    return add_mc(world, gamma)


# ------------------------------------------------------------------ the kernel
def test_kernel_is_equation_1_with_its_closed_forms(rng):
    """point_force_displacement and influence_coefficients (both ways) against eq1 on random
    contact pairs, and eq1's closed forms (opposite, orthogonal, the flat-face limit); zero for
    coincident points and points on the outward normal ray of k."""
    pref = GAMMA * (1 + NU) / (2 * math.pi * E)
    c34, c12 = 3 - 4 * NU, 1 - 2 * NU
    ek = rng.normal(size=(200, 3))
    ec = rng.normal(size=(200, 3))
    ek /= np.linalg.norm(ek, axis=1)[:, None]
    ec /= np.linalg.norm(ec, axis=1)[:, None]
    sk, sc, f = rng.uniform(0.8 * R, R, 200), rng.uniform(0.8 * R, R, 200), rng.uniform(0, 1, 200)
    for a in range(200):
        got = point_force_displacement(f[a], *ek[a], sk[a], *ec[a], sc[a], pref, c34, c12)
        want = eq1(f[a], sk[a] * ek[a], -ek[a], sc[a] * ec[a], -ec[a])
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15 * abs(want))
        back = f[a] * influence_coefficients(*ek[a], sk[a], *ec[a], sc[a], pref, c34, c12)[1]
        want = eq1(f[a], sc[a] * ec[a], -ec[a], sk[a] * ek[a], -ek[a])  # from c to k
        assert back == pytest.approx(want, rel=1e-12, abs=1e-15 * abs(want))
    z, x = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    s = 0.97 * R
    opposite = point_force_displacement(0.1, *z, s, *(-z), s, pref, c34, c12)
    assert opposite == pytest.approx(GAMMA * (1 + NU) * (3 - 2 * NU) * 0.1 / (4 * math.pi * E * s),
                                     rel=1e-13)
    assert opposite == pytest.approx(eq1(0.1, s * z, -z, -s * z, z), rel=1e-13)
    orthogonal = point_force_displacement(0.1, *z, s, *x, s, pref, c34, c12)
    assert orthogonal == pytest.approx(on_sphere(math.pi / 2, s, 0.1), rel=1e-13)
    theta = 1e-4
    e2 = np.array([math.sin(theta), 0.0, math.cos(theta)])
    flat = point_force_displacement(0.1, *z, s, *e2, s, pref, c34, c12)
    d = 2 * s * math.sin(theta / 2)
    assert flat == pytest.approx(on_sphere(theta, s, 0.1), rel=1e-9)
    # the flat-face limit: relative difference 2 (1 - 2 nu) h / (2 - 2 nu) at first order in h
    assert flat == pytest.approx(-GAMMA * (1 - NU**2) * 0.1 / (math.pi * E * d), rel=2e-4)
    assert flat < 0 < orthogonal < opposite  # shielding beside, stiffening across
    assert point_force_displacement(0.1, *z, s, *z, s, pref, c34, c12) == 0.0
    assert point_force_displacement(0.1, *z, s, *z, 1.2 * s, pref, c34, c12) == 0.0


# ------------------------------------------------------------------ hand-computed cases
SQ = 1 / math.sqrt(2)
ANGLE = math.radians(70.0)
CASES = {
    # name: (inward wall normals, overlaps); the grain is fixed at the origin
    "two plates": ([(0, 0, 1), (0, 0, -1)], [0.06 * R, 0.06 * R]),
    "six plates": ([(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)],
                   [0.05 * R] * 6),
    "two at an angle": ([(0, 0, 1), (math.sin(ANGLE), 0, math.cos(ANGLE))], [0.07 * R, 0.04 * R]),
}


def closed_form_fixed_point(name):
    """W of the symmetric cases at the static fixed point, from on_sphere (1-D root)."""
    normals, overlaps = CASES[name]
    delta = overlaps[0]

    def rhs(W):
        s = 0.5 * (R + W + R - delta)
        F = K_WALL * (delta + W) ** 1.5
        total = on_sphere(math.pi, s, F)
        if name == "six plates":
            total += 4 * on_sphere(math.pi / 2, s, F)
        return total - W
    return bisect(rhs, 0.0, 10 * delta)


@pytest.mark.parametrize("name", sorted(CASES))
def test_wall_cases_one_pass_and_fixed_point(name):
    """A fixed grain between plates: the set-up pass is Hertz (W = 0), step 1 the one-pass
    correction of eq1, and the lagged steps converge geometrically to the fixed point (for
    the symmetric cases, the closed form's root) in fewer than 40 steps."""
    normals, overlaps = CASES[name]
    world = grain_in_walls(normals, overlaps)
    steps = 60
    expected = lagged_wall_steps(normals, overlaps, steps)
    p = world.particles
    world.setup()
    np.testing.assert_array_equal(p.mc_wall_displacement[0], 0.0)
    np.testing.assert_allclose(p.mc_wall_force[0], expected[0][1], rtol=1e-13)
    forces = [p.mc_wall_force[0].copy()]
    for n in range(1, steps + 1):
        world.step_once()
        W, F = expected[n]
        np.testing.assert_allclose(p.mc_wall_displacement[0], W, rtol=1e-11)
        np.testing.assert_allclose(p.mc_wall_force[0], F, rtol=1e-11)
        forces.append(p.mc_wall_force[0].copy())
    W1 = expected[1][0]
    if name == "two plates":  # one pass by hand: opposite contacts, points at R - delta/2
        F0 = K_WALL * overlaps[0] ** 1.5
        assert W1[0] == pytest.approx(GAMMA * (1 + NU) * (3 - 2 * NU) * F0
                                      / (4 * math.pi * E * (R - overlaps[0] / 2)), rel=1e-13)
    if name == "six plates":
        F0 = K_WALL * overlaps[0] ** 1.5
        s0 = R - overlaps[0] / 2
        want = on_sphere(math.pi, s0, F0) + 4 * on_sphere(math.pi / 2, s0, F0)
        np.testing.assert_allclose(W1, want, rtol=1e-13)
    if name == "two at an angle":  # unequal overlaps: contact points at different depths
        F0 = K_WALL * np.array(overlaps) ** 1.5
        s0 = R - np.array(overlaps) / 2
        n1, n2 = (np.array(v, float) for v in normals)
        assert W1[1] == pytest.approx(eq1(F0[0], -s0[0] * n1, n1, -s0[1] * n2, n2), rel=1e-13)
    W_star, F_star = expected[-1]
    # opposite and orthogonal contacts stiffen each other; at 70 degrees (nu = 0.3) they shield
    sign = -1 if name == "two at an angle" else 1
    assert np.all(sign * W_star > 0) and np.all(sign * (F_star - expected[0][1]) > 0)
    if name != "two at an angle":
        np.testing.assert_allclose(W_star, closed_form_fixed_point(name), rtol=1e-12)
    # geometric convergence: each contact's error shrinks by a constant factor every two steps
    # (the map couples a contact to the others' forces of the step before)
    err = [abs(f[0] - F_star[0]) / F_star[0] for f in forces]
    first_tight = next(k for k, e in enumerate(err) if e < 1e-12)
    assert first_tight < 40, first_tight
    rates = [err[k + 2] / err[k] for k in range(2, 8)]
    assert max(rates) < 0.1 and max(rates) / min(rates) < 1.05, rates


@pytest.mark.parametrize("iterations", [1, 5])
def test_in_step_iterations_are_the_lagged_steps_compressed(iterations):
    """multicontact(..., iterations=n): each step runs n extra force passes of the
    correction at the step's positions (World.add_force_iteration), so at rest step k is the
    lagged scheme's step k (n + 1) (to 1e-11, as the lagged test), and the walls carry the
    force of the step's own pass only (not the sum over the passes)."""
    normals, overlaps = CASES["two at an angle"]
    world = mc_world()
    add_particles(world, [[0.0, 0.0, 0.0]], R, fixed=True)
    for n, delta in zip(normals, overlaps):
        n = np.asarray(n, float)
        add_wall(world, -(R - delta) * n, n)
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *multicontact(SaturatedHertzLaw(), GAMMA,
                                                     iterations=iterations), second):
        world.add_system(s)
    expected = lagged_wall_steps(normals, overlaps, 4 * (iterations + 1))
    p = world.particles
    world.setup()
    np.testing.assert_allclose(p.mc_wall_force[0], expected[0][1], rtol=1e-13)
    for k in range(1, 5):
        world.step_once()
        W, F = expected[k * (iterations + 1)]
        np.testing.assert_allclose(p.mc_wall_displacement[0], W, rtol=1e-11)
        np.testing.assert_allclose(p.mc_wall_force[0], F, rtol=1e-11)
        total = np.linalg.norm(world.walls.force[:2], axis=1)
        np.testing.assert_allclose(total, F, rtol=1e-11)
    with pytest.raises(InputError, match="iterations must be an integer >= 0"):
        multicontact(SaturatedHertzLaw(), GAMMA, iterations=-1)


def test_a_grain_attached_to_a_wall_never_touches_it():
    """As WallContacts (a membrane's end ring on its platen): a grain attached to wall 0 and
    overlapping it by delta has no contact with it, a free grain with the same overlap has
    the Hertz force K delta^1.5 at the set-up pass, and the wall feels only the free one."""
    delta = 0.02 * R
    world = mc_world()
    add_particles(world, [[-2 * R, 0.0, 0.0], [2 * R, 0.0, 0.0]], R, fixed=True)
    add_wall(world, [0.0, 0.0, -(R - delta)], [0.0, 0.0, 1.0])
    attach_to_wall(world, [0], 0)
    add_mc(world)
    world.setup()
    p = world.particles
    assert p.mc_wall_force[0, 0] == 0.0
    assert p.mc_wall_force[1, 0] == pytest.approx(K_WALL * delta**1.5, rel=1e-13)
    np.testing.assert_array_equal(p.force[0], 0.0)
    assert p.force[1, 2] == pytest.approx(K_WALL * delta**1.5, rel=1e-13)
    np.testing.assert_array_equal(world.walls.force[0], -p.force[1])
    for _ in range(5):  # the free grain's displacement toward the wall is its only one
        world.step_once()
        assert p.mc_wall_force[0, 0] == 0.0 and p.mc_wall_force[1, 0] > 0.0


def test_two_contacts_on_a_flat_face_shield_each_other():
    """Two small grains press on the nearly flat top of a large fixed grain (R = 1 m, contacts
    3 mm apart): each contact's overlap on the large grain is reduced by the other's
    displacement, one pass and at the fixed point, as eq1 (and the flat-face formula to within
    its first-order difference) gives; the small grains, with one contact each, add nothing."""
    big, r, delta0, phi = 1.0, 1e-3, 2e-5, 0.0015
    world = mc_world(half=1.2)
    e = [np.array([math.sin(a), 0.0, math.cos(a)]) for a in (-phi, phi)]
    dist = big + r - delta0
    add_particles(world, [[0.0, 0.0, -big]], big, fixed=True)
    add_particles(world, [[0.0, 0.0, -big] + dist * v for v in e], r, mass=1e6)  # immobile
    add_mc(world)
    world.setup()
    K = 4 / 3 * ESTAR_PAIR * math.sqrt(big * r / (big + r))
    F = np.full(2, K * delta0**1.5)
    W = np.zeros(2)
    for step in range(30):
        got = gather_pair_data(world, ("mc_force", "mc_displacement"))
        for c, key in enumerate([(0, 1), (0, 2)]):
            assert got[key][0] == pytest.approx(F[c], rel=1e-9)
            if step:
                assert got[key][1][0] == pytest.approx(W[c], rel=1e-9)  # the big grain's side
                assert got[key][1][1] == 0.0  # a small grain has no other contact
        world.step_once()
        s = 0.5 * (big + W + dist - r)
        points = [s[c] * e[c] for c in range(2)]
        W = np.array([eq1(F[1 - c], points[1 - c], -e[1 - c], points[c], -e[c]) for c in range(2)])
        F = K * (delta0 + W) ** 1.5
        if step == 0:
            d = np.linalg.norm(points[0] - points[1])
            flat = -GAMMA * (1 - NU**2) * K * delta0**1.5 / (math.pi * E * d)
            assert W[0] == pytest.approx(flat, rel=2 * (1 - 2 * NU) * phi / (2 - 2 * NU) * 1.5)
    assert np.all(W < 0) and np.all(F < K * delta0**1.5)


def test_free_grain_settles_at_the_static_fixed_point_and_stays():
    """A free grain under gravity between two fixed plates, restitution 0.5, at the time step
    of the drivers (0.1 Rayleigh time): the dynamics with lagged forces come to rest at the
    static state solved here (force balance F_bottom - F_top = m g with both forces at their
    fixed point), and stay there."""
    g = 9.81
    gap = 2 * R - 0.12 * R  # plate distance: overlaps of about 6 % of R each
    world = mc_world(dt=5.8e-4, restitution=0.5)
    add_wall(world, (0.0, 0.0, -gap / 2), (0.0, 0.0, 1.0))
    add_wall(world, (0.0, 0.0, gap / 2), (0.0, 0.0, -1.0))
    add_particles(world, [[0.0, 0.0, 0.0]], R)
    add_mc(world, GAMMA, None, Gravity((0.0, 0.0, -g)))
    mass = RHO * 4 / 3 * math.pi * R**3

    def forces_at(z):
        hb, ht = z + gap / 2, gap / 2 - z
        Wb = Wt = 0.0
        for _ in range(200):  # the inner fixed point (a contraction here)
            Fb, Ft = K_WALL * (R - hb + Wb) ** 1.5, K_WALL * (R - ht + Wt) ** 1.5
            sb, st = 0.5 * (R + Wb + hb), 0.5 * (R + Wt + ht)
            Wb = eq1(Ft, (0, 0, st), (0, 0, -1), (0, 0, -sb), (0, 0, 1))
            Wt = eq1(Fb, (0, 0, -sb), (0, 0, 1), (0, 0, st), (0, 0, -1))
        return K_WALL * (R - hb + Wb) ** 1.5, K_WALL * (R - ht + Wt) ** 1.5

    z_star = bisect(lambda z: (lambda f: f[0] - f[1] - mass * g)(forces_at(z)), -0.05 * R, 0.05 * R)
    Fb_star, Ft_star = forces_at(z_star)
    p = world.particles
    history = []
    for _ in range(60):
        world.run(10)
        history.append(abs(p.position[0, 2] - z_star) / R)
    settled = next(k for k, e in enumerate(history) if e < 1e-10)
    assert settled < 50, history
    np.testing.assert_allclose(p.mc_wall_force[0], [Fb_star, Ft_star], rtol=1e-9)
    assert p.position[0, 2] == pytest.approx(z_star, abs=1e-10 * R)
    world.run(1000)  # stable: nothing drifts or grows
    assert p.position[0, 2] == pytest.approx(z_star, abs=1e-10 * R)
    np.testing.assert_allclose(p.mc_wall_force[0], [Fb_star, Ft_star], rtol=1e-9)
    # the correction made it stiffer than independent contacts would be
    assert Ft_star > K_WALL * (R - (gap / 2 - z_star)) ** 1.5


def test_a_contact_forms_at_zero_force_when_deformed_surfaces_meet():
    """Three grains on a line: Q (immobile, moving at constant speed) indents the fixed grain P;
    S (immobile) waits at a gap g beyond P. P's surface toward S bulges by eq1 (opposite
    contact); the pair P-S touches as soon as that bulge closes the gap, while the spheres are
    still apart, and its force starts from zero: no more than Hertz of one step's growth of
    the bulge. Every step's bulge is eq1 of the last step's force. With gamma = 0 it never forms."""
    def run(gamma):
        world = mc_world(dt=2e-4)
        gap = 2.5e-5
        # gids: P = 0 at the origin, Q = 1 on -x, S = 2 on +x
        add_particles(world, [[0.0, 0.0, 0.0]], R, fixed=True)
        add_particles(world, [[-(2 * R - 0.02 * R), 0.0, 0.0], [2 * R + gap, 0.0, 0.0]], R,
                      mass=1e9, velocity=[[0.05, 0.0, 0.0], [0.0, 0.0, 0.0]])
        add_mc(world, gamma)
        world.setup()
        record = []
        for _ in range(150):
            before = gather_pair_data(world, ("mc_force", "mc_offset"))
            world.step_once()
            x = world.particles.position[np.argsort(world.particles.gid)]
            state = gather_pair_data(world, ("mc_force", "mc_displacement"))
            record.append((x.copy(), before, state))
        return record

    K = 4 / 3 * ESTAR_PAIR * math.sqrt(R / 2)
    formed = None
    for n, (x, before, state) in enumerate(run(GAMMA)):
        F_pq = before[(0, 1)][0]
        off_pq, off_ps = before[(0, 1)][1], before[(0, 2)][1]
        # P's contact points along its centre line toward Q (k) and S (c), at the last W
        dq, ds = np.linalg.norm(x[1] - x[0]), np.linalg.norm(x[2] - x[0])
        eq_, es = (x[1] - x[0]) / dq, (x[2] - x[0]) / ds
        sk = 0.5 * (R + off_pq[0] + dq - R - off_pq[1])
        sc = 0.5 * (R + off_ps[0] + ds - R - off_ps[1])
        bulge = eq1(F_pq, sk * eq_, -eq_, sc * es, -es) if F_pq else 0.0
        w_ps = state[(0, 2)][1]
        assert w_ps[0] == pytest.approx(bulge, rel=1e-10, abs=1e-20)
        assert w_ps[1] == 0.0  # S has no other contact
        overlap = 2 * R - ds
        corrected = overlap + w_ps[0]
        if corrected <= 0:
            assert formed is None and state[(0, 2)][0] == 0.0
        elif formed is None:
            formed = n
            growth = bulge - previous_bulge
            assert overlap < 0 < corrected <= growth  # from deformation, not geometry
            assert state[(0, 2)][0] == pytest.approx(K * corrected**1.5, rel=1e-9)
            assert state[(0, 2)][0] < 1e-3 * state[(0, 1)][0]
        previous_bulge = bulge
    assert formed is not None and 20 < formed < 140, formed
    assert all(state[(0, 2)][0] == 0.0 for _, _, state in run(0.0))


# ------------------------------------------------------------------ invariants
@pytest.mark.parametrize("law", [SaturatedHertzLaw(), HertzMindlinLaw()], ids=lambda l: l.name)
def test_gamma_zero_is_the_independent_contact_model_bit_for_bit(law):
    """gamma = 0 against ContactForces + WallContacts with the same law, on a compressed
    packing between moving plates: identical positions, velocities, forces, torques, wall
    forces and contact history after 300 steps."""
    mat = dict(friction=0.3)
    plain = compressed_packing(SerialComm(), law, None, n_side=5, layers=4, material=mat)
    mc = compressed_packing(SerialComm(), law, 0.0, n_side=5, layers=4, material=mat)
    plain.run(300)
    mc.run(300)
    a, b = plain.particles, mc.particles
    assert a.n_owned == b.n_owned == 100
    for f in ("gid", "position", "velocity", "angular_velocity", "force", "torque"):
        np.testing.assert_array_equal(a.owned(f), b.owned(f), err_msg=f)
    np.testing.assert_array_equal(plain.walls.force, mc.walls.force)
    assert np.all(np.abs(plain.walls.force[:, 2]) > 0)
    for f in (h.name for h in law.history):
        np.testing.assert_array_equal(plain.pairs.owned(f), mc.pairs.owned(f))
    touching = sum(s.touching for s in mc.systems if isinstance(s, (ContactForces, WallContacts)))
    assert touching > 200  # pairs and walls, of 100 grains


def test_forces_torques_and_momentum_balance():
    """A compressed cluster in free space (overlapping spheres on a jittered lattice, spinning
    and moving) with MC-DEM and friction: at every step the forces sum to zero and the torques
    balance the moments of the forces (the contact point of each pair is one point for both
    grains), and momentum is conserved."""
    rng = np.random.default_rng(3)
    world = mc_world(dt=2e-4, restitution=0.9, friction=0.5)
    k = np.arange(36)
    pos = np.stack([k % 3, (k // 3) % 3, k // 9], axis=1) * 1.95 * R
    pos = pos - pos.mean(axis=0) + rng.uniform(-0.02, 0.02, pos.shape) * R
    n = k.size
    add_particles(world, pos, R * rng.uniform(0.98, 1.02, n), velocity=rng.normal(0, 0.01, (n, 3)),
                  angular_velocity=rng.normal(0, 5, (n, 3)))
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *multicontact(SaturatedHertzLaw(), GAMMA,
                                                      max_initial_overlap=0.2), second):
        world.add_system(s)
    p = world.particles
    world.setup()
    momentum0 = (p.mass[:, None] * p.velocity).sum(axis=0)
    scale = float(np.abs(p.force).sum())
    assert scale > 0
    for _ in range(50):
        world.step_once()
        f, t, x = p.force, p.torque, p.position
        np.testing.assert_allclose(f.sum(axis=0), 0.0, atol=1e-14 * scale)
        moment = (np.cross(x, f) + t).sum(axis=0)
        np.testing.assert_allclose(moment, 0.0, atol=1e-14 * scale * R)
        np.testing.assert_allclose((p.mass[:, None] * p.velocity).sum(axis=0), momentum0,
                                   atol=1e-14 * scale * world.dt * world.step)
    assert np.count_nonzero(world.pairs.mc_force) > 30
    assert np.count_nonzero(world.pairs.mc_displacement) > 60
    assert np.abs(t).max() > 1e-3 * np.abs(f).max() * R  # friction torques took part


def test_periodic_images_change_nothing():
    """The compressed packing (periodic in x and y) shifted by half its width along x: other
    contacts now cross the periodic face, so other contact sides are computed on periodic-image
    pair rows and summed back by the reverse reduction; forces and every pair's state agree with
    the unshifted run to round-off."""
    law = SaturatedHertzLaw()
    a = compressed_packing(SerialComm(), law, GAMMA, n_side=5, layers=4)
    b = compressed_packing(SerialComm(), law, GAMMA, n_side=5, layers=4, shift_x=0.5)
    a.run(30)
    b.run(30)
    assert b.pairs.n_ghost > 0
    fa, fb = (w.particles.force[np.argsort(w.particles.gid)] for w in (a, b))
    scale = np.abs(fa).max()
    np.testing.assert_allclose(fb, fa, rtol=0, atol=1e-10 * scale)
    sa, sb = (gather_pair_data(w, ("mc_force", "mc_offset")) for w in (a, b))
    assert sa.keys() == sb.keys() and sum(v[0] != 0 for v in sa.values()) > 100
    for key in sa:
        np.testing.assert_allclose(sb[key][0], sa[key][0], rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(sb[key][1], sa[key][1], rtol=0, atol=1e-10 * R)


def test_restart_continues_bit_for_bit(tmp_path):
    """Checkpoint mid-run and continue: positions, forces and every MC-DEM field equal the
    uninterrupted run's bit for bit (the lagged forces and W are in the checkpoint)."""
    build = lambda: compressed_packing(SerialComm(), SaturatedHertzLaw(), GAMMA, n_side=5,  # noqa: E731
                                       layers=4)
    straight, resumed = straight_and_resumed(build, tmp_path / "ck.h5", 40, 40)
    for f in ("gid", "position", "velocity", "force", "torque", "mc_wall_force", "mc_wall_offset"):
        np.testing.assert_array_equal(straight.particles.owned(f), resumed.particles.owned(f))
    for f in ("gid", "mc_force", "mc_offset", "mc_listed"):
        np.testing.assert_array_equal(straight.pairs.owned(f), resumed.pairs.owned(f))
    assert np.count_nonzero(straight.pairs.mc_force) > 50


# ------------------------------------------------------------------ input errors
def test_bad_input_is_refused_with_the_fix():
    with pytest.raises(InputError, match="gamma must be finite and >= 0"):
        multicontact(SaturatedHertzLaw(), gamma=-1.0)
    world = mc_world()
    add_particles(world, [[0.0, 0.0, 0.0]], R)
    first, second = velocity_verlet()
    forces = ContactForces(SaturatedHertzLaw(), model=MultiContact(GAMMA))
    for s in (first, NeighborSearch(), forces, second):
        world.add_system(s)
    with pytest.raises(InputError, match="needs the MultiContactDisplacements of its model"):
        world.setup()
    world = mc_world()
    add_particles(world, [[0.0, 0.0, 0.0]], R)
    displacements, forces, walls = multicontact(SaturatedHertzLaw())
    for s in (first, NeighborSearch(), forces, displacements, walls, second):
        world.add_system(s)
    with pytest.raises(InputError, match="in the order it returns them"):
        world.setup()
    with pytest.raises(InputError, match="newton=True"):
        ContactForces(SaturatedHertzLaw(), newton=False, model=MultiContact(GAMMA))
    world = mc_world()
    add_particles(world, [[0.0, 0.0, 0.0]], R)
    for s in (first, NeighborSearch(), ContactForces(SaturatedHertzLaw()),
              *multicontact(SaturatedHertzLaw()), second):
        world.add_system(s)
    with pytest.raises(InputError, match="evaluates the same contacts"):
        world.setup()
    assert MultiContactDisplacements  # the class users may subclass


def test_a_correction_without_static_state_stops_with_the_cause():
    """Gain above one (gamma = 30 on a grain squeezed by 10 % between two plates): the fixed-point
    map F = K (delta + A F)^(3/2) has no fixed point, the lagged forces grow without bound, and the
    run stops with an error naming the grain and the cure before the displacement exceeds a
    radius, instead of running on into NaN."""
    world = grain_in_walls([(0, 0, 1), (0, 0, -1)], [0.1 * R, 0.1 * R], gamma=30.0)
    expected = lagged_wall_steps([(0, 0, 1), (0, 0, -1)], [0.1 * R, 0.1 * R], 3, gamma=30.0)
    assert expected[2][1][0] > expected[1][1][0] > expected[0][1][0]  # growing, step after step
    with pytest.raises(StateError, match="gid 0 moved by .* no static state .* Lower gamma"):
        world.run(200)
