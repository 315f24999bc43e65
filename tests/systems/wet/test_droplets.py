"""Spray droplets: ballistic flight, absorption by exactly one particle, loss at walls and out of
the domain, the spray's angles, the liquid balance, and bad input."""

import math

import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.droplets import (CONE, FAN, add_nozzle, spray_directions)
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh_walls import add_mesh_wall
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.components.wet import add_liquid
from ecs_dem.errors import InputError
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.wet.balance import LiquidBalance, liquid_totals
from ecs_dem.systems.wet.droplets import spray

G = np.array([0.0, 0.0, -9.81])
RD = 5e-5


def world_with(particles=(), radius=1e-3, box=0.05, dt=1e-5, periodic=False, gravity=G):
    world = World(Box((-box,) * 3, (box,) * 3, periodic=(periodic,) * 3), dt=dt, skin=2e-4)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0)
    if len(particles):
        add_particles(world, particles, radius)
    return world


def add_spray(world, balance_every=1, gravity=G):
    for s in spray(gravity):
        world.add_system(s)
    balance = LiquidBalance(every=balance_every)
    world.add_system(balance)
    return balance


def ballistic_flight(steps=4000):
    """One droplet flying for `steps` steps after it left the nozzle: (its position and
    velocity, and the closed-form x0 + v0 t + g t^2 / 2 and v0 + g t)."""
    world = world_with([[0.04, 0.04, 0.04]])  # far away: absorbs nothing
    x0, v0 = np.array([-0.01, 0.0, 0.02]), np.array([0.3, 0.1, 0.5])
    add_nozzle(world, x0, v0, droplet_radius=RD, speed=float(np.linalg.norm(v0)), rate=1000.0,
               start=0.0123, stop=0.014)  # one droplet, due at 0.0133 s (the next after stop)
    add_spray(world, balance_every=1000)
    drops = world.tables["droplets"]
    while drops.n_owned == 0:
        world.run(1)
    t_emit = world.time  # it appears at the nozzle at the end of the step it is due in
    assert t_emit >= 0.0133 - 1e-12 and t_emit < 0.0133 + world.dt
    np.testing.assert_array_equal(drops.position[0], x0)
    world.run(steps)
    assert drops.n_owned == 1 and world.tables["nozzles"].emitted[0] == 1
    t = world.time - t_emit
    return (drops.position[0].copy(), drops.velocity[0].copy(), x0 + v0 * t + 0.5 * G * t * t,
            v0 + G * t)


def test_a_droplet_follows_the_ballistic_closed_form():
    x, v, x_expected, v_expected = ballistic_flight()
    np.testing.assert_allclose(x, x_expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v, v_expected, rtol=0, atol=1e-12)


def test_absorption_by_the_nearest_particle_keeps_the_liquid():
    r = 1e-3
    # two particles; the spray goes straight down onto the one at the origin
    world = world_with([[0.0, 0.0, 0.0], [0.0005 + 2 * r + 1e-4, 0.0, 0.0]], radius=r)
    add_liquid(world, [1e-11, 0.0])
    rate = 2000.0
    add_nozzle(world, [0.0, 0.0, 0.004], [0, 0, -1], droplet_radius=RD, speed=1.0, rate=rate,
               stop=0.01)
    balance = add_spray(world, balance_every=20)
    world.run(2000)
    p = world.particles
    order = np.argsort(p.gid[:p.n_owned])
    vol = 4 / 3 * math.pi * RD**3
    n = math.floor(rate * 0.01 + 1e-9)
    nozzles = world.tables["nozzles"]
    assert nozzles.emitted[0] == n and nozzles.sprayed[0] == pytest.approx(n * vol, rel=1e-12)
    assert world.tables["droplets"].n_owned == 0
    film = p.liquid_film[order]
    assert film[0] == pytest.approx(1e-11 + n * vol, rel=1e-12)
    assert film[1] == 0.0 and nozzles.lost[0] == 0.0
    for row in balance.records:
        assert abs(row["imbalance"]) <= 1e-12 * row["inserted"]
    assert any(row["airborne"] > 0 for row in balance.records)


def test_a_tie_goes_to_the_lower_gid():
    r = 1e-3
    # two equal particles symmetric about the droplet's path: both touched at once
    world = world_with([[1.02e-3, 0, 0], [-1.02e-3, 0, 0]], radius=r)
    add_nozzle(world, [0.0, 0.0, 0.002], [0, 0, -1], droplet_radius=RD, speed=1.0, rate=500.0,
               stop=0.003)
    add_spray(world)
    world.run(600)
    p = world.particles
    film = p.liquid_film[np.argsort(p.gid[:p.n_owned])]
    assert film[0] > 0 and film[1] == 0.0


def test_droplets_are_lost_at_walls_out_of_the_domain_and_on_mesh_walls():
    vol = 4 / 3 * math.pi * RD**3
    world = world_with([[0.04, 0.04, 0.04]])
    add_wall(world, [0, 0, -0.01], [0, 0, 1])
    add_nozzle(world, [0, 0, 0], [0, 0, -1], droplet_radius=RD, speed=2.0, rate=1000.0,
               stop=0.005)   # onto the planar wall
    add_nozzle(world, [0, 0, 0.02], [1, 0, 0], droplet_radius=RD, speed=5.0, rate=1000.0,
               stop=0.005)   # out through x = 0.05
    balance = add_spray(world, balance_every=50)
    world.run(3000)
    nozzles = world.tables["nozzles"]
    assert world.tables["droplets"].n_owned == 0
    np.testing.assert_allclose(nozzles.lost, nozzles.sprayed, rtol=1e-12)
    assert nozzles.emitted.tolist() == [5, 5]
    totals = liquid_totals(world)
    assert totals["lost_at_walls"] == pytest.approx(10 * vol, rel=1e-12)
    assert abs(totals["imbalance"]) <= 1e-12 * totals["inserted"]
    # a mesh wall: a square of two triangles under the nozzle
    world = world_with([[0.04, 0.04, 0.04]])
    square = Mesh(np.array([[-0.01, -0.01, -0.01], [0.01, -0.01, -0.01], [0.01, 0.01, -0.01],
                            [-0.01, 0.01, -0.01]]), np.array([[0, 1, 2], [0, 2, 3]]))
    add_mesh_wall(world, square)
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), MeshWallContacts(HertzMindlinLaw()), second):
        world.add_system(s)
    add_nozzle(world, [0.0, 0.0, 0.0], [0.2, 0.1, -1], droplet_radius=RD, speed=2.0,
               rate=1000.0, stop=0.005)
    add_spray(world)
    world.run(1500)
    assert world.tables["droplets"].n_owned == 0
    nozzles = world.tables["nozzles"]
    assert nozzles.lost[0] == pytest.approx(5 * vol, rel=1e-12)


def test_spray_angles_are_distributed_as_the_shape_says():
    rng = np.random.default_rng(3)
    d = np.array([0.0, 0.0, -1.0])
    e1 = np.array([1.0, 0.0, 0.0])
    e2 = np.cross(d, e1)
    u = rng.random((200_000, 2))
    a = math.radians(30.0)
    v = spray_directions(d, e1, CONE, a, 0.0, u)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-14)
    cos_t = v @ d
    assert cos_t.min() >= math.cos(a) - 1e-14
    # uniform on the cap: cos(theta) uniform in [cos a, 1]: mean and variance
    lo = math.cos(a)
    sd = (1 - lo) / math.sqrt(12) / math.sqrt(len(u))
    assert abs(cos_t.mean() - 0.5 * (1 + lo)) < 5 * sd
    assert abs(np.var(cos_t) - (1 - lo) ** 2 / 12) < 0.01 * (1 - lo) ** 2 / 12
    phi = np.arctan2(v @ e2, v @ e1)
    assert abs(np.mean(np.cos(phi))) < 0.01 and abs(np.mean(np.sin(phi))) < 0.01
    fan, thick = math.radians(40.0), math.radians(5.0)
    v = spray_directions(d, e1, FAN, fan, thick, u)
    inplane = np.arctan2(v @ e1, v @ d)
    across = np.arctan2(v @ e2, v @ d)
    for angle, half in ((inplane, fan), (across, thick)):
        assert angle.min() >= -half - 1e-12 and angle.max() <= half + 1e-12
        hist = np.histogram(angle, bins=10, range=(-half, half))[0] / len(u)
        assert np.max(np.abs(hist - 0.1)) < 0.004   # uniform: 10 % per bin, 4.5 sigma


def test_the_sprayed_directions_of_a_running_nozzle():
    world = world_with([[0.04, 0.04, 0.04]], box=0.5, gravity=(0, 0, 0))
    add_nozzle(world, [0, 0, 0], [0, 0, -1], droplet_radius=RD, speed=1.0, rate=1e6,
               shape="fan", fan_angle=30.0, thickness_angle=3.0, fan_axis=[1, 1, 0], stop=2e-3)
    add_spray(world, balance_every=1000, gravity=(0, 0, 0))
    world.run(100)
    v = world.tables["droplets"].velocity
    assert len(v) == 1000
    e1 = np.array([1, 1, 0]) / math.sqrt(2)
    inplane = np.degrees(np.arctan2(v @ e1, -v[:, 2]))
    across = np.degrees(np.arctan2(v @ np.cross([0, 0, -1], e1), -v[:, 2]))
    assert inplane.min() > -30 and inplane.max() < 30 and inplane.max() - inplane.min() > 55
    assert np.abs(across).max() < 3 and np.abs(across).max() > 2.5
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-14)


def test_bad_nozzles_are_refused():
    world = world_with([[0.04, 0.04, 0.04]])
    good = dict(droplet_radius=RD, speed=1.0, rate=10.0)
    with pytest.raises(InputError, match="outside the domain"):
        add_nozzle(world, [0, 0, 0.06], [0, 0, -1], **good)
    with pytest.raises(InputError, match="rate must be finite and > 0"):
        add_nozzle(world, [0, 0, 0], [0, 0, -1], **{**good, "rate": 0.0})
    with pytest.raises(InputError, match="volume_rate must be"):
        add_nozzle(world, [0, 0, 0], [0, 0, -1], droplet_radius=RD, speed=1.0, volume_rate=-1)
    with pytest.raises(InputError, match="droplet_radius must be finite and > 0"):
        add_nozzle(world, [0, 0, 0], [0, 0, -1], **{**good, "droplet_radius": 0.0})
    with pytest.raises(InputError, match="either rate"):
        add_nozzle(world, [0, 0, 0], [0, 0, -1], droplet_radius=RD, speed=1.0)
    with pytest.raises(InputError, match="direction"):
        add_nozzle(world, [0, 0, 0], [0, 0, 0], **good)
    with pytest.raises(InputError, match="half_angle"):
        add_nozzle(world, [0, 0, 0], [0, 0, -1], half_angle=200.0, **good)
    with pytest.raises(InputError, match="shape"):
        add_nozzle(world, [0, 0, 0], [0, 0, -1], shape="jet", **good)


def test_a_particle_beyond_the_droplets_reach_is_an_error():
    """The ghost layer covers the largest particle radius + droplet radius at set-up; a
    particle grown beyond it by hand could touch a droplet unseen on another rank."""
    world = world_with([[0.0, 0.0, 0.0], [0.02, 0.0, 0.0]], radius=1e-3)
    add_nozzle(world, [0.0, 0.0, 0.01], [0, 0, -1], droplet_radius=RD, speed=1.0, rate=1e6)
    add_spray(world)
    world.run(5)
    assert world.domain.ghost_width >= 1e-3 + RD + world.skin
    world.particles.radius[0] = 2e-3
    with pytest.raises(InputError, match="reach .* exceeds what the ghost layer covers"):
        world.run(1)
