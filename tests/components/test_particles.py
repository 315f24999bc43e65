"""The particles table and the input errors a user meets first (components/particles.py).

Bad input must fail early with an error that names the culprit: which field, which gid.
"""
import numpy as np
import pytest

from ecs_dem.errors import InputError, StateError, UnstableTimeStepError
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from helpers import add_particles, add_standard_systems, make_world

E, NU, RHO = 1e8, 0.3, 2500.0


def test_mass_and_inertia_follow_from_species_density():
    world = make_world()
    rows = add_particles(world, [[0, 0, 0], [0.5, 0, 0]], [1e-3, 2e-3])
    p = world.particles
    assert rows == slice(0, 2)
    m = RHO * 4.0 / 3.0 * np.pi * np.array([1e-3, 2e-3]) ** 3
    np.testing.assert_allclose(p.mass, m, rtol=1e-15)
    np.testing.assert_allclose(p.inertia, 0.4 * m * np.array([1e-6, 4e-6]), rtol=1e-15)
    np.testing.assert_array_equal(p.gid, [0, 1])
    assert np.all(p.velocity == 0) and not p.fixed.any() and np.all(p.species == 0)
    # explicit mass, fixed flag and gids
    add_particles(world, [[0.1, 0.1, 0.1]], 1e-3, mass=2.0, fixed=True, gid=[50])
    assert p.mass[2] == 2.0 and p.inertia[2] == pytest.approx(0.4 * 2.0 * 1e-6)
    assert p.fixed[2] and p.gid[2] == 50
    add_particles(world, [[0.2, 0.1, 0.1]], 1e-3)
    assert p.gid[3] == 51  # fresh gids continue after the largest one


def test_second_species_density_is_used():
    from ecs_dem.components.species import add_species

    world = make_world()
    s = add_species(world, youngs_modulus=1e9, poisson_ratio=0.2, density=1000.0)
    assert s == 1
    add_particles(world, [[0, 0, 0], [0.5, 0, 0]], 1e-3, species=[0, 1])
    np.testing.assert_allclose(world.particles.mass / (4 / 3 * np.pi * 1e-9), [RHO, 1000.0])


@pytest.mark.parametrize("radius", [0.0, -1e-3, np.nan, np.inf])
def test_bad_radius_is_refused(radius):
    world = make_world()
    with pytest.raises(InputError, match="radius"):
        add_particles(world, [[0, 0, 0], [0.5, 0, 0]], [1e-3, radius])
    assert world.particles.n_owned == 0


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_position_is_refused(bad):
    world = make_world()
    with pytest.raises(InputError, match="position"):
        add_particles(world, [[0, 0, 0], [0.5, bad, 0]], 1e-3)
    assert world.particles.n_owned == 0


def test_non_finite_position_written_directly_is_caught_at_setup():
    world = make_world()
    add_particles(world, [[0, 0, 0], [0.5, 0, 0]], 1e-3, gid=[4, 9])
    world.particles.position[1, 2] = np.nan
    add_standard_systems(world, HertzMindlinLaw())
    with pytest.raises(InputError, match="gid 9"):
        world.setup()


@pytest.mark.parametrize("kwargs, words", [
    (dict(species=3), ["species"]),
    (dict(species=-1), ["species"]),
    (dict(mass=-1.0), ["mass"]),
    (dict(velocity=[[0, np.nan, 0]]), ["velocity"]),
    (dict(gid=[7, 7]), ["gid"]),
])
def test_other_bad_particle_input(kwargs, words):
    world = make_world()
    if "velocity" in kwargs:
        kwargs["velocity"] = np.repeat(kwargs["velocity"], 2, axis=0)
    with pytest.raises(InputError) as err:
        add_particles(world, [[0, 0, 0], [0.5, 0, 0]], 1e-3, **kwargs)
    for w in words:
        assert w in str(err.value)


def test_gid_already_in_use_is_refused():
    world = make_world()
    add_particles(world, [[0, 0, 0]], 1e-3, gid=[5])
    with pytest.raises(InputError, match="gid"):
        add_particles(world, [[0.5, 0, 0]], 1e-3, gid=[5])


def test_bad_position_shape_and_missing_species():
    world = make_world()
    with pytest.raises(InputError, match="shape"):
        add_particles(world, [[0, 0]], 1e-3)
    from ecs_dem import Box, World

    bare = World(Box((-1, -1, -1), (1, 1, 1)), dt=1e-6)
    with pytest.raises(InputError, match="species"):
        add_particles(bare, [[0, 0, 0]], 1e-3)


# ---------------------------------------------------------------- initial overlaps
def _pair_world(gap_fraction, law=None, **contact_kwargs):
    """Two spheres of radius 1 mm (gids 10 and 20) with centre distance (2 - gap_fraction) r."""
    world = make_world()
    r = 1e-3
    add_particles(world, [[0, 0, 0], [(2 - gap_fraction) * r, 0, 0], [0.5, 0.5, 0.5]], r,
                  gid=[20, 10, 3])
    add_standard_systems(world, law or HertzMindlinLaw(), **contact_kwargs)
    return world


def test_overlap_beyond_tolerance_names_both_gids():
    world = _pair_world(0.08)  # overlap 8 % of the radius, default tolerance 5 %
    with pytest.raises(InputError, match=r"gid 10 and gid 20") as err:
        world.setup()
    assert "8" in str(err.value) and "max_initial_overlap" in str(err.value)


def test_overlap_within_tolerance_is_accepted():
    """Overlap 3 % of the radius (tolerance 5 %): set-up passes and the pair repels with the
    Hertz force (4/3) E* sqrt(R*) delta^(3/2), E* = E / (2 (1 - nu^2)), R* = r/2, then
    separates symmetrically; the far sphere feels nothing."""
    world = _pair_world(0.03)
    world.setup()
    r = 1e-3
    delta = 0.03 * r
    f = 4.0 / 3.0 * E / (2 * (1 - NU**2)) * np.sqrt(r / 2) * delta**1.5
    p = world.particles
    low, high, far = p.rows_of([20, 10, 3])  # gid 20 at the origin, gid 10 on +x
    np.testing.assert_allclose(p.force[high], [f, 0, 0], rtol=1e-12, atol=1e-12 * f)
    np.testing.assert_allclose(p.force[low], [-f, 0, 0], rtol=1e-12, atol=1e-12 * f)
    assert np.all(p.force[far] == 0.0)
    world.run(2)
    v_high, v_low = p.velocity[high, 0], p.velocity[low, 0]
    assert v_high > 0.0 and v_low == pytest.approx(-v_high, rel=1e-12)
    # two steps of a force just under f (the overlap shrinks, the damping opposes the
    # separation): measured 0.996 of 2 dt f / m
    kick = 2 * world.dt * f / p.mass[high]
    assert 0.99 * kick < v_high < kick
    assert np.all(p.velocity[far] == 0.0)


def test_overlap_tolerance_is_adjustable():
    _pair_world(0.08, max_initial_overlap=0.1).setup()
    with pytest.raises(InputError, match="gid 10 and gid 20"):
        _pair_world(0.03, max_initial_overlap=0.02).setup()


def test_overlap_across_a_periodic_face_is_caught():
    world = make_world(periodic=(True, False, False))
    r = 1e-3
    add_particles(world, [[-1 + 0.5 * r, 0, 0], [1 - 0.5 * r, 0, 0]], r, gid=[1, 2])
    add_standard_systems(world, HertzMindlinLaw())
    with pytest.raises(InputError, match="gid 1 and gid 2"):
        world.setup()


# ---------------------------------------------------------------- time step
def rayleigh_time(r):
    G = E / (2 * (1 + NU))
    return np.pi * r * np.sqrt(RHO / G) / (0.1631 * NU + 0.8766)


def _step_world(dt, law, **kwargs):
    world = make_world(dt=dt)
    add_particles(world, [[0, 0, 0], [0.1, 0, 0], [0.2, 0, 0]], [2e-3, 1e-3, 3e-3])
    add_standard_systems(world, law, **kwargs)
    return world


def test_hertz_time_step_limit_is_the_rayleigh_time_of_the_smallest_particle():
    t_r = rayleigh_time(1e-3)
    with pytest.raises(UnstableTimeStepError, match="hertz_mindlin") as err:
        _step_world(1.01 * t_r, HertzMindlinLaw()).setup()
    assert "check_time_step=False" in str(err.value)
    assert isinstance(err.value, InputError)
    _step_world(0.99 * t_r, HertzMindlinLaw()).setup()
    world = _step_world(1.01 * t_r, HertzMindlinLaw(), check_time_step=False)
    world.setup()
    world.run(3)


def test_linear_time_step_limit_is_a_fifth_of_the_lightest_collision_time():
    kn = 1e4
    m_min = RHO * 4 / 3 * np.pi * 1e-9
    t_c = np.pi / np.sqrt(kn / (0.5 * m_min))
    law = lambda: LinearSpringDashpotLaw(kn=kn, gamman=0.0, friction=0.5)  # noqa: E731
    with pytest.raises(UnstableTimeStepError, match="linear_spring_dashpot"):
        _step_world(1.01 * t_c / 5, law()).setup()
    _step_world(0.99 * t_c / 5, law()).setup()
    world = _step_world(1.01 * t_c / 5, law(), check_time_step=False)
    world.setup()
    world.run(3)


# ---------------------------------------------------------------- state errors
def test_nan_appearing_during_a_run_is_a_state_error_naming_the_gid(rng):
    world = make_world(dt=1e-6, skin=1e-4)
    pos = rng.uniform(-0.5, 0.5, (30, 3))
    add_particles(world, pos, 1e-3, gid=np.arange(100, 130),
                  velocity=rng.normal(scale=0.1, size=(30, 3)))
    add_standard_systems(world, HertzMindlinLaw())
    world.run(5)
    p = world.particles
    p.velocity[p.rows_of([117])[0], 1] = np.nan
    with pytest.raises(StateError, match="gid 117"):
        world.run(5)
