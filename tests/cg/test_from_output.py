"""Coarse-graining from an output file equals coarse-graining the world's own arrays."""
import subprocess
import sys

import h5py
import numpy as np
import pytest

from ecs_dem.comm import SerialComm
from ecs_dem.errors import InputError
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from ecs_dem.cg.fields import coarse_grain, derive
from ecs_dem.cg.from_output import coarse_grain_file, read_fields, snapshot_sums, write_fields
from ecs_dem.cg.grid import CartesianGrid, CylindricalGrid
from ecs_dem.cg.kernels import Kernel
from mpi_scenarios import R, dense_bed

FIELDS = ("gid", "position", "velocity", "radius", "mass", "force")


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    """A bed run 40 steps with contacts in its snapshots, and the world at the end."""
    path = tmp_path_factory.mktemp("bed") / "bed.h5"
    world = dense_bed(SerialComm(), n_side=6, layers=4)
    out = Hdf5Output(path, None)
    world.add_system(SnapshotWriter(out, 20, fields=FIELDS, contacts=True))
    world.run(40)
    out.close()
    return path, world


def in_memory_sums(world, grid, kernel):
    """The sums from the world's arrays and its contact systems' records (no file)."""
    p = world.particles
    gid = p.with_ghosts("gid")
    row = {int(g): k for k, g in enumerate(gid[:p.n_owned])}
    parts = {}
    for s in world.systems:
        if callable(getattr(s, "snapshot_contacts", None)):
            parts.update(s.snapshot_contacts(world))
    c, b = parts["contacts"], parts["boundary_contacts"]
    rows = lambda gids: np.array([row[int(g)] for g in gids], dtype=np.int64)  # noqa: E731
    return coarse_grain(grid, kernel, p.owned("position"), p.owned("velocity"), p.owned("mass"),
                        p.owned("radius"),
                        pairs=(rows(c["i"]), rows(c["j"]), c["force"], c["branch"]),
                        boundary=(rows(b["i"]), b["force"], b["contact_point"]))


@pytest.mark.parametrize("kernel", [Kernel.gaussian(1.5 * R), Kernel.lucy(4 * R)])
def test_fields_from_the_file_equal_those_from_the_worlds_arrays(bed, kernel):
    path, world = bed
    top = world.particles.owned("position")[:, 2].max() + R
    width = 6 * 1.99 * R  # dense_bed(n_side=6)
    grid = CartesianGrid((0, 0, 0), (width, width, top), (1, 1, 12), average="xy")
    a = in_memory_sums(world, grid, kernel)
    b = snapshot_sums(path, 40, grid, kernel)
    for name in a.arrays:
        scale = np.abs(a[name]).max()
        assert scale > 0 or name == "momentum"
        np.testing.assert_allclose(b[name], a[name], rtol=0, atol=1e-12 * max(scale, 1e-300))
    fields = derive(b)
    assert fields["pressure"].max() > 0 and fields["coordination"].max() > 3


def test_fields_file_reads_back_and_its_xdmf_names_every_field(bed, tmp_path):
    path, _ = bed
    grid = CylindricalGrid((6 * R, 6 * R), 5 * R, (0, 8 * R), (4, 6))
    kernel = Kernel.lucy(4 * R)
    results = coarse_grain_file(path, grid, kernel, [20, 40], fields="density,stress,velocity")
    out = write_fields(tmp_path / "f.h5", grid, kernel, results, source=str(path))
    back = read_fields(out)
    assert sorted(back) == [20, 40]
    for step in (20, 40):
        for name in ("density", "stress", "velocity"):
            np.testing.assert_array_equal(back[step][1][name], results[step][1][name])
    xdmf = (tmp_path / "f.xdmf").read_text()
    assert xdmf.count('AttributeType="Tensor"') == 2 and xdmf.count("<Grid Name=\"cg_") == 2
    assert 'Dimensions="6 1 4"' in xdmf  # (z, 1, r)
    with h5py.File(out, "r") as f:
        assert f["fields/000000040/stress"].shape == (6, 1, 4, 9)


def test_time_average_is_the_mean_of_the_snapshots_sums(bed):
    path, _ = bed
    grid = CartesianGrid((0, 0, 0), (12 * R, 12 * R, 8 * R), (1, 1, 6), average="xy")
    kernel = Kernel.gaussian(1.5 * R)
    one = coarse_grain_file(path, grid, kernel, [20, 40], fields="density")
    mean = coarse_grain_file(path, grid, kernel, [20, 40], fields="density", average=True)
    assert list(mean) == [40] and mean[40][1]["_window"] == (20, 40, 2)
    np.testing.assert_allclose(mean[40][1]["density"],
                               0.5 * (one[20][1]["density"] + one[40][1]["density"]),
                               rtol=1e-14)


def test_a_file_without_contacts_gives_particle_fields_and_refuses_the_stress(tmp_path):
    world = dense_bed(SerialComm(), n_side=4, layers=2)
    out = Hdf5Output(tmp_path / "plain.h5", None)
    world.add_system(SnapshotWriter(out, 10))  # the default fields: no mass, no contacts
    world.run(10)
    out.close()
    grid = CartesianGrid((0, 0, 0), (8 * R, 8 * R, 5 * R), (1, 1, 4), average="xy")
    kernel = Kernel.gaussian(1.5 * R)
    with pytest.raises(InputError, match="no 'mass' dataset"):
        coarse_grain_file(tmp_path / "plain.h5", grid, kernel)
    got = coarse_grain_file(tmp_path / "plain.h5", grid, kernel, density=2500.0)
    assert "stress" not in got[10][1] and got[10][1]["density"].max() > 0
    with pytest.raises(InputError, match="no contact network"):
        coarse_grain_file(tmp_path / "plain.h5", grid, kernel, fields="stress", density=2500.0)


def test_command_line_writes_the_sibling_file(bed, tmp_path):
    path, _ = bed
    out = tmp_path / "cli_cg.h5"
    run = subprocess.run([sys.executable, "-m", "ecs_dem.cg", str(path), "--width", str(1.5 * R),
                          "--cells", "1", "1", "10", "--average", "xy", "--steps", "last",
                          "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    back = read_fields(out)
    assert list(back) == [40] and back[40][1]["stress"].shape == (1, 1, 10, 3, 3)
    assert (tmp_path / "cli_cg.xdmf").is_file()
    bad = subprocess.run([sys.executable, "-m", "ecs_dem.cg", str(path), "--width", "-1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--width" in bad.stderr


BED_GRID = CartesianGrid((0, 0, 0), (6 * 1.99 * R, 6 * 1.99 * R, 9 * R), (4, 4, 6))


def run_beside_snapshots(path, system, every: int, steps: int):
    """A bed run `steps` steps with `system` and snapshots with contacts every `every` steps."""
    world = dense_bed(SerialComm(), n_side=6, layers=4)
    out = Hdf5Output(path, None)
    world.add_system(SnapshotWriter(out, every, fields=FIELDS, contacts=True))
    world.add_system(system)
    world.run(steps)
    out.close()
    return system


def assert_same_fields(a: dict, b: dict) -> None:
    for name, value in b.items():
        scale = max(np.abs(value).max(), 1e-300)
        np.testing.assert_allclose(a[name], value, rtol=0, atol=1e-12 * scale, err_msg=name)


def test_on_the_fly_fields_equal_those_from_the_output_file(tmp_path):
    from ecs_dem.cg.from_world import RecordedFields

    kernel = Kernel.gaussian(1.5 * R)
    fly = run_beside_snapshots(tmp_path / "run.h5", RecordedFields(BED_GRID, kernel, 15), 15, 30)
    assert sorted(fly.fields) == [0, 15, 30]
    from_file = coarse_grain_file(tmp_path / "run.h5", BED_GRID, kernel)
    for step in (0, 15, 30):
        assert_same_fields(fly.fields[step][1], from_file[step][1])


def test_the_on_the_fly_system_and_the_output_file_give_the_same_fields(tmp_path):
    """cg.system.CoarseGraining (its own contact recorder) against the file's network."""
    from ecs_dem.cg.system import CoarseGraining

    kernel = Kernel.lucy(6 * R)
    fly = run_beside_snapshots(tmp_path / "run.h5", CoarseGraining(BED_GRID, kernel, 25), 25, 25)
    assert fly.step == 25
    assert_same_fields(fly.fields, coarse_grain_file(tmp_path / "run.h5", BED_GRID, kernel,
                                                     [25])[25][1])
