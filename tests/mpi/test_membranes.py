"""Membranes across ranks: the same result on 1, 2 and 4 ranks, and exact restart.

A closed spherical membrane (with bending and internal pressure) and an open cylinder (with
bending, compressing stress and a clamped bottom ring) that span every rank boundary: vertex
positions after 500 steps on N ranks equal the 1-rank run within 1e-9 of the size, vertex gids
are conserved, and N steps + checkpoint + restart + N steps equals 2N steps bit for bit.
"""
import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.components.membranes import add_membrane, membrane_vertices, set_stress
from ecs_dem.components.mesh.generators import cylinder, icosphere
from ecs_dem.components.particles import create_particle_table, fix_particles
from ecs_dem.io.checkpoint import restart, write_checkpoint
from ecs_dem.systems.membrane.systems import membrane_systems
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from mpi_scenarios import gather

pytestmark = pytest.mark.mpi(min_size=2)

R = 0.02


def membrane_world(comm, shape):
    rng = np.random.default_rng(4)
    world = World(Box((-2 * R,) * 3, (2 * R,) * 3), dt=2e-6, skin=1e-4 * R, comm=comm)
    create_particle_table(world)
    if shape == "sphere":
        mesh = icosphere(R, 3)
    else:
        mesh = cylinder(R, 2 * R, 0.25 * R, center=(0.0, 0.0, -R))
    add_membrane(world, mesh, youngs_modulus=1e6, thickness=5e-4, density=1000.0,
                 damping_ratio=0.05, bending_stiffness=1e-4, bending_damping=1e-7)
    p = world.particles
    p.velocity[:] = rng.normal(0, 0.02, p.velocity.shape)
    if shape == "sphere":
        set_stress(world, 0, -300.0)
    else:
        set_stress(world, 0, 200.0)
        fix_particles(world, membrane_vertices(world, 0, where=lambda x: x[:, 2] < -R + 1e-9))
    first, second = velocity_verlet()
    world.add_system(first)
    for s in membrane_systems():
        world.add_system(s)
    world.add_system(second)
    return world


@pytest.mark.parametrize("shape", ["sphere", "cylinder"])
def test_membrane_on_several_ranks_matches_one_rank(shape):
    par, ser = membrane_world(default_comm(), shape), membrane_world(SerialComm(), shape)
    par.run(500)
    ser.run(500)
    a = gather(par, fields=("position",))
    b = gather(ser, fields=("position",))
    assert set(a) == set(b) and len(a) == ser.particles.n_owned
    worst = max(float(np.max(np.abs(a[g][0] - b[g][0]))) for g in b)
    assert worst < 1e-9 * R
    moved = max(float(np.max(np.abs(b[g][0] - membrane_world(SerialComm(), shape)
                                     .particles.position[g]))) for g in list(b)[:20])
    assert moved > 1e-6 * R
    # the membrane really spans the ranks: every rank owns vertices and ghosts of others
    assert par.comm.min(par.particles.n_owned) > 0 and par.comm.min(par.particles.n_ghost) > 0
    assert par.comm.min(par.membrane_hinges.n_owned) > 0


@pytest.mark.two_ranks
def test_membrane_restart_is_bit_for_bit(tmp_path_factory):
    comm = default_comm()
    base = comm.world.bcast(str(tmp_path_factory.mktemp("mem")) if comm.rank == 0 else None)
    straight = membrane_world(comm, "cylinder")
    straight.run(150)
    write_checkpoint(straight, f"{base}/ck.h5")
    straight.run(150)
    resumed = membrane_world(comm, "cylinder")
    restart(resumed, f"{base}/ck.h5")
    resumed.run(150)
    a = gather(straight, fields=("position", "velocity"))
    b = gather(resumed, fields=("position", "velocity"))
    for g in a:
        np.testing.assert_array_equal(a[g][0], b[g][0])
        np.testing.assert_array_equal(a[g][1], b[g][1])
