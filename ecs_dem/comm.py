"""Communicators: the few collective and neighbour operations the engine needs.

Systems never touch MPI. They call ``world.comm.sum`` / ``max`` / ``min`` for
global reductions (kinetic energy, wall forces, the rebuild decision). The
domain uses the neighbour operations (``exchange_rows``, ``exchange_into``,
``alltoallv_tables``) on packed byte matrices. :class:`SerialComm` is the one-rank case, where a
periodic neighbour is the rank itself; :class:`MpiComm` wraps mpi4py with its
buffer (upper-case) methods only: no pickle in the time step.

``default_comm()`` returns an MpiComm when the process runs under mpiexec with
more than one rank, else a SerialComm.
"""
from __future__ import annotations

import os
import sys
import time
import traceback

import numpy as np

from . import memory

#: seconds a rank waits after printing its error before MPI_Abort (the launcher forwards it)
_FORWARD_GRACE_S = 0.5

#: Transport settings read once by MPI_Init, for a job whose ranks all share one node, set
#: unless the user set them. Debian's MPICH is built on ch4:ucx, and between processes on a
#: node UCX switches from its eager copy to the rendezvous protocol at about 8 KB: a halo
#: message of 12 KB took 20 us after a step's work, 10.5 us eager; from 128 KB both take the
#: same time and above it the rendezvous wins (measured with Debian's MPICH). Across
#: nodes the network's own threshold is left alone. Other MPI libraries ignore the variable.
TRANSPORT_DEFAULTS = {"UCX_RNDV_THRESH": "128k"}

#: (ranks on this node, ranks in the job) as the launchers export them: MPICH's Hydra, Open MPI
_LAUNCHER_SIZES = (("MPI_LOCALNRANKS", "PMI_SIZE"),
                   ("OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE"))


def single_node_job(environ=os.environ) -> bool:
    """True when the launcher says that every rank of the job runs on this node."""
    for local, total in _LAUNCHER_SIZES:
        if local in environ and total in environ:
            return environ[local].strip() == environ[total].strip()
    return False


def apply_transport_defaults(environ=os.environ) -> dict:
    """Put :data:`TRANSPORT_DEFAULTS` into `environ` where the user has not set them, on a
    single-node job only (``single_node_job``), and return what was set. Effective only
    before MPI is initialised (before mpi4py.MPI is first imported in this process)."""
    if not single_node_job(environ):
        return {}
    added = {k: v for k, v in TRANSPORT_DEFAULTS.items() if k not in environ}
    environ.update(added)
    return added


class SerialComm:
    """One rank talking to itself."""

    rank = 0
    size = 1
    ranks_on_node = 1

    def sum(self, value):
        return np.array(value, dtype=np.float64, copy=True) if np.ndim(value) else value

    def max(self, value):
        return np.array(value, copy=True) if np.ndim(value) else value

    def max_of_two(self, a: float, b: float) -> tuple[float, float]:
        return float(a), float(b)

    def min(self, value):
        return np.array(value, copy=True) if np.ndim(value) else value

    def any(self, flag: bool) -> bool:
        return bool(flag)

    def barrier(self) -> None:
        pass

    def exscan(self, value: int) -> int:
        """Sum of `value` over the lower ranks (0 on rank 0): a rank's offset in a shared dataset."""
        return 0

    def allgather_object(self, obj) -> list:
        """Every rank's `obj` (pickled): for metadata at output time, never in the time step."""
        return [obj]

    def broadcast_object(self, obj):
        """Rank 0's `obj` on every rank (pickled; output and restart only)."""
        return obj

    # --------------------------------------------------------- decomposition
    def cartesian(self, periodic, dims) -> tuple[list[int], list[int]]:
        """(dims, coords) of the rank grid of the given shape."""
        return [1, 1, 1], [0, 0, 0]

    def neighbours(self, axis: int, periodic: bool) -> tuple[int | None, int | None]:
        """Ranks below and above along `axis` (None where there is none)."""
        return (0, 0) if periodic else (None, None)

    def exchange_rows(self, messages) -> list[np.ndarray]:
        """Send (m, w) uint8 matrices and receive one per message: [(send, dest, source,
        recv_count)]; `recv_count` (rows) skips the size message when the receiver knows it.

        One rank can only talk to itself: every message with a source comes back.
        """
        return [np.empty((0, send.shape[1]), dtype=np.uint8) if source is None else send.copy()
                for send, dest, source, _count in messages]

    def exchange_into(self, messages) -> None:
        """Like exchange_rows with preallocated receive buffers: [(send, dest, source, recv)]."""
        for send, dest, source, recv in messages:
            if source is not None:
                recv[...] = send

    def alltoallv_tables(self, sends, peers=None, graph=None) -> list[np.ndarray]:
        """Rows of several tables to other ranks in one exchange (migration).

        `sends`: per table, (packed (m, w) uint8 rows grouped by peer in peer
        order, rows per peer). Peers: the ranks `peers` (increasing; `graph`
        is their ``neighbourhood``), or every rank when None. Returns per
        table the rows received, grouped by source peer in peer order.
        One rank only talks to itself: every row comes back.
        """
        return [packed.copy() for packed, _counts in sends]

    def gather_rows(self, send: np.ndarray) -> np.ndarray | None:
        return send.copy()

    def abort(self, code: int = 1) -> None:
        sys.exit(code)

    def abort_with(self, message: str, code: int) -> None:
        """Print `message` with this rank's number, then end every rank (``abort``)."""
        sys.stderr.write(f"[rank {self.rank}] {message}\n")
        sys.stderr.flush()
        if self.size > 1:  # MPI_Abort tears the job down: let the launcher forward this first
            time.sleep(_FORWARD_GRACE_S)
        self.abort(code)


def cores_available() -> int:
    """CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


class MpiComm(SerialComm):
    """MPI communicator on a Cartesian rank grid (mpi4py, buffer methods).

    Waiting: MPICH (and UCX) busy-poll inside a blocking wait. With more ranks
    on a node than cores, a waiting rank then burns the time slice its partner
    needs to compute, and every message costs a scheduler slice (a step of
    the chute on 4 ranks over 2 cores took 21 ms instead of 2). So when the
    node is oversubscribed (detected at start-up; ``ECS_DEM_YIELD=1`` or ``0``
    forces it on or off) the per-step operations (halo exchanges, reductions,
    barriers) are non-blocking and wait by testing and yielding the CPU.
    """

    def __init__(self, comm=None, yield_when_idle: bool | None = None):
        if "mpi4py.MPI" not in sys.modules:
            apply_transport_defaults()
        from mpi4py import MPI

        self.MPI = MPI
        self.world = comm if comm is not None else MPI.COMM_WORLD
        self.rank = self.world.Get_rank()
        self.size = self.world.Get_size()
        self.cart = None
        self._scalar = np.zeros(1)
        self._flag = np.zeros(1, dtype=np.int32)
        self._pair = (np.zeros(2), np.zeros(2))  # max_of_two's buffers
        node = self.world.Split_type(MPI.COMM_TYPE_SHARED)
        #: ranks sharing this node's memory (ecs_dem.memory divides it among them)
        self.ranks_on_node = on_node = node.Get_size()
        node.Free()
        memory.share_node(max(on_node, memory.ranks_on_node()))  # a sub-communicator: not fewer
        if yield_when_idle is None:
            forced = os.environ.get("ECS_DEM_YIELD")
            if forced is not None:
                yield_when_idle = forced.strip().lower() not in ("", "0", "false", "no")
            else:
                yield_when_idle = bool(self.world.allreduce(
                    int(on_node > cores_available()), op=MPI.MAX))
        self.yield_when_idle = bool(yield_when_idle)

    def _wait(self, reqs) -> None:
        """Complete the requests: Waitall, or test-and-yield on an oversubscribed node."""
        if not self.yield_when_idle:
            self.MPI.Request.Waitall(reqs)
            return
        while not self.MPI.Request.Testall(reqs):
            os.sched_yield()

    def _allreduce(self, send, recv, op) -> None:
        if self.yield_when_idle:
            self._wait([self.world.Iallreduce(send, recv, op=op)])
        else:
            self.world.Allreduce(send, recv, op=op)

    def _reduce(self, value, op):
        if np.ndim(value):
            send = np.ascontiguousarray(value)
            recv = np.empty_like(send)
            self._allreduce(send, recv, op)
            return recv
        is_int = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
        self._scalar[0] = value
        out = np.empty(1)
        self._allreduce(self._scalar, out, op)
        return int(out[0]) if is_int else float(out[0])

    def sum(self, value):
        return self._reduce(value, self.MPI.SUM)

    def max_of_two(self, a: float, b: float) -> tuple[float, float]:
        """The maxima over ranks of two numbers, in buffers kept for it: the world's vote of
        every step (rebuild? stop?), where building arrays cost several us inside a step."""
        send, recv = self._pair
        send[0] = a
        send[1] = b
        self._allreduce(send, recv, self.MPI.MAX)
        return float(recv[0]), float(recv[1])

    def max(self, value):
        return self._reduce(value, self.MPI.MAX)

    def min(self, value):
        return self._reduce(value, self.MPI.MIN)

    def any(self, flag: bool) -> bool:
        self._flag[0] = 1 if flag else 0
        out = np.empty(1, dtype=np.int32)
        self._allreduce(self._flag, out, self.MPI.MAX)
        return bool(out[0])

    def barrier(self) -> None:
        if self.yield_when_idle:
            self._wait([self.world.Ibarrier()])
        else:
            self.world.Barrier()

    def exscan(self, value: int) -> int:
        send = np.array([value], dtype=np.int64)
        recv = np.zeros(1, dtype=np.int64)
        self.world.Exscan(send, recv, op=self.MPI.SUM)
        return int(recv[0]) if self.rank > 0 else 0

    def allgather_object(self, obj) -> list:
        return self.world.allgather(obj)

    def broadcast_object(self, obj):
        return self.world.bcast(obj, root=0)

    def cartesian(self, periodic, dims):
        dims = list(dims)
        self.cart = self.world.Create_cart(dims, periods=list(periodic), reorder=False)
        return list(dims), list(self.cart.Get_coords(self.rank))

    def neighbours(self, axis, periodic):
        lo, hi = self.cart.Shift(axis, 1)
        null = self.MPI.PROC_NULL
        return (None if lo == null else lo), (None if hi == null else hi)

    def exchange_rows(self, messages):
        """Non-blocking: post every receive and send, then wait for all (buffer methods)."""
        MPI = self.MPI
        counts = [c for *_, c in messages]
        if any(c is None for c in counts):
            sizes = [np.array([m[0].shape[0]], dtype=np.int64) for m in messages]
            got = [np.zeros(1, dtype=np.int64) for _ in messages]
            reqs = []
            for k, (send, dest, source, _c) in enumerate(messages):
                if source is not None:
                    reqs.append(self.world.Irecv(got[k], source=source, tag=100 + k))
            for k, (send, dest, source, _c) in enumerate(messages):
                if dest is not None:
                    reqs.append(self.world.Isend(sizes[k], dest=dest, tag=100 + k))
            self._wait(reqs)
            counts = [int(got[k][0]) if c is None else c for k, c in enumerate(counts)]
        received = []
        reqs = []
        for k, (send, dest, source, _c) in enumerate(messages):
            recv = np.empty((counts[k] if source is not None else 0, send.shape[1]), dtype=np.uint8)
            received.append(recv)
            if source is not None:
                reqs.append(self.world.Irecv(recv, source=source, tag=200 + k))
        keep = [np.ascontiguousarray(m[0]) for m in messages]  # alive until the wait
        for k, (send, dest, source, _c) in enumerate(messages):
            if dest is not None:
                reqs.append(self.world.Isend(keep[k], dest=dest, tag=200 + k))
        self._wait(reqs)
        return received

    def exchange_into(self, messages):
        reqs = []
        for k, (send, dest, source, recv) in enumerate(messages):
            if source is not None:
                reqs.append(self.world.Irecv(recv, source=source, tag=300 + k))
        for k, (send, dest, source, recv) in enumerate(messages):
            if dest is not None:
                reqs.append(self.world.Isend(send, dest=dest, tag=300 + k))
        self._wait(reqs)

    def alltoallv_tables(self, sends, peers=None, graph=None):
        """One all-to-all of every table's row counts per peer (over the neighbourhood
        `graph`, or every rank), then one message per peer that has rows to send or to
        receive: migration costs two rounds however many tables travel."""
        ranks = range(self.size) if peers is None else [int(p) for p in peers]
        widths = [packed.shape[1] for packed, _counts in sends]
        counts = np.empty((len(ranks), len(sends)), dtype=np.int64)
        for t, (_packed, c) in enumerate(sends):
            counts[:, t] = c
        recv_counts = np.empty_like(counts)
        if graph is None:
            self._wait([self.world.Ialltoall(counts, recv_counts)])
        else:
            self._wait([graph.Ineighbor_alltoall(counts, recv_counts)])
        starts = np.zeros_like(counts)
        starts[1:] = np.cumsum(counts[:-1], axis=0)
        nbytes_in = recv_counts @ np.asarray(widths, dtype=np.int64)
        reqs, inbox, keep = [], [], []
        for k, rank in enumerate(ranks):
            if nbytes_in[k]:
                buf = np.empty(int(nbytes_in[k]), dtype=np.uint8)
                reqs.append(self.world.Irecv(buf, source=rank, tag=400))
                inbox.append((k, buf))
        for k, rank in enumerate(ranks):
            parts = [packed[starts[k, t]:starts[k, t] + counts[k, t]].reshape(-1)
                     for t, (packed, _c) in enumerate(sends) if counts[k, t]]
            if parts:
                keep.append(np.concatenate(parts) if len(parts) > 1 else
                            np.ascontiguousarray(parts[0]))
                reqs.append(self.world.Isend(keep[-1], dest=rank, tag=400))
        self._wait(reqs)
        got: list[list[np.ndarray]] = [[] for _ in sends]
        for k, buf in inbox:
            offset = 0
            for t, w in enumerate(widths):
                size = int(recv_counts[k, t]) * w
                if size:
                    got[t].append(buf[offset:offset + size].reshape(-1, w))
                offset += size
        return [np.concatenate(rows) if len(rows) > 1 else
                rows[0] if rows else np.empty((0, w), dtype=np.uint8)
                for rows, w in zip(got, widths)]

    def neighbourhood(self, ranks):
        """A communicator whose neighbours, in and out, are `ranks` (a distributed graph)."""
        ranks = [int(r) for r in ranks]
        return self.world.Create_dist_graph_adjacent(ranks, ranks, reorder=False)

    def gather_rows(self, send):
        width = send.shape[1]
        counts = np.empty(self.size, dtype=np.int64)
        self.world.Allgather(np.array([send.shape[0]], dtype=np.int64), counts)
        recv = np.empty((int(counts.sum()), width), dtype=np.uint8) if self.rank == 0 else None
        displ = np.concatenate(([0], np.cumsum(counts)[:-1])) * width
        self.world.Gatherv(np.ascontiguousarray(send),
                           [recv, counts * width, displ, self.MPI.BYTE] if self.rank == 0 else None,
                           root=0)
        return recv

    def abort(self, code: int = 1) -> None:
        self.world.Abort(code)


def _abort_on_exception(comm: MpiComm):
    """An uncaught exception on any rank prints its traceback and ends every rank.

    Without this, the other ranks wait forever in their next collective call.
    """
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if exc_type in (KeyboardInterrupt, SystemExit):
            return previous(exc_type, exc, tb)
        comm.abort_with("uncaught exception, aborting all ranks:\n"
                        + "".join(traceback.format_exception(exc_type, exc, tb)).rstrip("\n"), 1)

    sys.excepthook = hook


_DEFAULT = None


#: environment variables in which launchers give a process its rank (MPICH's hydra: PMI_RANK)
RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def launch_rank(environ=os.environ) -> int:
    """This process's rank: the default communicator's once it exists, else the launcher's
    environment (no MPI call: usable before MPI starts, in an error path), else 0."""
    if _DEFAULT is not None:
        return _DEFAULT.rank
    for name in RANK_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def default_comm():
    """MpiComm under mpiexec with several ranks (installing the abort hook), else SerialComm."""
    global _DEFAULT
    if _DEFAULT is not None:
        return _DEFAULT
    launched = any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE",
                                             "PMIX_RANK", "HYDRA_CONTROL_FD"))
    if launched:
        comm = MpiComm()
        if comm.size > 1:
            _abort_on_exception(comm)
            _DEFAULT = comm
            return comm
    _DEFAULT = SerialComm()
    return _DEFAULT
