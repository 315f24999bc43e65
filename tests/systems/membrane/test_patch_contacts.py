"""Grain-patch contacts (systems/patch_*.py) against a rigid plane, Table 1 and invariants.

Sources: Goetz & Poeschel Sect. 2.5 (Eq. 17, Table 1) as docs/physics.md reads
them. On a fixed flat membrane a grain must feel exactly the force it feels on a rigid wall of the
membrane's material at the same overlap and velocity, whether it touches a face, an edge or a
vertex: one contact is selected and its force is the law's. Its torque acts about the
membrane point (so angular momentum is conserved with a free membrane).
"""
import math

import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.membranes import add_membrane, membrane_vertices
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.particles import add_particles, create_particle_table, fix_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.membrane.systems import membrane_systems
from ecs_dem.systems.membrane.patch_contacts import PatchContacts
from ecs_dem.systems.membrane.patch_search import PatchSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

A = 4e-3  # m, patch side
H = A * math.sqrt(3) / 2
R = 1e-3  # m, grain radius
HEX = Mesh(np.vstack([[0, 0, 0], [[A * math.cos(k * math.pi / 3), A * math.sin(k * math.pi / 3), 0]
                                 for k in range(6)]]),
           [[0, 1 + k, 1 + (k + 1) % 6] for k in range(6)])


def grain_world(mesh=HEX, positions=((0, 0, 0.8 * R),), velocity=(0.01, 0.02, -0.05), law=None,
                wall=False, fixed=True, radius=R, systems=()):
    """Grains over a membrane of `mesh` (fixed vertices), or over a rigid wall of its material."""
    world = World(Box((-0.05,) * 3, (0.05,) * 3), dt=1e-8)
    grain = add_species(world, youngs_modulus=1e8, poisson_ratio=0.3, density=2500.0,
                        friction=0.3, restitution=0.8)
    create_particle_table(world)
    if wall:
        material = add_species(world, youngs_modulus=1e6, poisson_ratio=1 / 3, density=1000.0)
        add_wall(world, (0, 0, 0), (0, 0, 1), species=material)
    else:
        add_membrane(world, mesh, youngs_modulus=1e6, thickness=3e-4, density=1000.0)
        if fixed:
            fix_particles(world, membrane_vertices(world, 0))
    add_particles(world, np.array(positions, float), radius, grain, velocity=velocity)
    law = law or HertzMindlinLaw()
    first, second = velocity_verlet()
    contact = WallContacts(law) if wall else PatchContacts(law)
    for s in (first, *([] if wall else [PatchSearch()]), contact, *systems, second):
        world.add_system(s)
    world.setup()
    return world, contact


def grain_rows(world):
    p = world.particles
    return np.flatnonzero(p.membrane < 0) if p.has_field("membrane") else np.arange(p.n_owned)


@pytest.mark.parametrize("law", [HertzMindlinLaw(), LinearSpringDashpotLaw(2e3, 10.0, 0.3)],
                         ids=["hertz", "linear"])
@pytest.mark.parametrize("where, kind", [((A / 2, H / 3), "face"), ((A / 2, 0.0), "edge"),
                                         ((0.75 * A, H / 2), "edge"), ((0.0, 0.0), "vertex"),
                                         ((A, 0.0), "vertex")])
def test_fixed_flat_membrane_acts_as_a_rigid_plane_at_faces_edges_and_vertices(law, where, kind):
    pos = [(where[0], where[1], 0.8 * R)]
    world, patch = grain_world(positions=pos, law=law)
    rigid, _ = grain_world(positions=pos, law=law, wall=True)
    g = grain_rows(world)[0]
    f, t = world.particles.force[g], world.particles.torque[g]
    f_wall, t_wall = rigid.particles.force[0], rigid.particles.torque[0]
    assert np.linalg.norm(f_wall) > 0 and np.linalg.norm(t_wall) > 0
    np.testing.assert_allclose(f, f_wall, rtol=0, atol=1e-15 * np.abs(f_wall).max())
    # the torque acts about the membrane point: lever |d| = R - delta for Hertz-Mindlin (whose
    # wall lever is R - delta/2), R - delta/2 for the LAMMPS law (wall lever R)
    delta = 0.2 * R
    lever_ratio = ((R - delta) / (R - delta / 2) if isinstance(law, HertzMindlinLaw)
                   else (R - delta / 2) / R)
    np.testing.assert_allclose(t, lever_ratio * t_wall, rtol=0, atol=1e-15 * np.abs(t_wall).max())
    states = patch.contact_states(world)
    assert states["selected"].sum() == 1
    assert states["kind"][states["selected"]][0] == kind
    # forces balance exactly: what the grain gets, the (fixed) vertices take
    np.testing.assert_allclose(world.particles.force.sum(axis=0), 0.0, atol=1e-15 * np.abs(f).max())


def selection(mesh, position, radius=R):
    world, patch = grain_world(mesh=mesh, positions=[position], radius=radius, velocity=(0, 0, 0))
    s = patch.contact_states(world)
    t = world.membrane_triangles
    local = {int(g): k for k, g in enumerate(t.gid)}  # triangle gid -> mesh triangle index
    touching = {(local[int(tri)], str(kd)) for tri, kd, on in zip(s["triangle"], s["kind"],
                                                                 s["touching"]) if on}
    kept = {(local[int(tri)], str(kd)) for tri, kd, on in zip(s["triangle"], s["kind"],
                                                             s["selected"]) if on}
    return touching, kept


def fold(angle):
    """Two triangles on the edge (0,0,0)-(0,A,0), wings at x < 0 (flat) and x > 0 (turned by
    `angle` about the edge: > 0 up, a valley seen from above; < 0 down, a ridge)."""
    wing = [A * math.cos(angle), A / 2, A * math.sin(angle)]
    return Mesh([[0, 0, 0], [0, A, 0], [-A, A / 2, 0], wing], [[0, 1, 2], [1, 0, 3]])


def valley_centre(angle=math.radians(60)):
    """A grain centre on the bisector of the valley fold(angle), touching both faces."""
    mid = np.array([0.0, A / 2, 0.0])
    half = (math.pi - angle) / 2  # the bisector's angle from the flat wing's plane
    bisector = np.array([-math.cos(half), 0, math.sin(half)])
    return tuple(mid + 1.0 * R / math.sin(half) * 0.95 * bisector)


#: Table 1's selection rules, case by case: name -> (mesh, grain centre, grain radius, the
#: contacts (triangle, kind) that touch, None if not checked, the contacts kept)
TABLE_1 = {
    "a face beats the edge it is near": (
        HEX, (A / 2, 0.02 * H, 0.8 * R), R, {(0, "face"), (5, "edge")}, {(0, "face")}),
    "a face beats the edges and vertices near the centre": (
        HEX, (0.01 * A, 0.01 * A, 0.8 * R), R,
        {(0, "face"), (1, "edge"), (2, "edge"), (5, "edge"), (3, "vertex"), (4, "vertex")},
        {(0, "face")}),
    "one contact per shared edge": (
        HEX, (A / 2, 0.0, 0.8 * R), R, {(0, "edge"), (5, "edge")}, {(0, "edge")}),
    "one contact per shared vertex": (
        HEX, (0.0, 0.0, 0.8 * R), R, {(k, "vertex") for k in range(6)}, {(0, "vertex")}),
    "a valley keeps both faces": (
        fold(math.radians(60)), valley_centre(), R, None, {(0, "face"), (1, "face")}),
    "a ridge keeps one edge": (
        fold(math.radians(-60)), (0.0, A / 2, 0.8 * R), R, {(0, "edge"), (1, "edge")},
        {(0, "edge")}),
    "patches sharing no vertex are kept independently": (  # vertices 1 and 3
        Mesh([[0, 0, 0], [A, 0, 0], [0, A, 0], [3 * A, 0, 0], [4 * A, 0, 0], [3 * A, A, 0]],
             [[0, 1, 2], [3, 4, 5]]),
        (2 * A, 0.0, 0.2 * A), 1.05 * A, {(0, "vertex"), (1, "vertex")},
        {(0, "vertex"), (1, "vertex")}),
}


@pytest.mark.parametrize("case", list(TABLE_1))
def test_table_1_selection(case):
    mesh, position, radius, touching_expected, kept_expected = TABLE_1[case]
    touching, kept = selection(mesh, position, radius)
    if touching_expected is not None:
        assert touching == touching_expected
    assert kept == kept_expected


def test_forces_balance_and_angular_momentum_is_conserved_on_a_free_membrane():
    # a frictional grain hits a free (unclamped) sheet obliquely while spinning: every contact
    # force has its opposite on the vertices, so linear momentum is conserved; the torque on
    # the grain is d x F, so angular momentum about the origin is conserved too
    sheet = Mesh(HEX.vertices, HEX.triangles)
    world, _ = grain_world(mesh=sheet, positions=[(0.3 * A, 0.1 * A, 0.999 * R)], fixed=False,
                           velocity=(0.3, 0.1, -0.5), systems=membrane_systems())
    p = world.particles
    p.angular_velocity[grain_rows(world)] = (50.0, -20.0, 10.0)

    def momenta():
        lin = (p.mass[:, None] * p.velocity).sum(axis=0)
        ang = (p.mass[:, None] * np.cross(p.position, p.velocity)).sum(axis=0)
        ang += (p.inertia[:, None] * p.angular_velocity).sum(axis=0)
        return lin, ang

    lin0, ang0 = momenta()
    touched = 0
    for _ in range(2000):
        world.step_once()
        touched += world.systems[2].touching
    lin, ang = momenta()
    assert touched > 50
    np.testing.assert_allclose(lin, lin0, rtol=0, atol=1e-12 * np.abs(lin0).max())
    np.testing.assert_allclose(ang, ang0, rtol=0, atol=1e-12 * np.abs(ang0).max())
    assert np.abs(lin - lin0).max() < 1e-3 * np.abs(lin0).max()  # sanity of the scale


def membrane_height_below(world, xy):
    """z of the membrane surface below the point xy (the triangle whose projection holds it)."""
    p, t = world.particles, world.membrane_triangles
    x = p.position[p.rows_of(t.vertices.ravel())].reshape(-1, 3, 3)
    a, b, c = x[:, 0, :2], x[:, 1, :2], x[:, 2, :2]
    det = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1])
    u = ((xy[0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (xy[1] - a[:, 1])) / det
    v = ((b[:, 0] - a[:, 0]) * (xy[1] - a[:, 1]) - (xy[0] - a[:, 0]) * (b[:, 1] - a[:, 1])) / det
    inside = (u >= -1e-12) & (v >= -1e-12) & (u + v <= 1 + 1e-12)
    k = int(np.flatnonzero(inside)[0])
    return x[k, 0, 2] + u[k] * (x[k, 1, 2] - x[k, 0, 2]) + v[k] * (x[k, 2, 2] - x[k, 0, 2])


@pytest.mark.parametrize("size, fixed", [(0.1, True), (0.5, True), (1.0, True), (3.0, True),
                                         (0.3, False), (1.0, False)])
def test_grains_at_10_m_per_s_never_pass_through(size, fixed):
    # MSS_patch is closed by design: grains from a tenth to three times the patch side, driven
    # at 10 m/s onto a face, an edge and a vertex (straight down and obliquely), bounce back
    # without their centre ever crossing the membrane; the sheet (stiff enough that a plane
    # would stop them within their radius) is fixed, or free and clamped at its rim
    from ecs_dem.components.mesh.generators import flat_sheet

    side = 4e-3
    radius = size * side
    gap = max(3.0 * radius, 3 * side)
    span = 6 * gap + 4 * side
    sheet = flat_sheet(side, width=span, height=span)
    spots = [(side / 2, side * math.sqrt(3) / 6), (side / 2, 0.0), (0.0, 0.0)]
    centre = sheet.vertices[np.argmin(np.linalg.norm(sheet.vertices[:, :2], axis=1)), :2]
    world = World(Box((-span,) * 3, (span,) * 3), dt=1.0, debug=False)
    grain = add_species(world, youngs_modulus=1e8, poisson_ratio=0.3, density=2500.0,
                        restitution=0.5, friction=0.3)
    create_particle_table(world)
    add_membrane(world, sheet, youngs_modulus=1e8, thickness=1e-3, density=1000.0,
                 damping_ratio=0.3)
    pos, vel = [], []
    for k, (dx, dy) in enumerate(spots):
        for m, direction in enumerate(((0, 0, -1.0), (0.6, 0.0, -0.8))):
            x, y = centre[0] + dx + (k - 1) * 2 * gap, centre[1] + dy + (m - 0.5) * 2 * gap
            pos.append((x, y, 1.001 * radius))
            vel.append(10.0 * np.array(direction))
    rim = membrane_vertices(world, 0, where=lambda x: np.max(np.abs(x[:, :2] - centre), axis=1)
                            > 0.5 * span - side)
    fix_particles(world, membrane_vertices(world, 0) if fixed else rim)
    add_particles(world, np.array(pos), radius, grain, velocity=np.array(vel))
    law = HertzMindlinLaw()
    # time step: a fiftieth of the Hertz impact at 10 m/s, and of the sheet's springs
    mass = 2500 * 4 / 3 * math.pi * radius**3
    estar = 1 / (2 * (1 - 0.3**2) / 1e8)
    dmax = (15 * mass * 100 / (16 * estar * math.sqrt(radius))) ** 0.4
    assert dmax < 0.5 * radius
    vertex_mass = 1000 * 1e-3 * math.sqrt(3) / 4 * side**2
    world.dt = 2.94 * dmax / 10 / 50
    if not fixed:
        world.dt = min(world.dt, 0.05 * math.sqrt(vertex_mass / (6 * math.sqrt(3) / 2 * 1e5)))
    first, second = velocity_verlet()
    for s in (first, PatchSearch(), PatchContacts(law), *membrane_systems(), second):
        world.add_system(s)
    p = world.particles
    grains = lambda: np.flatnonzero(p.membrane < 0)  # noqa: E731
    lowest = np.full(len(pos), np.inf)
    steps = int(3 * 2.94 * dmax / 10 / world.dt)
    for _ in range(steps // 5):
        world.run(5)
        for k, g in enumerate(grains()):
            clearance = p.position[g, 2] - (0.0 if fixed else membrane_height_below(
                world, p.position[g, :2]))
            lowest[k] = min(lowest[k], clearance)
    assert np.all(lowest > 0), f"a grain centre crossed the membrane: {lowest / radius}"
    if fixed:
        assert np.all(p.velocity[grains(), 2] > 0)  # every grain is on its way back
    else:  # the free sheet gives way and carries the grains down, much slower
        assert np.all(p.velocity[grains(), 2] > -5.0)
