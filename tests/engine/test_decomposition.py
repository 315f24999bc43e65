"""Decomposition (ecs_dem/decomposition.py) on a stand-in communicator: rank 0 of a grid,
holding every row, so the histogram the ranks would sum is its own."""
import numpy as np
import pytest

from ecs_dem import Box
from ecs_dem.comm import SerialComm
from ecs_dem.decomposition import Decomposition


class GridRank0(SerialComm):
    """Rank 0 of `size` ranks along z; reductions see this rank's data only."""

    def __init__(self, size):
        self.size = size

    def cartesian(self, periodic, dims):
        return list(dims), [0, 0, 0]

    def sum(self, value):
        return value


def test_balance_clamps_slabs_to_the_ghost_width_exactly():
    """Grains settled at the bottom of a tall box on 6 ranks: balancing pushes the lower slabs
    to the ghost width, one on top of the other. Each sum cuts[k - 1] + width rounds, and
    check_width, right after, refused slabs 3.5e-18 m narrower than the ghost width (the
    compression driver on 6 ranks stopped with "0.0162 m wide, less than ... 0.0162 m")."""
    box = Box((0.0, 0.0, 0.0), (0.09, 0.09, 0.327))
    width = 0.01619766  # the run's ghost width (m)
    dec = Decomposition(box, GridRank0(6))
    assert list(dec.dims) == [1, 1, 6]
    rng = np.random.default_rng(1)
    settled = rng.uniform((0.0, 0.0, 0.0), (0.09, 0.09, 0.03), (5000, 3))
    assert dec.balance(settled, width)
    cuts = dec.cuts[2]
    assert np.all(np.diff(cuts) >= width)
    assert np.diff(cuts)[:4] == pytest.approx(width, rel=1e-12)  # clamped, not merely wide
    dec.check_width(width)  # raised InputError before


def test_balance_keeps_the_cuts_when_the_box_is_too_short_for_the_ghost_width():
    box = Box((0.0, 0.0, 0.0), (0.09, 0.09, 0.327))
    dec = Decomposition(box, GridRank0(6))
    before = [c.copy() for c in dec.cuts]
    settled = np.full((100, 3), 0.001)
    assert not dec.balance(settled, 0.327 / 6 * 1.01)
    np.testing.assert_array_equal(dec.cuts[2], before[2])
