"""Grains on a tilted, translating mesh wall that crosses rank boundaries: the same forces on
1, 2 and 4 ranks, exact restart.

The wall (a sheet spanning the box, so every rank holds part of it) is decomposed: each rank
holds the vertices of its subdomain and ghost layer, not the whole mesh. Grain positions and
the wall's force and torque after 400 steps agree with the 1-rank run within 1e-9;
N + restart + N steps equal 2N bit for bit.
"""
import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.mesh_walls import Translation, add_mesh_wall
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.io.checkpoint import restart, write_checkpoint
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.neighbors.search import NeighborSearch
from mpi_scenarios import gather

pytestmark = pytest.mark.mpi(min_size=2)
L = 0.03  # m, half the box


def grains_on_a_mesh_wall(comm):
    rng = np.random.default_rng(5)
    world = World(Box((-L, -L, -0.02), (L, L, 0.02), periodic=(True, False, False)), dt=2e-6,
                  skin=2e-4, comm=comm)
    grain = add_species(world, youngs_modulus=5e6, poisson_ratio=0.3, density=2500.0,
                        restitution=0.5, friction=0.5)
    add_mesh_wall(world, flat_sheet(3e-3, width=2 * L - 1e-3, height=2 * L - 4e-3),
                  rotate=((1.0, 0.0, 0.0), 0.15), motion=Translation((0.05, 0.0, 0.0)))
    n = 80
    radius = rng.choice([1e-3, 1.5e-3, 2.5e-3], n)
    xy = rng.uniform(-0.8 * L, 0.8 * L, (n, 2))
    z = np.tan(0.15) * xy[:, 1] + radius / np.cos(0.15) + rng.uniform(0.0, 3e-4, n)
    pos = np.column_stack([xy, z])
    keep = [0]
    for k in range(1, n):  # no initial overlaps
        if np.min(np.linalg.norm(pos[keep] - pos[k], axis=1)) > 5.2e-3:
            keep.append(k)
    add_particles(world, pos[keep], radius[keep], grain, velocity=np.column_stack(
        [rng.normal(0, 0.1, (len(keep), 2)), np.full(len(keep), -0.5)]))
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), Gravity((0, 0, -9.81)), ContactForces(law),
              MeshWallContacts(law), second):
        world.add_system(s)
    return world


def test_grains_on_a_mesh_wall_across_ranks_match_one_rank():
    par, ser = grains_on_a_mesh_wall(default_comm()), grains_on_a_mesh_wall(SerialComm())
    touching = 0
    contacts = next(s for s in par.systems if isinstance(s, MeshWallContacts))
    for _ in range(8):
        par.run(50)
        touching += par.comm.sum(contacts.touching)
    ser.run(400)
    a, b = gather(par, fields=("position",)), gather(ser, fields=("position",))
    assert set(a) == set(b)
    worst = max(float(np.max(np.abs(a[g][0] - b[g][0]))) for g in b)
    assert worst < 1e-9 * L
    np.testing.assert_allclose(par.mesh_walls.force, ser.mesh_walls.force, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(par.mesh_walls.torque, ser.mesh_walls.torque, rtol=1e-9,
                               atol=1e-14)
    assert touching > 50, "few grains touched the wall: the test exercised little"
    verts = par.mesh_vertices
    total = ser.mesh_vertices.n_owned
    assert par.comm.sum(verts.n_owned) == total
    assert par.comm.max(verts.n_owned) < total, "a rank owns the whole mesh"
    assert par.comm.min(par.mesh_triangles.n_ghost) > 0
    work = par.comm.sum(float(par.mesh_triangles.friction_work[:par.mesh_triangles.n_owned].sum()))
    np.testing.assert_allclose(work, float(ser.mesh_triangles.friction_work.sum()), rtol=1e-9)


@pytest.mark.two_ranks
def test_grains_on_a_mesh_wall_restart_bit_for_bit(tmp_path_factory):
    """200 steps, a checkpoint, 200 more == the checkpoint restarted, then 200 steps."""
    comm = default_comm()
    folder = comm.world.bcast(str(tmp_path_factory.mktemp("mesh")) if comm.rank == 0 else None)
    runs = [grains_on_a_mesh_wall(comm), grains_on_a_mesh_wall(comm)]
    runs[0].run(200)
    write_checkpoint(runs[0], f"{folder}/walls.h5")
    restart(runs[1], f"{folder}/walls.h5")
    for world in runs:
        world.run(200)
    fields = ("position", "velocity", "angular_velocity")
    first, second = (gather(world, fields=fields) for world in runs)
    assert first.keys() == second.keys()
    for gid, values in first.items():
        for name, x, y in zip(fields, values, second[gid]):
            assert np.array_equal(x, y), (gid, name)
    for name in ("force", "torque"):
        assert np.array_equal(runs[0].mesh_walls.column(name)[:1], runs[1].mesh_walls.column(name)[:1])
