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
``<output>_cg.h5`` beside the output)::

    /                      attrs: source (the output file), kernel and grid (their
                           parameters as attributes ``kernel_*``, ``grid_*``)
    /grid/<axis>           the cell centres along each axis (x, y, z; or r, z)
    /fields/<step:09d>/    attrs: step, time (a time average: the window's first and last
                           step and time, ``steps``)
        <field>            arrays indexed (z, y, x) for a Cartesian grid, (z, r) for a
                           cylindrical one (the order ParaView reads), then the
                           components: 3 for a vector, 9 (row-major 3 x 3) for a tensor,
                           in the grid's components (x, y, z or r, theta, z)

and ``<fields file>.xdmf``, a structured grid per snapshot that ParaView opens beside
the particles' XDMF.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

from ecs_dem.comm import SerialComm
from ecs_dem.errors import InputError

from ecs_dem.cg.fields import Sums, TimeAverage, coarse_grain, derive
from ecs_dem.cg.grid import CartesianGrid, CylindricalGrid

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
def _file_order(grid, value: np.ndarray) -> np.ndarray:
    """A field in the file's order (module docstring): grid axes reversed, components
    flattened."""
    nd = len(grid.shape)
    comps = value.shape[nd:]
    axes = tuple(range(nd))[::-1] + tuple(range(nd, value.ndim))
    out = np.ascontiguousarray(np.transpose(value, axes))
    return out.reshape(out.shape[:nd] + ((int(np.prod(comps)),) if comps else ()))


def _grid_axes(grid) -> dict:
    if isinstance(grid, CylindricalGrid):
        return {"r": grid.r, "z": grid.z}
    if isinstance(grid, CartesianGrid):
        return dict(zip("xyz", grid.axes))
    raise InputError(f"coarse-graining: cannot write fields of a {type(grid).__name__} to a "
                     "structured grid file; use a CartesianGrid or a CylindricalGrid")


def write_fields(path, grid, kernel, results: dict, source: str = "", comm=None) -> Path:
    """Write `results` ({step: (time, fields)}, ``coarse_grain_file``) to the fields file at
    `path` and its XDMF sidecar (module docstring); rank 0 writes (the fields are the same on
    every rank). Returns the path."""
    import h5py

    comm = comm or SerialComm()
    path = Path(path)
    if comm.rank == 0:
        axes = _grid_axes(grid)
        with h5py.File(path, "w") as f:
            f.attrs["source"] = str(source)
            for k, v in kernel.describe().items():
                f.attrs[f"kernel_{k}"] = v
            for k, v in grid.describe().items():
                f.attrs[f"grid_{k}"] = v
            for name, values in axes.items():
                f[f"grid/{name}"] = values
            for step, (time, fields) in sorted(results.items()):
                g = f.create_group(f"fields/{step:09d}")
                g.attrs["step"], g.attrs["time"] = step, time
                for name, value in fields.items():
                    if name == "_window":
                        g.attrs["steps"] = np.array(value[:2])
                        g.attrs["snapshots"] = value[2]
                        continue
                    g[name] = _file_order(grid, np.asarray(value))
        _write_xdmf(path, grid, results)
    comm.barrier()
    return path


def _write_xdmf(path: Path, grid, results: dict) -> None:
    h5name = path.name
    if isinstance(grid, CylindricalGrid):  # (z, r): ParaView's x is r, its y is z
        dims = (grid.shape[1], grid.shape[0])
        origin = (grid.z[0], grid.r[0])
        spacing = (grid.spacing[1], grid.spacing[0])
        topo, geo = "2DCoRectMesh", "ORIGIN_DXDY"
    else:
        dims = tuple(grid.shape[::-1])
        origin = tuple(grid.axes[a][0] for a in (2, 1, 0))
        spacing = tuple(float(s) for s in grid.spacing[::-1])
        topo, geo = "3DCoRectMesh", "ORIGIN_DXDYDZ"
    nd = len(dims)
    text = " ".join
    grids = []
    for step, (time, fields) in sorted(results.items()):
        parts = [f'<Grid Name="fields_{step:09d}" GridType="Uniform">',
                 f'<Time Value="{time!r}"/>',
                 f'<Topology TopologyType="{topo}" Dimensions="{text(str(d) for d in dims)}"/>',
                 f'<Geometry GeometryType="{geo}">',
                 f'<DataItem Format="XML" Dimensions="{nd}">{text(repr(float(o)) for o in origin)}'
                 "</DataItem>",
                 f'<DataItem Format="XML" Dimensions="{nd}">'
                 f"{text(repr(float(s)) for s in spacing)}</DataItem>", "</Geometry>"]
        for name, value in fields.items():
            if name == "_window":
                continue
            comps = int(np.prod(np.asarray(value).shape[len(grid.shape):]))
            kind = {1: "Scalar", 3: "Vector", 9: "Tensor"}[comps]
            shape = dims + ((comps,) if comps > 1 else ())
            parts.append(
                f'<Attribute Name="{escape(name)}" AttributeType="{kind}" Center="Node">'
                f'<DataItem Format="HDF" NumberType="Float" Precision="8" '
                f'Dimensions="{text(str(d) for d in shape)}">'
                f"{escape(h5name)}:/fields/{step:09d}/{escape(name)}</DataItem></Attribute>")
        parts.append("</Grid>")
        grids.append("\n".join(parts))
    body = ['<?xml version="1.0" ?>', '<Xdmf Version="3.0">', "<Domain>",
            '<Grid Name="fields" GridType="Collection" CollectionType="Temporal">', *grids,
            "</Grid>", "</Domain>", "</Xdmf>", ""]
    xdmf = path.with_suffix(".xdmf")
    tmp = xdmf.with_name(xdmf.name + ".tmp")
    tmp.write_text("\n".join(body))
    os.replace(tmp, xdmf)


def read_fields(path) -> dict:
    """{step: (time, {name: array})} of a fields file, each array back in the grid's order
    (cells first: ``grid.shape``, then 3 or 3 x 3 components)."""
    import h5py

    out = {}
    with h5py.File(path, "r") as f:
        names = ("r", "z") if "grid/r" in f else ("x", "y", "z")
        nd = len(names)
        for key in sorted(f["fields"]):
            g = f["fields"][key]
            fields = {}
            for name in g:
                a = g[name][...]
                comps = a.shape[nd:]
                a = np.transpose(a, tuple(range(nd))[::-1] + tuple(range(nd, a.ndim)))
                if comps == (9,):
                    a = a.reshape(a.shape[:nd] + (3, 3))
                fields[name] = a
            out[int(key)] = (float(g.attrs["time"]), fields)
    return out


__all__ = ["CONTACT_FIELDS", "PARTICLE_FIELDS", "coarse_grain_file", "has_contacts",
           "read_fields", "share", "snapshot_steps", "snapshot_sums", "write_fields"]
