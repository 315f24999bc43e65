"""GidLookup (ecs_dem/gid_lookup.py): local rows of gids over owned and ghost rows."""
import numpy as np
import pytest

from ecs_dem.gid_lookup import GidLookup


def brute_nearest(gids, n_owned, query, near, position, max_distance=np.inf):
    out = []
    for g, a in zip(query, near):
        rows = np.flatnonzero(gids == g)
        if rows.size == 0:
            out.append(-1)
            continue
        d = np.linalg.norm(position[rows] - position[a], axis=1)
        k = rows[np.argmin(d)]
        out.append(k if d.min() < max_distance else -1)
    return np.array(out)


@pytest.mark.parametrize("spread", [1, 10**9])  # dense and sparse layouts
def test_rows_and_nearest_images_match_brute_force(rng, spread):
    n_owned = 200
    owned = rng.permutation(n_owned) * spread
    ghosts = rng.choice(owned, 150)  # images of owned gids (periodic copies on one rank)
    gids = np.concatenate([owned, ghosts, rng.integers(0, n_owned, 20) * spread + n_owned * spread])
    lookup = GidLookup(gids, n_owned)
    assert lookup.dense == (spread == 1)
    position = rng.uniform(0, 1, (gids.size, 3))
    query = np.concatenate([rng.choice(gids, 300), [n_owned * spread * 7 + 3, -5]])
    first = np.array([np.flatnonzero(gids == g)[0] if np.any(gids == g) else -1 for g in query])
    np.testing.assert_array_equal(lookup.rows(query), first)
    owned_first = np.where(first < n_owned, first, -1)
    np.testing.assert_array_equal(lookup.rows(query, owned_only=True), owned_first)
    near = rng.integers(0, gids.size, query.size)
    np.testing.assert_array_equal(lookup.nearest_rows(query, near, position),
                                  brute_nearest(gids, n_owned, query, near, position))
    np.testing.assert_array_equal(lookup.nearest_rows(query, near, position, 0.3),
                                  brute_nearest(gids, n_owned, query, near, position, 0.3))
    # the images really are ambiguous: some gid sits in several rows
    assert np.bincount(np.unique(gids, return_inverse=True)[1]).max() >= 2


def test_table_lookup_is_cached_per_structural_epoch():
    from ecs_dem.table import Table

    t = Table("things", [])
    t.append(5)
    a = t.lookup()
    assert t.lookup() is a
    t.append(1)
    b = t.lookup()
    assert b is not a
    np.testing.assert_array_equal(b.rows(np.arange(6)), np.arange(6))
