"""Insertion regions (components/insertion/regions.py): the inside test of a sphere.

Box and cylinder against their inequalities; the mesh region (winding number and distance
to the triangles) on a hand-built cube, where inside is known exactly, and on an icosphere,
between its inscribed and circumscribed spheres.
"""
import math

import numpy as np
import pytest

from ecs_dem.components.insertion.regions import (
    BoxRegion, CylinderRegion, MeshRegion, RegionError, triangle_distance2, winding_number)
from ecs_dem.components.mesh.generators import cylinder, icosphere
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.validation import MeshError

CUBE_V = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], dtype=float)
CUBE_T = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                   [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]])


def cube(side=2.0, corner=(-1.0, -1.0, -1.0)):
    return Mesh(CUBE_V * side + np.asarray(corner), CUBE_T)


def test_box_and_cylinder_inequalities():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.5, 1.5, (4000, 3))
    r = rng.uniform(0, 0.4, 4000)
    box = BoxRegion((-1, -0.5, 0), (1, 0.5, 1))
    expect = np.all((x - r[:, None] >= box.lo) & (x + r[:, None] <= box.hi), axis=1)
    np.testing.assert_array_equal(box.contains(x, r), expect)
    assert box.volume == pytest.approx(2.0)
    cyl = CylinderRegion((0.1, 0.2, -0.5), 0.8, 1.5, axis="y")
    rho = np.hypot(x[:, 0] - 0.1, x[:, 2] + 0.5)
    h = x[:, 1] - 0.2
    expect = (rho <= 0.8 - r) & (h >= r) & (h <= 1.5 - r)
    np.testing.assert_array_equal(cyl.contains(x, r), expect)
    assert expect.any() and not expect.all()
    assert cyl.volume == pytest.approx(math.pi * 0.64 * 1.5)
    np.testing.assert_allclose(cyl.lo, [-0.7, 0.2, -1.3])


def test_winding_number_and_distance_on_a_cube():
    mesh = cube()
    v, t = mesh.vertices, mesh.triangles
    assert winding_number(np.array([0.3, -0.2, 0.9]), v, t) == pytest.approx(1.0, abs=1e-12)
    assert winding_number(np.array([1.3, -0.2, 0.9]), v, t) == pytest.approx(0.0, abs=1e-12)
    # nearest points on a face, an edge and a corner
    d2 = lambda p: min(triangle_distance2(np.array(p, float), v[a], v[b], v[c]) for a, b, c in t)
    assert d2([0.2, 0.1, 1.5]) == pytest.approx(0.25)
    assert d2([1.5, 0.3, 1.5]) == pytest.approx(0.5)
    assert d2([2.0, 2.0, 3.0]) == pytest.approx(1 + 1 + 4)
    assert d2([0.0, 0.0, 0.6]) == pytest.approx(0.16)


@pytest.mark.parametrize("voxels", [0, 16])
def test_mesh_region_cube_is_the_box(voxels):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1.4, 1.4, (3000, 3))
    r = rng.uniform(0, 0.5, 3000)
    region = MeshRegion(cube(), voxels=voxels)
    region.classify(0.5)
    box = BoxRegion((-1, -1, -1), (1, 1, 1))
    np.testing.assert_array_equal(region.contains(x, r), box.contains(x, r))
    assert region.volume == pytest.approx(8.0)


def test_mesh_region_icosphere_between_inscribed_and_circumscribed():
    R = 0.5
    mesh = icosphere(R, 2)
    region = MeshRegion(mesh, voxels=12)
    region.classify(0.05)
    # inscribed radius: the smallest distance from the centre to a triangle's plane
    x = mesh.vertices[mesh.triangles]
    n = np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])
    inner = float(np.min(np.abs(np.einsum("ij,ij->i", n, x[:, 0])) / np.linalg.norm(n, axis=1)))
    rng = np.random.default_rng(2)
    p = rng.uniform(-0.6, 0.6, (4000, 3))
    r = rng.uniform(0, 0.05, 4000)
    inside = region.contains(p, r)
    dist = np.linalg.norm(p, axis=1)
    assert np.all(inside[dist + r < inner - 1e-12])
    assert not np.any(inside[dist + r > R])
    assert np.any(inside) and region.volume == pytest.approx(4 / 3 * math.pi * R**3, rel=0.05)


def test_open_mesh_and_bad_shapes_are_refused():
    with pytest.raises(MeshError, match="not closed"):
        MeshRegion(cylinder(0.1, 0.2, 0.05))
    with pytest.raises(RegionError, match="swap"):
        BoxRegion((0, 0, 1), (1, 1, 0))
    with pytest.raises(RegionError, match="axis"):
        CylinderRegion((0, 0, 0), 1.0, 1.0, axis="w")
    with pytest.raises(RegionError, match="> 0"):
        CylinderRegion((0, 0, 0), -1.0, 1.0)
