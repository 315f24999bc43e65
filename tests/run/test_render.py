"""run/render.py: a PNG of a snapshot from a tiny output file in the documented layout.

The file is written with h5py as ecs_dem.io.hdf5_output lays it out (/snapshots/<step:09d>/ with
position, radius, membrane, triangles). The pictures must show something: sand-coloured grains,
and bluish membrane pixels exactly when the snapshot holds triangles; bad input is an InputError
(exit code 2 from the command line) that names the problem.
"""
import h5py
import numpy as np
import pytest
from PIL import Image

from ecs_dem import InputError
from ecs_dem.components.mesh.generators import icosphere
from helpers import load_driver

render = load_driver("render")


def write_output(path, with_membrane=True):
    """Two snapshots: 0, eight grains; 100, the same grains inside a closed membrane."""
    rng = np.random.default_rng(3)
    grains = rng.uniform(-0.006, 0.006, (8, 3))
    radii = rng.uniform(1.5e-3, 2.5e-3, 8)
    sphere = icosphere(0.012, 2)
    with h5py.File(path, "w") as f:
        for step, membrane in ((0, False), (100, with_membrane)):
            g = f.create_group(f"snapshots/{step:09d}")
            g.attrs["step"], g.attrs["time"] = step, step * 1e-5
            if membrane:
                n_vertices = len(sphere.vertices)
                g["position"] = np.vstack([grains, sphere.vertices])
                g["radius"] = np.concatenate([radii, np.zeros(n_vertices)])
                g["membrane"] = np.concatenate([np.full(8, -1), np.zeros(n_vertices, int)])
                g["triangles"] = sphere.triangles + 8            # rows of this snapshot
                g["triangle_membrane"] = np.zeros(len(sphere.triangles), int)
            else:
                g["position"], g["radius"] = grains, radii
                g["membrane"] = np.full(8, -1)
            g["gid"] = np.arange(len(g["position"]))
            g["velocity"] = np.zeros((len(g["position"]), 3))
    return path


def pixels(path):
    return np.asarray(Image.open(path).convert("RGB"), dtype=float)


def sand(image):
    """Pixels of the grains' hue: red well above blue."""
    return (image[..., 0] - image[..., 2] > 40).sum()


def bluish(image):
    """Pixels of the membrane's hue: blue above red, not grey."""
    return (image[..., 2] - image[..., 0] > 12).sum()


def test_a_snapshot_with_grains_and_a_membrane_is_drawn(tmp_path):
    source = write_output(tmp_path / "run.h5")
    out = render.render(source, tmp_path / "pic" / "last.png", title="")
    assert out.is_file() and out.stat().st_size < 300_000
    image = pixels(out)
    assert min(image.shape[:2]) > 100
    ink = (image.min(axis=2) < 245).mean()
    assert 0.2 < ink < 0.995, ink                     # a picture, cropped to the scene
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 20   # shaded, not flat
    assert sand(image) > 500 and bluish(image) > 500

    first = pixels(render.render(source, tmp_path / "first.png", frame=0, title=""))
    assert sand(first) > 500 and bluish(first) == 0    # no triangles: no membrane drawn


def test_markers_and_colours_by_a_field(tmp_path):
    source = write_output(tmp_path / "run.h5", with_membrane=False)
    spheres = pixels(render.render(source, tmp_path / "s.png", frame=-1, title=""))
    markers = pixels(render.render(source, tmp_path / "m.png", style="markers", title=""))
    assert sand(markers) > 500
    assert spheres.shape != markers.shape or np.abs(spheres - markers).mean() > 1.0
    height = pixels(render.render(source, tmp_path / "h.png", color_by="height", title=""))
    assert sand(height) < sand(spheres) // 2            # viridis, not sand
    titled = pixels(render.render(source, tmp_path / "t.png", title="eight grains"))
    assert titled.shape[0] > spheres.shape[0]          # the caption's band above the scene


def test_bad_input_names_the_problem(tmp_path, capsys):
    source = write_output(tmp_path / "run.h5")
    with pytest.raises(InputError, match=r"--frame 2 is out of range: .* holds 2 snapshot"):
        render.render(source, tmp_path / "x.png", frame=2)
    with pytest.raises(InputError, match="does not exist"):
        render.render(tmp_path / "missing.h5", tmp_path / "x.png")
    with pytest.raises(InputError, match="does not end in .png"):
        render.render(source, tmp_path / "x.jpg")
    with h5py.File(tmp_path / "ckpt.h5", "w") as f:
        f["tables/particles/gid"] = np.arange(3)
    with pytest.raises(InputError, match=r"no /snapshots group \(a checkpoint\)"):
        render.render(tmp_path / "ckpt.h5", tmp_path / "x.png")
    with h5py.File(tmp_path / "empty.h5", "w") as f:
        f.create_group("snapshots")
    with pytest.raises(InputError, match="holds no snapshots yet"):
        render.render(tmp_path / "empty.h5", tmp_path / "x.png")

    assert render.main([str(source), "--frame", "-3", "--out", str(tmp_path / "x.png")]) == 2
    assert "error: --frame -3 is out of range" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
    assert render.main([str(source), "--out", str(tmp_path / "ok.png")]) == 0
    assert "wrote" in capsys.readouterr().out and (tmp_path / "ok.png").is_file()
