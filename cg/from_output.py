"""Coarse-graining after the run: fields from the snapshots of an HDF5 output file.

The file is the drivers' output (``ecs_dem.io.hdf5_output``): per snapshot the
particles' ``gid``, ``position``, ``velocity``, ``radius`` and ``mass`` (or a
density to compute it), and, for the stress, the fabric and the boundary force, the
contact network (``SnapshotWriter(contacts=True)``, ``[output] contacts = true``):
``contacts/`` (i, j, force, branch) and ``boundary_contacts/`` (i, force,
contact_point). Everything here is collective over ``comm`` (all ranks call it)::

    steps = snapshot_steps(path)
    sums = snapshot_sums(path, step, grid, kernel, comm)       # cg.fields.Sums, every rank
    fields = coarse_grain_file(path, grid, kernel, steps, comm)  # {step: (time, fields)}
    write_fields(out_path, grid, kernel, fields, comm=comm)    # HDF5 + XDMF sidecar

Parallel reading: every rank opens the file (with h5py's ``mpio`` driver where h5py
has MPI, else on its own, read-only), reads its share of the particle rows and of the
contacts (contiguous slices, ``share``), and the positions and radii of all particles
(a contact needs both of its particles'; 32 bytes a particle). Each rank coarse-grains its
share (``cg.fields.coarse_grain``), and the sums are added over the ranks (one
allreduce): the fields are those of one rank to round-off, on every rank.

The fields file (``write_fields``; the CLI ``python -m ecs_dem.cg`` writes
``<output>_cg.h5`` beside the output) has the layout of ``cg.output`` (the on-the-fly
system's): the kernel's and grid's parameters as attributes, ``/grid/<axis>``,
``/fields/<step:09d>/<field>`` in the order ParaView reads ((z, y, x); a cylindrical grid
(z, 1, r)), and an XDMF sidecar; ``read_fields`` gives the arrays back in the grid's order.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ecs_dem.comm import SerialComm
from ecs_dem.errors import InputError

from ecs_dem.cg.fields import Sums, TimeAverage, coarse_grain, derive

#: fields that need the contact network (``contacts/``, ``boundary_contacts/``)
CONTACT_FIELDS = ("contact_stress", "stress", "boundary_force", "fabric", "coordination",
                  "pressure", "deviatoric_stress", "stress_ratio")
#: fields from the particles alone
PARTICLE_FIELDS = ("density", "momentum", "velocity", "kinetic_stress", "volume_fraction",
                   "temperature")


def share(total: int, comm) -> slice:
    """This rank's contiguous share of `total` rows (the first ranks one more)."""
    base, extra = divmod(int(total), comm.size)
    start = comm.rank * base + min(comm.rank, extra)
    return slice(start, start + base + (comm.rank < extra))


def _open(path, comm):
    import h5py

    path = str(path)
    if not os.path.isfile(path):
        raise InputError(f"coarse-graining: no output file {path}")
    try:
        if comm.size > 1 and h5py.get_config().mpi:
            return h5py.File(path, "r", driver="mpio", comm=comm.world)
        return h5py.File(path, "r")
    except OSError as exc:
        raise InputError(f"coarse-graining: {path} is not a readable HDF5 file ({exc})") from exc


def snapshot_steps(path, comm=None) -> list[int]:
    """The steps of the file's snapshots, in order."""
    comm = comm or SerialComm()
    with _open(path, comm) as f:
        if "snapshots" not in f:
            raise InputError(f"coarse-graining: {path} has no /snapshots group: is it an "
                             "ecs_dem output file (Hdf5Output)?")
        return sorted(int(k) for k in f["snapshots"])


def has_contacts(path, step: int, comm=None) -> bool:
    """Whether the snapshot at `step` carries the contact network."""
    comm = comm or SerialComm()
    with _open(path, comm) as f:
        return "contacts" in f[f"snapshots/{step:09d}"]


def _group(f, path, step):
    name = f"snapshots/{step:09d}"
    if name not in f:
        steps = sorted(int(k) for k in f["snapshots"]) if "snapshots" in f else []
        raise InputError(f"coarse-graining: {path} has no snapshot at step {step} (it has "
                         f"{len(steps)}: {steps[:3]}{' ...' if len(steps) > 3 else ''} "
                         f"{steps[-1:] if len(steps) > 3 else ''})")
    return f[name]


def _require(g, names, path, step, fix):
    missing = [n for n in names if n not in g]
    if missing:
        raise InputError(f"coarse-graining: the snapshot at step {step} of {path} has no "
                         f"{', '.join(repr(m) for m in missing)} dataset: {fix}")


def snapshot_sums(path, step: int, grid, kernel, comm=None, contacts: bool = True,
                  density: float | None = None) -> Sums:
    """The coarse-graining sums (``cg.fields.Sums``) of the snapshot at `step`, on every
    rank (collective; module docstring). `contacts`: add the contact network (an error if
    the snapshot has none); `density` (kg/m^3): the particles' mass from their radius,
    for a file written without ``mass``."""
    comm = comm or SerialComm()
    with _open(path, comm) as f:
        g = _group(f, path, step)
        _require(g, ("gid", "position", "velocity", "radius"), path, step,
                 "write snapshots with SnapshotWriter(fields=(\"gid\", \"position\", "
                 "\"velocity\", \"radius\", \"mass\", ...))")
        if "mass" not in g and density is None:
            raise InputError(f"coarse-graining: the snapshot at step {step} of {path} has no "
                             "'mass' dataset: write it (SnapshotWriter fields=(..., \"mass\")) "
                             "or give the particles' density (--density, density=)")
        total = g["gid"].shape[0]
        mine = share(total, comm)
        gid = g["gid"][...]
        position = g["position"][...]
        radius = g["radius"][...]
        velocity = g["velocity"][mine]
        mass = (g["mass"][mine] if "mass" in g
                else density * 4.0 / 3.0 * math.pi * radius[mine] ** 3)
        pairs = boundary = None
        if contacts:
            if "contacts" not in g:
                raise InputError(
                    f"coarse-graining: the snapshot at step {step} of {path} has no contact "
                    "network, which the stress, the fabric and the boundary force need: write "
                    "it (SnapshotWriter(contacts=True), [output] contacts = true in a driver's "
                    f"config), or ask only for {', '.join(PARTICLE_FIELDS)}")
            c = g["contacts"]
            mc = share(c["i"].shape[0], comm)
            pairs = (c["i"][mc], c["j"][mc], c["force"][mc], c["branch"][mc])
            if "boundary_contacts" in g:
                b = g["boundary_contacts"]
                mb = share(b["i"].shape[0], comm)
                boundary = (b["i"][mb], b["force"][mb], b["contact_point"][mb])
    order = np.argsort(gid, kind="stable")
    sorted_gid = gid[order]

    def rows(gids):
        k = np.searchsorted(sorted_gid, gids)
        k = np.minimum(k, max(sorted_gid.size - 1, 0))
        if gids.size and np.any(sorted_gid[k] != gids):
            bad = gids[sorted_gid[k] != gids][:5].tolist()
            raise InputError(f"coarse-graining: the snapshot at step {step} of {path} lists "
                             f"contacts of particles {bad} it does not hold")
        return order[k]

    sums = coarse_grain(grid, kernel, position[mine], velocity, mass, radius[mine])
    if pairs is not None:
        none = np.zeros((total, 3))
        zero = np.zeros(total)
        extra = coarse_grain(grid, kernel, position, none, zero, radius, n=0,
                             pairs=(rows(pairs[0]), rows(pairs[1]), pairs[2], pairs[3]),
                             boundary=None if boundary is None else
                             (rows(boundary[0]), boundary[1], boundary[2]))
        sums = sums + extra
        sums.count = 1
    if comm.size > 1:
        sums = Sums.from_flat(grid, comm.sum(sums.flat()))
    return sums


def snapshot_time(path, step: int, comm=None) -> float:
    comm = comm or SerialComm()
    with _open(path, comm) as f:
        return float(_group(f, path, step).attrs["time"])


def coarse_grain_file(path, grid, kernel, steps=None, comm=None, fields=None,
                      average: bool = False, density: float | None = None) -> dict:
    """{step: (time, {name: field})} of the snapshots at `steps` (all by default), each
    field of `fields` (all that the file allows by default: the contact fields only where
    the snapshots carry contacts); with `average`, one entry: the time average over the
    steps (``cg.fields.TimeAverage``), under the last step (collective)."""
    comm = comm or SerialComm()
    available = snapshot_steps(path, comm)
    steps = available if steps is None else [int(s) for s in steps]
    if not steps:
        raise InputError(f"coarse-graining: {path} has no snapshot to coarse-grain")
    wanted = _wanted_fields(fields)
    need_contacts = any(n in CONTACT_FIELDS for n in wanted) if fields is not None else \
        all(has_contacts(path, s, comm) for s in steps)
    if fields is None and not need_contacts:
        wanted = list(PARTICLE_FIELDS)
    out = {}
    window = TimeAverage(grid) if average else None
    for step in steps:
        sums = snapshot_sums(path, step, grid, kernel, comm, need_contacts, density)
        time = snapshot_time(path, step, comm)
        if window is not None:
            window.add(sums)
            continue
        derived = derive(sums)
        out[step] = (time, {n: derived[n] for n in wanted})
    if window is not None:
        derived = derive(window.mean())
        out[steps[-1]] = (snapshot_time(path, steps[-1], comm),
                          {n: derived[n] for n in wanted})
        out[steps[-1]][1]["_window"] = (steps[0], steps[-1], window.count)
    return out


def _wanted_fields(fields) -> list[str]:
    every = PARTICLE_FIELDS + CONTACT_FIELDS
    if fields is None:
        return list(every)
    if isinstance(fields, str):
        fields = [f.strip() for f in fields.split(",") if f.strip()]
    unknown = [f for f in fields if f not in every]
    if unknown or not fields:
        raise InputError(f"coarse-graining: unknown field(s) {unknown or fields}; choose from "
                         f"{', '.join(every)}")
    return list(dict.fromkeys(fields))


# ------------------------------------------------------------------------ the fields file
def write_fields(path, grid, kernel, results: dict, source: str = "", comm=None) -> Path:
    """Write `results` ({step: (time, fields)}, ``coarse_grain_file``) to the fields file at
    `path` and its XDMF sidecar (``cg.output.FieldFile``: the on-the-fly system's layout);
    rank 0 writes (the fields are the same on every rank). A time average's entry also gets
    the attributes ``steps`` (first and last) and ``samples``. Returns the path."""
    import h5py

    from ecs_dem.cg.output import FieldFile

    comm = comm or SerialComm()
    path = Path(path)
    if comm.rank == 0:
        out = FieldFile(path, grid, kernel, {"source": str(source)})
        for step, (time, fields) in sorted(results.items()):
            window = fields.get("_window")
            out.write(step, time, {k: v for k, v in fields.items() if k != "_window"},
                      samples=window[2] if window else 1)
            if window:
                with h5py.File(path, "a") as f:
                    f[f"fields/{step:09d}"].attrs["steps"] = np.array(window[:2])
    comm.barrier()
    return path


def read_fields(path) -> dict:
    """{step: (time, {name: array})} of a fields file (``write_fields``, the on-the-fly
    system's), each array back in the grid's order: ``grid.shape`` (x, y, z; or r, z), then 3
    components for a vector, 3 x 3 for a tensor."""
    import h5py

    out = {}
    with h5py.File(path, "r") as f:
        cylindrical = "grid/r" in f
        for key in sorted(f["fields"]):
            g = f["fields"][key]
            fields = {}
            for name in g:
                a = g[name][...]
                if cylindrical:  # (nz, 1, nr, c) -> (nr, nz, c)
                    a = np.moveaxis(a[:, 0], 0, 1)
                else:            # (nz, ny, nx, c) -> (nx, ny, nz, c)
                    a = np.transpose(a, (2, 1, 0, *range(3, a.ndim)))
                cells = 2 if cylindrical else 3
                if a.ndim > cells and a.shape[-1] == 9:
                    a = a.reshape(a.shape[:cells] + (3, 3))
                fields[name] = a
            out[int(key)] = (float(g.attrs["time"]), fields)
    return out


__all__ = ["CONTACT_FIELDS", "PARTICLE_FIELDS", "coarse_grain_file", "has_contacts",
           "read_fields", "share", "snapshot_steps", "snapshot_sums", "write_fields"]
