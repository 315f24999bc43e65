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


def test_alltoallv_rows(comm):
    r, n = comm.rank, comm.size
    counts = np.arange(1, n + 1, dtype=np.int64)  # k + 1 rows to rank k
    send = np.concatenate([np.full((k + 1, 2), 10 * r + k, dtype=np.uint8) for k in range(n)])
    got = comm.alltoallv_rows(send, counts)
    expected = np.concatenate([np.full((r + 1, 2), 10 * s + r, dtype=np.uint8) for s in range(n)])
    np.testing.assert_array_equal(got, expected)


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
