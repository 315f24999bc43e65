"""Mesh generators (components/mesh_generators.py): topology, orientation, size and quality.

Properties the tests derive themselves: Euler characteristic V - E + F (disc 1, open cylinder
0, closed surfaces 2), every normal pointing away from the centre or axis (+z for a sheet),
enclosed volumes converging to the analytic ones, boundary loops on the rim or the ends, edge
lengths near the target and angles near 60 degrees.
"""
import math

import numpy as np
import pytest

from ecs_dem import InputError
from ecs_dem.components.membrane_topology import boundary_loops, edge_map
from ecs_dem.components.mesh_generators import cylinder, flat_sheet, icosphere


def euler(mesh):
    return len(mesh.vertices) - len(edge_map(mesh.triangles).edges) + len(mesh.triangles)


def edge_lengths(mesh):
    return np.linalg.norm(mesh.vertices[edge_map(mesh.triangles).edges[:, 0]]
                          - mesh.vertices[edge_map(mesh.triangles).edges[:, 1]], axis=1)


def min_angle(mesh):
    x = mesh.vertices[mesh.triangles]
    out = []
    for k in range(3):
        u, v = x[:, (k + 1) % 3] - x[:, k], x[:, (k + 2) % 3] - x[:, k]
        cos = np.einsum("ij,ij->i", u, v) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
        out.append(np.degrees(np.arccos(np.clip(cos, -1, 1))))
    return float(np.min(out))


def test_rectangular_sheet_is_an_equilateral_lattice_facing_up():
    m = flat_sheet(1e-3, width=0.02, height=0.01, center=(1.0, 2.0, 3.0))
    assert euler(m) == 1 and len(boundary_loops(m.triangles)) == 1
    np.testing.assert_allclose(edge_lengths(m), 1e-3, rtol=1e-12)
    assert np.all(m.normals[:, 2] > 0) and np.allclose(m.vertices[:, 2], 3.0)
    np.testing.assert_allclose(m.vertices[:, :2].mean(axis=0), (1.0, 2.0), atol=1e-12)


def test_disc_has_its_rim_on_the_circle_and_nearly_equilateral_triangles():
    m = flat_sheet(4e-3, radius=0.05)
    assert euler(m) == 1
    (rim,) = boundary_loops(m.triangles)
    np.testing.assert_allclose(np.hypot(*m.vertices[rim, :2].T), 0.05, rtol=1e-12)
    assert np.all(m.normals[:, 2] > 0)
    assert min_angle(m) > 35 and edge_lengths(m).max() < 1.7 * 4e-3
    assert m.areas.sum() == pytest.approx(math.pi * 0.05**2, rel=3e-3)  # inscribed polygon


@pytest.mark.parametrize("edge", [4e-3, 2e-3])
def test_open_cylinder_rings_at_the_ends_outward_and_equilateral(edge):
    R, H = 0.025, 0.1
    m = cylinder(R, H, edge, center=(0, 0, 0.01))
    assert euler(m) == 0
    loops = boundary_loops(m.triangles)
    assert len(loops) == 2
    assert sorted(float(m.vertices[loop, 2].mean()) for loop in loops) == pytest.approx([0.01, 0.11])
    np.testing.assert_allclose(np.hypot(*m.vertices[:, :2].T), R, rtol=1e-12)
    centroid = m.vertices[m.triangles].mean(axis=1)
    assert np.all(np.einsum("ij,ij->i", m.normals[:, :2], centroid[:, :2]) > 0)
    lengths = edge_lengths(m)
    assert lengths.min() > 0.98 * edge and lengths.max() < 1.02 * edge
    assert min_angle(m) > 58


def test_capped_cylinder_is_closed_outward_with_the_right_volume():
    R, H = 0.025, 0.1
    volumes = [cylinder(R, H, e, caps=True).signed_volume() for e in (8e-3, 4e-3, 2e-3)]
    assert euler(cylinder(R, H, 4e-3, caps=True)) == 2
    exact = math.pi * R**2 * H
    errors = [abs(v / exact - 1) for v in volumes]
    assert all(v > 0 for v in volumes) and errors[0] > errors[1] > errors[2] and errors[2] < 2e-3


def test_icosphere_is_closed_outward_relaxed_and_converges_to_the_sphere():
    R = 0.02
    meshes = [icosphere(R, level) for level in range(4)]
    assert [len(m.vertices) for m in meshes] == [12, 42, 162, 642]
    errors = []
    for m in meshes:
        assert euler(m) == 2
        np.testing.assert_allclose(np.linalg.norm(m.vertices, axis=1), R, rtol=1e-12)
        assert np.all(np.einsum("ij,ij->i", m.normals, m.vertices[m.triangles].mean(axis=1)) > 0)
        errors.append(abs(m.signed_volume() / (4 / 3 * math.pi * R**3) - 1))
    assert errors == sorted(errors, reverse=True) and errors[-1] < 1e-2  # inscribed: O(h^2)
    relaxed, plain = edge_lengths(meshes[3]), edge_lengths(icosphere(R, 3, relax=0))
    assert relaxed.std() / relaxed.mean() < 0.8 * plain.std() / plain.mean()  # 4.4 % vs 6.5 %


@pytest.mark.parametrize("call", [lambda: flat_sheet(-1.0, radius=1.0),
                                  lambda: flat_sheet(1e-3),
                                  lambda: flat_sheet(1e-3, radius=1.0, width=1.0, height=1.0),
                                  lambda: cylinder(0.0, 1.0, 0.1),
                                  lambda: icosphere(1.0, -1)])
def test_bad_arguments_are_input_errors(call):
    with pytest.raises(InputError):
        call()
