"""Kernels of the neighbour rebuild's history carry-over (systems.neighbors.kernels)."""
import numpy as np
import pytest

from ecs_dem.systems.neighbors.kernels import take_rows


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
