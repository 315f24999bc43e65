"""ecs_dem.observe and the driver frame on several ranks: each rank holds part of the rows,
and the measures equal the 1-rank values (every rank builds that reference for itself with
SerialComm): counts, extrema and gathers by gid exactly, sums to round-off; rank 0 alone
prints and writes."""
import numpy as np
import pytest

from ecs_dem import observe
from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.driver import Job, run_driver
from ecs_dem.systems.diagnostics import kinetic_energy
from mpi_scenarios import dense_bed

pytestmark = pytest.mark.mpi(min_size=2)


@pytest.fixture(scope="module")
def worlds():
    """(the bed spread over the ranks, the same bed on one rank), both set up: the rows
    sent to their owners, no step taken, so every value is the same bit for bit (a run
    departs from the 1-rank run by round-off)."""
    spread, alone = dense_bed(default_comm()), dense_bed(SerialComm())
    for w in (spread, alone):
        w.setup()
    return spread, alone


def test_the_rows_are_spread_over_the_ranks(worlds):
    spread, alone = worlds
    n = alone.particles.n_owned
    assert observe.count(spread, spread.particles) == n
    assert observe.largest(spread, np.array([spread.particles.n_owned])) < n  # no rank has all


def test_sums_counts_and_extrema_equal_the_one_rank_values(worlds):
    spread, alone = worlds
    values = []
    for w in (spread, alone):
        p = w.particles
        high = p.position[:, 2] > 0.004
        values.append({
            "mass": observe.total(w, p.mass),
            "momentum": observe.total(w, p.mass[:, None] * p.velocity, where=high),
            "high": observe.count(w, high),
            "top": observe.largest(w, p.position[:, 2] + p.radius),
            "bottom": observe.smallest(w, p.position[:, 2], where=high),
            "none": observe.largest(w, p.radius, where=np.zeros(p.n_owned, bool)),
            "kinetic": kinetic_energy(w, high),
            "sums": observe.sum_of(w, p.n_owned, float(np.sum(p.radius))),
            "nearest": observe.at_smallest(w, np.hypot(p.position[:, 0] - 0.01,
                                                       p.position[:, 1] - 0.01), p.gid),
        })
    a, b = values
    for key in ("high", "top", "bottom", "none", "nearest"):
        assert a[key] == b[key], key
    for key in ("mass", "kinetic"):
        assert a[key] == pytest.approx(b[key], rel=1e-13), key
    np.testing.assert_allclose(a["momentum"], b["momentum"], rtol=1e-12,
                               atol=1e-13 * np.abs(b["momentum"]).max())
    np.testing.assert_allclose(a["sums"], b["sums"], rtol=1e-13)
    assert a["high"] > 0 and a["kinetic"] > 0


@pytest.mark.parametrize("root", [0, None])
def test_gathers_by_gid_equal_the_one_rank_columns(worlds, root):
    spread, alone = worlds
    comm = spread.comm
    p, q = spread.particles, alone.particles
    got = observe.gather_by_gid(spread, "particles", ("gid", "position", "angular_velocity"),
                                root=root)
    order = np.argsort(q.gid)
    if root == 0 and comm.rank != 0:
        assert got is None
    else:
        for column, name in zip(got, ("gid", "position", "angular_velocity")):
            np.testing.assert_array_equal(column, getattr(q, name)[order])
    high = observe.gather_by_gid(spread, p, "radius", where=p.position[:, 2] > 0.004, root=root)
    if root is None or comm.rank == 0:
        keep = q.position[:, 2] > 0.004
        np.testing.assert_array_equal(high, q.radius[keep][np.argsort(q.gid[keep])])
    rows = observe.concatenated(spread, p.gid, root=root)
    each = comm.allgather_object(p.gid.copy())  # every rank's gids, in rank order
    if root is None or comm.rank == 0:
        np.testing.assert_array_equal(np.sort(rows), np.sort(q.gid))
        np.testing.assert_array_equal(rows, np.concatenate(each))


def test_rank_0_alone_prints_and_writes(tmp_path, capsys):
    comm = default_comm()
    shared = comm.broadcast_object(str(tmp_path))  # rank 0's directory, for every rank
    job = Job({}, comm)
    calls = []
    job.print(f"from rank {comm.rank}")
    path = job.write_csv(f"{shared}/table.csv", ["rank"], [[comm.rank]])
    job.write(calls.append, comm.rank)
    assert capsys.readouterr().out == ("from rank 0\n" if comm.rank == 0 else "")
    assert (path is None) == (comm.rank != 0)
    assert comm.allgather_object(calls) == [[0]] + [[]] * (comm.size - 1)
    comm.barrier()
    with open(f"{shared}/table.csv") as fh:
        assert fh.read().splitlines() == ["rank", "0"]


def test_a_driver_measures_on_every_rank_and_prints_on_rank_0(capsys):
    def run(job):
        world = dense_bed(job.comm)
        world.run(5)
        job.print(f"{observe.count(world, world.particles)} particles")  # collective first
        return 0

    assert run_driver([], defaults={"x": 1}, run=run) == 0
    out = capsys.readouterr().out
    assert out == (f"{dense_bed(SerialComm()).particles.n_owned} particles\n"
                   if default_comm().rank == 0 else "")
