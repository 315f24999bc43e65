"""Planar walls: prescribed motion, the stress servo, and the reaction force on walls.

Systems: systems/walls/motion.py (WallMotion), systems/walls/contacts.py
(WallContacts with the Hertz-Mindlin law). Analytic references: kinematics
(x = x0 + v t), Newton's third law, the static Hertz overlap
F = (4/3) E* sqrt(R) delta^(3/2) with E* = E/(1-nu^2) for a rigid wall
(docs/physics.md, Hertz-Mindlin) and the servo's fixed point
sigma = -F.n / A = target (wall_motion module docstring).
"""
import math

import numpy as np
import pytest

from helpers import add_particles, add_standard_systems, make_world

from ecs_dem.components.particles import attach_to_wall
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.errors import InputError
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts
from ecs_dem.systems.walls.motion import WallMotion

R = 1e-3  # m
E = 1e8  # Pa
NU = 0.3
ESTAR_WALL = E / (1.0 - NU**2)  # rigid wall (species -1)
BOX = dict(box_lo=(-0.05,) * 3, box_hi=(0.05,) * 3)


def hertz_overlap(force):
    """Static overlap of a sphere on a rigid wall carrying `force` (Hertz)."""
    return (3.0 * force / (4.0 * ESTAR_WALL * math.sqrt(R))) ** (2.0 / 3.0)


def wall_world(dt=2e-6, **material):
    mat = dict(youngs_modulus=E, poisson_ratio=NU, density=2500.0, restitution=0.3, friction=0.5)
    mat.update(material)
    return make_world(**BOX, dt=dt, skin=1e-4, sort=False, material=mat)


def add_systems(world, motion=True):
    law = HertzMindlinLaw()
    add_standard_systems(world, law, WallContacts(law))
    if motion:
        world.add_system(WallMotion())
    return law


def test_velocity_wall_moves_by_v_t():
    """mode="velocity": point(t) = point(0) + v t at every step (to round-off); fixed walls stay."""
    world = wall_world()
    v = np.array([0.3, -0.2, 0.5])
    add_wall(world, (0.0, 0.0, -0.01), (0.0, 0.0, 1.0))
    add_wall(world, (0.0, 0.0, -0.02), (0.0, 0.0, 1.0), mode="velocity", velocity=v)
    add_particles(world, [[0.0, 0.0, 0.0]], R)  # far from both walls
    add_systems(world)
    for _ in range(50):
        world.run(20)
        np.testing.assert_allclose(world.walls.point[1], [0.0, 0.0, -0.02] + v * world.time,
                                   rtol=0, atol=1e-15)
        np.testing.assert_allclose(world.walls.velocity[1], v, rtol=0, atol=0)
    assert world.time == pytest.approx(1000 * 2e-6)
    np.testing.assert_array_equal(world.walls.point[0], [0.0, 0.0, -0.01])


def test_moving_wall_velocity_enters_friction():
    """A floor sliding at 0.01 m/s under a sphere held at rest drags it with F_t = +mu F_n.

    The relative contact velocity uses the wall velocity: friction on the
    sphere points along the wall's motion, |F_t| = mu F_n (Coulomb), F_n = m g.
    """
    mu = 0.4
    world = wall_world(friction=mu)
    m = 2500.0 * 4.0 / 3.0 * math.pi * R**3
    add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), mode="velocity", velocity=(0.01, 0.0, 0.0))
    add_particles(world, [[0.0, 0.0, R - hertz_overlap(m * 9.81)]], R)
    world.particles.inertia[:] = 1e30
    law = HertzMindlinLaw()
    add_standard_systems(world, law, WallContacts(law), Gravity())
    world.add_system(WallMotion())
    p = world.particles
    for _ in range(300):
        p.velocity[0, :2] = 0.0
        world.step_once()
    f = p.force[0] - m * np.array([0.0, 0.0, -9.81])  # contact force on the sphere
    assert f[0] == pytest.approx(mu * f[2], rel=1e-9)
    assert f[2] == pytest.approx(m * 9.81, rel=1e-2)


@pytest.mark.parametrize("start_compression", [0.0, 4.0])
def test_servo_wall_holds_target_stress(start_compression):
    """Servo platen on one sphere over a fixed floor (no gravity): -F.n/A -> target.

    Target 1e4 Pa over A = 1 mm^2, i.e. 0.01 N. At the fixed point both
    contacts carry sigma A, so the platen sits at 2R - 2 delta with the Hertz
    overlap delta(sigma A) = 1.670e-6 m. Gain set for a 0.3 ms time constant
    (A / (k_series tau)). Started untouched (the platen advances) or
    overloaded by 4 delta (it retreats). Acceptance 1 %, asserted to 1e-3
    (measured 7e-6 after 4 ms); the gap to 1e-3 (measured 5e-6).
    """
    world = wall_world()
    area, target = 1e-6, 1e4
    force = area * target
    delta = hertz_overlap(force)
    k_series = 0.5 * 1.5 * force / delta  # two Hertz contacts in series, linearised
    gain = area / (k_series * 3e-4)
    add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    top = add_wall(world, (0.0, 0.0, 2 * R - start_compression * delta), (0.0, 0.0, -1.0),
                   mode="servo", area=area, servo_gain=gain, target_stress=target)
    add_particles(world, [[0.0, 0.0, R - 0.5 * start_compression * delta]], R)
    add_systems(world)
    world.run(2000)
    w = world.walls
    sigma = -w.force[top] @ w.normal[top] / area
    assert sigma == pytest.approx(target, rel=1e-3)
    assert -w.force[0] @ w.normal[0] / area == pytest.approx(target, rel=1e-3)
    assert 2 * R - w.point[top, 2] == pytest.approx(2 * delta, rel=1e-3)
    assert abs(w.velocity[top, 2]) < 1e-3 * gain * target  # nearly at rest


def test_wall_force_is_minus_the_contact_forces_on_particles(rng):
    """walls.force[w] = -(sum of the forces wall w puts on particles), per wall (Newton III).

    Three walls (floor, side wall, an oblique plane), five spheres with random
    velocities and spins, each touching one wall; no gravity and no particle
    pairs, so particles.force is the wall contact force. Checked every step to
    round-off while the contacts slide and roll.
    """
    world = wall_world(dt=1e-7, restitution=0.6, rolling_friction=0.05)
    oblique = np.array([-1.0, 0.0, -1.0]) / math.sqrt(2.0)
    corner = np.array([0.03, 0.0, 0.03])
    add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    add_wall(world, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0))
    add_wall(world, corner, oblique)
    d = 0.02 * R  # overlap
    pos = np.array([
        [0.010, 0.000, R - d],  # floor
        [0.015, 0.004, R - d],  # floor
        [R - d, 0.000, 0.010],  # side
        [R - d, 0.005, 0.015],  # side
        corner + (R - d) * oblique + [0.0, 0.006, 0.0],  # oblique
    ])
    touches = np.array([0, 0, 1, 1, 2])
    n = len(pos)
    add_particles(world, pos, R, velocity=rng.normal(scale=0.1, size=(n, 3)),
                  angular_velocity=rng.normal(scale=200.0, size=(n, 3)))
    contacts = WallContacts(HertzMindlinLaw())
    add_standard_systems(world, contacts.law, contacts)
    p, w = world.particles, world.walls
    for _ in range(100):
        world.step_once()
        assert contacts.touching == n
        f = p.force
        for wall in range(3):
            on_particles = f[touches == wall].sum(axis=0)
            assert np.linalg.norm(on_particles) > 0.0
            np.testing.assert_allclose(w.force[wall], -on_particles, rtol=0,
                                       atol=1e-14 * np.abs(on_particles).sum())
        assert np.abs(p.torque).max() > 0.0


def test_wall_measures_stress_displacement_and_strain():
    """Stress -F.n/A, displacement along n, strain (L0 - L)/L0 of opposing walls (diagnostics)."""
    from ecs_dem.systems.diagnostics import wall_measures

    world = make_world()
    add_wall(world, (0, 0, 0), (0, 0, 1), area=2e-4, mode="servo", servo_gain=1e-6, target_stress=1.0)
    add_wall(world, (0, 0, 0.10), (0, 0, -1))
    add_wall(world, (0, 0, 0), (1, 0, 0))
    w = world.walls
    w.point[0] = (0, 0, 0.01)    # bottom platen moved up 10 mm
    w.point[1] = (0, 0, 0.095)   # top platen moved down 5 mm
    w.force[0] = (3.0, 0.0, -5.0)  # the sample pushes the bottom platen down with 5 N
    m = wall_measures(w)
    np.testing.assert_allclose(m["wall_stress"], [5.0 / 2e-4, 0.0, 0.0])
    np.testing.assert_allclose(m["wall_displacement"], [0.01, 0.005, 0.0])
    np.testing.assert_allclose(m["strain"], [0.0, 0.0, 0.015 / 0.10])


@pytest.mark.parametrize("law_name", ["hertz", "linear"])
@pytest.mark.parametrize("h", [0.0, -0.3 * R])
def test_centre_on_or_behind_a_wall_is_pushed_back_out(law_name, h):
    # a particle pushed through a wall (h <= 0) feels the force of its full overlap r - h along
    # the wall normal, for every law: never NaN, never a pull further through
    world = wall_world(dt=1e-7, restitution=1.0)
    normal = np.array([0.0, 0.6, 0.8])
    add_wall(world, (0, 0, 0), normal)
    add_particles(world, h * normal, R)
    kn = 1e3
    law = HertzMindlinLaw() if law_name == "hertz" else LinearSpringDashpotLaw(kn, 0.0, 0.5)
    first, second = velocity_verlet()
    for s in (first, WallContacts(law), second):
        world.add_system(s)
    world.setup()
    delta = R - h
    expected = (4.0 / 3.0 * ESTAR_WALL * math.sqrt(R) * delta**1.5 if law_name == "hertz"
                else kn * delta)
    np.testing.assert_allclose(world.particles.force[0], expected * normal, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(world.particles.torque[0], 0.0)


def test_a_particle_attached_to_a_wall_does_not_touch_it():
    # two equal spheres overlapping the same moving wall by half a radius: the free one feels
    # Hertz's force and loads the wall; the one attached to the wall (a membrane's end ring on
    # its platen) feels nothing from it and moves with it (restitution 1: no damping)
    world = wall_world(dt=1e-7, restitution=1.0)
    add_wall(world, (0, 0, 0), (0, 0, 1), mode="velocity", velocity=(0.0, 0.0, 0.1))
    add_particles(world, [[-0.01, 0, 0.5 * R], [0.01, 0, 0.5 * R]], R)
    attach_to_wall(world, [1], 0)
    first, second = velocity_verlet()
    law = HertzMindlinLaw()
    for s in (first, WallContacts(law), second):
        world.add_system(s)
    world.setup()
    p = world.particles
    free, attached = p.rows_of([0, 1])
    expected = 4.0 / 3.0 * ESTAR_WALL * math.sqrt(R) * (0.5 * R) ** 1.5
    assert p.force[free, 2] == pytest.approx(expected, rel=1e-12)
    np.testing.assert_array_equal(p.force[attached], 0.0)
    assert world.walls.force[0, 2] == pytest.approx(-expected, rel=1e-12)
    world.run(10)
    assert p.position[p.rows_of([1])[0], 2] == pytest.approx(0.5 * R + 10 * 1e-7 * 0.1, rel=1e-12)


class FullSweep(WallContacts):
    """WallContacts sweeping every particle at every step: the reference for the near lists."""

    def near_margin(self, world):
        return math.inf

    def near_list_stale(self, world, O):
        return True


def closing_in(contacts, rng):
    """Grains falling slowly onto the floor from up to 40 skins above it, and an oblique wall
    (velocity mode, 2 m/s) closing in on another layer at rest: the wall crosses many skins
    between domain rebuilds before it pushes the grains, then contacts begin both from the
    grains' motion and from the wall's."""
    skin = 2e-5
    world = make_world(**BOX, dt=2e-6, skin=skin, material=dict(
        youngs_modulus=E, poisson_ratio=NU, density=2500.0, restitution=0.3, friction=0.5))
    add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    normal = np.array([0.3, 0.0, -1.0]) / math.hypot(0.3, 1.0)
    add_wall(world, (0.0, 0.0, 0.02), normal, mode="velocity", velocity=2.0 * normal)
    n = 120
    xy = np.stack([np.arange(n) % 12, np.arange(n) // 12], axis=1) * 3 * R - 0.016
    floor = np.column_stack([xy, R + rng.uniform(0.0, 12 * skin, n)])
    h = R + rng.uniform(0.0, 40 * skin, n)  # gaps of up to 40 skins to the plane
    under_wall = np.column_stack([xy, 0.02 + (h - xy[:, 0] * normal[0]) / normal[2]])
    falling = np.column_stack([np.zeros((n, 2)), -rng.uniform(0.0, 0.1, n)])
    add_particles(world, np.vstack([floor, under_wall]), R,
                  velocity=np.vstack([falling, np.zeros((n, 3))]))
    add_standard_systems(world, contacts.law, contacts)
    world.add_system(WallMotion())
    return world


def test_near_lists_select_the_full_sweeps_contacts_bit_for_bit():
    """The near lists (wall_contacts module docstring) change which particles a step tests,
    never the result: positions, velocities, spins and the walls' forces equal a run that
    sweeps every particle at every step, to the last bit, while contacts begin between
    domain rebuilds and the oblique wall moves far enough to rebuild the lists by itself."""
    listed, full = WallContacts(HertzMindlinLaw()), FullSweep(HertzMindlinLaw())
    worlds = [closing_in(c, np.random.default_rng(8)) for c in (listed, full)]
    began = most = 0
    for _ in range(400):
        before = listed.touching
        for world in worlds:
            world.step_once()
        assert listed.touching == full.touching
        began += max(listed.touching - before, 0)
        most = max(most, listed.touching)
    a, b = (w.particles for w in worlds)
    for f in ("position", "velocity", "angular_velocity"):
        assert np.array_equal(getattr(a, f), getattr(b, f))
    assert np.array_equal(worlds[0].walls.force, worlds[1].walls.force)
    assert began > 50 and most > 10
    rebuilds = worlds[0].domain.rebuild_count
    assert rebuilds > 3  # the grains moved past the skin: the lists were built anew
    assert listed.near_builds > rebuilds  # and the wall moved past it between rebuilds
    assert listed.near_builds < 300  # many steps used the lists
    assert listed.near_count < 0.5 * len(a.position)  # entries: grains near either wall


def test_a_wall_species_changed_between_steps_is_used_at_the_next_step():
    # the wall's material index is part of the kernels' cached arguments: a change of
    # walls.species after set-up must reach them. A resting, overlapping sphere (no velocity,
    # no integrator) feels 4/3 E* sqrt(R) delta^1.5 with E* from the compliance sum
    world = wall_world(dt=1e-7)
    soft_e, soft_nu = 2e7, 0.25
    soft = add_species(world, youngs_modulus=soft_e, poisson_ratio=soft_nu, density=1000.0)
    add_wall(world, (0, 0, 0), (0, 0, 1))
    h = 0.6 * R
    add_particles(world, np.array([[0.0, 0.0, h]]), R)
    world.add_system(WallContacts(HertzMindlinLaw()))
    world.setup()

    def hertz(estar):
        return 4.0 / 3.0 * estar * math.sqrt(R) * (R - h) ** 1.5

    np.testing.assert_allclose(world.particles.force[0, 2], hertz(ESTAR_WALL), rtol=1e-12)
    world.walls.species[0] = soft
    world.step_once()
    soft_estar = 1.0 / ((1.0 - NU**2) / E + (1.0 - soft_nu**2) / soft_e)
    np.testing.assert_allclose(world.particles.force[0, 2], hertz(soft_estar), rtol=1e-12)
    world.walls.species[0] = 2  # no such species
    with pytest.raises(InputError, match=r"walls.species\[0\] = 2 is not a species.*-1 for a rigid"):
        world.step_once()
