"""Membrane bending (systems/membrane/bending.py) against Eqs. (8)-(16) and their invariants.

Conventions of docs/physics.md (Membrane bending): wings x1, x2, edge x3 -> x4,
theta = atan2((n1^ x n2^) . e^, n1^ . n2^), u_i = -d theta/d x_i (checked here by finite
differences), F_el,i = k_el |e|^2/(|n1| + |n2|) (sin(theta/2) - sin(theta0/2)) u_i,
F_diss,i = -k_diss |e| omega u_i with omega = sum u_j . v_j.
"""
import math

import numpy as np
import pytest

from ecs_dem.components.mesh.topology import dihedral_angles
from ecs_dem.system import Stage, System
from ecs_dem.systems.membrane.bending import DEGENERATE, FOLDED, bending_forces, hinge_geometry

ROWS = np.array([[0, 1, 2, 3]], dtype=np.int32)


def forces(x, v=None, theta0=0.0, k_el=1.0, k_diss=0.0, factor=1.0, max_fold=3.0):
    f = np.zeros((4, 3))
    bad, kind = bending_forces(ROWS, np.array([theta0]), np.zeros(1, np.int32), np.array([k_el]),
                               np.array([k_diss]), np.array([factor]), x,
                               np.zeros((4, 3)) if v is None else v, f, max_fold)
    return f, bad, kind


def geometry(x):
    g = hinge_geometry(x, 0, 1, 2, 3)
    return g[0], g[1], g[2], g[3], np.array(g[4:]).reshape(4, 3)


def folded_hinge(L=1.0, h=0.8, fold=0.3):
    """Edge x3 = 0 -> x4 = L e_y; wing x1 at distance h on -x, wing x2 rotated by `fold` about y."""
    x3, x4 = np.zeros(3), np.array([0.0, L, 0.0])
    x1 = np.array([-h, 0.3 * L, 0.0])
    x2 = np.array([h * math.cos(fold), 0.6 * L, h * math.sin(fold)])
    return np.array([x1, x2, x3, x4])


def random_hinges(rng, n=50):
    for _ in range(n):
        x = folded_hinge(L=rng.uniform(0.5, 2), h=rng.uniform(0.3, 1.5), fold=rng.uniform(-2.5, 2.5))
        yield x + rng.normal(scale=0.05, size=x.shape) + rng.normal(size=3)


def test_theta_matches_the_topology_helper_and_u_is_minus_the_gradient(rng):
    for x in random_hinges(rng):
        theta, *_, u = geometry(x)
        assert theta == pytest.approx(dihedral_angles(x, ROWS.astype(np.int64))[0], abs=1e-12)
        grad = np.zeros((4, 3))
        for i in range(4):
            for c in range(3):
                h = 1e-6
                xp, xm = x.copy(), x.copy()
                xp[i, c] += h
                xm[i, c] -= h
                grad[i, c] = (dihedral_angles(xp, ROWS)[0] - dihedral_angles(xm, ROWS)[0]) / (2 * h)
        np.testing.assert_allclose(u, -grad, rtol=0, atol=1e-7 * np.abs(u).max())


def test_forces_sum_to_zero_with_no_net_torque(rng):
    for x in random_hinges(rng):
        f, bad, _ = forces(x, v=rng.normal(size=(4, 3)), theta0=0.2, k_el=2.0, k_diss=0.5)
        assert bad == -1
        scale = np.abs(f).max()
        assert scale > 0
        np.testing.assert_allclose(f.sum(axis=0), 0.0, atol=1e-13 * scale)
        np.testing.assert_allclose(np.cross(x, f).sum(axis=0), 0.0, atol=1e-12 * scale * np.abs(x).max())


def test_flat_hinge_and_hinge_at_rest_feel_no_force():
    flat = folded_hinge(fold=0.0)
    assert geometry(flat)[0] == pytest.approx(0.0, abs=1e-15)
    np.testing.assert_array_equal(forces(flat)[0], 0.0)
    bent = folded_hinge(fold=0.7)
    theta = geometry(bent)[0]
    f, _, _ = forces(bent, theta0=theta)
    np.testing.assert_allclose(f, 0.0, atol=1e-15)


def symmetric_bend(L=1.3, h=0.7, fold=0.4, k_el=3.0):
    """(hinge positions, forces, theta, the Eq. (11) force magnitude on each wing) of a
    symmetric bend: |e| = L, |n1| = |n2| = L h (twice the wing areas); the two outward
    normals (-e_z for wing 1, (-sin fold, 0, cos fold) turned) meet at |theta| = fold."""
    x = folded_hinge(L, h, fold)
    n_len = L * h
    f, _, _ = forces(x, k_el=k_el)
    theta = geometry(x)[0]
    magnitude = k_el * L**2 / (2 * n_len) * abs(math.sin(theta / 2)) * (L / n_len)  # |u1| = |e|/|n1|
    return x, f, theta, magnitude


def test_symmetric_bend_has_the_magnitude_of_eq_11():
    fold = 0.4
    x, f, theta, magnitude = symmetric_bend(fold=fold)
    assert abs(theta) == pytest.approx(fold, rel=1e-12)
    assert np.linalg.norm(f[0]) == pytest.approx(magnitude, rel=1e-12)
    assert np.linalg.norm(f[1]) == pytest.approx(magnitude, rel=1e-12)
    # restoring: a small step along the forces reduces |theta - theta0|
    step = 1e-4 * f / np.abs(f).max()
    assert abs(geometry(x + step)[0]) < abs(theta)


def test_mercurydpm_convention_is_four_times_the_paper(rng):
    x = next(random_hinges(rng, 1))
    paper, _, _ = forces(x, k_el=1.5, k_diss=0.3, v=np.ones((4, 3)), factor=1.0)
    mdpm, _, _ = forces(x, k_el=1.5, k_diss=0.3, v=np.ones((4, 3)), factor=4.0)
    np.testing.assert_allclose(mdpm, 4.0 * paper, rtol=1e-15)


def test_dissipative_forces_never_inject_power(rng):
    powers = []
    for x in random_hinges(rng):
        v = rng.normal(size=(4, 3))
        f, _, _ = forces(x, v=v, k_el=0.0, k_diss=2.0)
        theta, elen, *_, u = geometry(x)
        omega = np.sum(u * v)
        powers.append(np.sum(f * v))
        assert powers[-1] == pytest.approx(-2.0 * elen * omega**2, rel=1e-10)
    assert max(powers) <= 0.0 and min(powers) < 0.0


@pytest.mark.parametrize("theta0", [0.0, 0.7, -2.9])
def test_elastic_force_is_eq_11_at_every_angle_and_folds_wrap(theta0):
    """The kernel's sin(theta / 2) without an arc tangent (bending_kernel) against Eq. (11)
    with theta from the topology helper, from a nearly flat sheet to almost a full fold
    either way; the fold test measures |theta - theta0| the short way round (2 pi apart
    is no fold)."""
    k_el, max_fold = 1.7, np.radians(170.0)
    for fold in np.concatenate([np.linspace(-3.1, 3.1, 41), [1e-7, -1e-7, 3.13, -3.13]]):
        x = folded_hinge(L=1.1, h=0.6, fold=fold)
        theta = dihedral_angles(x, ROWS.astype(np.int64))[0]
        _, elen, n1, n2, u = geometry(x)
        f, bad, kind = forces(x, theta0=theta0, k_el=k_el, max_fold=max_fold)
        gap = abs((theta - theta0 + math.pi) % (2 * math.pi) - math.pi)
        if gap > max_fold:
            assert (bad, kind) == (0, FOLDED) and not np.any(f), (fold, theta0)
            continue
        assert bad == -1, (fold, theta0)
        want = k_el * elen**2 / (n1 + n2) * (math.sin(theta / 2) - math.sin(theta0 / 2)) * u
        np.testing.assert_allclose(f, want, rtol=0, atol=1e-13 * k_el * elen**2 / (n1 + n2)
                                   * np.abs(u).max())


def test_degenerate_and_folded_hinges_are_reported_without_forces():
    x = folded_hinge()
    x[0] = x[2] + 0.5 * (x[3] - x[2])  # wing 1 on the edge: zero area
    f, bad, kind = forces(x)
    assert (bad, kind) == (0, DEGENERATE) and not np.any(f)
    f, bad, kind = forces(folded_hinge(fold=2.9), max_fold=np.radians(150))
    assert (bad, kind) == (0, FOLDED) and not np.any(f)
    assert np.all(np.isfinite(f))


# --- time step: the damper's limit keeps dt lambda_max <= 4 q at any dt (module docstring) ----

RHO_SHEET, D_SHEET, K_DISS = 1000.0, 1e-3, 2e-4  # kg/m^3, m, N s


def two_triangle_world(dt):
    """One hinge (two triangles, open sheet) with bending damping only, vertices free."""
    from ecs_dem import Box, World
    from ecs_dem.components.membranes import add_membrane
    from ecs_dem.components.mesh.surface import Mesh
    from ecs_dem.components.particles import create_particle_table
    from ecs_dem.systems.membrane.bending import MembraneBending
    from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

    x = folded_hinge(L=0.01, h=0.008, fold=0.4)
    world = World(Box((-0.05,) * 3, (0.05,) * 3), dt=dt)
    create_particle_table(world)
    add_membrane(world, Mesh(x, np.array([[0, 3, 2], [1, 2, 3]])), youngs_modulus=1e6,
                 thickness=D_SHEET, density=RHO_SHEET, bending_damping=K_DISS)
    first, second = velocity_verlet()
    bending = MembraneBending()
    for s in (first, bending, second):
        world.add_system(s)
    return world, bending


def hinge_rates():
    """(lambda_h, r_i): the hinge's damping matrix is rank one, C = k |e| u u^T (u stacks
    u_1..u_4), so M^-1 C has the one non-zero eigenvalue lambda_h = k |e| sum_j |u_j|^2 / m_j
    and the vertex rates are r_i = k |e| |u_i|^2 / m_i; vertex masses are a third of each
    incident triangle's mass (x3, x4 carry both triangles)."""
    x = folded_hinge(L=0.01, h=0.008, fold=0.4)
    _, elen, n1, n2, u = geometry(x)
    m = RHO_SHEET * D_SHEET / 3 * np.array([n1 / 2, n2 / 2, (n1 + n2) / 2, (n1 + n2) / 2])
    r = K_DISS * elen * np.sum(u * u, axis=1) / m
    return float(np.sum(r)), r


def explicit_limit():
    """The paper's damper alone, integrated by velocity Verlet: stable for dt < 2 / lambda_h."""
    return 2.0 / hinge_rates()[0]


def step_factor(dt):
    """What one step multiplies the hinge's bending rate omega by: 1 - dt s lambda_h with
    s = min(1, q / (dt max r_i)) (module docstring)."""
    from ecs_dem.systems.membrane.bending import DAMPING_STEP_BOUND

    lam, r = hinge_rates()
    return 1.0 - dt * lam * min(1.0, DAMPING_STEP_BOUND / (dt * r.max()))


def omega(world):
    """The hinge's bending rate sum_j u_j . v_j (rows in mesh order: the world sorts them)."""
    p = world.particles
    order = np.argsort(p.gid)
    return float(np.sum(geometry(p.position[order])[4] * p.velocity[order]))


@pytest.mark.parametrize("fraction", [0.1, 0.95, 1.05, 10.0, 1000.0])
def test_one_step_scales_the_bending_rate_as_the_limited_damper_predicts(fraction):
    """omega <- (1 - dt s lambda_h) omega per step on the half-step velocities (velocities
    tiny: the geometry stays put). Below the limit's reach (0.1: s = 1) this is the paper's
    damper; above the explicit limit 2 / lambda_h the paper's damper would grow (1.05: factor
    below -1), the limited one still decays, at any dt."""
    dt = fraction * explicit_limit()
    world, _ = two_triangle_world(dt)
    world.particles.velocity[:] = 1e-12 * np.random.default_rng(1).standard_normal((4, 3))
    world.setup()
    before = []
    for _ in range(3):  # forces of step n use the velocity after its first half kick
        world.run(1)
        before.append(omega(world))
    expected = step_factor(dt)
    assert abs(expected) < 1.0
    if fraction == 0.1:
        assert expected == pytest.approx(1.0 - 0.1 * 2.0)
    assert before[2] / before[1] == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_the_limited_damper_decays_where_the_papers_damper_grows():
    """200 steps at 1.05 times the explicit limit: the paper's damper multiplies the mode by
    |1 - 2.1| per step (grows 10^8-fold); the limited one damps it."""
    world, _ = two_triangle_world(1.05 * explicit_limit())
    world.particles.velocity[:] = 1e-9 * np.random.default_rng(1).standard_normal((4, 3))
    world.setup()
    w0 = omega(world)
    world.run(200)
    assert abs(omega(world)) < 1e-6 * abs(w0)


class SquashWing(System):
    """At `step`, moves wing x1 towards the edge x3-x4 by `factor` of its distance (the
    triangle's height shrinks, |u_1| = 1 / height grows and so does the damper's rate)."""

    stage = Stage.INTEGRATE_FIRST
    writes = {"particles": ("position",)}

    def __init__(self, step, factor):
        self.step, self.factor = step, factor

    def run(self, world):
        if world.step == self.step:
            p = world.particles
            x1, x3 = (int(np.flatnonzero(p.gid == k)[0]) for k in (0, 2))  # mesh vertices
            p.position[x1, 0] += self.factor * (p.position[x3, 0] - p.position[x1, 0])


def test_a_hinge_squashed_during_a_run_stays_damped():
    """A triangle squashed to 20 % of its height (its rate about 25 times the initial, far
    past the explicit limit at dt = 0.5 of the initial one) keeps decaying: s_h shrinks."""
    world, _ = two_triangle_world(0.5 * explicit_limit())
    world.particles.velocity[:] = 1e-9 * np.random.default_rng(2).standard_normal((4, 3))
    world.add_system(SquashWing(5, 0.8))
    world.setup()
    world.run(10)
    w10 = omega(world)
    world.run(100)
    assert world.step == 110 and abs(omega(world)) < 1e-3 * abs(w10)


def random_closed_mesh(rng):
    """An icosphere with its vertices jittered by up to a third of an edge: triangles of every
    shape, some nearly flat (what grains squeezing a membrane make)."""
    from ecs_dem.components.mesh.topology import hinges
    from ecs_dem.components.mesh.generators import icosphere

    mesh = icosphere(0.01, 2)
    t = mesh.triangles
    edge = np.linalg.norm(mesh.vertices[t[:, 0]] - mesh.vertices[t[:, 1]], axis=1).mean()
    x = mesh.vertices + rng.uniform(-1, 1, mesh.vertices.shape) * edge / 3
    return x, t, hinges(t).astype(np.int32)


def test_the_limit_bounds_the_damping_rate_on_any_mesh(rng):
    """dt lambda_max(M^-1 sum_h s_h C_h) <= 4 q (Cauchy-Schwarz over a hinge's four vertices,
    module docstring), found by power iteration on jittered meshes with random masses at time
    steps 1 to 1000 times the paper's damper's limit; at 0.1 of the smallest r_i's reach
    (every s_h = 1) the operator is the paper's."""
    from ecs_dem.systems.membrane.bending import (DAMPING_STEP_BOUND, damping_rate,
                                                  vertex_damping_rates)

    for _ in range(3):
        x, _, rows = random_closed_mesh(rng)
        mass = rng.uniform(0.5, 2.0, x.shape[0]) * 1e-7
        args = (rows, np.zeros(rows.shape[0], np.int32), np.array([1e-4]), np.array([4.0]), x,
                mass)
        rate = vertex_damping_rates(*args)
        paper = damping_rate(*args)
        for fraction in (1.0, 10.0, 1000.0):
            dt = fraction * 2.0 / paper
            limited = damping_rate(*args, rate=rate, rate_limit=DAMPING_STEP_BOUND / dt)
            assert 0.0 < dt * limited <= 4 * DAMPING_STEP_BOUND * (1 + 1e-9)
        dt = 0.1 * DAMPING_STEP_BOUND / rate.max()
        unlimited = damping_rate(*args, rate=rate, rate_limit=DAMPING_STEP_BOUND / dt)
        assert unlimited == pytest.approx(paper, rel=1e-9)


def test_a_limited_hinge_keeps_momentum_and_dissipates(rng):
    """Scaling a hinge's force keeps it along the u_i: the four forces sum to zero and their
    power -s k |e| omega^2 is negative."""
    from ecs_dem.systems.membrane.bending import vertex_damping_rates

    for x in random_hinges(rng, 20):
        v = rng.normal(size=(4, 3))
        rate = vertex_damping_rates(ROWS, np.zeros(1, np.int32), np.array([1.0]), np.array([1.0]),
                                    x, np.ones(4))
        limit = 0.3 * rate.max()
        f = np.zeros((4, 3))
        bending_forces(ROWS, np.zeros(1), np.zeros(1, np.int32), np.zeros(1), np.array([1.0]),
                       np.array([1.0]), x, v, f, 3.0, rate=rate, rate_limit=limit)
        full, *_ = forces(x, v, k_el=0.0, k_diss=1.0)
        np.testing.assert_allclose(f, 0.3 * full, rtol=1e-12, atol=1e-12 * np.abs(full).max())
        np.testing.assert_allclose(f.sum(axis=0), 0.0, atol=1e-12 * np.abs(f).max())
        assert np.sum(f * v) < 0.0


def test_kept_frames_give_the_forces_of_frames_computed_afresh(rng):
    """MembraneBending reads the frames BendingDampingLoad kept (damping_loads) instead of
    computing them again: the same forces to the last bit, also for hinges of a membrane
    without damping (whose frames damping_loads must keep though it adds no load)."""
    from ecs_dem.systems.membrane.bending import (FRAME_WIDTH, NO_FRAMES, damping_loads,
                                                  rest_terms, vertex_damping_rates)
    from ecs_dem.systems.membrane.bending import bending_kernel, each_own, fold_cosine

    x, _, rows = random_closed_mesh(rng)
    v = rng.normal(size=x.shape)
    membrane = (np.arange(rows.shape[0]) % 2).astype(np.int32)  # membrane 1 is undamped
    k_el, k_diss, factor = np.array([2e-3, 1e-3]), np.array([1e-4, 0.0]), np.array([4.0, 4.0])
    mass = rng.uniform(0.5, 2.0, x.shape[0]) * 1e-7
    rate = vertex_damping_rates(rows, membrane, k_diss, factor, x, mass)
    frames = np.full((rows.shape[0], FRAME_WIDTH), np.nan)
    damping_loads(rows, membrane, k_diss, factor, each_own(factor), x, np.zeros(x.shape[0]),
                  frames)
    rest = rest_terms(rng.uniform(-0.2, 0.2, rows.shape[0]))
    limit = 0.5 * rate.max()
    out = []
    for kept in (frames, NO_FRAMES):
        f = np.zeros(x.shape)
        bad, _ = bending_kernel(rows, rest, membrane, k_el, k_diss, factor, each_own(factor), x,
                                v, f, fold_cosine(np.pi), rate, limit, kept)
        assert bad == -1
        out.append(f)
    assert np.abs(out[1]).max() > 0.0
    assert np.array_equal(out[0], out[1])
