"""HDF5 output: particle snapshots, a diagnostics time series, and an XDMF sidecar.

Layout (docs/getting-started/output.md shows how to read it)::

    /                          attrs: ecs_dem_version, config (text), ranks
    /snapshots/<step:09d>/     attrs: step, time
        <field>                one dataset per written field; rows are particles,
                               in rank order (use ``gid`` to identify them)
        <connectivity>         e.g. ``triangles`` (m, 3): elements given by the gids
                               of their vertices, stored as rows of this snapshot's
                               datasets (resolved when written, on any rank count)
        <subgroup>/            another table's rows of the same step, laid out alike
                               (``mesh_walls/``: the mesh walls' vertices and triangles)
        contacts/              with ``SnapshotWriter(contacts=True)``: the contact network,
                               one row per touching particle pair: i, j (gids), force (on
                               i, N), contact_point (m), branch (x_i - x_j, m)
        boundary_contacts/     one row per particle touching a wall, a membrane patch or
                               a mesh triangle: i (gid), force (on i), contact_point (on
                               the partner's surface),
                               partner (its index or gid), source (index into the
                               group's ``sources`` attribute: the contact systems' names)
    /timeseries/<name>         datasets that grow by one row per record;
                               /timeseries/step and /timeseries/time index them

All ranks write one file collectively (``parallel_h5.SharedFile``). The file
is flushed after every write, so a run that stops on an error keeps
everything written before it. It is opened at the first write, not when the
driver creates its ``Hdf5Output``: an input error found while the world is
built, set up or restarted (a corrupt checkpoint, overlapping particles, a
time step above the limit) leaves the file of an earlier run of the same name
as it was, neither truncated nor trimmed. ``<file>.xdmf`` is rewritten after every
snapshot so ParaView can open the run while it goes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..comm import SerialComm
from ..errors import InputError
from ..system import Stage, System
from .parallel_h5 import SharedFile, ensure_space, held_elsewhere
from .paths import unwritable
from .xdmf import write_xdmf


class Hdf5Output:
    """One HDF5 file per run, shared by all ranks.

    ``resume_step``: continue an existing file after a restart from that step;
    snapshots and time-series records after it (written after the checkpoint
    by the interrupted run) are dropped, everything before is kept.
    The file is created (or continued and trimmed) at the first write or at a
    ``close`` without an error, not here (module docstring); here only the
    path is checked. Every rank constructs it and takes part in every write.
    """

    def __init__(self, path, config: dict | None = None, comm=None, resume_step: int | None = None):
        self.comm = comm if comm is not None else SerialComm()
        self.path = Path(path)
        self.config = config
        self.resume_step = resume_step
        self.xdmf_path = self.path.with_suffix(".xdmf")
        self._snapshots: list = []
        self._shared = None
        problem = None
        if self.comm.rank == 0:
            problem = unwritable(self.path) or held_elsewhere(str(self.path))
        if self.comm.size > 1:
            problem = self.comm.broadcast_object(problem)
        if problem:
            raise InputError(problem)

    @property
    def opened(self) -> bool:
        """Whether this run has opened (created or continued) its file."""
        return self._shared is not None

    @property
    def snapshots(self) -> list:
        """(step, time, group, {dataset: (shape, dtype)}) of the file's snapshots, for the
        XDMF sidecar; opens the file (collective)."""
        if self._shared is None:
            self._open()
        return self._snapshots

    @property
    def shared(self):
        """The shared file, opened on first use (collective)."""
        if self._shared is None:
            self._open()
        return self._shared

    def _open(self) -> None:
        from .. import __version__

        if self.comm.rank == 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.comm.barrier()
        resume = self.resume_step is not None and self.path.is_file()
        self._shared = SharedFile(self.path, "a" if resume else "w", self.comm)
        f = self._shared.file
        if resume:
            self._resume(self.resume_step)
        elif f is not None:
            f.attrs["ecs_dem_version"] = __version__
            f.attrs["ranks"] = self.comm.size
            if self.config is not None:
                f.attrs["config"] = "\n".join(f"{k} = {self.config[k]!r}" for k in sorted(self.config))
            f.create_group("snapshots")
            f.create_group("timeseries")
        self._shared.flush()

    @property
    def file(self):
        return self.shared.file

    def _resume(self, step: int) -> None:
        # With mpio every rank reads what it then changes: HDF5 keeps a metadata cache per
        # rank, and after reads on rank 0 alone the collective deletes below disagree
        # ("message sizes do not match" in HDF5's broadcast), so no rank reads alone.
        meta = None
        if self.shared.writes_metadata:
            f = self.shared.file
            later = [k for k in f["snapshots"] if int(k) > step]
            keep = []
            for k in sorted(f["snapshots"]):
                if int(k) <= step:
                    g = f["snapshots"][k]
                    fields = {}
                    g.visititems(lambda n, d: fields.__setitem__(n, (d.shape, d.dtype))
                                 if hasattr(d, "shape") else None)
                    keep.append((int(k), float(g.attrs["time"]), f"/snapshots/{k}", fields))
            ts = f["timeseries"]
            rows = int((ts["step"][:] <= step).sum()) if "step" in ts else 0
            meta = (later, keep, rows)
        if not self.shared.mpio:
            meta = self.comm.broadcast_object(meta)
        later, keep, rows = meta
        if self.shared.writes_metadata:
            for k in later:
                del self.shared.file["snapshots"][k]
            ts = self.shared.file["timeseries"]
            for name in sorted(ts):
                if self.shared.mpio:
                    self._recreate_series(ts, name, rows)
                else:
                    ts[name].resize(rows, axis=0)
        self._snapshots = keep
        self.shared.flush()

    def _recreate_series(self, ts, name: str, rows: int) -> None:
        """Copy a time series into a dataset created by all ranks (collective).

        A file begun serially (a 1-rank run restarted on more ranks) allocates a chunk when it
        is first written; rank 0 then allocates alone, the ranks' metadata disagree and the
        next collective flush waits forever (it did, at record 2049). Created in parallel,
        the dataset allocates its chunks on every rank as it grows.
        """
        old = ts[name]
        values, chunks = old[:rows], old.chunks
        del ts[name]
        d = ts.create_dataset(name, shape=values.shape, maxshape=(None, *values.shape[1:]),
                              dtype=values.dtype, chunks=chunks)
        if self.comm.rank == 0 and rows:
            d[...] = values

    def write_snapshot(self, step: int, time: float, table, fields, connectivity=None,
                       element_data=None, subgroup: str | None = None,
                       names: dict | None = None) -> None:
        """Owned rows of `fields` of `table` from every rank (collective: all ranks call it).

        `connectivity` maps dataset names to (m, k) arrays of gids of `table`'s
        rows (each rank its own elements, e.g. the triangles it owns); they are
        written as rows of this snapshot, wherever the vertices live.
        `element_data` maps further dataset names to per-element arrays in the
        same order (e.g. ``triangle_membrane``); ParaView shows a
        ``triangle_<name>`` dataset as a cell attribute of the triangles.
        `subgroup`: write into ``/snapshots/<step>/<subgroup>/`` instead, beside the
        particles of the same step (a second table with its own rows: the mesh walls'
        vertices); a subgroup with ``position`` and ``triangles`` becomes a surface of
        its own in the XDMF sidecar, one with ``position`` alone a point set of its own.
        `names` maps a field to the name of its dataset (default the field's name).
        """
        group = f"snapshots/{step:09d}" + (f"/{subgroup}" if subgroup else "")
        prefix = f"{subgroup}/" if subgroup else ""
        meta = {}
        ensure_space(self.path, sum(table.owned(name).nbytes for name in fields)
                     + sum(np.asarray(a).nbytes for a in (connectivity or {}).values())
                     + sum(np.asarray(a).nbytes for a in (element_data or {}).values()), self.comm)
        offset = self.comm.exscan(table.n_owned) if connectivity else 0
        for field in fields:
            name = (names or {}).get(field, field)
            _, total = self.shared.write_rows(group, name, table.owned(field))
            meta[name] = ((total, *table.fields[field].shape), table.fields[field].np_dtype)
        for name, gids in (connectivity or {}).items():
            rows = self._file_rows(table, np.asarray(gids, dtype=np.int64), offset, name)
            _, total = self.shared.write_rows(group, name, rows)
            meta[name] = ((total, *rows.shape[1:]), rows.dtype)
        for name, data in (element_data or {}).items():
            data = np.ascontiguousarray(data)
            _, total = self.shared.write_rows(group, name, data)
            meta[name] = ((total, *data.shape[1:]), data.dtype)
        top = f"snapshots/{step:09d}"
        if self.shared.writes_metadata:
            g = self.shared.file[top]
            g.attrs["step"] = step
            g.attrs["time"] = time
        self.shared.flush()
        meta = {prefix + name: value for name, value in meta.items()}
        if self._snapshots and self._snapshots[-1][0] == step:  # a second table, same step
            self._snapshots[-1][3].update(meta)
        else:
            self._snapshots.append((step, time, "/" + top, meta))
        if self.comm.rank == 0 and prefix + "position" in meta:
            write_xdmf(self.xdmf_path, self.path, self.snapshots)

    def write_records(self, step: int, time: float, subgroup: str, datasets: dict,
                      attrs: dict | None = None) -> None:
        """This rank's rows of `datasets` (name -> array, the same names, dtypes and row
        shapes on every rank) into ``/snapshots/<step>/<subgroup>/`` (collective): rows that
        belong to no table, such as the contacts of the step; `attrs` on the subgroup."""
        group = f"snapshots/{step:09d}/{subgroup}"
        ensure_space(self.path, sum(np.asarray(a).nbytes for a in datasets.values()), self.comm)
        meta = {}
        for name in sorted(datasets):
            data = np.ascontiguousarray(datasets[name])
            _, total = self.shared.write_rows(group, name, data)
            meta[f"{subgroup}/{name}"] = ((total, *data.shape[1:]), data.dtype)
        if self.shared.writes_metadata:
            g = self.shared.file.require_group(group)
            for key, value in (attrs or {}).items():
                g.attrs[key] = value
            top = self.shared.file[f"snapshots/{step:09d}"]
            top.attrs["step"] = step
            top.attrs["time"] = time
        self.shared.flush()
        if self._snapshots and self._snapshots[-1][0] == step:
            self._snapshots[-1][3].update(meta)
        else:
            self._snapshots.append((step, time, f"/snapshots/{step:09d}", meta))

    def _file_rows(self, table, gids: np.ndarray, offset: int, name: str) -> np.ndarray:
        """Rows in this snapshot's datasets of the given gids (collective).

        Every rank's owned rows are written in order at its `offset`; the
        owner of each requested gid answers, the answers are combined by a
        maximum over ranks (output time only, not the time step).
        """
        wanted = np.unique(gids)
        requests = [np.asarray(r, dtype=np.int64) for r in self.comm.allgather_object(wanted)]
        every = np.concatenate(requests) if requests else np.zeros(0, dtype=np.int64)
        local = table.lookup().rows(every, owned_only=True)
        answer = np.where(local >= 0, local + offset, -1).astype(np.float64)
        answer = np.asarray(self.comm.max(answer)) if self.comm.size > 1 else answer
        start = sum(r.size for r in requests[:self.comm.rank])
        mine = answer[start:start + wanted.size].astype(np.int64)
        if np.any(mine < 0):
            missing = wanted[mine < 0][:5].tolist()
            raise InputError(f"snapshot '{name}': {table.name} gid(s) {missing} are not in the "
                             "table (an element refers to a particle that does not exist)")
        return mine[np.searchsorted(wanted, gids)].astype(np.int64)

    def append(self, step: int, time: float, values: dict) -> None:
        """Append one record to the time series (collective; values must be global)."""
        ensure_space(self.path, sum(np.asarray(v).nbytes for v in values.values()) + 16,
                     self.comm)
        if not self.shared.writes_metadata:
            return
        ts = self.shared.file["timeseries"]
        row = {"step": np.int64(step), "time": np.float64(time), **values}
        for name, value in row.items():
            value = np.asarray(value)
            if name not in ts:
                ts.create_dataset(name, shape=(0, *value.shape), maxshape=(None, *value.shape),
                                  dtype=value.dtype, chunks=(256, *value.shape))
            d = ts[name]
            d.resize(d.shape[0] + 1, axis=0)
            if self.comm.rank == 0:
                d[-1] = value
        self.shared.flush()

    def close(self, failed: bool = False) -> None:
        """Close the file; a run that wrote nothing still leaves its (empty) file, unless it
        `failed` (an error before its first write: an earlier run's file stays as it was)."""
        if self._shared is None and not failed:
            self._open()
        if self._shared is not None:
            self._shared.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(failed=exc_type is not None)


class SnapshotWriter(System):
    """Write the owned rows of some fields of a table every `every` steps (collective).

    ``connectivity`` maps a dataset name to (element table, gid field), e.g.
    ``{"triangles": ("membrane_triangles", "vertices")}``: the owned elements
    are written as rows of the snapshot (``Hdf5Output.write_snapshot``), so
    ParaView draws the surface right on any number of ranks;
    ``element_data`` maps dataset names to (element table, field) written
    alongside, element by element (``{"triangle_membrane": ("membrane_triangles",
    "membrane")}``). ``subgroup`` and ``names`` as ``Hdf5Output.write_snapshot``'s
    (another table beside the particles, its fields under other dataset names).

    ``contacts=True``: every snapshot also carries the contact network (module
    docstring: ``contacts/``, ``boundary_contacts/``), from every system of the
    world that records its contacts (``record_contacts(every)``, asked here when
    the world is set up, and ``snapshot_contacts(world)``: the contact systems
    of ``systems.contact``). They record on the snapshot steps only; the other
    steps run exactly as without the option.
    """

    stage = Stage.OUTPUT

    def __init__(self, output: Hdf5Output, every: int,
                 fields=("gid", "position", "velocity", "angular_velocity", "radius", "species"),
                 table="particles", connectivity=None, element_data=None, subgroup=None,
                 names=None, contacts: bool = False):
        self.output = output
        self.subgroup = subgroup
        self.names = dict(names or {})
        self.contacts = bool(contacts)
        self._contact_systems: list = []
        self.every = max(int(every), 1)
        self.fields = tuple(fields)
        self.table = table
        self.connectivity = dict(connectivity or {})
        self.element_data = dict(element_data or {})
        self.reads = {table: self.fields}
        for etable, field in (*self.connectivity.values(), *self.element_data.values()):
            self.reads = {**self.reads, etable: (*self.reads.get(etable, ()), field)}

    def declare(self, world) -> None:
        if not self.contacts:
            return
        self._contact_systems = [s for s in world.systems
                                 if callable(getattr(s, "record_contacts", None))]
        if not self._contact_systems:
            raise InputError("SnapshotWriter(contacts=True): the world has no contact system "
                             "to record (add one, e.g. ContactForces, or drop contacts=True)")
        for s in self._contact_systems:
            s.record_contacts(self.every)
            for label in ("reads", "reads_ghosts"):
                extra = getattr(s, f"snapshot_{label}", {})
                mine = dict(getattr(self, label))
                for t, names in extra.items():
                    mine[t] = tuple(dict.fromkeys((*mine.get(t, ()), *names)))
                setattr(self, label, mine)

    def run(self, world) -> None:
        pick = lambda spec: {name: world.table(t).owned(f) for name, (t, f) in spec.items()}  # noqa: E731
        self.output.write_snapshot(world.step, world.time, world.table(self.table), self.fields,
                                   pick(self.connectivity), pick(self.element_data),
                                   self.subgroup, self.names or None)
        if self.contacts:
            self.write_contacts(world)

    def write_contacts(self, world) -> None:
        """The contacts of this step, by subgroup (class docstring; collective)."""
        groups: dict = {}
        for s in self._contact_systems:
            for group, rows in s.snapshot_contacts(world).items():
                groups.setdefault(group, []).append((s.name, rows))
        for group in sorted(groups):
            parts = groups[group]
            names = sorted(parts[0][1])
            data = {n: np.concatenate([rows[n] for _, rows in parts]) for n in names}
            attrs = {}
            if group != "contacts":
                data["source"] = np.concatenate([np.full(len(rows["i"]), k, dtype=np.int16)
                                                 for k, (_, rows) in enumerate(parts)])
                attrs["sources"] = [name for name, _ in parts]
            self.output.write_records(world.step, world.time, group, data, attrs)
