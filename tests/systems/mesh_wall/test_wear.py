"""Surface wear of mesh walls (systems.mesh_wall.wear): the prism volume, the iteration that
matches the volumes V_t = factor k W_t, open boundaries, inversion, export, the system.

Expected values are derived here: the prism volume from the enclosed volume of a closed mesh
(divergence theorem) and from quadrature of the swept solid's Jacobian; depths on a regular
flat grid from counting the track's triangles around each vertex."""

import numpy as np
import pytest

from ecs_dem.errors import InputError, StateError
from ecs_dem.components.mesh import Mesh
from ecs_dem.components.mesh.generators import flat_sheet, icosphere
from ecs_dem.components.mesh.io import read_mesh
from ecs_dem.systems.mesh_wall.wear import (MeshWear, WearInversionError, prism_volumes,
                                            removed_volumes, vertex_normals, wear_depths,
                                            wear_mesh)

K = 2e-9        # m^3/J
FACTOR = 50.0


def grid(nx: int, ny: int, h: float):
    """A flat nx x ny grid of squares of side h in z = 0, each cut along its rising diagonal:
    vertex (i, j) is i + (nx + 1) j; triangles (a, b, c), (a, c, d), normals +z. Returns
    (vertices, triangles, square column, square row, lower-right flag) per triangle."""
    i, j = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), indexing="xy")
    x = np.column_stack([i.ravel() * h, j.ravel() * h, np.zeros(i.size)])
    tris, col, row, lower = [], [], [], []
    for jj in range(ny):
        for ii in range(nx):
            a = ii + (nx + 1) * jj
            b, c, d = a + 1, a + nx + 2, a + nx + 1
            tris += [(a, b, c), (a, c, d)]
            col += [ii, ii]
            row += [jj, jj]
            lower += [True, False]
    return x, np.array(tris), np.array(col), np.array(row), np.array(lower)


def areas(x, t):
    return Mesh(x, t).areas


def fan_fraction(t, selected, n):
    """Per vertex: the share of its triangles' area that `selected` triangles hold (equal areas)."""
    total, chosen = np.zeros(n), np.zeros(n)
    np.add.at(total, t.ravel(), 1.0)
    np.add.at(chosen, t[selected].ravel(), 1.0)
    return chosen / np.where(total > 0, total, 1.0)


# ------------------------------------------------------------------------- prism volume

def test_prism_of_a_flat_triangle_is_area_times_mean_depth(rng):
    x = np.array([[0.0, 0.0, 0.0], [0.3, 0.05, 0.0], [0.1, 0.2, 0.0]])
    t = np.array([[0, 1, 2]])
    normal = np.tile([0.0, 0.0, 1.0], (3, 1))
    depth = rng.uniform(0.0, 0.01, 3)
    removed = np.empty(1)
    prism_volumes(x, t, normal, depth, removed)
    area = 0.5 * abs(0.3 * 0.2 - 0.05 * 0.1)
    assert removed[0] == pytest.approx(area * depth.mean(), rel=1e-14)


def swept_by_quadrature(a, u):
    """The volume the triangle a (3, 3) sweeps when its vertices move by u (3, 3): the
    integral over s in [0, 1] and the reference triangle of det(u(lambda), dx/dl1, dx/dl2);
    2-point Gauss in s (the integrand is cubic in s), the centroid in lambda (linear)."""
    total = 0.0
    for s, w in ((0.5 - 0.5 / np.sqrt(3), 0.5), (0.5 + 0.5 / np.sqrt(3), 0.5)):
        p = a + s * u
        cross = np.cross(p[1] - p[0], p[2] - p[0])
        total += w * 0.5 * np.dot(u.mean(axis=0), cross)
    return total


def test_prism_volume_matches_quadrature_for_any_normals(rng):
    for _ in range(20):
        x = rng.normal(size=(3, 3))
        normal = rng.normal(size=(3, 3))
        normal /= np.linalg.norm(normal, axis=1)[:, None]
        depth = rng.uniform(0.0, 0.3, 3)
        removed = np.empty(1)
        prism_volumes(x, np.array([[0, 1, 2]]), normal, depth, removed)
        expected = -swept_by_quadrature(x, -depth[:, None] * normal)
        assert removed[0] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_prisms_tile_the_layer_between_closed_surfaces(rng):
    """Sum of prisms = enclosed volume before - after, for random depths on a sphere."""
    mesh = icosphere(0.5, 2)
    x, t = mesh.vertices, mesh.triangles
    normal, area = np.empty_like(x), np.empty(len(x))
    vertex_normals(x, t, normal, area)
    depth = rng.uniform(0.0, 0.02, len(x))
    removed = np.empty(len(t))
    prism_volumes(x, t, normal, depth, removed)
    after = Mesh(x - depth[:, None] * normal, t).signed_volume()
    assert removed.sum() == pytest.approx(mesh.signed_volume() - after, rel=1e-12)
    assert area.sum() == pytest.approx(mesh.areas.sum(), rel=1e-14)


# ------------------------------------------------------------------------- flat tracks

def test_uniform_track_removes_k_w_and_the_depth_follows_the_track():
    h, w = 1e-3, 40.0                                   # m, J/m^2 of frictional work
    x, t, _, row, _ = grid(24, 12, h)
    track = (row >= 4) & (row <= 7)
    work = np.where(track, w * areas(x, t), 0.0)
    before = x.copy()
    step = wear_mesh(x, t, work, K, FACTOR)

    assert step.iterations == 1
    assert step.removed.sum() == pytest.approx(FACTOR * K * work.sum(), rel=1e-12)
    # depth = V / area inside the track; a vertex on the track's edge gets its track
    # triangles' share of its fan; outside, nothing
    expected = FACTOR * K * w * fan_fraction(t, track, len(x))
    assert np.allclose(step.depth, expected, rtol=1e-12, atol=1e-30)
    yv = np.rint(before[:, 1] / h).astype(int)
    inside = (yv > 4) & (yv < 8)
    assert np.allclose(step.depth[inside], FACTOR * K * w, rtol=1e-12)
    interior_column = (before[:, 0] > 0) & (before[:, 0] < 24 * h - h / 2)
    edge = ((yv == 4) | (yv == 8)) & interior_column
    assert np.allclose(step.depth[edge], FACTOR * K * w / 2, rtol=1e-12)    # 3 of 6 triangles
    assert np.all(step.depth[(yv < 4) | (yv > 8)] == 0.0)
    # vertices move straight down, triangles inside the track lose exactly their V_t
    assert np.array_equal(x[:, :2], before[:, :2])
    assert np.allclose(x[:, 2], -expected, rtol=1e-12, atol=1e-30)
    full = track & (row > 4) & (row < 7)
    assert np.allclose(step.removed[full], FACTOR * K * work[full], rtol=1e-12)


def path_lengths(h, nx, ny, y0, xa, xb):
    """Length of the segment y = y0, x in [xa, xb] inside each triangle of grid(nx, ny, h)."""
    _, t, col, row, lower = grid(nx, ny, h)
    jj = int(y0 // h)
    delta = y0 - jj * h                   # the diagonal of a square crosses y0 at x_i + delta
    length = np.zeros(len(t))
    for k in np.flatnonzero(row == jj):
        x_i = col[k] * h
        lo, hi = (x_i + delta, x_i + h) if lower[k] else (x_i, x_i + delta)
        length[k] = max(0.0, min(hi, xb) - max(lo, xa))
    return length


def test_a_sliding_grain_removes_k_f_s():
    """A grain sliding at constant friction force F over the path s: work F * (its length in
    each triangle), removed volume k F s (the acceptance asks 1 %; it holds to round-off)."""
    h, nx, ny = 2e-3, 30, 10
    x, t, _, row, _ = grid(nx, ny, h)
    force, y0, xa, xb = 3.0, 4.37 * h, 2.3 * h, 27.6 * h
    length = path_lengths(h, nx, ny, y0, xa, xb)
    assert length.sum() == pytest.approx(xb - xa, rel=1e-13)
    step = wear_mesh(x, t, force * length, K, FACTOR)
    assert step.removed.sum() == pytest.approx(FACTOR * K * force * (xb - xa), rel=1e-12)
    # the worn groove is the path's row of squares and the vertices around it
    touched = np.zeros(len(x), bool)
    touched[t[length > 0].ravel()] = True
    assert np.all(step.depth[touched] > 0) and np.all(step.depth[~touched] == 0)
    assert np.all(x[~touched, 2] == 0.0)


# ------------------------------------------------------------------------- open boundaries

def test_open_sheet_worn_uniformly_sinks_as_a_whole():
    """Boundary vertices move like interior ones: with work proportional to area everywhere,
    every vertex (corners with one triangle, the half triangles at the sides) sinks by f k w."""
    sheet = flat_sheet(0.01, width=0.1, height=0.06)
    x, t = sheet.vertices.copy(), sheet.triangles
    w = 25.0
    step = wear_mesh(x, t, w * sheet.areas, K, FACTOR)
    assert np.allclose(x[:, 2], -FACTOR * K * w, rtol=1e-12)
    assert np.array_equal(x[:, :2], sheet.vertices[:, :2])
    assert step.removed.sum() == pytest.approx(FACTOR * K * w * sheet.areas.sum(), rel=1e-12)


def test_a_track_along_the_open_edge_wears_the_rim():
    h, w = 1e-3, 10.0
    x, t, _, row, _ = grid(10, 8, h)
    track = row < 2                                    # the rim y = 0 lies in the track
    work = np.where(track, w * areas(x, t), 0.0)
    before = x.copy()
    step = wear_mesh(x, t, work, K, FACTOR)
    rim = before[:, 1] == 0.0
    assert np.allclose(step.depth[rim], FACTOR * K * w, rtol=1e-12)
    assert step.removed.sum() == pytest.approx(FACTOR * K * work.sum(), rel=1e-12)
    assert np.allclose(step.depth, FACTOR * K * w * fan_fraction(t, track, len(x)), rtol=1e-12)


# ------------------------------------------------------------------------- curved meshes

def test_curved_mesh_iterates_to_the_volume():
    """On a sphere the flat-mesh first guess removes too little (the area shrinks with
    depth): the iteration converges to the volume, which the enclosed volume confirms."""
    mesh = icosphere(0.1, 3)
    x, t = mesh.vertices.copy(), mesh.triangles
    work = 2.0 * mesh.areas
    target = FACTOR * K * work.sum() * 1e4            # a 2 mm layer on a 100 mm sphere
    step = wear_mesh(x, t, work, K * 1e4, FACTOR)
    assert step.iterations > 1 and step.residual <= 1e-13
    assert step.removed.sum() == pytest.approx(target, rel=1e-12)
    assert mesh.signed_volume() - Mesh(x, t).signed_volume() == pytest.approx(target, rel=1e-11)
    flat_guess = target / mesh.areas.sum()
    assert np.all(step.depth > flat_guess)


def test_an_iteration_limit_too_small_is_an_error():
    mesh = icosphere(0.1, 2)
    x = mesh.vertices.copy()
    with pytest.raises(StateError, match="did not converge in 1 iterations"):
        wear_mesh(x, mesh.triangles, 30.0 * mesh.areas, K * 1e4, FACTOR, max_iterations=1)
    assert np.array_equal(x, mesh.vertices)


# ------------------------------------------------------------------------- inversion

@pytest.mark.parametrize("depth, fraction, what", [(1.5, 0.01, "normal would flip"),
                                                   (0.4, 0.5, "area would fall below 0.5")])
def test_a_triangle_that_would_invert_stops_the_update(depth, fraction, what):
    """Worn deeper than its radius, a sphere's triangles flip; to 0.6 r, they keep 36 % of
    their area."""
    mesh = icosphere(1.0, 1)
    x, t = mesh.vertices.copy(), mesh.triangles
    normal, area = np.empty_like(x), np.empty(len(x))
    vertex_normals(x, t, normal, area)
    work = depth * mesh.areas / (K * FACTOR)          # first guess: depth everywhere
    gids = 1000 + np.arange(len(t))
    with pytest.raises(WearInversionError, match=what) as info:
        wear_mesh(x, t, work, K, FACTOR, gids=gids, min_area_fraction=fraction)
    message = str(info.value)
    assert "triangle 0 (gid 1000)" in message
    assert "smaller acceleration factor" in message and "finer mesh" in message
    assert np.array_equal(x, mesh.vertices)                       # nothing moved


# ------------------------------------------------------------------------- input

def test_no_work_moves_nothing():
    x, t, *_ = grid(3, 3, 1e-3)
    before = x.copy()
    step = wear_mesh(x, t, np.zeros(len(t)), K, FACTOR)
    assert step.iterations == 0 and np.array_equal(x, before) and not step.depth.any()


def test_bad_input_names_the_problem():
    x, t, *_ = grid(2, 2, 1e-3)
    work = np.ones(len(t))
    work[5] = -1.0
    with pytest.raises(InputError, match="triangle 5 is -1.0 J"):
        removed_volumes(work, K)
    with pytest.raises(InputError, match="wear_coefficient"):
        removed_volumes(np.ones(len(t)), -K)
    with pytest.raises(InputError, match="factor must be finite and > 0"):
        removed_volumes(np.ones(len(t)), K, 0.0)
    with pytest.raises(InputError, match="7 volumes .* for 8 triangles"):
        wear_depths(x, t, np.ones(7))
    with pytest.raises(InputError, match="indices must lie in"):
        wear_depths(x, t + 10, np.ones(len(t)))
    with pytest.raises(InputError, match=r"shape \(n, 3\)"):
        wear_depths(x[:, :2].copy(), t, np.ones(len(t)))
    with pytest.raises(InputError, match="in place"):
        wear_mesh(x.tolist(), t, np.ones(len(t)), K)


# ------------------------------------------------------------------------- export

def test_the_worn_mesh_exports_to_stl(tmp_path):
    from ecs_dem.run.export_surface import export_arrays

    x, t, _, row, _ = grid(6, 4, 1e-3)
    wear_mesh(x, t, np.where(row == 1, 1e5 * areas(x, t), 0.0), K, FACTOR)
    out = tmp_path / "worn.stl"
    export_arrays(x, t, out)
    back = read_mesh(out)
    assert len(back.triangles) == len(t)
    # binary STL stores float32 vertices (one copy per triangle corner; meshio merges none)
    corners = back.vertices[back.triangles].reshape(-1, 3)
    assert np.allclose(corners, x[t].reshape(-1, 3).astype(np.float32), rtol=0, atol=1e-9)
    assert corners[:, 2].min() < -1e-6                               # the groove is there
    with pytest.raises(InputError, match="indices must lie in"):
        export_arrays(x, t + len(x), tmp_path / "bad.stl")


# ------------------------------------------------------------------------- the system

def stand_in_tables(world, x, t):
    """mesh_vertices / mesh_triangles with the fields MeshWear reads, as the mesh-wall
    components declare them (position, x0; vertices, friction_work), anchored like
    membrane triangles."""
    from ecs_dem.table import Field, Halo, Table

    vertices = world.add_table(Table("mesh_vertices", [
        Field("position", np.float64, (3,), Halo.FORWARD, 0.0, "m"),
        Field("x0", np.float64, (3,), Halo.LOCAL, 0.0, "m")]))
    vertices.append(len(x), position=x, x0=x - 0.01, gid=np.arange(len(x)))
    vertices.next_gid = len(x)
    triangles = world.add_table(Table("mesh_triangles", [
        Field("vertices", np.int64, (3,), Halo.FORWARD, -1),
        Field("rows", np.int32, (3,), Halo.LOCAL, -1),
        Field("friction_work", np.float64, (), Halo.LOCAL, 0.0, "J")],
        anchor=("mesh_vertices", "vertices"), references={"rows": "vertices"}))
    triangles.append(len(t), vertices=t, gid=np.arange(len(t)))
    triangles.next_gid = len(t)


def test_mesh_wear_system_turns_the_work_of_each_interval_into_wear():
    from ecs_dem.system import Stage, System
    from helpers import make_world

    h, w_per_step = 1e-3, 2.0                                      # J/m^2 per step
    x, t, _, row, _ = grid(8, 6, h)
    track = (row >= 2) & (row <= 3)
    rate = np.where(track, w_per_step * areas(x, t), 0.0)

    class Rubbing(System):
        stage = Stage.FORCES
        writes = {"mesh_triangles": ("friction_work",)}

        def run(self, world):                                      # rows may be sorted
            if world.setup_phase:                                  # the forces at set-up
                return
            table = world.tables["mesh_triangles"]
            table.owned("friction_work")[:] += rate[table.owned("gid")]

    world = make_world(box_lo=(-0.01, -0.01, -0.02), box_hi=(0.02, 0.02, 0.01))
    stand_in_tables(world, x, t)
    world.add_system(Rubbing())
    wear = world.add_system(MeshWear(K, FACTOR, every=4))
    world.run(10)                        # wear at steps 4 and 8; steps 9, 10 not yet worn
    v = world.tables["mesh_vertices"]
    depth = FACTOR * K * w_per_step * 8 * fan_fraction(t, track, len(x))
    order = np.argsort(v.owned("gid"))
    # the second update wears a grooved mesh: the groove's sides (slope depth/h ~ 1e-3) tilt
    # the normals at its edges and change the depths there at second order, (depth/h)^2
    scale = depth.max()
    assert np.allclose(v.owned("wear_depth")[order], depth, rtol=0, atol=1e-6 * scale)
    assert np.allclose(v.owned("position")[order, 2], -depth, rtol=0, atol=1e-6 * scale)
    assert np.allclose(v.owned("x0")[order, 2], -0.01 - depth, rtol=0, atol=1e-6 * scale)
    assert np.allclose(v.owned("x0")[order] - v.owned("position")[order], -0.01, rtol=1e-12)
    tri = world.tables["mesh_triangles"]
    assert tri.owned("wear_volume").sum() == pytest.approx(FACTOR * K * rate.sum() * 8, rel=1e-12)
    assert np.allclose(tri.owned("worn_work"), rate[tri.owned("gid")] * 8, rtol=1e-14)
    assert np.allclose(tri.owned("friction_work"), rate[tri.owned("gid")] * 10, rtol=1e-14)
    assert 1 <= wear.last.iterations <= 3 and wear.last.residual <= 1e-13


def test_mesh_wear_needs_the_mesh_tables():
    from helpers import make_world

    world = make_world()
    world.add_system(MeshWear(K))
    with pytest.raises(InputError, match="no table mesh_vertices or mesh_triangles"):
        world.run(1)


def test_mesh_wear_on_a_mesh_wall():
    """With the real mesh-wall tables: a flat wall worn by a uniform work map sinks by f k w."""
    from ecs_dem.components import mesh_walls
    from helpers import make_world

    world = make_world(box_lo=(-0.1, -0.1, -0.1), box_hi=(0.1, 0.1, 0.1))
    sheet = flat_sheet(0.01, width=0.1, height=0.1)
    mesh_walls.add_mesh_wall(world, sheet)
    world.add_system(MeshWear(K, FACTOR, every=1))
    world.setup()
    tri = world.tables["mesh_triangles"]
    tri.owned("friction_work")[:] = 3.0 * Mesh(sheet.vertices, sheet.triangles).areas[
        tri.owned("gid") - tri.owned("gid").min()]
    world.run(1)
    assert np.allclose(world.tables["mesh_vertices"].owned("wear_depth"), FACTOR * K * 3.0,
                       rtol=1e-12)


def check_sliding_grain(result):
    """The acceptance of wear on the result of ``wear_scenarios.sliding_grain``: the volume
    removed is f k F_t s within 1 % (the tangential spring's loading over the first ~25 um
    of the 2 cm path and the load's drop where an update wore under the grain make up the
    difference), F_t is the Coulomb force mu F_n on the Hertz load, and the worn depth
    follows the track: the volume removed before x grows as f k F_t (x - x_start) to within
    one edge length's worth, and only vertices within the contact radius plus one edge of
    the track's line wear, from its start to its end."""
    import wear_scenarios as w

    assert abs(result["force"][0]) == pytest.approx(w.MU * w.hertz_load(), rel=1e-3)
    assert result["volume"] == pytest.approx(w.expected_volume(result), rel=1e-2)
    assert result["volume"] == pytest.approx(w.FACTOR * w.K * result["work"], rel=1e-12)
    gap, lateral = w.track_errors(result)
    assert gap < 1.0 and lateral <= 1.0
    x = result["vertex_position"][result["vertex_depth"] > 0, 0]
    assert x.min() < w.START[0] + w.EDGE and x.max() > w.START[0] + result["path"] - w.EDGE


def test_a_grain_sliding_over_a_mesh_wall_removes_k_f_s_along_its_track():
    """Through the contact system: a grain held at a constant overlap slides 2 cm over a
    flat mesh wall (wear_scenarios)."""
    import wear_scenarios

    check_sliding_grain(wear_scenarios.sliding_grain())
