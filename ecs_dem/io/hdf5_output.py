"""HDF5 output: particle snapshots and a diagnostics time series in one file.

Layout (documented for users in README.md, "Output")::

    /                          attrs: ecs_dem_version, config (TOML-like text)
    /snapshots/<step:09d>/     attrs: step, time
        <field>                one dataset per written field, rows = owned rows
    /timeseries/<name>         1-D (or (n, k)) datasets that grow by one row per record;
                               /timeseries/step and /timeseries/time index them

The file is flushed after every write, so a run that stops on an error keeps
everything written before it. With several ranks, rank 0 owns the file and
snapshot rows are gathered to it (sorted by gid); the parallel-I/O issue
replaces this with collective writes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..comm import SerialComm
from ..row_packing import pack_rows, row_layout
from ..system import Stage, System


class Hdf5Output:
    """One HDF5 file per run, written by rank 0."""

    def __init__(self, path, config: dict | None = None, comm=None):
        self.comm = comm if comm is not None else SerialComm()
        self.path = Path(path)
        self._file = None
        if self.comm.rank != 0:
            return
        import h5py  # imported here: the engine core does not need h5py


        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = h5py.File(self.path, "w")
        from .. import __version__

        self._file.attrs["ecs_dem_version"] = __version__
        if config is not None:
            self._file.attrs["config"] = "\n".join(f"{k} = {config[k]!r}" for k in sorted(config))
        self._file.create_group("snapshots")
        self._file.create_group("timeseries")
        self._file.flush()

    @property
    def file(self):
        return self._file

    def write_snapshot(self, step: int, time: float, table, fields) -> None:
        """Owned rows of `fields` (all ranks call this; rows sorted by gid with several ranks)."""
        columns = {f: table.owned(f) for f in fields}
        if self.comm.size > 1:
            names = ["gid"] + [f for f in fields if f != "gid"]
            layout = row_layout(table, names)
            rows = self.comm.gather_rows(pack_rows(table, layout, np.arange(table.n_owned)))
            if self.comm.rank != 0:
                return
            columns = {}
            for name, offset, nbytes in layout:
                fd = table.fields[name]
                columns[name] = np.ascontiguousarray(rows[:, offset:offset + nbytes]).view(
                    fd.np_dtype).reshape(rows.shape[0], *fd.shape)
            order = np.argsort(columns["gid"])
            columns = {k: v[order] for k, v in columns.items() if k in fields}
        g = self._file["snapshots"].create_group(f"{step:09d}")
        g.attrs["step"] = step
        g.attrs["time"] = time
        for f in fields:
            g.create_dataset(f, data=columns[f])
        self._file.flush()

    def append(self, step: int, time: float, values: dict) -> None:
        """Append one record to the time series (rank 0 writes; values must be global)."""
        if self._file is None:
            return
        ts = self._file["timeseries"]
        row = {"step": np.int64(step), "time": np.float64(time), **values}
        for name, value in row.items():
            value = np.asarray(value)
            if name not in ts:
                ts.create_dataset(name, shape=(0, *value.shape), maxshape=(None, *value.shape),
                                  dtype=value.dtype, chunks=(256, *value.shape))
            d = ts[name]
            d.resize(d.shape[0] + 1, axis=0)
            d[-1] = value
        self._file.flush()

    def close(self) -> None:
        if self._file:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SnapshotWriter(System):
    """Write the owned rows of some fields of a table every `every` steps."""

    stage = Stage.OUTPUT

    def __init__(self, output: Hdf5Output, every: int,
                 fields=("gid", "position", "velocity", "radius", "species"), table="particles"):
        self.output = output
        self.every = max(int(every), 1)
        self.fields = tuple(fields)
        self.table = table
        self.reads = {table: self.fields}

    def run(self, world) -> None:
        self.output.write_snapshot(world.step, world.time, world.table(self.table), self.fields)
