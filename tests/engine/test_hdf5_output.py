"""HDF5 snapshots, time series and the XDMF sidecar (ecs_dem/io/hdf5_output.py, xdmf.py)."""
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest

from ecs_dem.comm import SerialComm
from ecs_dem.errors import InputError
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from mpi_scenarios import dense_bed


def _world_with_output(path, every=10):
    world = dense_bed(SerialComm(), n_side=6, layers=3)
    out = Hdf5Output(path, {"case": "test"}, world.comm)
    world.add_system(SnapshotWriter(out, every))
    return world, out


def test_snapshot_equals_state_by_gid(tmp_path):
    world, out = _world_with_output(tmp_path / "run.h5")
    world.run(25)
    out.close()
    p = world.particles
    with h5py.File(tmp_path / "run.h5") as f:
        assert sorted(f["snapshots"]) == ["000000000", "000000010", "000000020"]
        g = f["snapshots/000000020"]
        assert g.attrs["step"] == 20
        order = np.argsort(g["gid"][:])
        # the state 5 steps later differs; snapshot 20 equals a fresh world run to 20
        again = dense_bed(SerialComm(), n_side=6, layers=3)
        again.run(20)
        mine = np.argsort(again.particles.gid)
        for field in ("position", "velocity", "angular_velocity", "radius", "species"):
            np.testing.assert_array_equal(g[field][:][order], again.particles.owned(field)[mine])
        assert g["gid"].shape[0] == p.n_owned
        assert f.attrs["ranks"] == 1 and "case = 'test'" in f.attrs["config"]


def test_xdmf_parses_and_points_at_existing_datasets(tmp_path):
    world, out = _world_with_output(tmp_path / "run.h5")
    world.run(20)
    # a membrane-like triangle set, given by particle gids as the membrane writer gives it
    tri = world.particles.gid[np.array([[0, 1, 2], [1, 2, 3]])]
    out.write_snapshot(world.step + 1, world.time, world.particles, ("gid", "position", "radius"),
                       connectivity={"triangles": tri})
    out.close()
    root = ET.parse(tmp_path / "run.xdmf").getroot()
    collections = {g.get("Name"): g for g in root.iter("Grid") if g.get("GridType") == "Collection"}
    assert set(collections) == {"particles", "membrane"}
    steps = [g for g in collections["particles"] if g.tag == "Grid"]
    assert len(steps) == 4
    times = [float(g.find("Time").get("Value")) for g in steps]
    assert times == sorted(times)
    with h5py.File(tmp_path / "run.h5") as f:
        items = list(root.iter("DataItem"))
        assert len(items) > 10
        for item in items:
            fname, dpath = item.text.split(":")
            assert fname == "run.h5"
            dims = tuple(int(d) for d in item.get("Dimensions").split())
            assert f[dpath].shape == dims, dpath
    assert collections["membrane"].find("Grid/Topology").get("TopologyType") == "Triangle"
    with h5py.File(tmp_path / "run.h5") as f:  # triangle rows point at the vertices' gids
        g = f[f"snapshots/{world.step + 1:09d}"]
        np.testing.assert_array_equal(g["gid"][:][g["triangles"][:]], tri)


def test_time_series_grows_and_resume_drops_later_records(tmp_path):
    path = tmp_path / "ts.h5"
    with Hdf5Output(path) as out:
        for step in range(0, 50, 10):
            out.append(step, step * 0.1, {"kinetic_energy": float(step), "wall_force": np.full((2, 3), step)})
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["timeseries/step"][:], [0, 10, 20, 30, 40])
        assert f["timeseries/wall_force"].shape == (5, 2, 3)
    with Hdf5Output(path, resume_step=20) as out:
        out.append(30, 3.0, {"kinetic_energy": -1.0, "wall_force": np.zeros((2, 3))})
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["timeseries/step"][:], [0, 10, 20, 30])
        np.testing.assert_array_equal(f["timeseries/kinetic_energy"][:], [0, 10, 20, -1])


def records(path) -> list[int]:
    with h5py.File(path) as f:
        return f["timeseries/step"][:].tolist()


def test_a_run_that_fails_before_its_first_write_leaves_the_earlier_file_as_it_was(tmp_path):
    path = tmp_path / "run.h5"
    with Hdf5Output(path) as out:
        for step in range(0, 50, 10):
            out.append(step, 0.1 * step, {"e": float(step)})
    before = path.read_bytes()
    for resume in (None, 20):  # a fresh run of the same name; a restart from step 20
        with pytest.raises(InputError):
            with Hdf5Output(path, {"seed": 2}, resume_step=resume) as out:
                raise InputError("found while the world was built")  # e.g. a bad checkpoint
        assert not out.opened and path.read_bytes() == before
    with Hdf5Output(path, resume_step=20) as out:  # the restart that works trims on its write
        assert records(path) == [0, 10, 20, 30, 40]
        out.append(30, 3.0, {"e": -1.0})
    assert records(path) == [0, 10, 20, 30]
    with Hdf5Output(path):  # a fresh run that writes nothing still replaces the file
        pass
    with h5py.File(path) as f:
        assert "step" not in f["timeseries"] and list(f["snapshots"]) == []


def test_an_output_path_that_cannot_be_written_is_an_input_error_before_anything_changes(
        tmp_path):
    (tmp_path / "plain").write_text("a file where a directory should be\n")
    (tmp_path / "folder.h5").mkdir()
    with pytest.raises(InputError, match="is a file, not a directory"):
        Hdf5Output(tmp_path / "plain" / "sub" / "run.h5")
    with pytest.raises(InputError, match="is a directory"):
        Hdf5Output(tmp_path / "folder.h5")
    assert (tmp_path / "plain").read_text() == "a file where a directory should be\n"


def test_a_file_another_process_holds_open_is_refused_and_kept(tmp_path):
    """HDF5's "w" truncated a file another process (a viewer) held open before it found the
    lock: the earlier output was lost and the run failed with a BlockingIOError."""
    import subprocess
    import sys

    import os

    from ecs_dem.io.parallel_h5 import SharedFile

    if os.environ.get("HDF5_USE_FILE_LOCKING", "").upper() == "FALSE":
        pytest.skip("HDF5 file locking is off here (HDF5_USE_FILE_LOCKING=FALSE)")
    path = tmp_path / "run.h5"
    with Hdf5Output(path) as out:
        out.append(0, 0.0, {"e": 1.0})
    before = path.read_bytes()
    viewer = subprocess.Popen(
        [sys.executable, "-c", "import h5py, sys; f = h5py.File(sys.argv[1], 'r'); "
         "print('open', flush=True); sys.stdin.read()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert viewer.stdout.readline().strip() == "open"
        with pytest.raises(InputError, match="open in another process"):
            Hdf5Output(path)  # before the run computes anything
        for mode in ("w", "a"):  # when the file is opened, at the first write
            with pytest.raises(InputError, match="open in another process"):
                SharedFile(path, mode, SerialComm())
        Hdf5Output(path.with_name("other.h5")).close()  # another file is free
    finally:
        viewer.communicate("")
    assert path.read_bytes() == before
    SharedFile(path, "w", SerialComm()).file.close()  # free again once the viewer closed it


def test_a_snapshot_that_cannot_fit_ends_the_run_with_the_earlier_ones_readable(
        tmp_path, monkeypatch):
    """A full disk ended the run with a traceback from the XDMF sidecar and left a half-written
    .xdmf.tmp beside it; now an OutputError names the file, and the snapshots written before
    and their sidecar stay readable."""
    import ecs_dem.io.parallel_h5 as parallel_h5
    from ecs_dem.errors import OutputError
    from ecs_dem.io import xdmf

    world, out = _world_with_output(tmp_path / "run.h5")
    world.run(15)

    class Full:
        f_bavail, f_frsize = 1000, 1

    with monkeypatch.context() as patch:
        patch.setattr(parallel_h5.os, "statvfs", lambda folder: Full)
        with pytest.raises(OutputError, match=r"step 20: an output file \(.*run.h5\) could not "
                                              "be written: No space left on device"):
            world.run(10)
        with pytest.raises(OSError, match="No space left on device"):
            out.append(world.step, world.time, {"e": 1.0})  # a time-series record too
    out.close()
    with h5py.File(tmp_path / "run.h5") as f:
        assert sorted(f["snapshots"]) == ["000000000", "000000010"]
    sidecar = (tmp_path / "run.xdmf").read_text()
    assert sidecar.count('GridType="Uniform"') == 2 and "000000010" in sidecar

    def no_room(self, text):
        self.write_bytes(text[:10].encode())  # part of it went out before the device was full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(xdmf.Path, "write_text", no_room)
    with pytest.raises(OSError, match=r"run.xdmf.tmp"):
        xdmf.write_xdmf(tmp_path / "run.xdmf", tmp_path / "run.h5", [])
    assert (tmp_path / "run.xdmf").read_text() == sidecar
    assert not (tmp_path / "run.xdmf.tmp").exists()


def test_a_time_series_record_into_a_folder_not_yet_made_makes_it(tmp_path):
    """The room check before a write asked the file's folder, which is made when the file
    opens: a first record into output/new/run.h5 failed with 'No such file or directory'
    (and on several ranks hung the others, waiting for rank 0's answer)."""
    path = tmp_path / "new" / "deeper" / "run.h5"
    out = Hdf5Output(path, None, SerialComm())
    out.append(0, 0.0, {"e": 1.0})
    out.close()
    with h5py.File(path) as f:
        assert f["timeseries/e"][:].tolist() == [1.0]
