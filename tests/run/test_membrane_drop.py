"""run/membrane_drop.py: the ``radii`` list is parsed with an error that names the key and the
form it takes; the sheet is clamped where the walls stand on it; a sheet from a mesh file."""
import subprocess

import numpy as np
import pytest

from ecs_dem.errors import InputError
from helpers import PYTHON, REPO, load_driver


def test_radii_are_positive_numbers_separated_by_commas():
    drop = load_driver("membrane_drop")
    np.testing.assert_array_equal(drop.grain_radii("1.5e-3, 2.5e-3,4e-3"), [1.5e-3, 2.5e-3, 4e-3])
    for bad in ("a,b", "nan", "-1e-3,2e-3", "", "1e-3,,2e-3"):
        with pytest.raises(InputError, match="config key 'radii'"):
            drop.grain_radii(bad)


def free_vertices_clear_of_the_walls(world):
    """Signed distance of every free membrane vertex to every wall, less its radius (> 0: no
    contact). A wall is a half-space: a vertex behind it is pushed out as deep as it is."""
    p, walls = world.particles, world.walls
    free = (p.membrane >= 0) & ~p.fixed.astype(bool)
    n = walls.n_owned
    h = np.einsum("vwk,wk->vw", p.position[free, None, :] - walls.point[None, :n], walls.normal[:n])
    return h - p.radius[free, None]


def test_the_sheet_under_and_behind_the_walls_is_clamped_so_no_wall_touches_it():
    """The disc reaches past the four walls: its outer ring used to be free, behind the walls,
    and left the first step at 40 m/s."""
    drop = load_driver("membrane_drop")
    cfg = dict(drop.DEFAULTS, snapshot_every=0)
    world = drop.build_world(cfg)
    assert free_vertices_clear_of_the_walls(world).min() > 0
    p = world.particles
    world.run(20)
    g, t = cfg["gravity"], 20 * world.dt
    # grains still above the sheet: the sheet only sags, near free fall at first (its springs
    # pull a few vertices a little ahead), not at the walls' 40 m/s
    assert np.abs(p.velocity[p.membrane >= 0]).max() < 2 * g * t


def write_sheet(path, mesh):
    from ecs_dem.components.mesh.io import write_mesh

    write_mesh(path, mesh)
    return str(path)


def test_a_sheet_from_a_mesh_file_is_scaled_placed_as_given_and_clamped_at_its_boundary(tmp_path):
    from ecs_dem.components.mesh.generators import flat_sheet
    from ecs_dem.components.mesh.validation import boundary_edges

    drop = load_driver("membrane_drop")
    mm = flat_sheet(4.0, width=90.0, height=70.0, center=(100.0, -20.0, 5.0))  # in mm
    cfg = dict(drop.DEFAULTS, mesh=write_sheet(tmp_path / "sheet.stl", mm), mesh_scale=1e-3,
               snapshot_every=0)
    world = drop.build_world(cfg)
    p, walls = world.particles, world.walls
    sheet = p.membrane >= 0
    np.testing.assert_allclose(np.sort(p.position[sheet], axis=0),
                               np.sort(mm.vertices * 1e-3, axis=0), rtol=0,
                               atol=1e-7)  # STL stores float32
    rim = np.unique(boundary_edges(mm))
    assert p.fixed[sheet].sum() >= rim.size and free_vertices_clear_of_the_walls(world).min() > 0
    half = 0.7 * 0.035  # walls at 0.7 of half the smaller extent (70 mm), round the box's centre
    np.testing.assert_allclose(walls.point[:4, :2], [[0.1 - half, -0.02], [0.1 + half, -0.02],
                                                     [0.1, -0.02 - half], [0.1, -0.02 + half]])
    assert p.position[~sheet, 2].min() > 0.005  # grains start above the sheet
    world.run(300)  # the rectangle blew up at step 2 while the walls pushed its free sides
    assert np.all(np.isfinite(p.position))


@pytest.mark.parametrize("mesh, message", [
    ("ball", "the surface is closed, so it has no rim to clamp"),
    ("upright", "the sheet has no horizontal extent"),
    ("missing", "does not exist"),
])
def test_a_mesh_that_cannot_be_a_clamped_sheet_is_refused_by_name(tmp_path, mesh, message):
    from ecs_dem.components.mesh.surface import Mesh
    from ecs_dem.components.mesh.generators import flat_sheet, icosphere

    drop = load_driver("membrane_drop")
    sheet = flat_sheet(4e-3, width=0.05, height=0.05)
    meshes = {"ball": icosphere(0.02, 2),
              "upright": Mesh(sheet.vertices[:, [0, 2, 1]], sheet.triangles)}
    path = write_sheet(tmp_path / f"{mesh}.stl", meshes[mesh]) if mesh in meshes \
        else str(tmp_path / "missing.stl")
    with pytest.raises(InputError, match=message):
        drop.build_world(dict(drop.DEFAULTS, mesh=path))


def test_a_sheet_that_breaks_down_stops_with_the_error_and_keeps_what_was_written(tmp_path):
    """A sheet of 20 Pa sags under its own weight past its elements' reach: exit 3 and the
    engine's message, not a traceback; the output written until then stays."""
    out = tmp_path / "drop.h5"
    res = subprocess.run([PYTHON, str(REPO / "run" / "membrane_drop.py"), "--set",
                          "membrane_modulus=20", "--set", f"output={out}"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 3, res.stderr[-2000:]
    assert "error: table 'membrane_hinges': element" in res.stderr
    assert "Traceback" not in res.stderr
    assert out.stat().st_size > 0
