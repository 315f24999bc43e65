"""Mesh validation and edge topology (components/mesh/validation.py).

Each defect a membrane cannot carry is built by hand and must give a MeshError
that names the input triangle / vertex indices; the repairs (merging STL-style
duplicated vertices, re-winding flipped triangles, turning a closed surface
outward) are checked against the generators' outward meshes.
"""
import numpy as np
import pytest

from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.generators import cylinder, flat_sheet, icosphere
from ecs_dem.components.mesh.validation import (
    MeshError, MeshRepairWarning, boundary_edges, boundary_loops, edges, triangle_neighbors, validate_mesh)
from ecs_dem.errors import InputError
from mesh_checks import cyclic, edge_use, euler_characteristic, unit_normals


def exploded(mesh):
    """The mesh as an STL stores it: three own vertices per triangle."""
    return Mesh(mesh.vertices[mesh.triangles].reshape(-1, 3), np.arange(3 * len(mesh.triangles)).reshape(-1, 3))


def moebius(n=12, radius=1.0, width=0.3):
    """A Moebius strip: n quads round a circle, the cross-section turning by half a turn."""
    theta = 2 * np.pi * np.arange(n) / n
    points = []
    for s in (-1.0, 1.0):
        r = radius + s * width * np.cos(theta / 2)
        points.append(np.stack([r * np.cos(theta), r * np.sin(theta), s * width * np.sin(theta / 2)], 1))
    v = np.concatenate(points)                        # a_i = i, b_i = n + i
    tris = []
    for i in range(n):
        a, b = i, n + i
        a1, b1 = (i + 1, n + i + 1) if i + 1 < n else (n, 0)   # the seam swaps the two edges
        tris += [(a, b, a1), (b, b1, a1)]
    return Mesh(v, np.array(tris))


# ---------------------------------------------------------------------------- clean meshes

@pytest.mark.parametrize("mesh", [flat_sheet(0.1, width=1.0, height=0.6), flat_sheet(0.1, radius=0.5),
                                  cylinder(0.3, 0.5, 0.1), cylinder(0.3, 0.5, 0.1, caps=True),
                                  icosphere(0.5, 2)],
                         ids=["rectangle", "disc", "open cylinder", "closed cylinder", "icosphere"])
def test_generated_meshes_pass_unchanged(mesh, recwarn):
    clean = validate_mesh(mesh)
    assert not [w for w in recwarn if issubclass(w.category, MeshRepairWarning)]
    np.testing.assert_array_equal(clean.vertices, mesh.vertices)
    np.testing.assert_array_equal(clean.triangles, mesh.triangles)


def test_stl_style_duplicated_vertices_are_merged():
    sphere = icosphere(0.02, 2)
    soup = exploded(sphere)
    assert len(soup.vertices) == 3 * len(sphere.triangles)
    clean = validate_mesh(soup)
    assert len(clean.vertices) == len(sphere.vertices) == 162
    assert euler_characteristic(clean) == 2 and all(n == 2 for n in edge_use(clean).values())
    # triangles keep their order and corners: the same geometry triangle by triangle
    np.testing.assert_array_equal(clean.vertices[clean.triangles], sphere.vertices[sphere.triangles])


def test_vertices_within_the_tolerance_merge_and_farther_ones_do_not(rng):
    sphere = icosphere(1.0, 1)
    soup = exploded(sphere)
    diagonal = np.linalg.norm(np.ptp(soup.vertices, axis=0))
    near = Mesh(soup.vertices + rng.uniform(-1, 1, soup.vertices.shape) * 1e-11 * diagonal, soup.triangles)
    assert len(validate_mesh(near).vertices) == 42
    # 1e-7 of the diagonal: beyond the default 1e-9 ...
    far = Mesh(soup.vertices + rng.uniform(-1, 1, soup.vertices.shape) * 1e-7 * diagonal, soup.triangles)
    assert len(validate_mesh(far).vertices) == len(soup.vertices)    # a soup of separate triangles
    # ... but within an explicit tolerance of 1e-6 m
    assert len(validate_mesh(far, merge_tolerance=1e-6).vertices) == 42
    assert len(validate_mesh(soup, merge_tolerance=0).vertices) == 42   # exact duplicates only


def test_unused_vertices_are_dropped_and_order_kept():
    sheet = flat_sheet(0.1, width=0.4, height=0.3)
    extra = np.vstack([[[np.nan, 5.0, 5.0]], sheet.vertices])       # an unused (even broken) vertex
    clean = validate_mesh(Mesh(extra, sheet.triangles + 1))
    np.testing.assert_array_equal(clean.vertices, sheet.vertices)
    np.testing.assert_array_equal(clean.triangles, sheet.triangles)


# ---------------------------------------------------------------------------- winding

def test_flipped_triangles_are_rewound(rng):
    sphere = icosphere(1.0, 2)
    t = sphere.triangles.copy()
    flip = rng.random(len(t)) < 0.4
    flip[0] = False                                  # (a closed surface ends outward anyway)
    t[flip] = t[flip][:, ::-1]
    assert cyclic(t) != cyclic(sphere.triangles)
    first = int(np.flatnonzero(flip)[0])
    with pytest.warns(MeshRepairWarning, match=rf"mesh: {flip.sum()} of {len(t)} triangles "
                      rf"rewound \(first: input triangle {first}\)"):
        clean = validate_mesh(Mesh(sphere.vertices, t))
    assert cyclic(clean.triangles) == cyclic(sphere.triangles)


def test_inward_closed_mesh_is_turned_outward():
    for mesh in (icosphere(0.5, 2, center=(3, -2, 1)), cylinder(0.2, 0.4, 0.05, caps=True)):
        inward = Mesh(mesh.vertices, mesh.triangles[:, ::-1])
        assert inward.signed_volume() < 0
        n = len(mesh.triangles)
        with pytest.warns(MeshRepairWarning, match=rf"{n} of {n} triangles rewound"):
            clean = validate_mesh(inward)
        assert clean.signed_volume() == pytest.approx(mesh.signed_volume(), rel=1e-12)
        assert cyclic(clean.triangles) == cyclic(mesh.triangles)


def test_open_sheet_follows_its_lowest_index_triangle():
    sheet = flat_sheet(0.1, width=0.5, height=0.4)
    t = sheet.triangles.copy()
    t[0] = t[0, ::-1]                                 # only triangle 0 points down
    n = len(t)
    with pytest.warns(MeshRepairWarning, match=rf"{n - 1} of {n} triangles rewound \(first: input "
                      r"triangle 1\)"):                # triangle 0 sets the side
        down = validate_mesh(Mesh(sheet.vertices, t))
    assert (unit_normals(down)[:, 2] < -0.999).all()
    t = sheet.triangles.copy()
    t[1::2] = t[1::2, ::-1]                           # half the others flipped, triangle 0 up
    with pytest.warns(MeshRepairWarning, match=rf"{n // 2} of {n} triangles rewound"):
        up = validate_mesh(Mesh(sheet.vertices, t))
    assert (unit_normals(up)[:, 2] > 0.999).all()


def test_each_component_is_oriented_on_its_own():
    sphere = icosphere(0.5, 1)
    sheet = flat_sheet(0.2, width=1.0, height=1.0, center=(3, 0, 0))
    inward = sphere.triangles[:, ::-1]
    down = sheet.triangles[:, ::-1] + len(sphere.vertices)
    both = Mesh(np.vstack([sphere.vertices, sheet.vertices]), np.vstack([down, inward]))
    with pytest.warns(MeshRepairWarning, match=rf"{len(inward)} of {len(both.triangles)} "
                      rf"triangles rewound \(first: input triangle {len(down)}\)"):
        clean = validate_mesh(both)     # the sheet's side is its own first triangle's: kept
    n = unit_normals(clean)
    assert (n[:len(down), 2] < -0.999).all()          # the open sheet keeps its first triangle's side
    x = clean.vertices[clean.triangles[len(down):]].mean(axis=1)
    assert (np.einsum("ij,ij->i", n[len(down):], x) > 0).all()   # the sphere is turned outward


# ---------------------------------------------------------------------------- defects

def square_pair(tris):
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 1], [0.5, 0.5, -1]], float)
    return Mesh(v, np.array(tris))


def test_repeated_vertex_is_degenerate():
    with pytest.raises(MeshError, match=r"triangle 1 \(vertices \[0, 2, 2\]\) is degenerate.*a vertex twice"):
        validate_mesh(square_pair([[0, 1, 2], [0, 2, 2]]))


def test_vertices_merged_into_one_make_a_degenerate_triangle():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1e-13, 0]], float)
    with pytest.raises(MeshError, match=r"triangle 1 \(vertices \[1, 2, 3\]\).*coincide within the merge "
                                        r"tolerance"):
        validate_mesh(Mesh(v, np.array([[0, 1, 2], [1, 2, 3]])))


def test_collinear_triangle_has_zero_area():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [2, 0, 0]], float)
    with pytest.raises(MeshError, match=r"triangle 1 \(vertices \[0, 1, 3\]\) has zero area"):
        validate_mesh(Mesh(v, np.array([[0, 1, 2], [0, 1, 3]])))


def test_duplicate_triangles():
    with pytest.raises(MeshError, match=r"triangles 0, 2 use the same vertices \[0, 1, 2\]"):
        validate_mesh(square_pair([[0, 1, 2], [0, 2, 3], [2, 1, 0]]))


def test_three_triangles_on_one_edge():
    with pytest.raises(MeshError, match=r"edge between vertices 0 and 2 is shared by 3 triangles \(0, 1, 2\)"):
        validate_mesh(square_pair([[0, 1, 2], [0, 2, 3], [0, 2, 4]]))


def test_surfaces_touching_at_one_vertex():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0]], float)
    with pytest.raises(MeshError, match=r"vertex 0 joins 2 separate fans.*bow-tie"):
        validate_mesh(Mesh(v, np.array([[0, 1, 2], [0, 3, 4]])))


def test_moebius_strip_is_not_orientable():
    strip = moebius()
    assert euler_characteristic(strip) == 0 and len(edge_use(strip)) == 12 * 3 + 12
    with pytest.raises(MeshError, match="not orientable"):
        validate_mesh(strip)
    # the same strip without its twist (an annulus) is fine: the test strip is otherwise valid
    cut = Mesh(strip.vertices, strip.triangles[:-2])
    validate_mesh(cut)


def test_broken_input_is_refused_with_its_index():
    sheet = flat_sheet(0.1, width=0.3, height=0.3)
    v = sheet.vertices.copy()
    v[4, 1] = np.nan
    with pytest.raises(MeshError, match="vertex 4 has a non-finite coordinate"):
        validate_mesh(Mesh(v, sheet.triangles))
    t = sheet.triangles.copy()
    t[3, 2] = len(v)
    with pytest.raises(MeshError, match=f"triangle 3 refers to vertex indices .*outside 0..{len(v) - 1}"):
        validate_mesh(Mesh(sheet.vertices, t))
    with pytest.raises(MeshError, match="no triangles"):
        validate_mesh(Mesh(sheet.vertices, np.zeros((0, 3))))
    with pytest.raises(MeshError, match="merge_tolerance"):
        validate_mesh(sheet, merge_tolerance=-1.0)
    assert issubclass(MeshError, InputError)


# ---------------------------------------------------------------------------- topology

def test_edges_are_unique_sorted_pairs():
    sphere = icosphere(1.0, 2)
    e = edges(sphere)
    assert e.dtype == np.int64 and e.shape == (3 * len(sphere.triangles) // 2, 2)
    assert (e[:, 0] < e[:, 1]).all()
    assert set(map(tuple, e.tolist())) == set(edge_use(sphere))
    assert (np.diff(e[:, 0] * len(sphere.vertices) + e[:, 1]) > 0).all()


def test_triangle_neighbors_match_a_brute_force_search():
    for mesh in (flat_sheet(0.1, width=0.5, height=0.3), cylinder(0.1, 0.3, 0.08), icosphere(1, 1)):
        nb = triangle_neighbors(mesh)
        t = mesh.triangles.tolist()
        for i, tri in enumerate(t):
            for k in range(3):
                edge = {tri[k], tri[(k + 1) % 3]}
                others = [j for j, o in enumerate(t) if j != i and edge <= set(o)]
                assert nb[i, k] == (others[0] if others else -1)
        assert (nb < 0).sum() == len(boundary_edges(mesh))


def test_triangle_neighbors_refuse_a_non_manifold_edge():
    with pytest.raises(MeshError, match="shared by 3 triangles"):
        triangle_neighbors(square_pair([[0, 1, 2], [0, 2, 3], [0, 2, 4]]))


def test_boundary_edges_follow_the_winding():
    sheet = flat_sheet(0.1, width=0.5, height=0.3)
    b = boundary_edges(sheet)
    on_one = {e for e, n in edge_use(sheet).items() if n == 1}
    assert {tuple(sorted(e)) for e in b.tolist()} == on_one and len(b) == len(on_one)
    # each directed boundary edge appears in its triangle's own winding
    windings = {(t[k], t[(k + 1) % 3]) for t in sheet.triangles.tolist() for k in range(3)}
    assert all(tuple(e) in windings for e in b.tolist())


def test_boundary_loops_of_a_sheet_and_a_cylinder():
    disc = flat_sheet(0.1, radius=0.5)
    (loop,) = boundary_loops(disc)
    x, y = disc.vertices[loop, 0], disc.vertices[loop, 1]
    shoelace = 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)
    assert shoelace > 0                              # counter-clockwise seen from +z (outside)
    assert shoelace == pytest.approx(disc.areas.sum(), rel=1e-12)
    tube = cylinder(0.2, 0.5, 0.05)
    loops = boundary_loops(tube)
    assert len(loops) == 2 and loops[0][0] < loops[1][0]
    ends = sorted(float(tube.vertices[lp, 2].mean()) for lp in loops)
    assert ends == pytest.approx([0.0, 0.5], abs=1e-15)
    assert boundary_loops(icosphere(1, 1)) == []


def test_arrays_of_the_wrong_shape_are_an_input_error_naming_the_shape():
    with pytest.raises(InputError, match=r"vertices must have shape \(n, 3\), got \(4, 2\)"):
        Mesh(np.zeros((4, 2)), np.array([[0, 1, 2]]))
    with pytest.raises(InputError, match=r"triangles must have shape \(m, 3\), got \(1, 4\)"):
        Mesh(np.zeros((4, 3)), np.array([[0, 1, 2, 3]]))
