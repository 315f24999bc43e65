"""The history flags of the chunked contact kernels (systems.contact.chunks)."""
import numpy as np
import pytest

from ecs_dem.systems.contact.chunks import flagged_rows, mark_nonzero


@pytest.mark.parametrize("width", [1, 3, 4])
def test_mark_nonzero_flags_rows_with_any_nonzero_component_and_keeps_set_flags(width):
    rng = np.random.default_rng(3)
    n = 200
    history = np.zeros((n, width))
    touching = rng.random(n) < 0.15
    component = rng.integers(0, width, n)
    history[touching, component[touching]] = rng.normal(size=touching.sum())
    history[5] = -0.0  # a signed zero is zero
    history[6, width - 1] = np.nan  # not zero: carried, and the check later reports it
    history[7, 0] = 1e-300
    flags = np.zeros(n, dtype=np.uint8)
    flags[8] = 1  # set by an earlier field: left set
    mark_nonzero(history, flags)
    expected = np.array([any(v != 0.0 for v in row) for row in history]) | (np.arange(n) == 8)
    assert flags.tolist() == expected.astype(np.uint8).tolist()
    assert flags[6] == 1 and flags[7] == 1 and flags[5] == 0
    assert 10 < flags.sum() < n // 2


@pytest.mark.parametrize("n", [0, 1, 257])
def test_flagged_rows_lists_every_set_flag_in_increasing_order(n):
    rng = np.random.default_rng(n)
    flags = (rng.random(n) < 0.2).astype(np.uint8) * rng.integers(1, 4, n).astype(np.uint8)
    if n:
        flags[-1] = 2  # a flag may hold any non-zero byte (flags of several fields OR-ed)
    out = np.full(n + 1, -7, dtype=np.int64)
    count = flagged_rows(flags, out)
    expected = [k for k in range(n) if flags[k]]
    assert out[:count].tolist() == expected
    assert count == len(expected)
