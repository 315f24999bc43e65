"""ecs_dem.jit.row: an index loaded from an array, read as unsigned, indexes the same rows."""
import numpy as np

from ecs_dem.jit import kernel, row


@kernel
def _gather_through_row(values, rows, out):
    for k in range(rows.size):
        r = row(rows[k])
        out[k, 0] = values[r, 0]
        out[k, 1] = values[r, 1]


def test_row_indexes_the_rows_a_signed_index_names():
    rng = np.random.default_rng(3)
    values = rng.random((50, 2))
    for dtype in (np.int32, np.int64):
        rows = rng.integers(0, 50, 200).astype(dtype)
        out = np.zeros((200, 2))
        _gather_through_row(values, rows, out)
        assert np.array_equal(out, values[rows])


@kernel
def _row_of(values):
    out = np.zeros(values.size, dtype=np.uint64)
    for k in range(values.size):
        out[k] = row(values[k])
    return out


def test_row_keeps_the_value_of_every_non_negative_index():
    values = np.array([0, 7, 2**31 - 1], dtype=np.int32)
    assert _row_of(values).tolist() == [0, 7, 2**31 - 1]
