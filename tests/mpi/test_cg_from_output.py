"""Coarse-graining an output file on several ranks gives the fields of one rank."""
import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from ecs_dem.cg.from_output import snapshot_sums
from ecs_dem.cg.grid import CartesianGrid, CylindricalGrid
from ecs_dem.cg.kernels import Kernel
from mpi_scenarios import R, dense_bed

pytestmark = pytest.mark.mpi(min_size=2)


def test_sums_from_a_file_on_several_ranks_equal_one_ranks(tmp_path):
    comm = default_comm()
    path = comm.broadcast_object(str(tmp_path)) + "/bed.h5"
    world = dense_bed(comm, n_side=8, layers=4)
    out = Hdf5Output(path, None, comm)
    world.add_system(SnapshotWriter(out, 30, fields=("gid", "position", "velocity", "radius",
                                                     "mass"), contacts=True))
    world.run(30)
    out.close()
    width = 8 * 1.99 * R
    grids = (CartesianGrid((0, 0, 0), (width, width, 9 * R), (6, 6, 4)),
             CylindricalGrid((0.5 * width, 0.5 * width), 0.5 * width, (0, 9 * R), (3, 4)))
    for grid, kernel in zip(grids, (Kernel.gaussian(1.5 * R), Kernel.lucy(8 * R))):
        many = snapshot_sums(path, 30, grid, kernel, comm)
        one = snapshot_sums(path, 30, grid, kernel, SerialComm())
        for name in one.arrays:
            scale = max(np.abs(one[name]).max(), 1e-300)
            np.testing.assert_allclose(many[name], one[name], rtol=0, atol=1e-12 * scale)
        assert np.abs(one["contact_stress"]).max() > 0


def test_on_the_fly_on_several_ranks_equals_the_file_on_one(tmp_path):
    from ecs_dem.cg.from_output import coarse_grain_file
    from ecs_dem.cg.from_world import RecordedFields

    comm = default_comm()
    path = comm.broadcast_object(str(tmp_path)) + "/fly.h5"
    width = 8 * 1.99 * R
    grid = CartesianGrid((0, 0, 0), (width, width, 9 * R), (6, 6, 4))
    kernel = Kernel.gaussian(1.5 * R)
    world = dense_bed(comm, n_side=8, layers=4, newton=True)
    out = Hdf5Output(path, None, comm)
    world.add_system(SnapshotWriter(out, 20, fields=("gid", "position", "velocity", "radius",
                                                     "mass"), contacts=True))
    fly = world.add_system(RecordedFields(grid, kernel, 20))
    world.run(40)
    out.close()
    comm.barrier()
    one = coarse_grain_file(path, grid, kernel, [0, 20, 40], SerialComm())
    for step in (0, 20, 40):
        for name, value in one[step][1].items():
            a = fly.fields[step][1][name]
            np.testing.assert_allclose(a, value, rtol=0,
                                       atol=1e-12 * max(np.abs(value).max(), 1e-300))
