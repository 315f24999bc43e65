"""Grains against rigid mesh walls: analytic forces on tilted, translating and rotating planes,
no jump across the edges and vertices of a closed mesh, no tunnelling at 10 m/s, prescribed
motion without drift, per-triangle work."""
import math

import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.mesh.io import write_mesh
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh_walls import (Rotation, Servo, Translation, Vibration,
                                           add_mesh_wall, axis_angle_matrix)
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw, beta_from_restitution
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts

E, NU, RHO, EPS = 1e7, 0.3, 2500.0, 0.5
R = 2e-3
TILT = ((1.0, 0.3, 0.0), 0.4)  # rotate: axis, angle (rad)


def new_world(dt=1e-6, box=0.05, periodic=(False, False, False)):
    world = World(Box((-box,) * 3, (box,) * 3, periodic=periodic), dt=dt, skin=4e-4)
    grain = add_species(world, youngs_modulus=E, poisson_ratio=NU, density=RHO,
                        restitution=EPS, friction=0.5)
    return world, grain


def normal_force(delta, vn, mass):
    """Hertz-Mindlin on a rigid plane (the law's closed form): k delta - gamma v_n."""
    estar = E / (1.0 - NU * NU)
    kn = 4.0 / 3.0 * estar * math.sqrt(R * delta)
    return kn * delta - abs(float(beta_from_restitution(EPS))) * math.sqrt(mass * kn) * vn


def plane_stl(tmp_path):
    path = tmp_path / "plane.stl"
    write_mesh(path, flat_sheet(4e-3, width=0.06, height=0.06))
    return path


def run_setup(world, *systems):
    for s in systems:
        world.add_system(s)
    world.run(0)
    return world


def pressed_into_tilted_plane(tmp_path, motion):
    """A sphere pressed into a tilted STL plane that is fixed, translating or rotating, at
    a foot point inside a triangle: (the world after set-up, the foot point, the analytic
    force k delta - gamma v_n along the plane's normal)."""
    rot = axis_angle_matrix(np.array(TILT[0]) / np.linalg.norm(TILT[0]), TILT[1])
    n = rot @ np.array([0.0, 0.0, 1.0])
    shift = np.array([0.002, -0.001, 0.003])
    foot = rot @ np.array([0.0031, 0.0017, 0.0]) + shift   # inside a triangle
    delta = 3e-5
    world, grain = new_world()
    wall_velocity = np.zeros(3)
    if motion == "translation":
        V = np.array([0.3, -0.2, 0.1])
        kind, wall_velocity = Translation(V), V
    elif motion == "rotation":  # about a line in the plane: the surface moves along n at foot
        point, axis, rate = shift, rot @ np.array([0.0, 1.0, 0.0]), 7.0
        kind = Rotation(point, axis, rate)
        wall_velocity = rate * np.cross(axis, foot - point)
    else:
        kind = None
    add_mesh_wall(world, plane_stl(tmp_path), translate=shift, rotate=TILT, motion=kind)
    vn = -0.04  # approaching
    v = wall_velocity - np.dot(wall_velocity, n) * n + (np.dot(wall_velocity, n) + vn) * n
    centre = foot + (R - delta) * n
    add_particles(world, centre[None], R, grain, velocity=v[None])
    law = HertzMindlinLaw()
    run_setup(world, MeshWallContacts(law))
    p = world.particles
    return world, foot, normal_force(delta, vn, float(p.mass[0])) * n


@pytest.mark.parametrize("motion", ["fixed", "translation", "rotation"])
def test_sphere_pressed_into_a_tilted_stl_plane_feels_the_rigid_plane_force(tmp_path, motion):
    world, foot, expected = pressed_into_tilted_plane(tmp_path, motion)
    p = world.particles
    np.testing.assert_allclose(p.force[0], expected, rtol=1e-9, atol=1e-12 * abs(expected).max())
    np.testing.assert_allclose(world.mesh_walls.force[0], -p.force[0], rtol=1e-14)
    reference = world.mesh_walls.reference[0]
    np.testing.assert_allclose(world.mesh_walls.torque[0],
                               np.cross(foot - reference, -p.force[0]), rtol=1e-9, atol=1e-15)


def cube(side=0.02, centre=(0.0, 0.0, 0.0)) -> Mesh:
    """A closed cube of 12 triangles (each square face split along a diagonal)."""
    c = np.array(centre)
    v = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], float)
    faces = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    tri = [t for a, b, cc, d in faces for t in ((a, b, cc), (a, cc, d))]
    return Mesh((v - 0.5) * side + c, np.array(tri))


def surface_distance(mesh, x):
    """Distance from x to a mesh and the closest point (brute force over the triangles)."""
    best = (np.inf, None)
    for t in mesh.triangles:
        a, b, c = mesh.vertices[t]
        # minimise over a fine barycentric sample, then refine by projection where inside
        n = np.cross(b - a, c - a)
        n /= np.linalg.norm(n)
        q = x - np.dot(x - a, n) * n
        inside = all(np.dot(np.cross(v1 - v0, q - v0), n) >= -1e-15
                     for v0, v1 in ((a, b), (b, c), (c, a)))
        candidates = [q] if inside else []
        for v0, v1 in ((a, b), (b, c), (c, a)):
            s = np.clip(np.dot(x - v0, v1 - v0) / np.dot(v1 - v0, v1 - v0), 0.0, 1.0)
            candidates.append(v0 + s * (v1 - v0))
        for q in candidates:
            d = np.linalg.norm(x - q)
            if d < best[0]:
                best = (d, q)
    return best


def test_normal_force_over_a_cube_has_no_jump_at_edges_and_vertices():
    """A grain moved over a closed cube at a fixed distance r - delta from its true surface
    (across face diagonals, edges and a vertex) feels k delta^1.5 along the surface normal
    everywhere: one contact, never two, never none."""
    world, grain = new_world()
    mesh = cube()
    add_mesh_wall(world, mesh, closed=True)
    delta = 2e-5
    add_particles(world, np.array([[0.0, 0.0, 0.05]]), R, grain)
    law = HertzMindlinLaw()
    contacts = MeshWallContacts(law)
    run_setup(world, contacts)
    expected = normal_force(delta, 0.0, float(world.particles.mass[0]))
    # directions from the centre sweeping over a face, an edge, a vertex and a face diagonal
    angles = np.linspace(0.0, 1.0, 21)
    targets = [np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0]), np.array([1.0, 1.0, 1.0]),
               np.array([0.9, 1.0, 0.2]), np.array([-0.3, 1.0, 0.05])]
    kinds = set()
    p = world.particles
    for u0, u1 in zip(targets[:-1], targets[1:]):
        for s in angles:
            u = (1 - s) * u0 + s * u1
            u /= np.linalg.norm(u)
            lo, hi = 0.0, 0.05  # the point along u at distance r - delta from the surface
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                d, _ = surface_distance(mesh, mid * u)
                inside = np.all(np.abs(mid * u) < 0.01)
                lo, hi = (mid, hi) if inside or d < R - delta else (lo, mid)
            x = hi * u
            d, q = surface_distance(mesh, x)
            p.position[0] = x
            world.run(1)
            f = p.force[0]
            np.testing.assert_allclose(np.linalg.norm(f), expected, rtol=1e-9)
            np.testing.assert_allclose(f / np.linalg.norm(f), (x - q) / d, atol=1e-9)
            np.testing.assert_allclose(world.mesh_walls.force[0], -f, rtol=1e-12)
            kinds.update(contacts.contact_states(world)["kind"][
                contacts.contact_states(world)["selected"]].tolist())
    assert kinds == {"face", "edge", "vertex"}, kinds


@pytest.mark.parametrize("aim", [(1.0, 0.0, 0.0), (1.0, 1.0, 0.0), (1.0, 1.0, 1.0)])
def test_grain_thrown_at_10_m_per_s_never_passes_through(aim):
    """At a face, an edge and a vertex of a cube: the grain bounces back, its centre never
    comes closer to the surface than r minus the largest Hertz overlap of the impact."""
    u = np.array(aim) / np.linalg.norm(aim)
    world, grain = new_world(dt=2e-7)
    mesh = cube()
    add_mesh_wall(world, mesh, closed=True)
    start = 0.01 / np.abs(u).max() + R + 2e-4  # 0.2 mm from the surface along u
    add_particles(world, start * u[None], R, grain, velocity=-10.0 * u[None])
    first, second = velocity_verlet()
    for s in (first, MeshWallContacts(HertzMindlinLaw()), second):
        world.add_system(s)
    closest = np.inf
    for _ in range(120):
        world.run(20)
        d, _ = surface_distance(mesh, world.particles.position[0])
        closest = min(closest, d)
    v = world.particles.velocity[0]
    assert np.dot(v, u) > 0.0, "the grain did not bounce back"
    # the maximum overlap of a Hertz impact at 10 m/s: (15 m v^2 / (16 E* sqrt(R)))^(2/5)
    m = float(world.particles.mass[0])
    estar = E / (1 - NU * NU)
    overlap = (15 * m * 100.0 / (16 * estar * math.sqrt(R))) ** 0.4
    assert closest > R - 1.5 * overlap > 0.0


def test_prescribed_motion_sets_vertices_from_x0_exactly():
    world, grain = new_world(dt=1e-4, periodic=(True, False, False))
    sheet = flat_sheet(5e-3, width=0.02, height=0.02)
    walls = [add_mesh_wall(world, sheet, translate=(0, 0, -0.03), motion=Translation((0.5, 0, 0))),
             add_mesh_wall(world, sheet, motion=Rotation((0, 0, 0), (0, 0, 1), 3.0)),
             add_mesh_wall(world, sheet, translate=(0, 0, 0.03),
                           motion=Vibration((0.0, 0.0, 0.002), 50.0)),
             add_mesh_wall(world, sheet, translate=(0, 0, -0.015),
                           motion=lambda t: (np.array([0.0, 0.0, 0.01 * t]),
                                             axis_angle_matrix(np.array([0.0, 0.0, 1.0]), t)))]
    add_particles(world, np.array([[0.0, 0.04, 0.04]]), R, grain)
    first, second = velocity_verlet()
    for s in (first, MeshWallContacts(HertzMindlinLaw()), second):
        world.add_system(s)
    world.run(2000)
    t = world.time
    v = world.mesh_vertices
    x0 = sheet.vertices
    for w in walls:
        rows = np.flatnonzero(v.wall[:v.n_owned] == w)
        order = np.argsort(v.gid[rows])
        got, vel = v.position[rows][order], v.velocity[rows][order]
        if w == 0:
            want = x0 + [0.5 * t, 0, -0.03]
            want[:, 0] = (want[:, 0] + 0.05) % 0.1 - 0.05   # periodic in x
            np.testing.assert_allclose(got, want, atol=1e-12)
            np.testing.assert_allclose(vel, np.tile([0.5, 0, 0], (len(rows), 1)), rtol=1e-15)
        elif w == 1:
            rot = axis_angle_matrix(np.array([0.0, 0.0, 1.0]), 3.0 * t)
            want = x0 @ rot.T
            np.testing.assert_allclose(vel, np.cross([0, 0, 3.0], want), atol=1e-13)
        elif w == 2:
            want = x0 + [0, 0, 0.03 + 0.002 * math.sin(2 * math.pi * 50 * t)]
            np.testing.assert_allclose(
                vel[:, 2], 0.002 * 2 * math.pi * 50 * math.cos(2 * math.pi * 50 * t), rtol=1e-12)
        else:
            rot = axis_angle_matrix(np.array([0.0, 0.0, 1.0]), t)
            want = x0 @ rot.T + [0, 0, -0.015 + 0.01 * t]
            np.testing.assert_allclose(vel[:, 2], 0.01, rtol=1e-6)
            np.testing.assert_allclose(vel[:, :2], np.cross([0, 0, 1.0], x0 @ rot.T)[:, :2],
                                       atol=1e-9)
        if w != 0:  # the periodic one is compared above
            np.testing.assert_allclose(got, want, atol=1e-15)


def test_servo_holds_the_target_force_and_work_is_recorded():
    """A horizontal plate pressed down by a servo that holds 0.2 N onto a grain on a fixed
    floor: at rest the plate's force is the target, the floor's too (gravity off), and the
    triangles record the contacts and the work of the approach."""
    world, grain = new_world(dt=1e-5)
    sheet = flat_sheet(4e-3, width=0.03, height=0.03)
    floor = add_mesh_wall(world, sheet)
    plate = add_mesh_wall(world, sheet, translate=(0, 0, 2 * R + 1e-5),
                          motion=Servo((0, 0, -1), 0.2, 0.1, max_speed=0.05))
    add_particles(world, np.array([[0.0011, 0.0007, R]]), R, grain)
    first, second = velocity_verlet()
    for s in (first, MeshWallContacts(HertzMindlinLaw()), second):
        world.add_system(s)
    world.run(2000)
    walls = world.mesh_walls
    np.testing.assert_allclose(-walls.force[plate] @ np.array([0, 0, -1.0]), 0.2, rtol=1e-2)
    np.testing.assert_allclose(walls.force[floor], -walls.force[plate], rtol=1e-2, atol=1e-6)
    tri = world.mesh_triangles
    assert tri.contacts[:tri.n_owned].sum() > 0
    # the pressed grain rests: friction did (almost) no work, the approach did
    assert tri.normal_work[:tri.n_owned].sum() > 0


def test_sliding_grain_friction_work_equals_mu_fn_times_path():
    """A grain pushed along a frictional floor at constant speed by a prescribed velocity
    (it is fixed: the integrator leaves it alone) slides: the floor's triangles receive
    mu F_n |v| dt per step, summed over the triangles it crossed."""
    world, grain = new_world(dt=1e-5)
    floor = add_mesh_wall(world, flat_sheet(4e-3, width=0.04, height=0.04))
    delta = 2e-5
    speed = 0.2
    add_particles(world, np.array([[-0.01, 0.0013, R - delta]]), R, grain,
                  velocity=np.array([[speed, 0.0, 0.0]]))
    world.particles.fixed[0] = True
    first, second = velocity_verlet()
    for s in (first, MeshWallContacts(HertzMindlinLaw()), second):
        world.add_system(s)
    steps = 5000
    world.run(steps)
    fn = normal_force(delta, 0.0, float(world.particles.mass[0]))
    tri = world.mesh_triangles
    work = tri.friction_work[:tri.n_owned]
    rigid = int(world.species.n_owned)  # the rigid material's row of the law's table
    bound = HertzMindlinLaw().bind(world.species)
    mu = float(bound.parameters[rigid, 0, bound.function.parameters.index("mu")])
    sliding = mu * fn * speed * world.dt
    # the spring loads for a few steps before the grain slides: a small deficit
    assert abs(work.sum() - sliding * steps) < 0.01 * sliding * steps
    assert np.count_nonzero(work) >= 3, "the grain should have crossed several triangles"
    assert floor == 0
