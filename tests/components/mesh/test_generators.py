"""Mesh generators (components/mesh/generators.py) against properties the tests derive themselves.

Each generator at two resolutions: edge lengths near the target (the spread is
printed with -s), minimum angle, Euler characteristic (disc 1, open cylinder
0, closed surfaces 2), every edge used by two triangles except on the
expected boundary, outward normals, boundary loops on the rim / ends, and
enclosed volumes converging to the analytic ones.
"""
import math

import numpy as np
import pytest

from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.generators import cylinder, flat_sheet, icosphere
from ecs_dem.errors import InputError
from mesh_checks import angles_deg, edge_lengths, edge_use, euler_characteristic, open_edges, unit_normals


def report(name, mesh, a):
    length = edge_lengths(mesh) / a
    low = angles_deg(mesh).min()
    print(f"{name}: {len(mesh.vertices)} vertices, {len(mesh.triangles)} triangles, edge / target "
          f"{length.min():.3f}..{length.max():.3f} (std {length.std():.3f}), min angle {low:.1f} deg")
    return length, low


def manifold_counts(mesh):
    uses = set(edge_use(mesh).values())
    assert uses <= {1, 2}


# ---------------------------------------------------------------------------- flat sheet

@pytest.mark.parametrize("a", [0.01, 0.0025])
def test_rectangle_sheet(a):
    w, h, c = 0.12, 0.05, np.array([0.3, -0.1, 0.02])
    sheet = flat_sheet(a, width=w, height=h, center=c)
    length, low = report(f"rectangle a={a}", sheet, a)
    v = sheet.vertices
    assert (v[:, 2] == c[2]).all()
    np.testing.assert_allclose(v.min(axis=0)[:2], c[:2] - [w / 2, h / 2], atol=1e-15)
    np.testing.assert_allclose(v.max(axis=0)[:2], c[:2] + [w / 2, h / 2], atol=1e-15)
    assert sheet.areas.sum() == pytest.approx(w * h, rel=1e-12)       # tiles the rectangle
    assert (unit_normals(sheet)[:, 2] > 1 - 1e-12).all()
    assert euler_characteristic(sheet) == 1
    manifold_counts(sheet)
    # every open edge on the rectangle's sides, and the sides fully covered
    rim = np.unique(open_edges(sheet))
    on_side = (np.isclose(np.abs(v[:, 0] - c[0]), w / 2, rtol=0, atol=1e-15)
               | np.isclose(np.abs(v[:, 1] - c[1]), h / 2, rtol=0, atol=1e-15))
    np.testing.assert_array_equal(np.sort(rim), np.flatnonzero(on_side))
    # interior edges near the target; the half triangles at the ends of the rows are 30-60-90
    assert 0.5 - 1e-9 <= length.min() and length.max() <= 1.1
    assert low >= 29.0
    inner = ~np.isin(sheet.triangles, np.flatnonzero(on_side)).any(axis=1)
    assert angles_deg(Mesh(sheet.vertices, sheet.triangles[inner])).min() >= 55.0


@pytest.mark.parametrize("a", [0.005, 0.001])
def test_disc_sheet(a):
    r, c = 0.025, np.array([0.01, 0.02, -0.03])
    disc = flat_sheet(a, radius=r, center=c)
    length, low = report(f"disc a={a}", disc, a)
    d = disc.vertices - c
    assert (d[:, 2] == 0).all()
    assert (unit_normals(disc)[:, 2] > 1 - 1e-12).all()
    assert euler_characteristic(disc) == 1
    manifold_counts(disc)
    rim = np.unique(open_edges(disc))
    dist = np.linalg.norm(d[:, :2], axis=1)
    np.testing.assert_allclose(dist[rim], r, rtol=1e-14)               # the rim exactly on the circle
    inside = np.setdiff1d(np.arange(len(d)), rim)
    assert dist[inside].max() < r - 0.3 * a
    assert np.isclose(dist, 0, atol=1e-15).sum() == 1                  # a vertex at the centre
    # the area of the inscribed polygon: close to pi r^2
    n_rim = len(rim)
    polygon = 0.5 * n_rim * r ** 2 * np.sin(2 * np.pi / n_rim)
    assert disc.areas.sum() == pytest.approx(polygon, rel=0.02 * (a / r) ** 2)
    # the interior is the untouched equilateral lattice
    untouched = ~np.isin(disc.triangles, rim).any(axis=1)
    np.testing.assert_allclose(edge_lengths(disc)[untouched], a, rtol=1e-9)
    assert untouched.mean() > 1 - 4 * a / r                            # the rim band is ~1.5 a wide
    assert low >= 30.0 and 0.6 <= length.min() and length.max() <= 1.7


def test_disc_is_valid_for_any_radius():
    """The rim treatment must hold wherever the circle cuts the lattice."""
    worst = 90.0
    for r in np.linspace(1.0, 9.0, 45):
        disc = flat_sheet(1.0, radius=r)
        assert (unit_normals(disc)[:, 2] > 1 - 1e-12).all(), r
        assert euler_characteristic(disc) == 1, r
        rim = np.unique(open_edges(disc))
        np.testing.assert_allclose(np.linalg.norm(disc.vertices[rim, :2], axis=1), r, rtol=1e-14)
        worst = min(worst, angles_deg(disc).min())
    print(f"disc, radius 1..9 edge lengths: min angle {worst:.1f} deg")
    assert worst >= 30.0


# ---------------------------------------------------------------------------- cylinder

@pytest.mark.parametrize("a", [0.01, 0.0025])
def test_open_cylinder(a):
    r, h, c = 0.025, 0.06, np.array([0.1, 0.2, 0.3])
    tube = cylinder(r, h, a, center=c)
    length, low = report(f"open cylinder a={a}", tube, a)
    d = tube.vertices - c
    np.testing.assert_allclose(np.linalg.norm(d[:, :2], axis=1), r, rtol=1e-14)
    assert d[:, 2].min() == 0.0 and d[:, 2].max() == pytest.approx(h, abs=1e-15)
    assert euler_characteristic(tube) == 0
    manifold_counts(tube)
    # two boundary loops: all open edges on the end rings, each ring round(2 pi r / a) vertices
    segments = round(2 * math.pi * r / a)
    rim = np.unique(open_edges(tube))
    assert len(open_edges(tube)) == 2 * segments
    assert set(np.round(d[rim, 2] / h, 12)) == {0.0, 1.0}
    assert np.sum(np.abs(d[:, 2]) < 1e-15) == segments
    # normals point away from the axis
    x = d[tube.triangles].mean(axis=1)
    radial = x[:, :2] / np.linalg.norm(x[:, :2], axis=1)[:, None]
    n = unit_normals(tube)
    # (a triangle spans a chord of one ring and a vertex of the next: tilted by ~(pi/n)^2)
    assert (np.einsum("ij,ij->i", n[:, :2], radial) > 0.99).all() and np.abs(n[:, 2]).max() < 0.1
    assert 0.95 <= length.min() and length.max() <= 1.08 and low >= 55.0


@pytest.mark.parametrize("a", [0.01, 0.0025])
def test_closed_cylinder(a):
    r, h = 0.025, 0.06
    can = cylinder(r, h, a, caps=True)
    length, low = report(f"closed cylinder a={a}", can, a)
    assert euler_characteristic(can) == 2 and open_edges(can) == []
    manifold_counts(can)
    x = can.vertices[can.triangles].mean(axis=1)
    n = unit_normals(can)
    bottom, top = x[:, 2] == 0.0, np.isclose(x[:, 2], h, rtol=0, atol=1e-15)
    assert (n[bottom, 2] < -1 + 1e-12).all() and (n[top, 2] > 1 - 1e-12).all()
    side = ~(bottom | top)
    assert (np.einsum("ij,ij->i", n[side, :2], x[side, :2]) > 0).all()
    assert low >= 35.0 and 0.8 <= length.min() and length.max() <= 1.5
    # the caps cover the end discs up to the polygon of the end ring
    segments = round(2 * math.pi * r / a)
    polygon = 0.5 * segments * r ** 2 * np.sin(2 * np.pi / segments)
    assert can.areas[top].sum() == pytest.approx(polygon, rel=1e-12)
    # between the polygonal prism and the cylinder (the rotated rings bulge out between the ends)
    assert polygon * h < can.signed_volume() < math.pi * r ** 2 * h


def test_cylinder_volume_converges():
    r, h = 0.02, 0.05
    exact = math.pi * r ** 2 * h
    errors = [abs(cylinder(r, h, a, caps=True).signed_volume() - exact) / exact for a in (0.004, 0.002, 0.001)]
    print("closed cylinder volume errors:", ", ".join(f"{e:.2e}" for e in errors))
    assert errors[0] < 0.03
    assert errors[1] < errors[0] / 3 and errors[2] < errors[1] / 3     # second order in a


# ---------------------------------------------------------------------------- icosphere

@pytest.mark.parametrize("level", [2, 4])
def test_icosphere(level):
    r, c = 0.03, np.array([-1.0, 2.0, 0.5])
    ball = icosphere(r, level, center=c)
    a = np.median(edge_lengths(ball))               # about 1.2 r / 2**level
    assert a == pytest.approx(1.2 * r / 2 ** level, rel=0.05)
    length, low = report(f"icosphere level {level}", ball, a)
    assert len(ball.vertices) == 10 * 4 ** level + 2 and len(ball.triangles) == 20 * 4 ** level
    np.testing.assert_allclose(np.linalg.norm(ball.vertices - c, axis=1), r, rtol=1e-14)
    assert euler_characteristic(ball) == 2 and open_edges(ball) == []
    manifold_counts(ball)
    x = ball.vertices[ball.triangles].mean(axis=1) - c
    n = unit_normals(ball)
    assert (np.einsum("ij,ij->i", n, x / np.linalg.norm(x, axis=1)[:, None]) > 0.98).all()
    assert 0.8 <= length.min() and length.max() <= 1.1 and low >= 50.0
    # the relaxation evens the edges out against the plain subdivision
    plain = icosphere(r, level, center=c, relax=0)
    plain_length, plain_low = report(f"icosphere level {level}, relax=0", plain, np.median(edge_lengths(plain)))
    np.testing.assert_array_equal(plain.triangles, ball.triangles)
    assert 0.9 <= plain_length.min() and plain_length.max() <= 1.1 and plain_low >= 50.0
    assert length.std() < 0.8 * plain_length.std()


def test_icosphere_volume_converges():
    r = 0.01
    exact = 4 / 3 * math.pi * r ** 3
    errors = [(exact - icosphere(r, level, center=(5, 5, 5), relax=0).signed_volume()) / exact
              for level in range(1, 6)]
    print("icosphere volume errors:", ", ".join(f"{e:.2e}" for e in errors))
    assert all(e > 0 for e in errors)                                  # inscribed: slightly less
    assert errors[-1] < 2e-3
    assert all(3.5 < e0 / e1 < 4.5 for e0, e1 in zip(errors, errors[1:]))   # 4x per level
    relaxed = (exact - icosphere(r, 3).signed_volume()) / exact
    assert relaxed == pytest.approx(errors[2], rel=0.05)


# ---------------------------------------------------------------------------- arguments

@pytest.mark.parametrize("call, words", [
    (lambda: flat_sheet(0.0, width=1, height=1), "edge_length must be a positive"),
    (lambda: flat_sheet(float("nan"), radius=1), "edge_length must be a positive"),
    (lambda: flat_sheet(0.1), "either width and height"),
    (lambda: flat_sheet(0.1, width=1), "either width and height"),
    (lambda: flat_sheet(0.1, width=1, height=1, radius=1), "either width and height"),
    (lambda: flat_sheet(0.1, width=-1, height=1), "width must be a positive"),
    (lambda: flat_sheet(0.1, width=1, height=0.05), "height = 0.05 m is smaller than edge_length"),
    (lambda: flat_sheet(0.1, radius=0.05), "radius = 0.05 m is smaller than edge_length"),
    (lambda: flat_sheet(0.1, radius=1, center=(0, 0)), "center must be three finite"),
    (lambda: flat_sheet(0.1, radius=1, center="origin"), "center must be three finite"),
    (lambda: cylinder(0.01, 1, 0.03), "a ring needs at least 3 segments"),
    (lambda: cylinder(1, 0.01, 0.03), "height = 0.01 m is smaller than edge_length"),
    (lambda: cylinder(1, 1, "0.1"), "edge_length must be a positive"),
    (lambda: cylinder(1, 1, 0.1, caps="yes"), "caps must be True or False"),
    (lambda: icosphere(-1, 2), "radius must be a positive"),
    (lambda: icosphere(1, 2.5), "level must be an integer from 0"),
    (lambda: icosphere(1, 9), "level must be an integer from 0"),
    (lambda: icosphere(1, True), "level must be an integer from 0"),
    (lambda: icosphere(1, 2, relax=-1), "relax must be a number of iterations >= 0"),
])
def test_bad_arguments_name_the_argument(call, words):
    with pytest.raises(InputError, match=words):
        call()


@pytest.mark.parametrize("make, label, fits", [
    (lambda a: flat_sheet(a, width=0.1, height=0.05), "a 0.1 m by 0.05 m sheet", 2000),
    # the disc is cut from a square lattice of about 4.4 times its vertices: it fits fewer
    (lambda a: flat_sheet(a, radius=0.05), "a disc of radius 0.05 m", 1000),
    (lambda a: cylinder(0.025, 0.1, a), "a cylinder of radius 0.025 m and height 0.1 m", 2000),
    (lambda a: cylinder(0.025, 0.1, a, caps=True), "a cylinder of radius 0.025 m", 2000),
])
def test_a_mesh_too_fine_for_the_memory_is_refused_before_it_is_made(make, label, fits,
                                                                      monkeypatch):
    """Each generator estimates its vertices and checks them against the memory available
    (here set to what 4,000 vertices take at the floor of ecs_dem.memory): the estimate
    must be near the mesh it would make, so a mesh of about `fits` vertices is made and one
    of four times as many (half the edge length) is refused, naming the mesh and the fix."""
    from ecs_dem import memory
    monkeypatch.setattr(memory, "available_bytes", lambda: 4000 * memory.BYTES_PER_PARTICLE_FLOOR)
    monkeypatch.setattr(memory, "_ranks_on_node", 1)
    coarse = None
    for a in np.geomspace(0.02, 1e-4, 80):  # the coarsest mesh of at least `fits` vertices
        try:
            mesh = make(a)
        except InputError as exc:
            raise AssertionError(f"edge {a:g} m refused before {fits} vertices: {exc}") from None
        if len(mesh.vertices) >= fits:
            coarse = a
            break
    assert coarse is not None and len(mesh.vertices) < 1.3 * fits
    with pytest.raises(InputError, match="use a larger edge_length") as refused:
        make(0.5 * coarse)
    assert label in str(refused.value) and "vertices) needs about" in str(refused.value)
    with pytest.raises(InputError, match="use a larger edge_length"):
        make(1e-9)  # 1e14 vertices and more: refused at once, not killed
