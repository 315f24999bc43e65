"""Membrane vertices touch mesh walls as spheres of their radius, with the force they feel on
the equivalent planar wall (systems/mesh_wall/search.py: every owned particle is a candidate)."""
import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.membranes import add_membrane
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.mesh_walls import add_mesh_wall
from ecs_dem.components.particles import create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.walls.contacts import WallContacts

VERTEX_RADIUS = 1e-3
THICKNESS = 2e-4
FLOOR = -0.004


def sheet_over_floor(mesh_floor: bool, contact: str) -> World:
    """A membrane sheet whose vertices overlap a floor (z = FLOOR) by amounts that vary over
    the sheet (it is tilted), the floor a mesh wall or a planar wall of the same species."""
    world = World(Box((-0.05,) * 3, (0.05,) * 3), dt=1e-6, skin=2e-4)
    floor = add_species(world, youngs_modulus=1e8, poisson_ratio=0.3, density=2500.0,
                        restitution=0.5, friction=0.4)
    create_particle_table(world)
    sheet = flat_sheet(4e-3, width=0.02, height=0.02)
    v = sheet.vertices.copy()
    radius = VERTEX_RADIUS if contact == "particle" else 0.5 * THICKNESS  # patch: d / 2
    v[:, 2] = FLOOR + radius - 2e-5 - 1e-3 * v[:, 0]  # overlaps from 1e-5 to 3e-5 m
    add_membrane(world, type(sheet)(v, sheet.triangles), youngs_modulus=1e6, thickness=THICKNESS,
                 density=1000.0, contact=contact,
                 vertex_radius=VERTEX_RADIUS if contact == "particle" else None)
    if mesh_floor:
        add_mesh_wall(world, flat_sheet(5e-3, width=0.06, height=0.06),
                      translate=(0.0, 0.0, FLOOR), species=floor)
        world.add_system(MeshWallContacts(HertzMindlinLaw()))
    else:
        add_wall(world, (0.0, 0.0, FLOOR), (0.0, 0.0, 1.0), species=floor)
        world.add_system(WallContacts(HertzMindlinLaw()))
    world.particles.velocity[:] = (0.02, -0.01, -0.03)
    world.run(0)
    return world


@pytest.mark.parametrize("contact", ["particle", "patch"])
def test_membrane_vertices_feel_the_planar_walls_force_on_a_mesh_wall(contact):
    on_mesh = sheet_over_floor(True, contact)
    on_plane = sheet_over_floor(False, contact)
    f_mesh, z, radius = by_gid(on_mesh, "force", "position", "radius")
    (f_plane,) = by_gid(on_plane, "force")
    touching = z[:, 2] - FLOOR < radius
    assert touching.sum() >= 3 and np.all(f_mesh[touching, 2] > 0)  # pushed up
    assert np.all(f_mesh[~touching] == 0.0)
    np.testing.assert_allclose(f_mesh, f_plane, rtol=1e-9, atol=1e-12 * np.abs(f_plane).max())


def by_gid(world, *names):
    """Owned rows' fields in gid order (the two worlds sort their rows differently)."""
    p = world.particles
    order = np.argsort(p.gid[:p.n_owned])
    return [getattr(p, name)[:p.n_owned][order] for name in names]
