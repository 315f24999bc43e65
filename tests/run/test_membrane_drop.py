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


def test_a_grid_sheet_clamped_by_a_condition_and_a_file_with_grains_from_a_file(tmp_path):
    """The MercuryDPM demo's ingredients: a square grid sheet, no walls, clamped where a
    condition on the coordinates holds and at the vertices a file lists, grains (positions,
    radii, velocities) from a file."""
    drop = load_driver("membrane_drop")
    (tmp_path / "ids.txt").write_text("# two corners of the middle row\n7, 13\n")
    (tmp_path / "grains.csv").write_text("0.0,0.0,0.01,0.002,0.0,0.0,-0.5\n"
                                         "0.01,0.01,0.01,0.003,0.1,0.0,0.0  # second\n")
    cfg = dict(drop.DEFAULTS, sheet="grid", sheet_side=0.06, grid_vertices=5, walls=False,
               clamp="y < -0.029 or x > 0.029", clamp_file=str(tmp_path / "ids.txt"),
               grains_file=str(tmp_path / "grains.csv"), snapshot_every=0)
    world = drop.build_world(cfg)
    p = world.particles
    sheet = p.membrane >= 0
    assert sheet.sum() == 25 and world.membrane_triangles.n_owned == 32
    x = p.position[sheet]
    # the mesh keeps the generated order: vertex k at column k % 5, row k // 5
    k = np.arange(25)
    want = (k < 5) | (k % 5 == 4) | np.isin(k, [7, 13])
    np.testing.assert_array_equal(p.fixed[sheet], want)
    np.testing.assert_allclose(x[:, 0], (k % 5 - 2) * 0.015, atol=1e-15)
    grains = ~sheet
    np.testing.assert_allclose(p.radius[grains], [0.002, 0.003])
    np.testing.assert_allclose(p.velocity[grains], [[0, 0, -0.5], [0.1, 0, 0]])
    assert "walls" not in world.tables or world.walls.n_owned == 0
    world.run(50)
    assert np.all(np.isfinite(p.position))


@pytest.mark.parametrize("clamp, message", [
    ("x < 0 and __import__('os')", "Call|only abs"),
    ("q > 1", "unknown name 'q'"),
    ("x +", "not a condition"),
    ("x * 2", "gives numbers"),
])
def test_a_bad_clamp_condition_is_refused_by_name(clamp, message):
    drop = load_driver("membrane_drop")
    with pytest.raises(InputError, match=f"config key 'clamp'.*({message})"):
        drop.build_world(dict(drop.DEFAULTS, clamp=clamp, snapshot_every=0))


def test_pair_keys_reach_the_law_and_the_effective_mass_reaches_the_patch_contacts():
    from ecs_dem.systems.membrane.patch_contacts import PatchContacts

    drop = load_driver("membrane_drop")
    cfg = dict(drop.DEFAULTS, snapshot_every=0, patch_effective_mass="grain")
    cfg["pair.grain_membrane.estar"] = "2.5e6"  # as --set gives it
    drop.check(cfg)
    assert cfg["pair.grain_membrane.estar"] == 2.5e6
    world = drop.build_world(cfg)
    patches = next(s for s in world.systems if isinstance(s, PatchContacts))
    assert patches.effective_mass == "grain"
    assert patches.law.pairs.pairs == {(0, 1): {"estar": 2.5e6}}
    world.setup()
    assert patches.bound.parameters[0, 1, 0] == 2.5e6
    with pytest.raises(InputError, match="'pair.grain_grain.mu' takes a number"):
        drop.check(dict(drop.DEFAULTS, **{"pair.grain_grain.mu": "slippery"}))


def test_the_shipped_membrane_demo_configuration_builds_and_runs():
    """run/configs/membrane_demo.toml: MercuryDPM's MembraneDemo (docs: coming from MercuryDPM);
    its explicit pair table covers the pairs the contacts meet (no membrane-membrane pair)."""
    from ecs_dem.config import load_config

    drop = load_driver("membrane_drop")
    cfg = load_config(drop.DEFAULTS, ["--config", str(REPO / "run" / "configs" /
                                                       "membrane_demo.toml")])
    drop.check(cfg)
    cfg["snapshot_every"] = 0
    world = drop.build_world(cfg)
    p = world.particles
    sheet = p.membrane >= 0
    assert sheet.sum() == 225 and (~sheet).sum() == 8 and world.dt == 1e-5
    assert p.fixed[sheet].sum() == 56  # the rim of a 15 x 15 grid
    np.testing.assert_allclose(p.mass[sheet], 2.8125e-5)
    assert world.membranes.bending_convention[0] == 1
    world.run(200)
    assert np.all(np.isfinite(p.position))
