"""Grains on a patch membrane across ranks: the same trajectories on 1, 2 and 4 ranks, exact restart.

A clamped sheet spanning the box (so every rank holds part of it) with grains of three sizes
falling onto it: patch contacts are evaluated by each grain's owner with the triangles it sees
as ghosts, forces on ghost vertices come home through the reverse reduction, the Table 1
selection is deterministic. Positions of grains and vertices after 400 steps agree with the
1-rank run within 1e-9 of the box; N + restart + N steps equal 2N bit for bit.
"""
import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.components.membranes import add_membrane, membrane_vertices
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.particles import add_particles, create_particle_table, fix_particles
from ecs_dem.components.species import add_species
from ecs_dem.io.checkpoint import restart, write_checkpoint
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.membrane.systems import membrane_systems
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.membrane.patch_contacts import PatchContacts
from ecs_dem.systems.membrane.patch_search import PatchSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from mpi_scenarios import gather

pytestmark = pytest.mark.mpi(min_size=2)
L = 0.03  # m, half the sheet


def grains_on_sheet(comm):
    rng = np.random.default_rng(9)
    world = World(Box((-L, -L, -0.02), (L, L, 0.02)), dt=2e-6, skin=2e-4, comm=comm)
    grain = add_species(world, youngs_modulus=5e6, poisson_ratio=0.3, density=2500.0,
                        restitution=0.5, friction=0.5)
    rubber = add_species(world, youngs_modulus=1e6, poisson_ratio=1 / 3, density=1000.0,
                         restitution=0.5, friction=0.8)
    create_particle_table(world)
    add_membrane(world, flat_sheet(3e-3, width=2 * L, height=2 * L), youngs_modulus=1e6,
                 thickness=1e-3, density=1000.0, damping_ratio=0.2, bending_stiffness=1e-5,
                 species=rubber)
    fix_particles(world, membrane_vertices(world, 0, where=lambda x: np.abs(x[:, :2]).max(axis=1)
                                           > L - 1e-3))
    n = 80
    radius = rng.choice([1e-3, 1.5e-3, 2.5e-3], n)
    pos = np.column_stack([rng.uniform(-0.8 * L, 0.8 * L, (n, 2)),
                           radius + rng.uniform(0.0, 3e-4, n)])  # just above the sheet
    keep = [0]
    for k in range(1, n):  # no initial overlaps
        if np.min(np.linalg.norm(pos[keep] - pos[k], axis=1)) > 5.2e-3:
            keep.append(k)
    pos, radius = pos[keep], radius[keep]
    add_particles(world, pos, radius, grain, velocity=np.column_stack(
        [rng.normal(0, 0.1, (len(pos), 2)), np.full(len(pos), -0.8)]))
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), PatchSearch(), Gravity((0, 0, -9.81)), ContactForces(law),
              PatchContacts(law), *membrane_systems(), second):
        world.add_system(s)
    return world


def test_grains_on_a_membrane_across_ranks_match_one_rank():
    par, ser = grains_on_sheet(default_comm()), grains_on_sheet(SerialComm())
    touching = 0
    for _ in range(8):
        par.run(50)
        touching += par.comm.sum(par.systems[5].touching)
    ser.run(400)
    a, b = gather(par, fields=("position",)), gather(ser, fields=("position",))
    assert set(a) == set(b)
    worst = max(float(np.max(np.abs(a[g][0] - b[g][0]))) for g in b)
    assert worst < 1e-9 * L
    assert touching > 50, "few grains touched the membrane: the test exercised little"
    assert par.comm.min(par.membrane_triangles.n_ghost) > 0


@pytest.mark.two_ranks
def test_grains_on_a_membrane_restart_bit_for_bit(tmp_path_factory):
    comm = default_comm()
    base = comm.world.bcast(str(tmp_path_factory.mktemp("patch")) if comm.rank == 0 else None)
    straight = grains_on_sheet(comm)
    straight.run(200)
    write_checkpoint(straight, f"{base}/ck.h5")
    straight.run(200)
    resumed = grains_on_sheet(comm)
    restart(resumed, f"{base}/ck.h5")
    resumed.run(200)
    a = gather(straight, fields=("position", "velocity", "angular_velocity"))
    b = gather(resumed, fields=("position", "velocity", "angular_velocity"))
    for g in a:
        for x, y in zip(a[g], b[g]):
            np.testing.assert_array_equal(x, y)
