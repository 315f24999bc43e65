"""Mesh files through meshio and membrane surfaces from ecs_dem's HDF5 output (components/mesh/io.py).

Round trips through STL (binary and ASCII), OBJ and other meshio formats;
missing, unreadable and non-triangle files give InputError naming the path
and the fix; surfaces come back from synthetic snapshot and checkpoint files
(h5py, in the documented layouts) and through run/export_surface.py.
"""
import subprocess

import h5py
import meshio
import numpy as np
import pytest

from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.generators import flat_sheet, icosphere
from ecs_dem.components.mesh.io import (
    read_mesh, snapshot_steps, surface_from_checkpoint, surface_from_snapshot, write_mesh)
from ecs_dem.components.mesh.validation import validate_mesh
from ecs_dem.errors import InputError
from helpers import PYTHON, REPO

SPHERE = icosphere(0.025, 2, center=(0.01, -0.02, 0.3))


def corners(mesh):
    return mesh.vertices[mesh.triangles]


# ---------------------------------------------------------------------------- round trips

def test_binary_stl_round_trip(tmp_path):
    path = tmp_path / "ball.stl"
    write_mesh(path, SPHERE)
    assert path.stat().st_size == 84 + 50 * len(SPHERE.triangles)      # binary by default
    back = read_mesh(path)
    assert len(back.triangles) == len(SPHERE.triangles)
    # float32 coordinates, corner by corner and in order (the winding survives)
    np.testing.assert_array_equal(corners(back), corners(SPHERE).astype(np.float32))
    assert len(validate_mesh(back).vertices) == len(SPHERE.vertices)


def test_ascii_stl_round_trip(tmp_path):
    path = tmp_path / "ball.stl"
    write_mesh(path, SPHERE, binary=False)
    assert path.read_text().startswith("solid")
    back = read_mesh(path)
    np.testing.assert_allclose(corners(back), corners(SPHERE), rtol=0, atol=1e-7 * 0.3)


def test_obj_round_trip_is_exact(tmp_path):
    path = tmp_path / "ball.obj"
    write_mesh(path, SPHERE)
    back = read_mesh(path)
    np.testing.assert_array_equal(back.vertices, SPHERE.vertices)
    np.testing.assert_array_equal(back.triangles, SPHERE.triangles)


@pytest.mark.parametrize("name, binary", [("ball.ply", True), ("ball.vtu", True), ("ball.vtk", False),
                                          ("ball.off", True), ("ball.msh", True)])
def test_other_meshio_formats_round_trip(tmp_path, name, binary):
    path = tmp_path / name
    write_mesh(path, SPHERE, binary=binary)
    back = read_mesh(path)
    np.testing.assert_allclose(corners(back), corners(SPHERE), rtol=0, atol=1e-12)


def test_write_creates_folders_and_takes_an_explicit_format(tmp_path):
    path = tmp_path / "out" / "deep" / "sheet.surface"
    write_mesh(path, flat_sheet(0.1, width=0.5, height=0.5), file_format="obj")
    back = read_mesh(path, file_format="obj")
    assert len(back.triangles) == len(flat_sheet(0.1, width=0.5, height=0.5).triangles)


# ---------------------------------------------------------------------------- bad files

def test_missing_file(tmp_path):
    path = tmp_path / "nowhere.stl"
    with pytest.raises(InputError, match=r"nowhere\.stl does not exist.*supported formats: STL"):
        read_mesh(path)


def test_garbage_file(tmp_path, rng, capsys):
    path = tmp_path / "garbage.stl"
    path.write_bytes(rng.integers(0, 256, 3000, dtype=np.uint8).tobytes())
    with pytest.raises(InputError, match=r"cannot read mesh file .*garbage\.stl as stl: .*supported formats"):
        read_mesh(path)
    text = tmp_path / "garbage.msh"
    text.write_text("this is not a mesh\n" * 20)
    with pytest.raises(InputError, match=r"cannot read mesh file .*garbage\.msh as gmsh"):
        read_mesh(text)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""            # meshio's own complaints are in the message


def test_unknown_extension_and_format(tmp_path):
    path = tmp_path / "mesh.xyz"
    path.write_text("1 2 3\n")
    with pytest.raises(InputError, match=r"cannot tell the mesh format .*'\.xyz'.*pass file_format="):
        read_mesh(path)
    with pytest.raises(InputError, match="cannot read mesh file"):
        read_mesh(path, file_format="no-such-format")
    with pytest.raises(InputError, match="cannot tell the mesh format"):
        write_mesh(tmp_path / "out.xyz", SPHERE)


def test_quads_must_be_triangulated(tmp_path):
    path = tmp_path / "square.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 2 0 0\nf 1 2 3 4\nf 2 5 3\n")
    with pytest.raises(InputError, match=r"holds 1 quad cells besides triangles.*triangulate the surface"):
        read_mesh(path)


def test_volume_cells_and_second_order_triangles(tmp_path):
    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    meshio.write(tmp_path / "tet.vtu", meshio.Mesh(points, [("tetra", np.array([[0, 1, 2, 3]]))]))
    with pytest.raises(InputError, match=r"1 tetra cells.*volume mesh: extract its boundary surface"):
        read_mesh(tmp_path / "tet.vtu")
    six = np.vstack([points[:3], [[0.5, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0]]])
    meshio.write(tmp_path / "p2.vtu", meshio.Mesh(six, [("triangle6", np.array([[0, 1, 2, 3, 4, 5]]))]))
    with pytest.raises(InputError, match=r"triangle6 cells.*first-order"):
        read_mesh(tmp_path / "p2.vtu")


def test_points_and_lines_of_a_gmsh_file_are_skipped(tmp_path):
    sheet = flat_sheet(0.1, width=0.3, height=0.2)
    lines = np.array([[0, 1], [1, 2]])
    raw = meshio.Mesh(sheet.vertices, [("vertex", np.array([[0]])), ("line", lines),
                                        ("triangle", sheet.triangles)])
    meshio.write(tmp_path / "sheet.msh", raw, file_format="gmsh22", binary=False)
    back = read_mesh(tmp_path / "sheet.msh")
    np.testing.assert_array_equal(back.triangles, sheet.triangles)
    np.testing.assert_allclose(back.vertices, sheet.vertices, rtol=0, atol=1e-15)


def test_a_file_without_triangles(tmp_path):
    path = tmp_path / "empty.obj"
    path.write_text("# nothing\nv 0 0 0\n")
    with pytest.raises(InputError, match="holds no triangles"):
        read_mesh(path)


# ---------------------------------------------------------------------------- HDF5 output

GRAINS = 30


def membranes():
    """Membrane 0: a sphere (gids 100..), membrane 1: a sheet (gids 1000..); grains are gids 0..29."""
    sheet = flat_sheet(0.01, width=0.04, height=0.03, center=(0, 0, -0.05))
    return SPHERE, sheet


def shift(step):
    return np.array([0.0, 0.0, 1e-5 * step])


def particles(rng):
    """gid, position in a shuffled (rank) order, and each gid's row."""
    sphere, sheet = membranes()
    gid = np.concatenate([np.arange(GRAINS), 100 + np.arange(len(sphere.vertices)),
                          1000 + np.arange(len(sheet.vertices))])
    position = np.concatenate([rng.uniform(-0.01, 0.01, (GRAINS, 3)), sphere.vertices, sheet.vertices])
    order = rng.permutation(len(gid))
    row_of_gid = {int(g): r for r, g in enumerate(gid[order])}
    return gid[order], position[order], row_of_gid


def triangle_gids():
    sphere, sheet = membranes()
    return np.vstack([sphere.triangles + 100, sheet.triangles + 1000]), \
        np.repeat(np.array([0, 1], dtype=np.int32), [len(sphere.triangles), len(sheet.triangles)])


def write_snapshots(path, rng, steps=(0, 500), triangles=True):
    gid, position, row_of_gid = particles(rng)
    tri, membrane = triangle_gids()
    rows = np.vectorize(row_of_gid.get)(tri).astype(np.int64)
    with h5py.File(path, "w") as f:
        for step in steps:
            g = f.create_group(f"snapshots/{step:09d}")
            g.attrs["step"] = step
            g["gid"] = gid
            g["position"] = position + shift(step)
            g["radius"] = np.full(len(gid), 1e-3)
            if triangles:
                g["triangles"] = rows
                g["triangle_membrane"] = membrane
    return path


def write_checkpoint(path, rng):
    gid, position, _ = particles(rng)
    tri, membrane = triangle_gids()
    with h5py.File(path, "w") as f:
        f.attrs["step"] = 1234
        f["tables/particles/gid"] = gid
        f["tables/particles/position"] = position
        f["tables/membrane_triangles/vertices"] = tri
        f["tables/membrane_triangles/membrane"] = membrane
    return path


def expected_corners(which, step=0):
    sphere, sheet = membranes()
    parts = {"all": (sphere, sheet), 0: (sphere,), 1: (sheet,)}[which]
    return np.concatenate([corners(m) for m in parts]) + shift(step)


def test_surface_from_snapshot(tmp_path, rng):
    path = write_snapshots(tmp_path / "run.h5", rng)
    assert snapshot_steps(path) == [0, 500]
    last = surface_from_snapshot(path)
    sphere, sheet = membranes()
    assert len(last.vertices) == len(sphere.vertices) + len(sheet.vertices)   # grains left out
    np.testing.assert_array_equal(corners(last), expected_corners("all", 500))
    first = surface_from_snapshot(path, step=0)
    np.testing.assert_array_equal(corners(first), expected_corners("all", 0))
    # vertices in gid order: the sphere's, then the sheet's, as generated
    np.testing.assert_array_equal(first.vertices, np.vstack([sphere.vertices, sheet.vertices]))
    only_sheet = surface_from_snapshot(path, step=500, membrane=1)
    np.testing.assert_array_equal(only_sheet.triangles, sheet.triangles)
    np.testing.assert_array_equal(only_sheet.vertices, sheet.vertices + shift(500))
    assert validate_mesh(surface_from_snapshot(path, membrane=0)).signed_volume() > 0


def test_surface_from_snapshot_errors(tmp_path, rng):
    path = write_snapshots(tmp_path / "run.h5", rng)
    with pytest.raises(InputError, match="no snapshot at step 7; its snapshots are at steps 0, 500"):
        surface_from_snapshot(path, step=7)
    with pytest.raises(InputError, match=r"no triangles of membrane 5; its membranes are \[0, 1\]"):
        surface_from_snapshot(path, membrane=5)
    bare = write_snapshots(tmp_path / "grains.h5", rng, triangles=False)
    with pytest.raises(InputError, match="has no /snapshots/000000500/triangles: the snapshot holds no membrane"):
        surface_from_snapshot(bare)
    with pytest.raises(InputError, match="no /snapshots group.*surface_from_checkpoint"):
        surface_from_snapshot(write_checkpoint(tmp_path / "c.h5", rng))
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(InputError, match="cannot open .*text.h5 as an HDF5 file"):
        surface_from_snapshot(tmp_path / "text.h5")
    with pytest.raises(InputError, match="does not exist"):
        surface_from_snapshot(tmp_path / "missing.h5")
    with h5py.File(path, "a") as f:                   # a vertex that was not found when written
        f["snapshots/000000500/triangles"][3, 1] = -1
    with pytest.raises(InputError, match=r"triangle 3 refers to particle rows .*-1.*incomplete"):
        surface_from_snapshot(path)


def test_surface_from_checkpoint(tmp_path, rng):
    path = write_checkpoint(tmp_path / "run.checkpoint.h5", rng)
    every = surface_from_checkpoint(path)
    np.testing.assert_array_equal(corners(every), expected_corners("all"))
    sphere = surface_from_checkpoint(path, membrane=0)
    np.testing.assert_array_equal(sphere.vertices, SPHERE.vertices)
    np.testing.assert_array_equal(sphere.triangles, SPHERE.triangles)
    with h5py.File(path, "a") as f:
        f["tables/membrane_triangles/vertices"][2, 0] = 99999
    with pytest.raises(InputError, match="membrane triangle 2 uses particle gid 99999"):
        surface_from_checkpoint(path)
    with pytest.raises(InputError, match="no /tables group"):
        surface_from_checkpoint(write_snapshots(tmp_path / "run.h5", rng))


# ---------------------------------------------------------------------------- run/export_surface.py

def export_main():
    """run/export_surface.py's main(), imported in this process (a subprocess spends ~1.5 s
    importing)."""
    from ecs_dem.run.export_surface import main

    return main


def test_export_surface_script(tmp_path, rng):
    run = write_snapshots(tmp_path / "run.h5", rng)
    res = subprocess.run([PYTHON, str(REPO / "run" / "export_surface.py"), str(run), "--step", "0",
                          "--membrane", "1", "--out", str(tmp_path / "sheet.stl")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "membrane 1, step 0 of" in res.stdout
    back = read_mesh(tmp_path / "sheet.stl")
    np.testing.assert_array_equal(corners(back), expected_corners(1).astype(np.float32))


def test_export_surface_from_a_checkpoint(tmp_path, rng, capsys):
    main = export_main()
    checkpoint = write_checkpoint(tmp_path / "run.checkpoint.h5", rng)
    assert main([str(checkpoint), "--out", str(tmp_path / "all.obj")]) == 0
    assert "every membrane, the checkpoint of" in capsys.readouterr().out
    np.testing.assert_array_equal(corners(read_mesh(tmp_path / "all.obj")), expected_corners("all"))
    assert main([str(checkpoint), "--step", "last", "--out", str(tmp_path / "x.stl"), "--ascii"]) == 0
    assert (tmp_path / "x.stl").read_text().startswith("solid")


def test_export_surface_errors(tmp_path, rng, capsys):
    main = export_main()
    checkpoint = write_checkpoint(tmp_path / "run.checkpoint.h5", rng)
    assert main([str(checkpoint), "--step", "10", "--out", str(tmp_path / "x.stl")]) == 2
    assert "is a checkpoint (one state): --step applies" in capsys.readouterr().err
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["data"] = np.zeros(3)
    assert main([str(tmp_path / "other.h5"), "--out", str(tmp_path / "x.stl")]) == 2
    err = capsys.readouterr().err
    assert "neither /snapshots" in err and "['data']" in err
    assert main([str(tmp_path / "missing.h5"), "--out", str(tmp_path / "x.stl")]) == 2
    assert "missing.h5 does not exist" in capsys.readouterr().err
    assert main([str(tmp_path), "--out", str(tmp_path / "x.stl")]) == 2  # an h5py traceback
    assert "is a directory: give an ecs_dem output" in capsys.readouterr().err
    run = write_snapshots(tmp_path / "run.h5", rng)
    assert main([str(run), "--step", "3", "--out", str(tmp_path / "x.stl")]) == 2
    assert "no snapshot at step 3" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(checkpoint), "--step", "soon", "--out", str(tmp_path / "x.stl")])
    assert "--step takes a step number or 'last'" in capsys.readouterr().err
    assert not (tmp_path / "x.stl").exists()


def test_export_surface_refuses_to_write_over_the_file_it_reads(tmp_path, rng, capsys):
    main = export_main()
    run = write_snapshots(tmp_path / "run.h5", rng)
    before = run.read_bytes()
    assert main([str(run), "--out", str(tmp_path / "." / "run.h5"), "--format", "stl"]) == 2
    assert "is the file being read" in capsys.readouterr().err
    assert run.read_bytes() == before
