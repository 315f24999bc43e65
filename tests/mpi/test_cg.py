"""On-the-fly coarse-graining on several ranks (cg.system): the grid crosses the rank
boundaries, every contact counts once, and the fields equal the 1-rank fields.

Scenario: the dense bed of mpi_scenarios (periodic in x and y, a floor, lasting contacts
from the first step, pairs across rank boundaries and with periodic images).

* At step 0 the N-rank and 1-rank states are the same bits: their fields agree to 1e-12
  of each field's largest value (the sums over ranks only round differently).
* After 100 steps (states that drifted apart by round-off): the N-rank fields equal
  ``coarse_grain`` of the whole state gathered by gid, with every rank's recorded contacts
  gathered too, to 1e-12; no pair is recorded by two ranks, and the pairs recorded are
  every touching pair of the gathered state.
"""
import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.cg.fields import coarse_grain, derive
from ecs_dem.cg.grid import CartesianGrid
from ecs_dem.cg.kernels import Kernel
from ecs_dem.cg.system import CoarseGraining
from mpi_scenarios import R, dense_bed

pytestmark = pytest.mark.mpi(min_size=2)


def grid_and_kernel(world):
    lo, hi = world.domain.box.lo, world.domain.box.hi
    upper = np.array(hi, dtype=float)
    upper[2] = 8 * 1.99 * R
    return CartesianGrid(lo, upper, (10, 10, 8)), Kernel.gaussian(1.5 * R)


def with_cg(comm, every):
    world = dense_bed(comm)
    grid, kernel = grid_and_kernel(world)
    cg = CoarseGraining(grid, kernel, every=every)
    world.add_system(cg)
    return world, cg


def assert_same_fields(a, b):
    for name, values in a.items():
        scale = max(float(np.abs(values).max()), 1e-300)
        assert np.abs(values - b[name]).max() <= 1e-12 * scale, name


def test_fields_at_the_same_state_equal_the_one_rank_fields():
    comm = default_comm()
    world, cg = with_cg(comm, every=1000)
    world.run(1)  # evaluated at step 0 only
    serial_world, serial = with_cg(SerialComm(), every=1000)
    serial_world.run(1)
    assert cg.step == serial.step == 0
    assert np.abs(serial.fields["contact_stress"]).max() > 0
    assert_same_fields(cg.fields, serial.fields)


def test_fields_equal_the_pure_function_of_the_gathered_state():
    comm = default_comm()
    world, cg = with_cg(comm, every=100)
    world.run(100)
    assert cg.step == 100
    p = world.particles
    n = p.n_owned
    gid = p.with_ghosts("gid")
    names = ("position", "velocity", "mass", "radius")
    mine = {name: p.owned(name).copy() for name in names}
    mine["gid"] = p.owned("gid").copy()
    _, (i, j, f, b), (bi, bf, bc) = cg.records
    contacts = (gid[i], gid[j], f, b, gid[bi], bf, bc)
    parts = comm.world.allgather((mine, contacts))
    owned = {name: np.concatenate([m[name] for m, _ in parts]) for name in (*names, "gid")}
    order = np.argsort(owned["gid"])
    assert np.all(np.diff(owned["gid"][order]) > 0)  # each particle owned once
    row = {int(g): k for k, g in enumerate(owned["gid"][order])}
    arrays = [owned[name][order] for name in names]
    gi, gj, f, b, gb, bf, bc = (np.concatenate([c[k] for _, c in parts]) for k in range(7))
    keys = {(min(int(a), int(c)), max(int(a), int(c))) for a, c in zip(gi, gj)}
    assert len(keys) == gi.size  # no pair recorded twice
    assert gi.size > 100 and comm.size > 1
    # every touching pair of the gathered state (periodic in x and y), none else
    x, radius = arrays[0], arrays[3]
    width = np.asarray(world.domain.box.hi) - np.asarray(world.domain.box.lo)
    d = x[:, None, :] - x[None, :, :]
    d[..., :2] -= width[:2] * np.round(d[..., :2] / width[:2])
    touching = np.sum(d * d, axis=2) < (radius[:, None] + radius[None, :]) ** 2
    a, c = np.nonzero(np.triu(touching, 1))
    gids = owned["gid"][order]
    assert keys == {(int(gids[u]), int(gids[v])) for u, v in zip(a, c)}
    rows = lambda gids: np.array([row[int(g)] for g in gids], dtype=np.int64)  # noqa: E731
    # a pair's partner may be a periodic image: its position is i's minus the branch vector,
    # which coarse_grain takes from the branch, so the owner's row serves for j
    grid, kernel = grid_and_kernel(world)
    expected = derive(coarse_grain(grid, kernel, *arrays, pairs=(rows(gi), rows(gj), f, b),
                                   boundary=(rows(gb), bf, bc)))
    assert_same_fields(cg.fields, expected)
