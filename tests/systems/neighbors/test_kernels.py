"""Kernels of the neighbour rebuild's history carry-over and pair ids (systems.neighbors.kernels)."""
import numpy as np
import pytest

from ecs_dem.systems.neighbors.kernels import pair_ids, take_rows


@pytest.mark.parametrize("width", [1, 3, 5])
def test_take_rows_copies_each_matched_row_bit_for_bit_and_zeroes_the_others(width):
    rng = np.random.default_rng(width)
    old = rng.normal(size=(40, width))
    old[3] = -0.0  # a signed zero is copied as it is, not replaced by +0.0
    old[4, 0] = np.nan
    src = np.where(rng.random(300) < 0.3, rng.integers(0, 40, 300), -1)
    src[:3] = [3, 4, -1]
    new = np.full((300, width), 9.0)
    take_rows(src, old, new)
    expected = np.where((src >= 0)[:, None], old[np.maximum(src, 0)], 0.0)
    assert new.view(np.int64).tolist() == expected.view(np.int64).tolist()
    assert np.signbit(new[0]).all() and np.isnan(new[1, 0]) and not np.signbit(new[2]).any()


def test_take_rows_without_old_rows_zeroes_every_row():
    new = np.full((5, 3), 9.0)
    take_rows(np.full(5, -1, dtype=np.int64), np.zeros((0, 3)), new)
    assert (new == 0.0).all() and not np.signbit(new).any()


def test_pair_ids_number_every_ordered_pair_of_keys_once():
    """pair_ids is Cantor's pairing (a + b)(a + b + 1)/2 + b: the ordered pairs of keys 0..n-1
    get distinct ids, (a, b) and (b, a) differ (a grain and a triangle of equal gids), and
    the ids of all pairs with a + b < n are exactly 0 .. n(n+1)/2 - 1. Also near the int64
    limit the docstring states (a + b just under 4.29e9)."""
    n = 60
    a, b = (k.ravel().astype(np.int64) for k in np.meshgrid(np.arange(n), np.arange(n)))
    ids = np.empty(a.size, dtype=np.int64)
    pair_ids(a, b, ids)
    assert np.unique(ids).size == a.size
    small = a + b < n
    np.testing.assert_array_equal(np.sort(ids[small]), np.arange(n * (n + 1) // 2))
    big = np.array([4_290_000_000 - 7, 4_290_000_000 - 8]), np.array([5, 6])
    out = np.empty(2, dtype=np.int64)
    pair_ids(*big, out)
    s = 4_290_000_000 - 2
    assert out.tolist() == [s * (s + 1) // 2 + 5, s * (s + 1) // 2 + 6]
