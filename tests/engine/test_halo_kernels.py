"""The column kernels behind forward and reverse, against numpy, for every width path.

Most columns are 3-vectors and take an unrolled path; widths 1 and 4 take the
general loop. Each kernel must agree with the plain numpy expression bit for bit.
"""
import numpy as np
import pytest

from ecs_dem import halo_kernels as hk

WIDTHS = (1, 3, 4)


def columns(rng, capacity=50):
    return tuple(rng.standard_normal((capacity, w)) for w in WIDTHS)


@pytest.mark.parametrize("shift_column", [-1, 0, 1, 2])
def test_copy_columns_matches_numpy(shift_column):
    rng = np.random.default_rng(1)
    cols = columns(rng)
    expected = tuple(c.copy() for c in cols)
    src = np.array([3, 7, 7, 0, 19], dtype=np.int64)
    shift = np.array([10.0, -20.0, 0.5, 4.0])
    hk.copy_columns(cols, src, 30, shift, shift_column)
    for j, e in enumerate(expected):
        e[30:35] = e[src] + (shift[:e.shape[1]] if j == shift_column else 0.0)
        np.testing.assert_array_equal(cols[j], e)


def test_gather_then_scatter_is_a_copy_with_shift():
    rng = np.random.default_rng(2)
    cols = columns(rng)
    rows = np.array([5, 1, 9, 9], dtype=np.int64)
    packed = np.empty((rows.size, sum(WIDTHS)))
    hk.gather_columns(cols, rows, packed)
    np.testing.assert_array_equal(packed, np.hstack([c[rows] for c in cols]))
    expected = tuple(c.copy() for c in cols)
    shift = np.array([1.0, 2.0, 3.0, 4.0])
    hk.scatter_columns(cols, 40, packed, shift, 1)
    for j, e in enumerate(expected):
        e[40:44] = e[rows] + (shift[:e.shape[1]] if j == 1 else 0.0)
        np.testing.assert_array_equal(cols[j], e)


def test_reverse_kernels_add_repeated_rows_and_zero_ghosts():
    rng = np.random.default_rng(3)
    cols = columns(rng)
    rows = np.array([2, 2, 6], dtype=np.int64)  # a row with two images
    packed = rng.standard_normal((rows.size, sum(WIDTHS)))
    expected = tuple(c.copy() for c in cols)
    hk.scatter_add_columns(cols, rows, packed)
    off = 0
    for e in expected:
        w = e.shape[1]
        np.add.at(e, rows, packed[:, off:off + w])
        off += w
    for c, e in zip(cols, expected):
        np.testing.assert_array_equal(c, e)

    expected = tuple(c.copy() for c in cols)
    hk.add_columns_back(cols, rows, 20)
    for e in expected:
        ghosts = e[20:23].copy()
        e[20:23] = 0.0
        for k, r in enumerate(rows):
            e[r] += ghosts[k]
    for c, e in zip(cols, expected):
        np.testing.assert_array_equal(c, e)

    hk.zero_rows(cols, 10, 5)
    for c in cols:
        assert not c[10:15].any() and c[9].any() and c[15].any()
