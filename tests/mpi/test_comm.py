"""The MPI communicator gives the same answers whether it blocks or tests and yields.

The yielding wait is what an oversubscribed node (more ranks than cores) gets;
here both modes run on the same ranks and must agree exactly.
"""
import numpy as np
import pytest

pytestmark = pytest.mark.mpi(min_size=2)


@pytest.fixture(params=[False, True], ids=["blocking", "yielding"])
def comm(request):
    from ecs_dem.comm import MpiComm

    return MpiComm(yield_when_idle=request.param)


def test_reductions_and_barrier(comm):
    r, n = comm.rank, comm.size
    assert comm.sum(r + 1) == n * (n + 1) // 2
    assert comm.max(float(r)) == n - 1
    assert comm.min(r) == 0
    np.testing.assert_array_equal(comm.max(np.array([r, -r], dtype=np.float64)), [n - 1, 0])
    assert comm.any(r == n - 1) and not comm.any(False)
    # the step's vote: two maxima in kept buffers, twice in a row (the buffers are reused)
    assert comm.max_of_two(float(r == 0), -float(r)) == (1.0, 0.0)
    assert comm.max_of_two(0.0, float(15 * (r == n - 1))) == (0.0, 15.0)
    comm.barrier()


def test_ring_exchange_into(comm):
    r, n = comm.rank, comm.size
    right, left = (r + 1) % n, (r - 1) % n
    send = np.full((3, 2), float(r))
    recv = np.empty((3, 2))
    comm.exchange_into([(send, right, left, recv)])
    np.testing.assert_array_equal(recv, np.full((3, 2), float(left)))
    got = comm.exchange_rows([(np.full((r + 1, 4), r, dtype=np.uint8), right, left, None)])
    np.testing.assert_array_equal(got[0], np.full((left + 1, 4), left, dtype=np.uint8))


def test_alltoallv_tables_brings_each_table_its_rows_in_rank_order(comm):
    """Table a sends k + 1 rows to rank k, table b none to odd ranks and two to even ones:
    every rank gets, per table, its rows from every rank in rank order (peers: all ranks,
    and the neighbourhood of all other ranks, which must give the same)."""
    r, n = comm.rank, comm.size

    def rows(source, dest, table, count):
        return np.full((count, 2 + table), 10 * source + dest + 100 * table, dtype=np.uint8)

    a_counts = np.arange(1, n + 1, dtype=np.int64)
    b_counts = np.array([0 if k % 2 else 2 for k in range(n)], dtype=np.int64)
    a = np.concatenate([rows(r, k, 0, a_counts[k]) for k in range(n)])
    b = np.concatenate([rows(r, k, 1, b_counts[k]) for k in range(n)])
    want_a = np.concatenate([rows(s, r, 0, r + 1) for s in range(n)])
    want_b = np.concatenate([rows(s, r, 1, 0 if r % 2 else 2) for s in range(n)]).reshape(-1, 3)
    got_a, got_b = comm.alltoallv_tables([(a, a_counts), (b, b_counts)])
    np.testing.assert_array_equal(got_a, want_a)
    np.testing.assert_array_equal(got_b, want_b)
    others = np.array([k for k in range(n) if k != r], dtype=np.int64)
    # rows to the other ranks only, as in migration
    a = np.concatenate([rows(r, k, 0, a_counts[k]) for k in others])
    b = np.concatenate([rows(r, k, 1, b_counts[k]) for k in others]).reshape(-1, 3)
    got_a, got_b = comm.alltoallv_tables([(a, a_counts[others]), (b, b_counts[others])], others,
                                         comm.neighbourhood(others))
    np.testing.assert_array_equal(got_a, np.concatenate([rows(s, r, 0, r + 1) for s in others]))
    np.testing.assert_array_equal(got_b, np.concatenate(
        [rows(s, r, 1, 0 if r % 2 else 2) for s in others]).reshape(-1, 3))


def test_yielding_is_on_when_the_node_has_more_ranks_than_cores(monkeypatch):
    from mpi4py import MPI

    from ecs_dem.comm import MpiComm, cores_available

    monkeypatch.setenv("ECS_DEM_YIELD", "1")
    assert MpiComm().yield_when_idle
    monkeypatch.setenv("ECS_DEM_YIELD", "0")
    assert not MpiComm().yield_when_idle
    monkeypatch.delenv("ECS_DEM_YIELD")
    node = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    all_on_one_node = node.Get_size() == MPI.COMM_WORLD.Get_size()
    node.Free()
    if all_on_one_node:
        assert MpiComm().yield_when_idle == (MPI.COMM_WORLD.Get_size() > cores_available())
