"""Neighbour search: the Verlet pair list against brute force, and contact history carry-over.

The pair list must hold exactly the pairs closer than r_i + r_j + skin (minimum image in a
periodic box), each once, keyed by gids with gid_i < gid_j. History (tangential and rolling
springs) is keyed by the gid pair, so it must survive a rebuild of the list and any
re-ordering of the particle rows unchanged, bit for bit.
"""
import numpy as np
import pytest

from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from helpers import add_particles, add_standard_systems, make_world


def force_rebuild(world):
    """Rebuild ghosts and the pair list now, as the world does when a row moved > skin/2."""
    world.rebuild_domain()


def brute_force_pairs(position, radius, gid, skin, box, periodic, fixed):
    """{(gid_i, gid_j)} with |x_i - x_j| < r_i + r_j + skin (minimum image on periodic axes)."""
    d = position[:, None, :] - position[None, :, :]
    length = np.asarray(box, dtype=float)
    for a in range(3):
        if periodic[a]:
            d[..., a] -= length[a] * np.rint(d[..., a] / length[a])
    dist = np.sqrt(np.sum(d * d, axis=-1))
    cut = radius[:, None] + radius[None, :] + skin
    i, j = np.nonzero(np.triu(dist < cut, 1) & ~(fixed[:, None] & fixed[None, :]))
    gi, gj = gid[i], gid[j]
    return set(zip(np.minimum(gi, gj).tolist(), np.maximum(gi, gj).tolist()))


def listed_pairs(world):
    pairs = world.pairs
    gid = world.particles.with_ghosts("gid")
    # the local rows and the stored gids agree, and gid_i < gid_j
    np.testing.assert_array_equal(gid[pairs.i], pairs.gid_i)
    np.testing.assert_array_equal(gid[pairs.j], pairs.gid_j)
    assert np.all(pairs.gid_i < pairs.gid_j)
    # at least one row of each pair is owned
    assert np.all(np.minimum(pairs.i, pairs.j) < world.particles.n_owned)
    found = list(zip(pairs.gid_i.tolist(), pairs.gid_j.tolist()))
    assert len(found) == len(set(found)), "a pair is listed twice"
    return set(found)


@pytest.mark.parametrize("periodic", [(False, False, False), (True, True, True),
                                      (True, False, True)])
@pytest.mark.parametrize("size_ratio", [1.5, 8.0])
def test_pair_list_equals_brute_force(rng, periodic, size_ratio):
    box = np.array([0.03, 0.024, 0.036])
    skin = 3e-4
    world = make_world(box_lo=(0, 0, 0), box_hi=box, periodic=periodic, skin=skin)
    n = 400
    r_min = 1.4e-3 / size_ratio ** 0.5
    radius = r_min * size_ratio ** rng.uniform(0, 1, n)  # log-uniform polydisperse
    pos = rng.uniform(0, box, (n, 3))
    fixed = rng.uniform(size=n) < 0.2
    add_particles(world, pos, radius, fixed=fixed, gid=rng.permutation(10 * n)[:n])
    world.add_system(NeighborSearch())
    world.setup()
    p = world.particles
    expected = brute_force_pairs(p.position, p.radius, p.gid, skin, box, periodic, p.fixed)
    assert len(expected) > 200
    assert listed_pairs(world) == expected
    # after free flight and a rebuild, again (positions wrap, rows are re-sorted)
    velocity = rng.normal(scale=1.0, size=(n, 3))
    velocity[p.fixed] = 0
    p.velocity[:] = velocity
    first, second = velocity_verlet()
    world.add_system(first)
    world.add_system(second)
    world.run(2000)
    force_rebuild(world)
    expected = brute_force_pairs(p.position, p.radius, p.gid, skin, box, periodic, p.fixed)
    assert listed_pairs(world) == expected


def test_pair_list_is_rebuilt_when_rows_moved_half_the_skin(rng):
    box = np.array([0.02, 0.02, 0.02])
    skin = 4e-4
    world = make_world(box_lo=(0, 0, 0), box_hi=box, periodic=(True, True, True), skin=skin,
                       dt=1e-5)
    n = 200
    add_particles(world, rng.uniform(0, box, (n, 3)), 1e-3,
                  velocity=rng.normal(scale=0.5, size=(n, 3)))
    search = world.add_system(NeighborSearch())
    first, second = velocity_verlet()
    world.add_system(first)
    world.add_system(second)
    world.setup()
    p = world.particles
    # between rebuilds, every pair touching now was in the list built at the last rebuild
    for _ in range(100):
        world.run(5)
        listed = listed_pairs(world)
        touching = brute_force_pairs(p.position, p.radius, p.gid, 0.0, box, (True,) * 3,
                                     np.zeros(n, bool))
        assert touching <= listed
    assert 5 < search.builds_done < 500


# ------------------------------------------------------------------ history
def sheared_packing(sort, seed=3):
    """A dense frictional Hertz-Mindlin packing in a shear flow: non-zero contact histories."""
    rng = np.random.default_rng(seed)
    n_side, r = 6, 1e-3
    spacing = 2 * r * 0.99  # touching neighbours, overlap 1 % of the diameter
    box = n_side * spacing
    world = make_world(box_lo=(0, 0, 0), box_hi=(box, box, box), periodic=(True, True, True),
                       dt=2e-6, skin=2e-4, sort=sort,
                       material=dict(friction=0.5, restitution=0.5, rolling_friction=0.1))
    g = (np.arange(n_side) + 0.5) * spacing
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    velocity = np.zeros_like(pos)
    velocity[:, 0] = 40.0 * (pos[:, 2] - 0.5 * box)  # shear rate 40 /s
    velocity += rng.normal(scale=0.05, size=pos.shape)
    omega = rng.normal(scale=50.0, size=pos.shape)
    add_particles(world, pos, r * rng.uniform(0.999, 1.001, len(pos)), velocity=velocity,
                  angular_velocity=omega)
    add_standard_systems(world, HertzMindlinLaw())
    return world


def history(world):
    """{(gid_i, gid_j): (tangential_spring, rolling_spring)} of pairs with non-zero history."""
    pairs = world.pairs
    t, r = pairs.tangential_spring, pairs.rolling_spring
    out = {}
    for k, key in enumerate(zip(pairs.gid_i.tolist(), pairs.gid_j.tolist())):
        if np.any(t[k] != 0) or np.any(r[k] != 0):
            out[key] = (t[k].copy(), r[k].copy())
    return out


def assert_same_history(a, b):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key][0], b[key][0])
        np.testing.assert_array_equal(a[key][1], b[key][1])


def by_gid(world, name):
    p = world.particles
    return getattr(p, name)[np.argsort(p.gid)]


@pytest.mark.parametrize("sort", [False, True])
def test_history_survives_rebuild_and_row_permutation(sort):
    world = sheared_packing(sort)
    twin = sheared_packing(sort)  # same run, never forced to rebuild or permuted
    world.run(30)
    twin.run(30)
    before = history(world)
    assert len(before) > 300
    assert all(np.any(t != 0) and np.any(r != 0) for t, r in before.values())

    force_rebuild(world)
    assert_same_history(before, history(world))

    p = world.particles
    order = np.random.default_rng(11).permutation(p.n_owned)
    gids_before = p.gid.copy()
    p.permute(order)
    force_rebuild(world)
    if not sort:
        np.testing.assert_array_equal(p.gid, gids_before[order])  # rows really moved
    else:
        assert not np.array_equal(p.gid, gids_before)
    assert_same_history(before, history(world))

    # and the run goes on as if nothing happened (up to the summation order of forces)
    world.run(20)
    twin.run(20)
    assert_same_history_close(history(twin), history(world))
    np.testing.assert_allclose(by_gid(world, "position"), by_gid(twin, "position"),
                               rtol=0, atol=1e-15)
    np.testing.assert_allclose(by_gid(world, "velocity"), by_gid(twin, "velocity"),
                               rtol=1e-9, atol=1e-12)


def assert_same_history_close(a, b):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(b[key][0], a[key][0], rtol=1e-8, atol=1e-18)
        np.testing.assert_allclose(b[key][1], a[key][1], rtol=1e-8, atol=1e-18)


def test_history_of_separated_pairs_is_dropped():
    world = sheared_packing(sort=True)
    world.run(30)
    before = history(world)
    victim = next(iter(before))[0]
    assert sum(victim in key for key in before) >= 3
    # shrink one particle so that at the next build it is beyond every partner's cut-off
    p = world.particles
    p.radius[p.rows_of([victim])[0]] *= 0.2
    force_rebuild(world)
    after = history(world)
    assert all(victim not in key for key in world_pairs(world))
    kept = {k: v for k, v in before.items() if victim not in k}
    assert_same_history(kept, after)


def world_pairs(world):
    return set(zip(world.pairs.gid_i.tolist(), world.pairs.gid_j.tolist()))


@pytest.mark.parametrize("width", [1, 3, 4])
def test_take_rows_copies_found_history_and_zeroes_the_rest(width):
    from ecs_dem.systems.neighbors.kernels import take_rows

    old = np.arange(5 * width, dtype=np.float64).reshape(5, width) + 1.0
    src = np.array([4, -1, 0, 0, -1, 2], dtype=np.int64)
    new = np.full((src.size, width), np.nan)
    take_rows(src, old, new)
    expected = np.where((src >= 0)[:, None], old[np.maximum(src, 0)], 0.0)
    np.testing.assert_array_equal(new, expected)


def test_contact_groups_exclude_pairs_within_a_group_and_of_group_minus_two(rng):
    # a membrane's vertex spheres (group = its id) never pair with each other, a patch
    # membrane's vertices (group -2) with nothing; every other pair is listed
    box = np.array([0.02, 0.02, 0.02])
    world = make_world(box_lo=(0, 0, 0), box_hi=box, skin=3e-4)
    n = 300
    add_particles(world, rng.uniform(0, box, (n, 3)), rng.uniform(0.8e-3, 1.2e-3, n))
    p = world.particles
    group = rng.choice([-1, -1, 0, 1, -2], n)
    p.contact_group[:] = group
    world.add_system(NeighborSearch())
    world.setup()
    everything = brute_force_pairs(p.position, p.radius, p.gid, 3e-4, box, (False,) * 3, p.fixed)
    g = dict(zip(p.gid.tolist(), p.contact_group.tolist()))
    expected = {(a, b) for a, b in everything
                if not ((g[a] == g[b] and g[a] >= 0) or g[a] == -2 or g[b] == -2)}
    assert len(expected) < len(everything) and len(expected) > 50
    assert listed_pairs(world) == expected


@pytest.mark.parametrize("n", [1, 40, 2000])
def test_cell_grid_cells_are_at_least_a_cut_off_wide_and_few_for_sparse_rows(rng, n):
    """The binning grid (neighbor_kernels.cell_grid) over the rows' bounding box: cells at least
    2 r_max + skin wide (a pair in range lies in the same or adjacent cells), at most 8 n + 64
    of them (a sparse system gets a coarser grid), a flat axis one cell with inv_cell 0."""
    from ecs_dem.systems import neighbor_kernels as nk

    position = rng.uniform(0.0, 1.0, size=(n, 3)) * np.array([50.0, 3.0, 0.0])
    radius = rng.uniform(0.01, 0.05, size=n)
    skin = 0.02
    lo, inv_cell, dims = nk.cell_grid(position, radius, n, skin)
    np.testing.assert_array_equal(lo, position.min(axis=0))
    span = position.max(axis=0) - position.min(axis=0)
    assert np.all(dims >= 1) and np.prod(dims) <= 8 * n + 64
    wide = span > 0
    np.testing.assert_allclose(inv_cell[wide], dims[wide] / span[wide], rtol=1e-15)
    assert np.all(span[wide] / dims[wide] >= 2 * radius.max() + skin)
    assert dims[2] == 1 and inv_cell[2] == 0.0
    if n == 2000:  # dense enough along x for many cells, not coarsened
        assert dims[0] == int(np.floor(span[0] / (2 * radius.max() + skin)))
