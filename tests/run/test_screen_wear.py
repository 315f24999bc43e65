"""run/screen_wear.py: the generated screen is an open plate with the holes asked for; a short
run wears it where the grains slide, its worn volume is acceleration k W to round-off, and the
STL files before and after hold that volume between them."""
import csv

import h5py
import numpy as np
import pytest

from helpers import load_driver

from ecs_dem.components.mesh.io import read_mesh, write_mesh
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.validation import boundary_loops
from ecs_dem.systems.mesh_wall.wear import prism_volumes


@pytest.fixture(scope="module")
def screen():
    return load_driver("screen_wear")


K, ACCELERATION, EVERY = 1e-13, 3e9, 320
#: a small screen, bin and run: about 3000 steps of flow
SHORT = dict(particles=120, screen_length=0.1, screen_width=0.024, solid_length=0.04,
             bin_length=0.02, bin_height=0.04, settle_time=0.02, duration=0.08,
             wear_coefficient=K, acceleration=ACCELERATION, wear_every=EVERY,
             snapshot_every=EVERY)


def argv(settings: dict) -> list:
    return [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]


def test_generated_screen_is_an_open_plate_with_its_holes(screen):
    cfg = dict(screen.DEFAULTS)
    mesh = screen.screen_mesh(cfg)
    x, t = mesh.vertices, mesh.triangles
    normal = np.cross(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]])
    assert np.all(normal[:, 2] > 0) and np.all(normal[:, :2] == 0)  # every one faces +z
    assert np.all(x[:, 2] == 0)
    loops = boundary_loops(mesh)
    holes = [loop for loop in loops if np.ptp(x[loop, 1]) < cfg["screen_width"]]
    assert len(loops) == len(holes) + 1          # the rim and the holes
    a, p = cfg["hole_size"], cfg["hole_pitch"]
    across = int(cfg["screen_width"] // p)
    assert len(holes) % across == 0 and len(holes) >= across
    for loop in holes:
        assert np.ptp(x[loop, 0]) == pytest.approx(a) and np.ptp(x[loop, 1]) == pytest.approx(a)
        assert x[loop, 0].min() >= cfg["solid_length"]   # the upper end is solid
    area = 0.5 * np.linalg.norm(normal, axis=1).sum()
    assert area == pytest.approx(cfg["screen_length"] * cfg["screen_width"]
                                 - len(holes) * a * a, rel=1e-12)


@pytest.fixture(scope="module")
def short_run(screen, tmp_path_factory):
    from ecs_dem import declaration_guard

    out = tmp_path_factory.mktemp("screen") / "out"
    saved, declaration_guard.DEFAULT = declaration_guard.DEFAULT, False
    try:
        assert screen.main(argv(dict(SHORT, output=out))) == 0
    finally:
        declaration_guard.DEFAULT = saved
    with open(out / "screen_wear.csv") as f:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
    return out, rows


def test_worn_volume_is_acceleration_k_times_friction_work(screen, short_run):
    out, rows = short_run
    steps = round(SHORT["duration"] / screen.time_step(dict(screen.DEFAULTS, **SHORT)))
    assert len(rows) == steps // EVERY  # one per update
    assert rows[-1]["worn_volume_m3"] > 0
    for r in rows:
        assert r["worn_volume_m3"] == pytest.approx(ACCELERATION * K * r["worn_work_J"],
                                                    rel=1e-12)
        assert r["worn_work_J"] == pytest.approx(r["friction_work_J"], rel=1e-12)
    # the same from the last snapshot (a wear step) of the HDF5 file, triangle by triangle
    with h5py.File(out / "screen_wear.h5", "r") as f:
        last = f["snapshots"][max(f["snapshots"], key=int)]["mesh_walls"]
        screen_rows = last["triangle_wall"][:] == 0
        volume = last["triangle_wear_volume"][:][screen_rows]
        work = last["triangle_friction_work"][:][screen_rows]
        depth = last["triangle_wear_depth"][:][screen_rows]
    assert volume.sum() == pytest.approx(rows[-1]["worn_volume_m3"], rel=1e-12)
    assert volume.sum() == pytest.approx(ACCELERATION * K * work.sum(), rel=1e-12)
    # wear concentrates where the grains slid: the worn depth of triangles they rubbed
    # against that of the triangles they never touched (which wear only where they share a
    # vertex with rubbed ones)
    track, outside = work > 0, work == 0
    assert track.sum() > 20 and outside.sum() > 20
    assert depth[track].mean() > 3.0 * depth[outside].mean()
    assert np.count_nonzero(depth[outside]) < outside.sum()


def test_screen_stl_before_and_after_hold_the_worn_volume(screen, short_run):
    out, rows = short_run
    before = read_mesh(out / "screen_before.stl")
    after = read_mesh(out / "screen_after.stl")
    cfg = dict(screen.DEFAULTS, **SHORT)
    generated = screen.screen_mesh(cfg)
    assert len(before.triangles) == len(after.triangles) == len(generated.triangles)
    assert np.all(before.vertices[:, 2] == 0)
    # match the vertices of the two files (STL repeats them per triangle; meshio merges)
    a = before.vertices[before.triangles].reshape(-1, 3)
    b = after.vertices[after.triangles].reshape(-1, 3)
    assert np.all(b[:, 2] <= 0) and b[:, 2].min() < -1e-6   # worn down into the plate
    assert np.abs(b[:, :2] - a[:, :2]).max() < 0.1 * abs(b[:, 2].min())  # along the normals
    # the volume between the surfaces: each triangle's prism from before to after
    n = len(a)
    move = b - a
    length = np.linalg.norm(move, axis=1)
    direction = np.where(length[:, None] > 0, -move / np.where(length > 0, length, 1)[:, None],
                         0.0)
    removed = np.empty(n // 3)
    prism_volumes(a, np.arange(n).reshape(-1, 3), direction, length, removed)
    assert removed.sum() == pytest.approx(rows[-1]["worn_volume_m3"], rel=1e-6)  # CSV digits


def test_profile_along_the_screen_follows_the_work(screen, short_run):
    out, rows = short_run
    after = read_mesh(out / "screen_after.stl")
    cfg = dict(screen.DEFAULTS, **SHORT)
    with h5py.File(out / "screen_wear.h5", "r") as f:
        last = f["snapshots"][max(f["snapshots"], key=int)]["mesh_walls"]
        on = last["triangle_wall"][:] == 0
        tri = last["triangles"][:][on]
        x = last["position"][:]
        state = {"position": x, "triangles": tri, "area": screen.triangle_areas(x, tri),
                 "wear_volume": last["triangle_wear_volume"][:][on],
                 "worn_work": last["triangle_friction_work"][:][on]}
    centres, depth, expected = screen.along_profile(state, cfg, 5)
    assert len(after.triangles) == len(tri)
    worn = expected > 0.2 * np.nanmax(expected)
    assert worn.sum() >= 2
    np.testing.assert_allclose(depth[worn], expected[worn], rtol=0.15)
    # the worn volume of all slices is the whole
    area = np.bincount(np.clip(np.digitize(x[tri].mean(axis=1)[:, 0],
                                           np.linspace(0, cfg["screen_length"], 6)) - 1, 0, 4),
                       state["area"], 5)
    assert np.nansum(depth * area) == pytest.approx(rows[-1]["worn_volume_m3"], rel=1e-12)
    assert (out / "screen_wear.png").stat().st_size > 0


@pytest.mark.parametrize("values, message", [
    (["sieve=1"], "unknown config key 'sieve'"),
    (["radius_min=3e-3"], "need 0 < radius_min <= radius_max"),
    (["gate_height=4e-3"], "lets no grain of radius"),
    (["hole_pitch=6e-3"], "must exceed hole_size"),
    (["screen_length=0.1609"], "is not a whole number of grid squares"),
    (["solid_length=0.02"], "must cover the feed bin"),
    (["particles=100000"], "the feed bin holds at most"),
    (["stl=missing.stl"], "is not a file"),
    (["acceleration=0"], "acceleration"),
])
def test_bad_input_is_refused_with_the_fix(screen, tmp_path, capsys, monkeypatch, values,
                                           message):
    monkeypatch.chdir(tmp_path)
    assert screen.main(argv({"settle_time": 0.001}) + [a for v in values
                                                       for a in ("--set", v)]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_screen_file_outside_the_screen_frame_is_refused(screen, tmp_path, capsys):
    path = tmp_path / "tilted.stl"
    write_mesh(path, Mesh(np.array([[0.0, 0.0, 0.0], [100.0, 0.0, 0.0], [0.0, 10.0, 5.0]]),
                          np.array([[0, 1, 2]])), binary=False)
    code = screen.main(argv({"stl": path, "stl_scale": 1e-3, "settle_time": 0.001,
                             "output": tmp_path / "out"}))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "the screen's frame asks for" in err and "stl_scale" in err
    assert not (tmp_path / "out" / "screen_wear.csv").exists()


def test_a_screen_file_in_mm_is_read_in_the_screen_frame(screen, tmp_path, monkeypatch):
    """The generated plate written in mm and read back with stl_scale = 1e-3 is the same
    screen, and a world built on it runs (grains settle in the shut bin)."""
    from ecs_dem import declaration_guard

    monkeypatch.setattr(declaration_guard, "DEFAULT", False)
    cfg = dict(screen.DEFAULTS, **dict(SHORT, particles=20))
    generated = screen.screen_mesh(cfg)
    path = tmp_path / "plate_mm.stl"
    write_mesh(path, Mesh(generated.vertices * 1e3, generated.triangles), binary=False)
    cfg.update(stl=str(path), stl_scale=1e-3, output=str(tmp_path / "out"))
    screen.check(cfg)
    mesh = screen.screen_source(cfg)
    assert len(mesh.triangles) == len(generated.triangles)
    a = np.sort(generated.vertices[generated.triangles].reshape(-1, 3), axis=0)
    b = np.sort(mesh.vertices[mesh.triangles].reshape(-1, 3), axis=0)
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-15)
    cfg["settle_time"] = 100 * screen.time_step(cfg)
    position, radius, _ = screen.settle(cfg, mesh)
    assert len(radius) == 20 and np.all(position[:, 2] > 0)  # none fell through the deck
