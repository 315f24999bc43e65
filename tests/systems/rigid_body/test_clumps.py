"""Clumps in a world (systems/rigid_body, components/clumps/bodies.py): impacts and rest
against closed forms the tests derive, mixed beds, restarts and bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest

from clump_scenarios import add_clump_systems, body_state, mixed_pour
from helpers import make_world, straight_and_resumed

from ecs_dem import Box, World
from ecs_dem.components.clumps import library
from ecs_dem.components.clumps.bodies import PEBBLE_INERTIA, add_clumps, create_body_tables
from ecs_dem.components.clumps.template import rotation_matrix
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.errors import InputError, StateError
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.walls.contacts import WallContacts


def tilted_dimer_bounce():
    """A dimer tilted by 30 degrees hits a frictionless elastic floor with one pebble. The
    impulse J n at the contact point (arm rho from the centre) reverses the normal velocity
    there: J = 2 v0 / (1/M + n . ((I^-1 (rho x n)) x rho)); v' = v + J n / M,
    w' = I^-1 (rho x J n). The contact lasts about 40 us, during which the dimer turns by
    about 0.02 rad: within 1 %."""
    r, v0, tilt = 1e-3, 0.5, math.radians(30)
    world = make_world(dt=2e-7, material=dict(youngs_modulus=1e9, restitution=1.0, friction=0.0),
                       box_lo=(-0.01, -0.01, -0.001), box_hi=(0.01, 0.01, 0.01))
    template = library.dimer(r)
    q = np.array([math.cos(tilt / 2), 0.0, math.sin(tilt / 2), 0.0])  # about y
    rot = rotation_matrix(q)
    low = rot @ template.offsets[np.argmin((template.offsets @ rot.T)[:, 2])]
    com = np.array([0.0, 0.0, r - low[2] + 2e-6])
    add_clumps(world, template, [com], [q], 0, velocity=[0, 0, -v0])
    add_wall(world, (0, 0, 0), (0, 0, 1))
    law = HertzMindlinLaw()
    add_clump_systems(world, ContactForces(law), WallContacts(law))
    b = world.bodies
    mass, moments = b.mass[0], b.moments[0]
    touched = False
    for _ in range(5000):
        world.step_once()
        pushing = world.walls.force[0, 2] != 0.0
        touched |= pushing
        if touched and not pushing:
            break
    assert touched and not pushing
    n = np.array([0.0, 0.0, 1.0])
    rho = low - r * n
    inertia = rot @ np.diag(moments) @ rot.T
    inv = np.linalg.inv(inertia)
    J = 2 * v0 / (1 / mass + n @ np.cross(inv @ np.cross(rho, n), rho))
    v_after = np.array([0, 0, -v0]) + J * n / mass
    w_after = inv @ np.cross(rho, J * n)
    return b, mass, v0, v_after, w_after


def test_tilted_dimer_bounces_off_a_wall_as_the_rigid_body_impulse_says():
    """tilted_dimer_bounce: within 1 %; elastic, so the energy is kept."""
    b, mass, v0, v_after, w_after = tilted_dimer_bounce()
    np.testing.assert_allclose(b.velocity[0], v_after, rtol=0, atol=0.01 * np.linalg.norm(v_after))
    np.testing.assert_allclose(b.angular_velocity[0], w_after, rtol=0,
                               atol=0.01 * np.linalg.norm(w_after))
    # elastic: kinetic energy kept (rotation included)
    energy = 0.5 * mass * b.velocity[0] @ b.velocity[0] + 0.5 * b.angular_velocity[0] @ b.angular_momentum[0]
    assert energy == pytest.approx(0.5 * mass * v0**2, rel=1e-3)


def test_flat_clump_rests_on_an_incline_where_an_equal_sphere_rolls():
    """Gravity tilted by 20 degrees (tan 20 = 0.36 < mu = 0.5): a sphere rolls without
    slipping, its centre accelerating at 5/7 g sin(20); a flat clump of the same mass lying
    on a face sticks (its displacement is elastic creep, below 1 % of the sphere's)."""
    r = 1e-3
    world = World(Box((-0.05, -0.02, -0.001), (0.05, 0.02, 0.02)), dt=1e-6, skin=1e-4,
                  debug=False)  # 11,000 steps: the declaration guard is checked elsewhere
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.3,
                friction=0.5)
    flat = library.flat(r)
    density = world.species.density[0]
    mass = flat.mass(density)
    radius = (3 * mass / (4 * math.pi * density)) ** (1 / 3)
    # the flat grain's smallest-moment axes lie in its plane: body z (largest) along space z
    add_clumps(world, flat, [[-0.01, 0, r]], [[1, 0, 0, 0]], 0)
    add_particles(world, [[0.01, 0, radius]], radius, 0)
    add_wall(world, (0, 0, 0), (0, 0, 1))
    law = HertzMindlinLaw()
    add_clump_systems(world, Gravity.chute(9.81, 20.0), ContactForces(law), WallContacts(law))
    world.setup()
    p = world.particles
    sphere = int(np.flatnonzero(p.inertia[:p.n_owned] > 0)[0])
    x0_sphere, x0_clump = p.position[sphere, 0], world.bodies.com[0, 0]
    world.run(1000)  # settle onto the floor
    t0 = world.time
    s0, c0 = p.position[sphere, 0], world.bodies.com[0, 0]
    world.run(10000)
    t = world.time - t0
    v0 = p.velocity[sphere, 0]
    rolled = p.position[sphere, 0] - s0
    a = 5 / 7 * 9.81 * math.sin(math.radians(20))
    v_start = (rolled - 0.5 * a * t * t) / t
    assert rolled > 0
    assert p.velocity[sphere, 0] == pytest.approx(v_start + a * t, rel=0.03)
    slid = abs(world.bodies.com[0, 0] - c0)
    assert slid < 0.01 * rolled
    assert abs(world.bodies.angular_velocity[0]).max() < 1e-2
    assert v0 > 0 and x0_sphere < p.position[sphere, 0] and abs(world.bodies.com[0, 0] - x0_clump) < 1e-5


def test_mixed_bed_settles_and_the_floor_carries_its_weight():
    """Spheres and clumps poured onto a floor (periodic sides): at rest the floor's force
    equals the total weight, M g per body once and m g per sphere; pebbles' mass fields
    (the body's mass, for the contact laws) are not weighed."""
    world = mixed_pour(cells=(3, 3, 1), dt=1e-5, material=dict(
        youngs_modulus=1e6, poisson_ratio=0.3, density=2500.0, restitution=0.1, friction=0.4),
        sideways=0.1, debug=False)
    world.run(20000)  # 0.2 s
    p, b = world.particles, world.bodies
    spheres = p.inertia[:p.n_owned] > 0
    weight = 9.81 * (p.mass[:p.n_owned][spheres].sum() + b.mass[:b.n_owned].sum())
    assert np.all(p.inertia[:p.n_owned][~spheres] == PEBBLE_INERTIA)
    floor = world.walls.force[0]
    assert floor[2] == pytest.approx(-weight, rel=1e-4)  # the force on the wall: downward
    assert abs(floor[0]) < 1e-4 * weight and abs(floor[1]) < 1e-4 * weight
    # at rest but for a grain that may roll on (no rolling resistance): slow
    assert np.abs(b.velocity[:b.n_owned]).max() < 0.02


def test_pebbles_stay_rigid_and_never_touch_their_own_body():
    world = mixed_pour(cells=(2, 2, 2), dt=4e-6, sideways=1.0)
    world.run(200)  # in debug mode: every system against its declarations
    p, b = world.particles, world.bodies
    q = world.pairs
    body = p.with_ghosts("body")
    gi, gj = q.i[:q.n_owned], q.j[:q.n_owned]
    same = (body[gi] >= 0) & (body[gi] == body[gj])
    assert not same.any()
    # each pebble sits at com + R b (the centre unwrapped, the pebble wrapped: compare mod L)
    lookup = b.lookup()
    rows = lookup.rows(p.body[:p.n_owned])
    mine = rows >= 0
    rot = rotation_matrix(b.orientation[rows[mine]])
    expect = b.com[rows[mine]] + np.einsum("nij,nj->ni", rot, p.body_offset[:p.n_owned][mine])
    size = world.domain.box.hi - world.domain.box.lo
    gap = p.position[:p.n_owned][mine] - expect
    gap[:, :2] -= np.round(gap[:, :2] / size[:2]) * size[:2]
    assert np.abs(gap).max() < 1e-12
    assert world.domain.rebuild_count > 3


def test_restart_continues_bit_for_bit(tmp_path):
    build = lambda: mixed_pour(cells=(2, 2, 2), dt=4e-6, debug=False)
    straight, resumed = straight_and_resumed(build, tmp_path / "c.h5", 300, 200)
    a, b = body_state(straight), body_state(resumed)
    for f in a:
        assert np.array_equal(a[f], b[f]), f
    p, r = straight.particles, resumed.particles
    for f in ("position", "velocity", "body_offset", "body"):
        assert np.array_equal(getattr(p, f)[:p.n_owned], getattr(r, f)[:r.n_owned]), f


def test_bad_clump_input_is_refused():
    world = make_world()
    with pytest.raises(InputError, match="ClumpTemplate"):
        add_clumps(world, "dimer", [[0, 0, 0]])
    t = library.tetrahedron(1e-3)
    with pytest.raises(InputError, match="zero quaternion"):
        add_clumps(world, t, [[0, 0, 0]], [[0, 0, 0, 0]])
    with pytest.raises(InputError, match="species 3 does not exist"):
        add_clumps(world, t, [[0, 0, 0]], species=3)
    with pytest.raises(InputError, match="shape"):
        add_clumps(world, t, [[0, 0, 0]], velocity=[[1, 2]])
    small = make_world()
    create_body_tables(small, max_pebbles=2)
    with pytest.raises(InputError, match="max_pebbles=4"):
        add_clumps(small, t, [[0, 0, 0]])


def test_snapshots_hold_the_bodies_and_each_pebbles_body(tmp_path):
    """The bodies' subgroup holds centre, quaternion, velocities as the table has them; the
    pebbles carry their body's gid; the XDMF shows the bodies as points and ``body`` as a
    particle attribute."""
    import h5py

    from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
    from ecs_dem.systems.rigid_body.output import body_snapshot_writer, particle_fields

    world = mixed_pour(cells=(2, 2, 2))
    path = tmp_path / "clumps.h5"
    with Hdf5Output(path) as out:
        world.add_system(SnapshotWriter(out, 50, particle_fields(
            world, ("gid", "position", "velocity", "radius"))))
        world.add_system(body_snapshot_writer(out, 50))
        world.setup()
        world.run(100)
        b, p = world.bodies, world.particles
        expected = {k: getattr(b, k)[:b.n_owned].copy() for k in
                    ("gid", "com", "orientation", "velocity", "angular_velocity", "mass")}
        pebble_body = dict(zip(p.gid[:p.n_owned].tolist(), p.body[:p.n_owned].tolist()))
    with h5py.File(path) as f:
        last = f["snapshots"][sorted(f["snapshots"])[-1]]
        assert last.attrs["step"] == 100
        g = last["bodies"]
        order = np.argsort(g["gid"][:])
        rows = np.argsort(expected["gid"])
        np.testing.assert_array_equal(g["position"][:][order], expected["com"][rows])
        for k in ("orientation", "velocity", "angular_velocity", "mass"):
            np.testing.assert_array_equal(g[k][:][order], expected[k][rows])
        got = dict(zip(last["gid"][:].tolist(), last["body"][:].tolist()))
        assert got == pebble_body
        assert sum(v >= 0 for v in got.values()) == 2 * 2 + 4 * 2 + 5 * 2  # 2 of each clump
    xdmf = path.with_suffix(".xdmf").read_text()
    assert '<Grid Name="bodies" GridType="Collection"' in xdmf
    assert 'Attribute Name="body"' in xdmf and "clumps.h5:/snapshots/000000100/bodies/position" in xdmf
    assert 'Attribute Name="angular_velocity" AttributeType="Vector"' in xdmf
