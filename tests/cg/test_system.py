"""On-the-fly coarse-graining (cg.system): recorded forces are the step's, a settled bed's
vertical stress is the weight above, the file and its XDMF, and no change to the run."""
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest

from cg_scenarios import G, R, bed, box_width
from ecs_dem.comm import SerialComm
from ecs_dem.cg.fields import coarse_grain, derive
from ecs_dem.cg.grid import CartesianGrid
from ecs_dem.cg.kernels import Kernel
from ecs_dem.cg.system import CoarseGraining, sibling_path
from ecs_dem.io.hdf5_output import Hdf5Output


def profile_grid():
    """A depth profile: z from below the floor to above the bed, averaged over x and y."""
    W = box_width()
    return CartesianGrid((0, 0, -3 * R), (W, W, 14 * R), (1, 1, 68), average="xy")


def folded(world, rows, forces):
    """Forces on particle rows (owned and ghost) summed onto their owned rows."""
    p = world.particles
    home = world.domain.home_rows(p)
    home = np.where(np.arange(home.size) < p.n_owned, np.arange(home.size), home)
    out = np.zeros((p.n_owned, 3))
    keep = home[rows] >= 0
    np.add.at(out, home[rows][keep], forces[keep])
    return out


def test_recorded_contact_forces_are_the_steps():
    """Per particle, the recorded pair and wall forces plus gravity and the drag at the
    half-step velocity equal the force the step applied, to round-off."""
    cg = CoarseGraining(profile_grid(), Kernel.gaussian(R), every=500)
    world = bed(SerialComm(), cg, debug=False)  # the guard: test_the_run_is_unchanged_...
    world.run(3000)
    step, (i, j, f, b), (bi, bf, bc) = cg.records
    assert step == world.step and i.size > 30 and bi.size > 10
    p = world.particles
    n = p.n_owned
    total = folded(world, np.concatenate([i, j, bi]), np.concatenate([f, -f, bf]))
    half = p.velocity[:n] - 0.5 * world.dt * p.force[:n] / p.mass[:n, None]
    total += -300.0 * p.mass[:n, None] * half            # the scenario's drag
    total[:, 2] -= p.mass[:n] * G
    scale = float(np.abs(p.force[:n]).max() + p.mass.max() * G)
    assert np.abs(total - p.force[:n]).max() < 1e-12 * scale
    # the branch vectors are the centres' separation; the wall's contact point is on z = 0
    x = p.with_ghosts("position")
    assert np.allclose(b, x[i] - x[j], rtol=0, atol=1e-15)
    assert np.allclose(bc[:, 2], 0.0, atol=1e-15)


def test_settled_bed_vertical_stress_is_the_weight_above():
    """After settling: sigma_zz (compressive positive) equals g times the mass above per area,
    integrated from the density profile, within 1 % away from the floor and the free top;
    the floor's force density carries the whole weight."""
    grid = profile_grid()
    cg = CoarseGraining(grid, Kernel.gaussian(R), every=40_000)
    # 40 000 steps: without the declaration guard (the other tests here run with it)
    world = bed(SerialComm(), cg, drag=30.0, debug=False)
    world.run(40_000)
    assert np.abs(world.particles.velocity).max() < 1e-2   # settled
    f = cg.fields
    z = grid.axes[2]
    dz = z[1] - z[0]
    rho = f["density"][0, 0]
    szz = f["stress"][0, 0, :, 2, 2]
    # midpoint rule: the mass above a point is its half cell plus every cell above
    above = G * (np.cumsum(rho[::-1])[::-1] - 0.5 * rho) * dz
    total = G * world.particles.mass.sum() / (box_width() ** 2)
    assert above[0] == pytest.approx(total, rel=1e-4)
    inside = (z > 3.5 * R) & (above > 0.2 * total)     # beyond the floor's kernel reach
    assert inside.sum() >= 10
    assert np.abs(szz[inside] / above[inside] - 1.0).max() < 0.01
    assert np.sum(f["boundary_force"][0, 0, :, 2]) * dz == pytest.approx(total, rel=0.01)
    # stress is compressive (positive) and the temperature of a settled bed is small
    assert np.all(szz[inside] > 0)
    assert f["temperature"].max() < 1e-4


def test_fields_file_and_xdmf(tmp_path):
    """The sibling file of an Hdf5Output holds the fields of every evaluation, averaged over
    the window, in (nz, ny, nx) order, and the XDMF points at them. Evaluations at steps 0
    (the initial state), 100, ..., 400: windows of two end at 100 and 300."""
    out = Hdf5Output(tmp_path / "run.h5")
    path = sibling_path(out)
    assert path.name == "run_cg.h5"
    W = box_width()
    grid = CartesianGrid((0, 0, 0), (W, W, 12 * R), (6, 5, 12))
    cg = CoarseGraining(grid, Kernel.lucy(6 * R), every=100, path=path, window=2)
    world = bed(SerialComm(), cg)
    world.run(400)
    with h5py.File(path, "r") as h5:
        steps = sorted(h5["fields"])
        assert steps == ["000000100", "000000300"]
        g = h5["fields/000000300"]
        assert g.attrs["samples"] == 2
        assert g["density"].shape == (12, 5, 6)
        assert g["stress"].shape == (12, 5, 6, 9)
        np.testing.assert_array_equal(g["density"][...], np.transpose(cg.fields["density"]))
        np.testing.assert_array_equal(g["velocity"][..., 2],
                                      np.transpose(cg.fields["velocity"][..., 2]))
        assert h5.attrs["kernel"] == "lucy"
    root = ET.parse(path.with_suffix(".xdmf")).getroot()
    grids = root.findall(".//Grid[@GridType='Uniform']")
    assert len(grids) == 2
    assert grids[1].find("Topology").get("Dimensions") == "12 5 6"
    items = [a.find("DataItem").text for a in grids[1].findall("Attribute")]
    assert "run_cg.h5:/fields/000000300/density" in items


def test_the_run_is_unchanged_bit_for_bit():
    """Positions and velocities after 600 steps with and without coarse-graining every 100."""
    plain = bed(SerialComm(), None)
    plain.run(600)
    cg = CoarseGraining(profile_grid(), Kernel.gaussian(R), every=100)
    graining = bed(SerialComm(), cg)
    graining.run(600)
    for name in ("position", "velocity", "angular_velocity"):
        a = plain.particles.owned(name)[np.argsort(plain.particles.owned("gid"))]
        b = graining.particles.owned(name)[np.argsort(graining.particles.owned("gid"))]
        np.testing.assert_array_equal(a, b)


def test_on_the_fly_equals_the_pure_function():
    """The system's sums are coarse_grain's on the same state and the recorded contacts."""
    grid = CartesianGrid((0, 0, 0), (box_width(),) * 2 + (12 * R,), (5, 5, 8))
    cg = CoarseGraining(grid, Kernel.gaussian(1.5 * R), every=300)
    world = bed(SerialComm(), cg)
    world.run(300)
    p = world.particles
    _, pairs, walls = cg.records
    sums = coarse_grain(grid, Kernel.gaussian(1.5 * R), p.with_ghosts("position"),
                        p.with_ghosts("velocity"), p.with_ghosts("mass"),
                        p.with_ghosts("radius"), n=p.n_owned, pairs=pairs, boundary=walls)
    for name, values in derive(sums).items():
        np.testing.assert_array_equal(values, cg.fields[name])
