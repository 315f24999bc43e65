"""add_mesh_wall: placement, tables, and the errors for bad input (each names the fix)."""
import numpy as np
import pytest

from ecs_dem import Box, InputError, StateError, World
from ecs_dem.components.mesh.generators import flat_sheet, icosphere
from ecs_dem.components.mesh.io import write_mesh
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.validation import MeshError
from ecs_dem.components.mesh_walls import (Rotation, Servo, Translation, add_mesh_wall,
                                           axis_angle_matrix)
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.multicontact.systems import multicontact


def world_of(size=0.05):
    world = World(Box((-size,) * 3, (size,) * 3), dt=1e-6, skin=2e-4)
    grain = add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0)
    return world, grain


def test_a_file_is_read_scaled_rotated_and_placed(tmp_path):
    sheet = flat_sheet(4.0, width=20.0, height=10.0)  # millimetres
    path = tmp_path / "sheet.stl"
    write_mesh(path, sheet)
    world, _ = world_of()
    rot = ((0.0, 0.0, 1.0), 0.5)
    w = add_mesh_wall(world, path, scale=1e-3, rotate=rot, translate=(0.01, 0.0, 0.0))
    v = world.mesh_vertices
    R = axis_angle_matrix(np.array([0.0, 0.0, 1.0]), 0.5)
    want = sheet.vertices * 1e-3 @ R.T + [0.01, 0, 0]

    def rows(x):  # the file's reader may renumber the vertices
        return x[np.lexsort(np.round(x, 7).T)]
    np.testing.assert_allclose(rows(v.position[:v.n_owned]), rows(want), atol=1e-9)
    assert world.mesh_triangles.n_owned == sheet.triangles.shape[0]
    assert np.all(world.mesh_triangles.wall == w)
    walls = world.mesh_walls
    assert walls.triangle_count[w] == sheet.triangles.shape[0] and not walls.closed[w]
    edges = np.linalg.norm(np.diff(sheet.vertices[sheet.triangles][:, [0, 1, 2, 0]], axis=1),
                           axis=2)
    np.testing.assert_allclose(walls.longest_edge[w], edges.max() * 1e-3, rtol=1e-6)


def test_several_walls_and_their_gids():
    world, _ = world_of()
    a = add_mesh_wall(world, icosphere(0.01, 1), closed=True)
    b = add_mesh_wall(world, flat_sheet(5e-3, width=0.02, height=0.02), translate=(0, 0, -0.03),
                      motion=Rotation((0, 0, -0.03), (0, 0, 1), 2.0))
    assert (a, b) == (0, 1)
    walls = world.mesh_walls
    np.testing.assert_array_equal(walls.reference[b], [0, 0, -0.03])
    assert walls.first_vertex[b] == walls.first_vertex[a] + walls.vertex_count[a]


def test_open_surface_where_closed_is_required():
    world, _ = world_of()
    with pytest.raises(MeshError, match="open.*closed=True"):
        add_mesh_wall(world, flat_sheet(5e-3, width=0.02, height=0.02), closed=True)
    with pytest.raises(MeshError, match="closed but closed=False"):
        add_mesh_wall(world, icosphere(0.01, 1), closed=False)


def test_non_manifold_and_degenerate_triangles():
    world, _ = world_of()
    x = np.array([[0, 0, 0], [0.01, 0, 0], [0, 0.01, 0], [0, -0.01, 0.0], [0, 0, 0.01]], float)
    fin = Mesh(x, np.array([[0, 1, 2], [0, 1, 3], [0, 1, 4]]))  # three triangles on one edge
    with pytest.raises(MeshError, match="mesh wall from the mesh"):
        add_mesh_wall(world, fin)
    flat = Mesh(x, np.array([[0, 1, 2], [0, 1, 1]]))
    with pytest.raises(MeshError, match="degenerate|repeated|collinear"):
        add_mesh_wall(world, flat)


def test_mesh_outside_the_box():
    world, _ = world_of()
    with pytest.raises(InputError, match="outside the box.*scale=1e-3"):
        add_mesh_wall(world, flat_sheet(4.0, width=20.0, height=10.0))


def test_bad_species_scale_and_motion():
    world, _ = world_of()
    sheet = flat_sheet(5e-3, width=0.02, height=0.02)
    with pytest.raises(InputError, match="species 3 does not exist"):
        add_mesh_wall(world, sheet, species=3)
    with pytest.raises(InputError, match="scale must be > 0"):
        add_mesh_wall(world, sheet, scale=0.0)
    with pytest.raises(InputError, match="servo needs gain"):
        add_mesh_wall(world, sheet, motion=Servo((0, 0, 1), 1.0, 0.0))
    with pytest.raises(InputError, match="not None, Translation"):
        add_mesh_wall(world, sheet, motion="spin")
    with pytest.raises(InputError, match="not a rotation"):
        add_mesh_wall(world, sheet, rotate=np.diag([1.0, 1.0, -1.0]))


def test_a_wall_moving_out_of_the_box_stops_the_run():
    world, grain = world_of()
    add_mesh_wall(world, flat_sheet(5e-3, width=0.02, height=0.02),
                  motion=Translation((0.0, 0.0, 100.0)))
    add_particles(world, np.array([[0.0, 0.0, -0.02]]), 1e-3, grain)
    first, second = velocity_verlet()
    for s in (first, MeshWallContacts(HertzMindlinLaw()), second):
        world.add_system(s)
    with pytest.raises(StateError, match="mesh wall 0 moved outside the box.*Enlarge the box"):
        world.run(1000)


def test_mesh_walls_in_an_mc_dem_world_need_the_model():
    world, grain = world_of()
    add_mesh_wall(world, flat_sheet(5e-3, width=0.02, height=0.02))
    add_particles(world, np.array([[0.0, 0.0, 0.01]]), 1e-3, grain)
    law = HertzMindlinLaw()
    for s in (*multicontact(law), MeshWallContacts(law)):
        world.add_system(s)
    with pytest.raises(InputError, match="MC-DEM.*give the model"):
        world.run(1)
