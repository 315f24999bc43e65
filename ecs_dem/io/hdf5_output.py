"""HDF5 output: particle snapshots and a diagnostics time series in one file.

Layout (documented for users in README.md, "Output")::

    /                          attrs: ecs_dem_version, config (TOML-like text)
    /snapshots/<step:09d>/     attrs: step, time
        <field>                one dataset per written field, rows = owned rows
    /timeseries/<name>         1-D (or (n, k)) datasets that grow by one row per record;
                               /timeseries/step and /timeseries/time index them

The file is flushed after every write, so a run that stops on an error keeps
everything written before it. (This is the serial writer; the I/O issue makes
it collective over ranks.)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..system import Stage, System


class Hdf5Output:
    """One HDF5 file per run."""

    def __init__(self, path, config: dict | None = None):
        import h5py  # imported here: the engine core does not need h5py

        self.path = Path(path)
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
        g = self._file["snapshots"].create_group(f"{step:09d}")
        g.attrs["step"] = step
        g.attrs["time"] = time
        for f in fields:
            g.create_dataset(f, data=table.owned(f))
        self._file.flush()

    def append(self, step: int, time: float, values: dict) -> None:
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
