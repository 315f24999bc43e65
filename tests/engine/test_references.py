"""Row references of anchored tables and incidence lists (ecs_dem/references.py, World).

A serial, fully periodic world: ghost rows are periodic images, so a gid sits
in several rows and only the nearest image is right. Elements (triangles of
three particle gids, and the neighbour list's pairs) must see their vertices'
rows resolved on owned and ghost element rows, and the incidence lists must
give every particle exactly the elements that touch it.
"""
import numpy as np
import pytest

from ecs_dem import Box, Field, Halo, Stage, StateError, System, Table, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.systems.neighbors.search import NeighborSearch

L = 1.0
RANGE = 0.15


def triangle_table():
    return Table("triangles", [Field("vertices", np.int64, (3,), Halo.FORWARD, -1),
                               Field("rows", np.int32, (3,), Halo.LOCAL, -1)],
                 anchor=("particles", "vertices"), references={"rows": "vertices"})


class ReadsTriangleGhosts(System):
    """Asks for ghost triangle rows (as a patch-contact system will)."""

    stage = Stage.FORCES
    reads_ghosts = {"triangles": ("vertices",)}

    def interaction_range(self, world):
        return RANGE

    def run(self, world):
        pass


class ReadsPairGhosts(ReadsTriangleGhosts):
    reads_ghosts = {"pairs": ("gid_i", "gid_j")}


def lattice_world(n_side=8, jitter=0.02, seed=3, radius=0.01):
    """Particles on a jittered periodic lattice and the triangles of its x-y layers."""
    rng = np.random.default_rng(seed)
    world = World(Box((0, 0, 0), (L, L, L), (True, True, True)), dt=1e-3, skin=0.02)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    a = L / n_side
    k = np.arange(n_side**3)
    ijk = np.stack([k % n_side, (k // n_side) % n_side, k // n_side**2], axis=1)
    pos = (ijk + 0.5) * a + rng.uniform(-jitter, jitter, (k.size, 3))
    add_particles(world, pos, radius)
    gid = world.particles.gid.copy()
    at = lambda i, j, l: gid[(i % n_side) + (j % n_side) * n_side + l * n_side**2]  # noqa: E731
    tris = []
    for (i, j, l) in ijk:
        tris.append([at(i, j, l), at(i + 1, j, l), at(i, j + 1, l)])  # wraps across faces
        tris.append([at(i + 1, j + 1, l), at(i, j + 1, l), at(i + 1, j, l)])
    world.add_table(triangle_table()).append(len(tris), vertices=np.array(tris))
    return world


def nearest_image_rows(world, anchor_rows, gids):
    p = world.particles
    x = p.with_ghosts("position")
    all_gids = p.with_ghosts("gid")
    out = np.full(gids.shape, -1)
    for k, (a, g) in enumerate(zip(anchor_rows, gids)):
        rows = np.flatnonzero(all_gids == g)
        d = np.linalg.norm(x[rows] - x[a], axis=1)
        out[k] = rows[np.argmin(d)] if d.min() < world.domain.ghost_width else -1
    return out


def test_triangle_rows_are_the_nearest_images_on_owned_and_ghost_rows():
    world = lattice_world()
    world.add_system(ReadsTriangleGhosts())
    world.setup()
    p, t = world.particles, world.triangles
    assert p.n_ghost > 0 and t.n_ghost > 0
    rows = t.with_ghosts("rows")
    vertices = t.with_ghosts("vertices")
    gid = p.with_ghosts("gid")
    x = p.with_ghosts("position")
    # owned: every vertex found, the right gid, and the image within the element's extent
    owned = rows[:t.n_owned]
    assert np.all(owned >= 0)
    np.testing.assert_array_equal(gid[owned], vertices[:t.n_owned])
    span = np.linalg.norm(x[owned] - x[owned[:, :1]], axis=2)
    assert span.max() < 2.0 / 8 * L
    # some triangles cross a periodic face: raw distances of their owned vertex rows are large
    raw = p.position[p.rows_of(vertices[:t.n_owned].ravel())].reshape(-1, 3, 3)
    assert np.linalg.norm(raw - raw[:, :1], axis=2).max() > 0.5 * L
    # ghost element rows: anchored at a ghost image, vertices resolved near it (or absent)
    anchor = rows[t.n_owned:, 0]
    assert np.all(anchor >= p.n_owned)
    for c in range(3):
        np.testing.assert_array_equal(rows[t.n_owned:, c],
                                      nearest_image_rows(world, anchor, vertices[t.n_owned:, c]))


def test_incidence_lists_every_element_touching_a_row_once():
    world = lattice_world()
    world.add_system(ReadsTriangleGhosts())
    world.setup()
    start, items = world.incident_rows("triangles")
    rows = world.triangles.with_ghosts("rows")
    n = world.particles.n
    assert start.size == n + 1
    for r in range(0, n, 7):
        expected = np.flatnonzero(np.any(rows == r, axis=1))
        np.testing.assert_array_equal(items[start[r]:start[r + 1]], expected)
    # each owned particle lies in 6 triangles of its layer (the lattice is periodic)
    counts = np.diff(start)[:world.particles.n_owned]
    assert np.all(counts == 6)


def test_ghost_pair_rows_carry_correct_local_rows_and_incidence_counts_neighbours():
    world = lattice_world(radius=0.06)
    world.add_system(NeighborSearch())
    world.add_system(ReadsPairGhosts())
    world.run(2)
    p, q = world.particles, world.pairs
    assert q.n_ghost > 0
    gid = p.with_ghosts("gid")
    x = p.with_ghosts("position")
    i, j = q.with_ghosts("i"), q.with_ghosts("j")
    np.testing.assert_array_equal(gid[i], q.with_ghosts("gid_i"))
    present = j >= 0
    np.testing.assert_array_equal(gid[j[present]], q.with_ghosts("gid_j")[present])
    cutoff = 2 * 0.06 + world.skin
    assert np.all(np.linalg.norm(x[i[present]] - x[j[present]], axis=1) < cutoff)
    # every owned particle meets each of its neighbours exactly once in its incidence list
    start, items = world.incident_rows("pairs")
    xo = p.position
    d = xo[:, None, :] - xo[None, :, :]
    d -= L * np.rint(d / L)
    near = np.linalg.norm(d, axis=2) < cutoff
    np.fill_diagonal(near, False)
    for r in range(p.n_owned):
        mine = items[start[r]:start[r + 1]]
        partners = np.where(i[mine] == r, q.with_ghosts("gid_j")[mine], q.with_ghosts("gid_i")[mine])
        assert sorted(partners.tolist()) == sorted(gid[np.flatnonzero(near[r])].tolist())


def test_elements_appended_after_setup_are_resolved_before_the_next_forces():
    world = lattice_world()
    seen = []

    class CheckRows(ReadsTriangleGhosts):
        reads = {"triangles": ("rows", "vertices")}

        def run(self, world):
            t = world.triangles
            seen.append(bool(np.all(world.particles.gid[t.rows[:, 0]] == t.vertices[:, 0])))

    world.add_system(CheckRows())
    world.run(1)
    world.triangles.append(1, vertices=np.array([[5, 6, 13]]))
    world.run(1)
    assert seen == [True, True, True]
    assert world.triangles.rows[-1, 0] >= 0


def test_an_element_table_added_after_a_run_is_resolved_before_its_first_forces():
    """The world skips the stale-reference scan while no table changed structurally
    (Table.structure_version); a table built earlier and added later changes no table, so
    the world must count its tables too."""
    world = lattice_world()
    late = Table("late_triangles", triangle_table().fields.values(), anchor=("particles", "vertices"),
                 references={"rows": "vertices"})
    late.append(2, vertices=np.array([[5, 6, 13], [1, 2, 9]]))
    world.add_system(ReadsTriangleGhosts())
    world.run(2)
    seen = []

    class CheckLateRows(System):
        stage = Stage.FORCES
        reads = {"late_triangles": ("rows", "vertices")}

        def run(self, world):
            t = world.late_triangles
            seen.append(t.rows.copy())

    world.add_table(late)
    world.add_system(CheckLateRows())
    world.run(1)
    gid = world.particles.with_ghosts("gid")
    np.testing.assert_array_equal(gid[seen[0]], late.owned("vertices"))


def test_an_element_wider_than_the_ghost_layer_is_an_error_naming_it():
    # on one rank every vertex is owned, yet the rule is the same as on many (where a vertex
    # beyond the ghost layer would be missing): results must not depend on the rank count
    world = lattice_world(n_side=6)
    world.add_system(ReadsTriangleGhosts())
    world.triangles.append(1, vertices=np.array([[0, 3 + 3 * 6, 3 + 3 * 36]]))  # across the box
    with pytest.raises(StateError, match="triangles.*ghost width.*interaction_range"):
        world.setup()
