"""One HDF5 file shared by all ranks: collective writes of distributed rows.

With h5py built against parallel HDF5 (``h5py.get_config().mpi``), every rank
opens the file with the ``mpio`` driver; metadata operations (groups,
datasets, attributes, resizes) are made by all ranks with the same arguments,
and each rank writes its own rows at an offset given by an exclusive scan of
the row counts, in one collective write. A rank without rows still takes part
(an empty selection), otherwise the others would wait for it forever.

Without MPI in h5py, rank 0 alone opens the file and rows are gathered to it,
with a one-line warning: correct, slower, and memory-bound on rank 0.
"""
from __future__ import annotations

import contextlib
import errno
import os
import sys

import numpy as np

from ..errors import InputError

_warned = False


def held_elsewhere(path: str) -> str:
    """The reason `path` cannot be written now ('' if it can): another process holds it open.

    HDF5 locks a file it opens, but mode "w" truncates the file before it finds another
    process's lock: a run restarted while ParaView still shows its last output would lose
    that output and then fail. Mode "a" takes the same lock without truncating."""
    import h5py

    if not os.path.isfile(path):
        return ""
    try:
        h5py.File(path, "a").close()
    except BlockingIOError:
        return (f"{path} is open in another process (HDF5's file lock): a run still writing "
                "it, or a viewer (ParaView, h5py, HDFView) reading it. Close it there, or "
                "choose another output file; it was left as it is")
    except OSError:
        pass  # not an HDF5 file (or unreadable): "w" replaces it, as it always did
    return ""


#: a write is refused unless the device has this much room beyond the data: HDF5's metadata
#: and chunk padding (a snapshot of a few hundred rows takes about 40 KB more than its arrays)
SPACE_MARGIN = 1.1, 1 << 20


def ensure_space(path, nbytes: int, comm) -> None:
    """OSError(ENOSPC) on every rank when the device holding `path` has no room for `nbytes`
    (this rank's share of what is about to be written) and a margin (collective).

    HDF5 that runs out of space in the middle of a write leaves its file handles in a state
    in which closing them fails and freeing them later crashed the process (a segmentation
    fault instead of an error message): a write that cannot fit is refused before it starts.
    A quota the file system does not report still ends in HDF5's own error."""
    total = comm.sum(int(nbytes)) if comm.size > 1 else int(nbytes)
    problem = None  # (errno, message, file name) of the OSError every rank raises
    if comm.rank == 0:
        folder = os.path.dirname(os.path.abspath(str(path)))
        while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
            folder = os.path.dirname(folder)  # the file's folder is made when it is opened
        try:  # rank 0 alone asks: an error here must reach the others, waiting to hear
            stats = os.statvfs(folder)
        except OSError as exc:  # e.g. a folder this user may not read
            problem = (exc.errno, exc.strerror, folder)
        else:
            free = stats.f_bavail * stats.f_frsize
            need = SPACE_MARGIN[0] * total + SPACE_MARGIN[1]
            if free < need:
                problem = (errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} ({free / 1e6:.3g} MB "
                           f"free in {folder}, about {need / 1e6:.3g} MB needed)", str(path))
    if comm.size > 1:
        problem = comm.broadcast_object(problem)
    if problem:
        raise OSError(*problem)


class SharedFile:
    """An HDF5 file written by all ranks of `comm` (see the module docstring)."""

    def __init__(self, path, mode: str, comm):
        import h5py

        self.comm = comm
        self.path = str(path)
        self.collective = comm.size == 1 or bool(h5py.get_config().mpi)
        self.mpio = comm.size > 1 and self.collective
        if mode != "r":
            problem = held_elsewhere(self.path) if comm.rank == 0 else ""
            if comm.size > 1:
                problem = comm.broadcast_object(problem)
            if problem:
                raise InputError(problem)
        if self.mpio:
            self.file = h5py.File(self.path, mode, driver="mpio", comm=comm.world)
        elif comm.rank == 0:
            self.file = h5py.File(self.path, mode)
        else:
            self.file = None
        if not self.collective:
            global _warned
            if comm.rank == 0 and not _warned:
                print("warning: h5py was built without MPI; output is gathered to rank 0 "
                      "(rebuild h5py with HDF5_MPI=ON, see scripts/setup.sh)", file=sys.stderr)
            _warned = True

    @property
    def writes_metadata(self) -> bool:
        """True on ranks that must make metadata calls (all ranks with mpio, else rank 0)."""
        return self.file is not None

    def require_group(self, name: str):
        return self.file.require_group(name) if self.file is not None else None

    def write_rows(self, group_name: str, name: str, data: np.ndarray) -> tuple[int, int]:
        """Write this rank's rows of a distributed dataset; returns (offset, total rows)."""
        data = np.ascontiguousarray(data)
        n = data.shape[0]
        total = int(self.comm.sum(n))
        offset = self.comm.exscan(n)
        if not self.collective:
            rows = self.comm.gather_rows(data.view(np.uint8).reshape(n, -1))
            if self.comm.rank == 0:
                values = rows.view(data.dtype).reshape(total, *data.shape[1:])
                self.file.require_group(group_name).create_dataset(name, data=values)
            return offset, total
        dset = self.file.require_group(group_name).create_dataset(
            name, shape=(total, *data.shape[1:]), dtype=data.dtype)
        with dset.collective if self.mpio else contextlib.nullcontext():
            if n:
                dset[offset:offset + n] = data
            elif total:
                from h5py import h5s

                file_space = dset.id.get_space()
                file_space.select_none()
                mem_space = h5s.create_simple((1, *data.shape[1:]))
                mem_space.select_none()
                dset.id.write(mem_space, file_space, np.zeros((1, *data.shape[1:]), data.dtype),
                              dxpl=dset._dxpl)
        return offset, total

    def write_replicated(self, group_name: str, name: str, data: np.ndarray) -> None:
        """A dataset every rank holds identically (rank 0's copy is written)."""
        if self.file is None:
            return
        dset = self.file.require_group(group_name).create_dataset(
            name, shape=data.shape, dtype=data.dtype)
        if self.comm.rank == 0 and data.size:
            dset[...] = data

    def read_rows(self, group_name: str, name: str, start: int | None = None,
                  stop: int | None = None) -> np.ndarray:
        """Rows [start, stop) of a dataset on every rank (all rows by default)."""
        if self.file is not None:
            d = self.file[group_name][name]
            values = d[start:stop] if (start is not None or stop is not None) else d[...]
        else:
            values = None
        if not self.collective:
            values = self.comm.broadcast_object(values)
        return values

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
