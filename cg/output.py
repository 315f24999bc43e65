"""Coarse-grained fields on a structured grid: an HDF5 file and its XDMF sidecar.

Layout of the file (one writer: rank 0, after the fields were summed over ranks)::

    /                         attrs: the kernel (kernel, width, support, scale) and the
                              grid (grid, its corners or axis, cells, averaged directions)
    /grid/x, /grid/y, /grid/z  point coordinates along each direction (m); a cylindrical
                              grid has /grid/r and /grid/z
    /fields/<step:09d>/       attrs: step, time, samples (snapshots averaged into it)
        <field>               one dataset per field of ``cg.fields.derive``, in the
                              order XDMF and VTK use: (nz, ny, nx) for a scalar, with a
                              last axis of 3 for a vector and 9 for a tensor (row-major
                              xx, xy, xz, yx, ...). A cylindrical grid is stored as
                              (nz, 1, nr): the r-z half plane through the axis at
                              theta = 0, components (r, theta, z).

The XDMF file (same name, ``.xdmf``) is a temporal collection of 3D structured
grids (``3DCoRectMesh``) on the grid's points, every field a node attribute: open it
in ParaView next to the particles' ``.xdmf``. An averaged direction has one point, at
the middle of its extent.
"""
from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

import h5py
import numpy as np

from ecs_dem.errors import InputError


def xdmf_layout(grid) -> tuple[tuple[int, int, int], np.ndarray, np.ndarray]:
    """(dims (nz, ny, nx), origin (z, y, x), spacing (z, y, x)) of the grid's points."""
    if grid.kind == "cylindrical":
        dr, dz = grid.spacing
        return ((grid.shape[1], 1, grid.shape[0]),
                np.array([grid.z[0], grid.axis_point[1], grid.axis_point[0] + grid.r[0]]),
                np.array([dz, 1.0, dr]))
    if grid.kind != "cartesian":
        raise InputError(f"coarse-graining output: a {grid.kind} grid has no structured "
                         "layout; write its fields yourself (cg.fields.derive)")
    first = np.array([axis[0] for axis in grid.axes])
    spacing = np.where(grid.resolved, grid.spacing, 1.0)
    return tuple(int(n) for n in grid.shape[::-1]), first[::-1], spacing[::-1]


def stored(grid, values: np.ndarray) -> np.ndarray:
    """A field of ``derive`` (grid.shape + components) in the file's order (module
    docstring)."""
    comps = values.shape[len(grid.shape):]
    flat = values.reshape(grid.shape + (int(np.prod(comps)) if comps else 1,))
    if grid.kind == "cylindrical":  # (nr, nz, c) -> (nz, 1, nr, c)
        out = np.transpose(flat, (1, 0, 2))[:, None, :, :]
    else:                           # (nx, ny, nz, c) -> (nz, ny, nx, c)
        out = np.transpose(flat, (2, 1, 0, 3))
    return np.ascontiguousarray(out if comps else out[..., 0])


class FieldFile:
    """Writes snapshots of fields to `path` (HDF5) and `path`.xdmf (module docstring).

    Not collective: one rank writes (the on-the-fly system's rank 0)."""

    def __init__(self, path, grid, kernel, attributes: dict | None = None):
        self.path = Path(path)
        self.xdmf_path = self.path.with_suffix(".xdmf")
        self.grid = grid
        self.records: list[tuple[int, float, dict]] = []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with h5py.File(self.path, "w") as f:
            for key, value in {**kernel.describe(), **grid.describe(),
                               **(attributes or {})}.items():
                f.attrs[key] = value
            g = f.create_group("grid")
            names = ("r", "z") if grid.kind == "cylindrical" else ("x", "y", "z")
            for name, axis in zip(names, grid.axes):
                g.create_dataset(name, data=axis)
            f.create_group("fields")

    def write(self, step: int, time: float, fields: dict, samples: int = 1) -> None:
        name = f"{step:09d}"
        shapes = {}
        with h5py.File(self.path, "a") as f:
            g = f["fields"].require_group(name)
            g.attrs["step"] = step
            g.attrs["time"] = time
            g.attrs["samples"] = samples
            for key, values in fields.items():
                data = stored(self.grid, values)
                if key in g:
                    del g[key]
                g.create_dataset(key, data=data)
                shapes[key] = data.shape
        self.records.append((step, time, shapes))
        self.write_xdmf()

    def write_xdmf(self) -> None:
        dims, origin, spacing = xdmf_layout(self.grid)
        h5 = escape(self.path.name)
        d = " ".join(str(n) for n in dims)
        lines = ['<?xml version="1.0" ?>', '<Xdmf Version="3.0">', "<Domain>",
                 '<Grid Name="fields" GridType="Collection" CollectionType="Temporal">']
        for step, time, shapes in self.records:
            lines += [f'<Grid Name="cg_{step:09d}" GridType="Uniform">',
                      f'<Time Value="{time!r}"/>',
                      f'<Topology TopologyType="3DCoRectMesh" Dimensions="{d}"/>',
                      '<Geometry GeometryType="ORIGIN_DXDYDZ">',
                      f'<DataItem Dimensions="3" NumberType="Float" Precision="8" '
                      f'Format="XML">{" ".join(repr(float(v)) for v in origin)}</DataItem>',
                      f'<DataItem Dimensions="3" NumberType="Float" Precision="8" '
                      f'Format="XML">{" ".join(repr(float(v)) for v in spacing)}</DataItem>',
                      "</Geometry>"]
            for key, shape in shapes.items():
                kind = {3: "Scalar", 4: "Vector" if shape[-1] == 3 else "Tensor"}[len(shape)]
                dims_item = " ".join(str(n) for n in shape)
                lines += [f'<Attribute Name="{escape(key)}" AttributeType="{kind}" '
                          'Center="Node">',
                          f'<DataItem Dimensions="{dims_item}" NumberType="Float" '
                          f'Precision="8" Format="HDF">{h5}:/fields/{step:09d}/{escape(key)}'
                          "</DataItem>", "</Attribute>"]
            lines.append("</Grid>")
        lines += ["</Grid>", "</Domain>", "</Xdmf>", ""]
        tmp = self.xdmf_path.with_name(self.xdmf_path.name + ".tmp")
        tmp.write_text("\n".join(lines))
        tmp.replace(self.xdmf_path)


__all__ = ["FieldFile", "stored", "xdmf_layout"]
