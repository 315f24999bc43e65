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


def test_gather_then_scatter_is_a_copy():
    rng = np.random.default_rng(2)
    cols = columns(rng)
    rows = np.array([5, 1, 9, 9], dtype=np.int64)
    packed = np.empty((rows.size, sum(WIDTHS) + 2))
    hk.gather_rows_packed(cols, rows, packed, 2)
    np.testing.assert_array_equal(packed[:, 2:], np.hstack([c[rows] for c in cols]))
    expected = tuple(c.copy() for c in cols)
    hk.scatter_rows_packed(cols, 40, packed, 2)
    for j, e in enumerate(expected):
        e[40:44] = e[rows]
        np.testing.assert_array_equal(cols[j], e)


def test_scatter_with_a_shift_equals_scatter_then_adding_it():
    """Received ghost positions of a periodic image (the 3-vector column 1): the same bits
    as scattering and then adding the shift with numpy; the other columns only copied."""
    rng = np.random.default_rng(5)
    cols = columns(rng)
    packed = rng.standard_normal((6, sum(WIDTHS))) * 1e3
    shift = np.array([0.1, -7.3, 1e-9])
    expected = tuple(c.copy() for c in cols)
    hk.scatter_rows_packed(expected, 12, packed, 0)
    expected[1][12:18] += shift
    hk.scatter_rows_shifted(cols, 12, packed, shift, 1)
    for c, e in zip(cols, expected):
        np.testing.assert_array_equal(c, e)
    assert not np.array_equal(cols[1][12:18], packed[:, 1:4])


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

    # local reverse stages in one call, in k order: ghost 30 is an image of ghost 21 (a ghost
    # of a ghost), listed first, so its value reaches row 2 through 21
    src = np.array([21, 2, 2, 6], dtype=np.int64)
    dst = np.array([30, 20, 21, 22], dtype=np.int64)
    expected = tuple(c.copy() for c in cols)
    through = cols[1][30].copy()
    hk.add_rows_back_fused(cols, src, dst)
    for e in expected:
        for s_, d in zip(src, dst):
            e[s_] += e[d]
            e[d] = 0.0
    for c, e in zip(cols, expected):
        np.testing.assert_array_equal(c, e)
    assert not cols[1][[20, 21, 22, 30]].any() and through.any()

    hk.zero_rows(cols, 10, 5)
    for c in cols:
        assert not c[10:15].any() and c[9].any() and c[15].any()


@pytest.mark.parametrize("shift_column", [-1, 1])
def test_fused_local_copies_run_in_order_with_a_shift_per_row(shift_column):
    """Forward of local stages in one call: row 30 copies ghost 21, written earlier in the
    same call (an edge image), and each row carries its own stage's periodic shift."""
    rng = np.random.default_rng(4)
    cols = columns(rng)
    src = np.array([2, 2, 6, 21], dtype=np.int64)
    dst = np.array([20, 21, 22, 30], dtype=np.int64)
    shift = np.array([[1.0, 0, 0, 0], [-1.0, 0, 0, 0], [1.0, 0, 0, 0], [0, 2.0, 0, 0]])[:, :3]
    expected = tuple(c.copy() for c in cols)
    hk.copy_rows_fused(cols, src, dst, shift, shift_column)
    for j, e in enumerate(expected):
        for k, (s_, d) in enumerate(zip(src, dst)):
            e[d] = e[s_] + (shift[k, :e.shape[1]] if j == shift_column else 0.0)
        np.testing.assert_array_equal(cols[j], e)


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 17])
def test_max_displacement_sq_is_numpys_maximum_and_first_non_finite_row(n):
    rng = np.random.default_rng(n)
    reference = rng.uniform(-1, 1, (n, 3))
    position = reference + rng.normal(0, 1e-3, (n, 3))
    expected = float(((position - reference) ** 2).sum(axis=1).max()) if n else 0.0
    assert hk.max_displacement_sq(position, reference) == (expected, -1)
    if n < 3:
        return
    for first, later in ((n - 1, None), (1, n - 1)):  # the first bad row wins, max of the rest
        bad = position.copy()
        bad[first, 2] = np.nan
        if later is not None:
            bad[later, 0] = np.inf
        finite = np.isfinite(bad).all(axis=1)
        worst, row = hk.max_displacement_sq(bad, reference)
        assert row == first
        assert worst == float(((bad - reference)[finite] ** 2).sum(axis=1).max())
