"""Liquid-bridge forces against closed forms the test computes itself: Willett et al. (2000),
the half-filling-angle capillary force and lubrication (Lian & Seville's model), rupture at
(1 + theta/2) V^(1/3) (Lian et al. 1993) and zero beyond; bad input."""

import math

import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.errors import InputError
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.wet import capillary
from ecs_dem.systems.wet.laws import (LiquidBridgeWillet, LiquidMigrationLS,
                                      LiquidMigrationWillet)

R1, R2 = 1.0e-3, 0.6e-3
GAMMA = 0.072


def willett_expected(s, r1, r2, volume, gamma, theta):
    """Willett et al. (2000) in their own variables: R the harmonic mean 2 r1 r2 / (r1 + r2),
    S+ = (s / 2) sqrt(R / V), F = 2 pi R gamma cos(theta) / (1 + 2.1 S+ + 10 S+^2)."""
    radius = 2.0 * r1 * r2 / (r1 + r2)
    sp = 0.5 * s * math.sqrt(radius / volume)
    return 2.0 * math.pi * radius * gamma * math.cos(theta) / (1.0 + 2.1 * sp + 10.0 * sp**2)


def filling_expected(s, r1, r2, volume, gamma, theta):
    """The half-filling-angle force in Pitois et al.'s form:
    2 pi R gamma cos(theta) (1 - s / sqrt(s^2 + 2 V / (pi R)))."""
    radius = 2.0 * r1 * r2 / (r1 + r2)
    return 2.0 * math.pi * radius * gamma * math.cos(theta) * (
        1.0 - s / math.sqrt(s * s + 2.0 * volume / (math.pi * radius)))


def test_closed_forms_of_the_module_equal_the_sources():
    rng = np.random.default_rng(3)
    for _ in range(50):
        s, v, theta = rng.uniform(0, 3e-4), rng.uniform(1e-13, 1e-10), rng.uniform(0, 1.5)
        radius = 2.0 * R1 * R2 / (R1 + R2)
        assert capillary.willett_force(s, radius, v, GAMMA, theta) == pytest.approx(
            willett_expected(s, R1, R2, v, GAMMA, theta), rel=1e-12)
        assert capillary.filling_capillary_force(s, radius, v, GAMMA, theta) == pytest.approx(
            filling_expected(s, R1, R2, v, GAMMA, theta), rel=1e-10)
        beta = capillary.half_filling_angle(s, radius, v)  # the volume relation it solves
        volume = math.pi * radius**2 * beta**2 * s + math.pi * radius**3 * beta**4 / 2.0
        assert volume == pytest.approx(v, rel=1e-12)
        assert capillary.rupture_distance(v, theta) == pytest.approx(
            (1.0 + theta / 2.0) * v ** (1.0 / 3.0), rel=1e-15)


def _separating(law, speed=0.05, gap=-2e-6, dt=2e-7, theta=0.0):
    """Two heavy spheres (their speeds change by < 1e-9 relative: the forces are read with
    the positions they were computed at) moving apart along x at `speed` each, from
    overlap -gap. (Two fixed spheres are never a pair.)"""
    world = World(Box((-0.01,) * 3, (0.01,) * 3), dt=dt, skin=5e-5, sort=False)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.5,
                friction=0.3)
    x = 0.5 * (R1 + R2 + gap)
    add_particles(world, [[-x, 0, 0], [x, 0, 0]], [R1, R2], mass=1e6,
                  velocity=[[-speed, 0, 0], [speed, 0, 0]])
    contacts = ContactForces(law)
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), contacts, second):
        world.add_system(s)
    world.setup()
    return world, contacts


def _trace(world, steps, every=10):
    """(separation, force on particle 0 along x) after each `every` steps."""
    out = []
    p = world.particles
    for _ in range(steps // every):
        world.run(every)
        k = int(np.flatnonzero(p.gid == 0)[0])
        sep = abs(p.position[1 - k, 0] - p.position[k, 0]) - (R1 + R2)
        out.append((sep, p.force[k, 0]))
    return out


@pytest.mark.parametrize("base", ["hertz", "linear"])
def test_static_willett_bridge_force_against_separation_and_rupture(base):
    volume, theta_deg = 2e-11, 20.0
    theta = math.radians(theta_deg)
    dry = HertzMindlinLaw() if base == "hertz" else LinearSpringDashpotLaw(kn=1e3, gamman=0.0,
                                                                           friction=0.3)
    law = LiquidBridgeWillet(dry, bridge_volume=volume, contact_angle=theta_deg,
                             surface_tension=GAMMA)
    world, _ = _separating(law, speed=0.5)
    rupture = (1.0 + theta / 2.0) * volume ** (1.0 / 3.0)
    trace = _trace(world, 4000)  # separations up to 2.5 rupture distances
    seen_beyond = seen_near = 0
    for sep, fx in trace:
        if sep <= 0.0:
            continue
        if sep < rupture:
            assert fx == pytest.approx(willett_expected(sep, R1, R2, volume, GAMMA, theta),
                                       rel=1e-10), sep
            seen_near += sep > 0.9 * rupture
        else:
            assert fx == 0.0
            seen_beyond += 1
    assert seen_near and seen_beyond


def test_migrating_willett_uses_the_bridge_volume_it_is_given():
    law = LiquidMigrationWillet(HertzMindlinLaw(), max_bridge_volume=5e-11)
    world, _ = _separating(law, speed=0.5, gap=1e-5)  # apart: no bridge, no force
    world.run(1)
    assert world.particles.force[0, 0] == 0.0
    world.pairs.bridge_volume[:world.pairs.n_owned] = 3e-11
    trace = _trace(world, 2500)  # separations up to 1.6 rupture distances
    rupture = (3e-11) ** (1.0 / 3.0)
    assert any(sep > 0.8 * rupture and f > 0 for sep, f in trace if sep < rupture)
    for sep, fx in trace:
        expected = willett_expected(sep, R1, R2, 3e-11, GAMMA, 0.0) if sep < rupture else 0.0
        assert fx == pytest.approx(expected, rel=1e-10)


def test_lian_seville_capillary_and_lubrication_normal_and_tangential():
    mu, smin, v = 0.05, 2e-6, 4e-11
    law = LiquidMigrationLS(LinearSpringDashpotLaw(kn=1e3, gamman=0.0, friction=0.3),
                            viscosity=mu, min_separation=smin, max_bridge_volume=1e-10)
    speed = 0.05
    world, _ = _separating(law, speed=speed, gap=1e-6)
    p = world.particles
    p.velocity[:, 1] = [0.02, -0.01]  # a sliding component too
    world.pairs.bridge_volume[:world.pairs.n_owned] = v
    rstar = R1 * R2 / (R1 + R2)
    rupture = v ** (1.0 / 3.0)
    checked = 0
    for _ in range(300):
        world.run(25)
        d = p.position[0] - p.position[1]  # particle 0 is i (lower gid)
        r = np.linalg.norm(d)
        n = d / r
        sep = r - (R1 + R2)
        vrel = p.velocity[0] - p.velocity[1]
        f = np.zeros(3)
        if sep < rupture:
            f -= filling_expected(max(sep, 0.0), R1, R2, v, GAMMA, 0.0) * n
            if sep >= smin:
                f -= 6 * math.pi * mu * rstar**2 / sep * np.dot(vrel, n) * n
                vt = vrel - np.dot(vrel, n) * n  # no spin: the contact point's velocity
                f -= 6 * math.pi * mu * rstar * (8 / 15 * math.log(rstar / sep) + 0.9588) * vt
                checked += 1
        np.testing.assert_allclose(p.force[0], f, rtol=1e-10, atol=1e-10 * np.abs(f).max() + 1e-300)
    assert checked > 10


@pytest.mark.parametrize("values, message", [
    ({"contact_angle": 90.0}, "outside \\[0, 90\\)"),
    ({"contact_angle": -1.0}, "outside \\[0, 90\\)"),
    ({"max_bridge_volume": 1e-12, "min_bridge_volume": 2e-12}, "below min_bridge_volume"),
    ({"viscosity": -1.0}, "viscosity"),
])
def test_bad_parameters_are_refused_with_the_fix(values, message):
    with pytest.raises(InputError, match=message):
        LiquidMigrationLS(HertzMindlinLaw(), **values)


def test_rolling_resistance_base_is_refused():
    world = World(Box((-0.01,) * 3, (0.01,) * 3), dt=1e-7, skin=5e-5)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0,
                rolling_friction=0.1)
    add_particles(world, [[0, 0, 0]], R1)
    world.add_system(NeighborSearch())
    world.add_system(ContactForces(LiquidMigrationWillet(HertzMindlinLaw())))
    with pytest.raises(InputError, match="rolling"):
        world.setup()
