"""ecs_dem.observe on one rank: each measure equals the numpy expression over the selected rows
(the sums bit for bit: numpy's sum is what a rank contributes), gathers order rows by gid,
and a World and its communicator give the same answers."""
import math

import numpy as np
import pytest

from ecs_dem import observe
from ecs_dem.comm import SerialComm
from helpers import add_particles, make_world


@pytest.fixture
def world(rng):
    """20 particles with shuffled gids, random positions, velocities and radii."""
    w = make_world()
    n = 20
    add_particles(w, rng.uniform(-0.5, 0.5, (n, 3)), rng.uniform(0.01, 0.02, n),
                  velocity=rng.normal(0, 1, (n, 3)), gid=rng.permutation(np.arange(100, 100 + n)))
    return w


def test_sums_are_numpys_sums_of_the_selected_rows(world):
    p = world.particles
    heavy = p.mass > np.median(p.mass)
    assert observe.total(world, p.mass) == float(np.sum(p.mass))
    assert observe.total(world, p.mass, where=heavy) == float(np.sum(p.mass[heavy]))
    vector = observe.total(world, p.velocity, where=np.flatnonzero(heavy))
    np.testing.assert_array_equal(vector, np.sum(p.velocity[heavy], axis=0))
    assert vector.shape == (3,)
    whole = observe.total(world, p.gid)
    assert whole == int(np.sum(p.gid)) and isinstance(whole, int)
    assert observe.total(world, p.mass, where=np.zeros(p.n_owned, bool)) == 0.0
    # several numbers in one reduction; one number keeps its type
    np.testing.assert_array_equal(observe.sum_of(world, 3, 2.5, np.int64(4)), [3.0, 2.5, 4.0])
    seven = observe.sum_of(world, np.int64(7))
    assert seven == 7 and isinstance(seven, int)
    assert observe.sum_of(SerialComm(), 1.5) == 1.5  # a communicator instead of a world


def test_counts_and_extrema(world):
    p = world.particles
    high = p.position[:, 2] > 0
    assert observe.count(world, high) == int(np.count_nonzero(high))
    assert observe.count(world, np.flatnonzero(high)) == int(np.count_nonzero(high))
    assert observe.count(world, p) == 20
    assert observe.largest(world, p.position[:, 2]) == p.position[:, 2].max()
    assert observe.smallest(world, p.radius, where=high) == p.radius[high].min()
    nothing = np.zeros(p.n_owned, bool)
    assert observe.largest(world, p.radius, where=nothing) == -math.inf
    assert observe.smallest(world, p.radius, where=nothing) == math.inf
    assert observe.largest(world, p.radius, where=nothing, empty=0.0) == 0.0


def test_the_value_at_the_smallest_key(world):
    p = world.particles
    r = np.hypot(p.position[:, 0], p.position[:, 1])
    k = int(np.argmin(r))
    assert observe.at_smallest(world, r, p.position[:, 2]) == p.position[k, 2]
    np.testing.assert_array_equal(observe.at_smallest(world, r, p.velocity), p.velocity[k])
    far = r > np.median(r)
    assert observe.at_smallest(world, r, p.gid, where=far) == p.gid[far][np.argmin(r[far])]
    assert observe.at_smallest(world, r, r, where=np.zeros(p.n_owned, bool)) is None


@pytest.mark.parametrize("root", [0, None])
def test_gathers_order_rows_by_gid_and_copy_them_exactly(world, root):
    p = world.particles
    order = np.argsort(p.gid)
    position, radius, gid = observe.gather_by_gid(world, "particles", ("position", "radius", "gid"),
                                                  root=root)
    np.testing.assert_array_equal(gid, np.sort(p.gid))
    np.testing.assert_array_equal(position, p.position[order])
    np.testing.assert_array_equal(radius, p.radius[order])
    assert position.flags.c_contiguous and position.dtype == np.float64
    high = p.position[:, 2] > 0
    z = observe.gather_by_gid(world, p, "position", where=high, root=root)[:, 2]
    np.testing.assert_array_equal(z, p.position[high][np.argsort(p.gid[high])][:, 2])
    none = observe.gather_by_gid(world, p, ("velocity",), where=np.zeros(p.n_owned, bool),
                                 root=root)
    assert none[0].shape == (0, 3)
    rows = observe.concatenated(world, p.velocity[high], root=root)
    np.testing.assert_array_equal(rows, p.velocity[high])


def test_a_gather_goes_to_rank_0_or_to_every_rank(world):
    with pytest.raises(ValueError, match="rank 0 or to every rank"):
        observe.gather_by_gid(world, "particles", "position", root=1)
    with pytest.raises(ValueError, match="rank 0 or to every rank"):
        observe.concatenated(world, world.particles.radius, root=2)
