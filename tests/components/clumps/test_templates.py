"""Clump templates: mass properties against closed forms the tests derive, the principal
frame, filling a closed surface, the shape library and bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest

from ecs_dem.components.clumps import library
from ecs_dem.components.clumps import mass_properties as mp
from ecs_dem.components.clumps.template import clump_template, rotation_matrix
from ecs_dem.components.mesh.generators import icosphere
from ecs_dem.components.mesh.io import read_mesh, write_mesh
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.errors import InputError


def box_mesh(a, b, c, centre=(0.0, 0.0, 0.0)) -> Mesh:
    """A box of sides a, b, c as 12 outward-wound triangles."""
    v = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    tri = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                    [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return Mesh((v - 0.5) * [a, b, c] + centre, tri)


def random_rotation(rng):
    q = rng.normal(size=4)
    return rotation_matrix(q / np.linalg.norm(q))


def test_box_from_the_polyhedron_integrals_is_exact_in_any_pose(rng):
    a, b, c = 0.3, 0.5, 0.7
    mesh = box_mesh(a, b, c)
    rot = random_rotation(rng)
    moved = Mesh(mesh.vertices @ rot.T + [1.0, -2.0, 0.5], mesh.triangles)
    assert moved.signed_volume() > 0
    s = mp.of_closed_surface(moved.vertices, moved.triangles)
    volume = a * b * c
    assert s.volume == pytest.approx(volume, rel=1e-12)
    np.testing.assert_allclose(s.centre, [1.0, -2.0, 0.5], atol=1e-12)
    # I = V/12 diag(b^2 + c^2, ...) in the box's frame, rotated
    inertia = volume / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    np.testing.assert_allclose(s.inertia, rot @ inertia @ rot.T, atol=1e-12 * volume)
    t = clump_template(surface=moved, pebbles=1)
    np.testing.assert_allclose(t.moments, np.sort(np.diag(inertia)), rtol=1e-12)


def test_sphere_from_the_polyhedron_integrals_converges_to_the_ball():
    """A polyhedron inscribed in a sphere: volume and inertia approach 4/3 pi R^3 and
    8/15 pi R^5 from below, with the error falling about fourfold per refinement (h^2)."""
    errors = []
    for level in (2, 3, 4):
        m = icosphere(1.0, level)
        s = mp.of_closed_surface(m.vertices, m.triangles)
        e_v = 1 - s.volume / (4 / 3 * np.pi)
        e_i = 1 - s.inertia.diagonal() / (8 / 15 * np.pi)
        assert e_v > 0 and np.all(e_i > 0)
        np.testing.assert_allclose(s.inertia - np.diag(s.inertia.diagonal()), 0, atol=1e-3 * e_v)
        errors.append(max(e_v, e_i.max()))
    assert errors[1] < errors[0] / 3 and errors[2] < errors[1] / 3
    assert errors[2] < 5e-3


def test_dimer_of_touching_pebbles_by_parallel_axes():
    r, rho = 2e-3, 2500.0
    t = library.dimer(r)
    m = rho * 4 / 3 * math.pi * r**3  # one pebble
    assert t.mass(rho) == pytest.approx(2 * m, rel=1e-14)
    own = 0.4 * m * r**2
    expect = [2 * own, 2 * (own + m * r**2), 2 * (own + m * r**2)]
    np.testing.assert_allclose(t.principal_moments(rho), expect, rtol=1e-12)
    np.testing.assert_allclose(np.abs(t.offsets[:, 0]), r, rtol=1e-12)
    np.testing.assert_allclose(t.offsets[:, 1:], 0, atol=1e-15)


def test_tetrahedral_clump_by_parallel_axes():
    r = 1e-3
    t = library.tetrahedron(r)
    m = 4 / 3 * math.pi * r**3
    rho2 = (2 * r) ** 2 * 3 / 8  # squared distance of a corner from the centre (edge 2r)
    # four pebbles, each its own 2/5 m r^2 plus m times 2/3 of rho^2 (isotropic arrangement)
    expect = 4 * (0.4 * m * r**2) + 4 * m * rho2 * 2 / 3
    np.testing.assert_allclose(t.moments, expect, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(t.offsets, axis=1) ** 2, rho2, rtol=1e-12)


def lens_union_volume(r, d):
    """Two balls of radius r, centres d apart (d < 2r): 2 V_ball minus the lens."""
    return 2 * 4 / 3 * math.pi * r**3 - math.pi * (4 * r + d) * (2 * r - d) ** 2 / 12


def test_voxels_converge_to_the_union_of_two_overlapping_balls():
    r, d = 1.0, 1.2
    exact = lens_union_volume(r, d)
    errors = []
    for h in (r / 5, r / 10, r / 20, r / 40):
        s = mp.of_voxels([[0, 0, 0], [d, 0, 0]], r, voxel=h)
        errors.append(abs(s.volume / exact - 1))
        np.testing.assert_allclose(s.centre, [d / 2, 0, 0], atol=h / 10)
    assert errors[-1] < 2e-3
    assert errors[-1] < errors[0] / 4
    # summation counts the lens twice and is refused for overlapping pebbles
    with pytest.raises(InputError, match="overlap.*voxels"):
        mp.of_spheres([[0, 0, 0], [d, 0, 0]], r)


def test_voxels_agree_with_summation_for_separate_pebbles():
    c, r = [[0, 0, 0], [3.0, 0.5, 0]], [1.0, 0.7]
    exact = mp.of_spheres(c, r)
    s = mp.of_voxels(c, r, voxel=0.02)
    assert s.volume == pytest.approx(exact.volume, rel=3e-3)
    np.testing.assert_allclose(s.inertia, exact.inertia, rtol=0, atol=5e-3 * np.abs(exact.inertia).max())


def test_template_is_moved_to_its_centre_and_principal_axes(rng):
    centres = rng.normal(size=(5, 3)) * 3.0
    radii = rng.uniform(0.3, 0.6, size=5)
    while mp.overlapping_pairs(centres, radii).size:
        centres = rng.normal(size=(5, 3)) * 3.0
    t = clump_template(centres, radii)
    shape = mp.of_spheres(t.offsets, t.radii)
    np.testing.assert_allclose(shape.centre, 0, atol=1e-12)
    np.testing.assert_allclose(shape.inertia, np.diag(t.moments), atol=1e-10 * t.moments.max())
    assert np.all(np.diff(t.moments) >= 0)
    # the given orientation and centre put the pebbles back where they were given
    rot = rotation_matrix(t.given_orientation)
    assert np.linalg.det(rot) == pytest.approx(1.0)
    np.testing.assert_allclose(t.offsets @ rot.T + t.given_centre, centres, atol=1e-12)


def test_filling_an_stl_box_converges_with_the_pebble_count(tmp_path):
    path = tmp_path / "box.stl"
    write_mesh(path, box_mesh(2.0, 1.0, 1.0))
    surface = read_mesh(path)
    results = [clump_template(surface=surface, pebbles=n, voxel=0.05) for n in (2, 8, 32)]
    errs = [t.filling.surface_error for t in results]
    fractions = [t.filling.volume_fraction for t in results]
    assert errs[0] > errs[1] > errs[2]
    assert fractions[0] < fractions[1] < fractions[2] <= 1.0 + 1e-9
    for t in results:  # mass properties are the box's exact ones, whatever the pebbles
        assert t.volume == pytest.approx(2.0, rel=1e-6)  # STL stores float32
        np.testing.assert_allclose(t.moments, np.array([2, 5, 5]) * 2.0 / 12, rtol=1e-6)
    # every pebble lies inside the box to within the grid
    t = results[-1]
    assert np.all(np.abs(t.offsets) + t.radii[:, None] <= np.array([1.0, 0.5, 0.5]) + 0.05)


def test_filling_a_sphere_takes_one_pebble_of_its_radius():
    sphere = icosphere(1.0, 2)
    t = clump_template(surface=sphere, pebbles=5, voxel=0.08, tolerance=0.15)
    assert t.count == 1
    assert t.radii[0] == pytest.approx(1.0, abs=0.1)
    # the grid offsets the centre by up to sqrt(3) h / 2: the gap is within 2 h (and the facets)
    assert t.filling.surface_error <= 0.15


def test_library_shapes_are_proper_templates():
    for name in library.SHAPES:
        t = library.shape(name, 1e-3)
        assert t.volume > 0 and np.all(t.moments > 0) and np.all(np.diff(t.moments) >= 0), name
        norms = np.linalg.norm(t.offsets, axis=1)
        assert norms[t.anchor] == pytest.approx(norms.min()), name
        assert t.reach >= 0 and t.extent > t.radii.max() * 0.999, name


def test_bad_templates_are_refused():
    with pytest.raises(InputError, match="positive length"):
        clump_template([[0, 0, 0]], 0.0)
    with pytest.raises(InputError, match="centres and radii, or a closed surface"):
        clump_template()
    open_box = box_mesh(1, 1, 1)
    with pytest.raises(InputError, match="boundary edges.*close the mesh"):
        clump_template(surface=Mesh(open_box.vertices, open_box.triangles[:-1]))
    with pytest.raises(InputError, match="not one of"):
        clump_template([[0, 0, 0]], 1.0, mass_properties="guess")
    with pytest.raises(InputError, match="no shape 'cube'"):
        library.shape("cube", 1.0)
