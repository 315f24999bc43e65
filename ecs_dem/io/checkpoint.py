"""Checkpoint and restart: the complete state in one HDF5 file, written atomically.

Layout::

    /                        attrs: format, step, time, dt, ranks, config (JSON), rng (JSON)
    /tables/<name>/<field>   every field of every table but scratch ones (Field.scratch,
                             recomputed each step); attrs kind, next_gid
                             distributed tables (spatial ones and those anchored to
                             them: particles, pairs with their contact history,
                             bonded elements) hold the owned rows of all ranks in
                             rank order, with /tables/<name>/rank_rows giving the
                             rows per rank; replicated tables (species, walls)
                             hold rank 0's copy
    /domain/cuts_x|y|z       the decomposition's cut planes
    /ranks/int_state, float_state (+ *_rows)
                             each rank's ghost send lists, rebuild references and
                             counters: what a bit-identical continuation needs

The file is written to ``<path>.tmp`` and renamed over ``<path>`` only when
complete, so a kill during the write leaves the previous checkpoint intact.

Restart on the same number of ranks restores every rank's exact local state
(row order, ghost rows, pair list), so the run continues bit for bit. On
another number of ranks, the rows are redistributed by position as at set-up
and neighbour lists rebuilt (history carried by gid pair); forces are the
saved ones, so the continuation agrees to round-off.
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..system import Stage, System
from .parallel_h5 import SharedFile, ensure_space

FORMAT = 1


def _distributed(world, table) -> bool:
    return table in world.spatial_tables() or bool(table.anchor)


def _state_fields(table) -> list[str]:
    """The fields a checkpoint holds: all but scratch (Field.scratch)."""
    return [name for name, f in table.fields.items() if not f.scratch]


def write_checkpoint(world, path, config: dict | None = None) -> Path:
    """Save the complete state of `world` to `path` (collective: every rank calls it)."""
    from .. import __version__

    comm = world.comm
    world.complete_sums()  # a replicated table's SUM fields are saved as sums, not shares
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    if comm.rank == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
    comm.barrier()
    ensure_space(path, sum(table.owned(f).nbytes for table in world.tables.values()
                          for f in _state_fields(table)), comm)
    sf = SharedFile(tmp, "w", comm)
    try:
        _write_state(world, sf, config, __version__)
    except OSError:  # a full disk: the last complete checkpoint stays, no half file beside it
        if sf.file is not None:
            with contextlib.suppress(OSError):  # its flush fails on the same full disk
                sf.file.close()
        if comm.rank == 0:
            tmp.unlink(missing_ok=True)
        raise
    sf.close()
    comm.barrier()
    if comm.rank == 0:
        os.replace(tmp, path)
    comm.barrier()
    return path


def _write_state(world, sf, config, version) -> None:
    """The checkpoint's attributes and datasets into the shared file `sf` (collective)."""
    comm = world.comm
    if sf.writes_metadata:
        a = sf.file.attrs
        a["format"] = FORMAT
        a["ecs_dem_version"] = version
        a["step"] = world.step
        a["time"] = world.time
        a["dt"] = world.dt
        a["ranks"] = comm.size
        a["config"] = json.dumps(config or {}, default=str)
        a["rng"] = json.dumps(world.rng.bit_generator.state, default=int)
    for name, table in world.tables.items():
        group = f"tables/{name}"
        if _distributed(world, table):
            rows = np.array(comm.allgather_object(table.n_owned), dtype=np.int64)
            sf.write_replicated(group, "rank_rows", rows)
            for fname in _state_fields(table):
                sf.write_rows(group, fname, table.owned(fname))
        else:
            for fname in _state_fields(table):
                sf.write_replicated(group, fname, table.owned(fname))
        if sf.writes_metadata:
            g = sf.file[group]
            g.attrs["kind"] = "distributed" if _distributed(world, table) else "replicated"
            g.attrs["next_gid"] = int(comm.max(table.next_gid)) if comm.size > 1 else table.next_gid
        elif comm.size > 1:
            comm.max(table.next_gid)  # keep the collective in step with rank 0
    for a, cuts in zip("xyz", world.domain.decomposition.cuts):
        sf.write_replicated("domain", f"cuts_{a}", cuts)
    ints, floats = world.domain.export_state(world.tables)
    for label, data in (("int_state", ints), ("float_state", floats)):
        sf.write_replicated("ranks", f"{label}_rows",
                            np.array(comm.allgather_object(data.size), dtype=np.int64))
        sf.write_rows("ranks", label, data)


#: what a checkpoint that h5py cannot open, or that lacks a part, raises (as InputError)
UNREADABLE = (OSError, KeyError, ValueError, TypeError)


def _unreadable(path, exc) -> InputError:
    return InputError(f"checkpoint {path} cannot be read ({type(exc).__name__}: {exc}): it is "
                      "not a complete ecs_dem checkpoint (cut short, damaged, or another kind of "
                      "file); restart from another checkpoint, or start afresh without restart")


@contextlib.contextmanager
def _opened(path):
    """The checkpoint at `path` opened read-only (any rank, no MPI); InputError if it is
    missing or unreadable."""
    import h5py

    path = Path(path)
    if not path.is_file():
        raise InputError(f"checkpoint {path} does not exist")
    try:
        f = h5py.File(path, "r")
    except UNREADABLE as exc:
        raise _unreadable(path, exc) from None
    with f:
        try:
            yield f
        except InputError:
            raise
        except UNREADABLE as exc:
            raise _unreadable(path, exc) from None


def read_config(path) -> dict:
    """The configuration saved in a checkpoint (any rank, no MPI needed)."""
    with _opened(path) as f:
        return json.loads(f.attrs["config"])


def _metadata(path) -> dict:
    """A checkpoint's attributes and table list (rank 0); InputError if unreadable."""
    with _opened(path) as f:
        a = f.attrs
        if int(a.get("format", -1)) != FORMAT:
            raise InputError(f"checkpoint {path} has format {a.get('format')}, this ecs_dem reads {FORMAT}")
        meta = {k: a[k] for k in ("step", "time", "dt", "ranks", "config", "rng")}
        meta["tables"] = {n: (g.attrs["kind"], int(g.attrs["next_gid"]), list(g))
                          for n, g in f["tables"].items()}
        for name, g in f["tables"].items():  # every rank's slice must be whole
            lengths = {k: d.shape[0] for k, d in g.items() if k != "rank_rows"}
            if "rank_rows" in g:
                lengths["sum of rank_rows"] = int(np.sum(g["rank_rows"][:]))
            if len(set(lengths.values())) > 1:
                raise InputError(f"checkpoint {path}: table '{name}' has fields of different "
                                 f"lengths {lengths}: the file is damaged; restart from another "
                                 "checkpoint")
        return meta


def restart(world, path) -> dict:
    """Load a checkpoint into a world built by the same driver; returns the saved config.

    The driver builds its world as for a fresh run (tables, systems); this
    replaces the state and continues from the saved step. Call it instead of
    ``world.setup()``. Every rank calls it.
    """
    comm = world.comm
    path = Path(path)
    if not path.is_file():
        raise InputError(f"checkpoint {path} does not exist")
    world.prepare()
    meta = None
    if comm.rank == 0:  # an unreadable file is found here, before any rank reads rows
        try:
            meta = _metadata(path)
        except InputError as exc:
            meta = {"error": str(exc)}
    meta = comm.broadcast_object(meta)
    if "error" in meta:
        raise InputError(meta["error"])
    sf = SharedFile(path, "r", comm)
    exact = int(meta["ranks"]) == comm.size
    for name, (kind, next_gid, fields) in meta["tables"].items():
        if name not in world.tables:
            raise InputError(f"checkpoint {path} has a table '{name}' that this driver does not create")
        table = world.tables[name]
        missing = set(_state_fields(table)) - set(fields)
        if missing:
            raise InputError(f"checkpoint {path}: table '{name}' lacks fields {sorted(missing)}; "
                             "restart with the driver and systems that wrote it")
        start = stop = None
        if kind == "distributed" and exact:
            counts = sf.read_rows(f"tables/{name}", "rank_rows")
            start = int(counts[:comm.rank].sum())
            stop = start + int(counts[comm.rank])
        values = {f: sf.read_rows(f"tables/{name}", f, start, stop) for f in _state_fields(table)}
        table.permute(np.empty(0, dtype=np.int64))
        n = values["gid"].shape[0]
        table.append(n, **values)
        table.next_gid = next_gid
    world.step = int(meta["step"])
    world.time = float(meta["time"])
    world.dt = float(meta["dt"])
    world.rng.bit_generator.state = json.loads(meta["rng"])
    if exact:
        world.domain.decomposition.cuts = [sf.read_rows("domain", f"cuts_{a}") for a in "xyz"]
        counts = sf.read_rows("ranks", "int_state_rows")
        start = int(counts[:comm.rank].sum())
        ints = sf.read_rows("ranks", "int_state", start, start + int(counts[comm.rank]))
        counts = sf.read_rows("ranks", "float_state_rows")
        start = int(counts[:comm.rank].sum())
        floats = sf.read_rows("ranks", "float_state", start, start + int(counts[comm.rank]))
        sf.close()
        world.domain.restore_state(world.tables, ints, floats)
    else:
        sf.close()
        world.rebuild_domain(initial=True)  # forces are the saved ones: no new force pass
    world.mark_restarted()
    return json.loads(meta["config"])


class Checkpointer(System):
    """Write a checkpoint every `every` steps (0: only on soft kill) and when a run stops on a signal."""

    stage = Stage.OUTPUT

    def __init__(self, path, every: int = 0, config: dict | None = None):
        self.path = Path(path)
        self.every = int(every) if every else 10**12  # 0: never periodically
        self.periodic = bool(every)
        self.config = config
        self.last_written = None

    def run(self, world) -> None:
        if self.periodic and world.step > 0:
            self.write(world)

    def on_stop(self, world) -> None:
        if self.last_written != world.step:
            self.write(world)

    def write(self, world) -> None:
        write_checkpoint(world, self.path, self.config)
        self.last_written = world.step


def checkpoint_step(path) -> int:
    """The step a checkpoint was written at (any rank, no MPI needed)."""
    with _opened(path) as f:
        return int(f.attrs["step"])
