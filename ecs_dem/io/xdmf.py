"""XDMF sidecar so ParaView opens the HDF5 output directly.

One temporal collection "particles" (Polyvertex: one point per particle, with
every written field as a point attribute) and, when snapshots hold a
``triangles`` dataset (rows of vertex indices into that snapshot's
``position``), a temporal collection "membrane" of triangles on the same
points, with each ``triangle_<name>`` dataset as a cell attribute ``<name>``. A
snapshot subgroup ``<name>/`` with its own ``position`` and ``triangles`` (the
mesh walls' vertices and triangles) becomes a temporal collection ``<name>``
of triangles on its own points, with its point datasets as point attributes
and its ``triangle_<name>`` datasets as cell attributes. Line segments work
the same way: a ``lines`` dataset (rows of two point indices: liquid bridges
between particle centres) gives a temporal collection "lines" of Polyline
cells on the particles' points (``line_<name>`` cell attributes), or, in a
subgroup, a collection of lines on the subgroup's points. A subgroup with
``position`` and neither ``triangles`` nor ``lines`` is a
collection ``<name>`` of points with its datasets as point attributes (spray droplets,
rigid bodies' centres). The HDF5 file is
referred to by its base name, so the two files can be moved together. Open the ``.xdmf`` file in ParaView with the
"Xdmf3ReaderS" (or "XDMF Reader") and render points as spheres scaled by
``radius``.
"""
from __future__ import annotations

import os
from pathlib import Path
from xml.sax.saxutils import escape

_TYPES = {"f": "Float", "i": "Int", "u": "UInt", "b": "UChar"}


def _item(h5name: str, path: str, shape, dtype) -> str:
    kind = _TYPES.get(dtype.kind, "Float")
    precision = 1 if dtype.kind == "b" else dtype.itemsize
    dims = " ".join(str(d) for d in shape)
    return (f'<DataItem Dimensions="{dims}" NumberType="{kind}" Precision="{precision}" '
            f'Format="HDF">{escape(h5name)}:{escape(path)}</DataItem>')


#: element datasets: name -> (XDMF topology, nodes per element, prefix of cell attributes)
ELEMENTS = {"triangles": ("Triangle", 3, "triangle_"), "lines": ("Polyline", 2, "line_")}


def _surface_grid(h5name: str, name: str, time: float, group: str, fields: dict,
                  elements: str | None = "triangles") -> str:
    """A grid of the `elements` dataset's cells (triangles or lines; None: points) on its own
    points (a snapshot's subgroup): every other dataset with one row per point is a point
    attribute, every ``<prefix><name>`` with one per element a cell attribute ``<name>``."""
    n = fields["position"][0][0]
    if elements is None:
        topology, prefix, count = [f'<Topology TopologyType="Polyvertex" NumberOfElements="{n}" '
                                   'NodesPerElement="1"/>'], None, n
    else:
        kind, nodes, prefix = ELEMENTS[elements]
        tshape, tdtype = fields[elements]
        count = tshape[0]
        topology = [f'<Topology TopologyType="{kind}" NumberOfElements="{count}" '
                    f'NodesPerElement="{nodes}">',
                    _item(h5name, f"{group}/{elements}", tshape, tdtype), "</Topology>"]
    parts = [f'<Grid Name="{name}" GridType="Uniform">', f'<Time Value="{time!r}"/>', *topology,
             '<Geometry GeometryType="XYZ">', _item(h5name, f"{group}/position", *fields["position"]),
             "</Geometry>"]
    for key, (shape, dtype) in fields.items():
        cell = prefix is not None and key.startswith(prefix)
        rows = count if cell else n
        if key == "position" or key in ELEMENTS or not shape or shape[0] != rows:
            continue
        if any(key.startswith(p) for _, _, p in ELEMENTS.values()) and not cell:
            continue  # another kind of element's attribute
        if len(shape) > 2 or (len(shape) == 2 and shape[1] != 3):
            continue  # ParaView attributes are scalars or 3-vectors
        kind = "Vector" if len(shape) == 2 else "Scalar"
        label = key[len(prefix):] if cell else key
        parts.append(f'<Attribute Name="{escape(label)}" AttributeType="{kind}" '
                     f'Center="{"Cell" if cell else "Node"}">'
                     + _item(h5name, f"{group}/{key}", shape, dtype) + "</Attribute>")
    parts.append("</Grid>")
    return "\n".join(parts)


def write_xdmf(xdmf_path, h5_path, snapshots) -> None:
    """Write the sidecar for `snapshots`: [(step, time, group path, {field: (shape, dtype)})].

    Written to a temporary file then renamed, so a reader never sees half a file.
    """
    h5name = os.path.basename(str(h5_path))
    particle_grids, membrane_grids = [], []
    surfaces: dict[str, list[str]] = {}
    for step, time, group, fields in snapshots:
        for sub in sorted({n.split("/")[0] for n in fields if "/" in n}):
            inner = {n[len(sub) + 1:]: v for n, v in fields.items() if n.startswith(sub + "/")}
            if "position" in inner:
                elements = next((e for e in ELEMENTS if e in inner), None)
                surfaces.setdefault(sub, []).append(_surface_grid(
                    h5name, f"{sub}_{step:09d}", time, f"{group}/{sub}", inner, elements))
        if "position" not in fields:
            continue
        if "lines" in fields:
            top = {n: v for n, v in fields.items() if "/" not in n}
            surfaces.setdefault("lines", []).append(
                _surface_grid(h5name, f"lines_{step:09d}", time, group, top, "lines"))
        n = fields["position"][0][0]
        parts = [f'<Grid Name="step_{step:09d}" GridType="Uniform">', f'<Time Value="{time!r}"/>',
                 f'<Topology TopologyType="Polyvertex" NumberOfElements="{n}" NodesPerElement="1"/>',
                 '<Geometry GeometryType="XYZ">',
                 _item(h5name, f"{group}/position", *fields["position"]), "</Geometry>"]
        for name, (shape, dtype) in fields.items():
            if (name == "position" or name in ELEMENTS or "/" in name
                    or any(name.startswith(p) for _, _, p in ELEMENTS.values())):
                continue
            kind = "Vector" if len(shape) == 2 and shape[1] == 3 else "Scalar"
            if len(shape) > 2 or (len(shape) == 2 and shape[1] != 3):
                continue  # ParaView attributes are scalars or 3-vectors
            parts.append(f'<Attribute Name="{escape(name)}" AttributeType="{kind}" Center="Node">'
                         + _item(h5name, f"{group}/{name}", shape, dtype) + "</Attribute>")
        parts.append("</Grid>")
        particle_grids.append("\n".join(parts))
        if "triangles" in fields:
            tshape, tdtype = fields["triangles"]
            membrane_grids.append("\n".join([
                f'<Grid Name="membrane_{step:09d}" GridType="Uniform">', f'<Time Value="{time!r}"/>',
                f'<Topology TopologyType="Triangle" NumberOfElements="{tshape[0]}">',
                _item(h5name, f"{group}/triangles", tshape, tdtype), "</Topology>",
                '<Geometry GeometryType="XYZ">',
                _item(h5name, f"{group}/position", *fields["position"]), "</Geometry>",
                *(f'<Attribute Name="{escape(name[len("triangle_"):])}" AttributeType="Scalar" '
                  f'Center="Cell">' + _item(h5name, f"{group}/{name}", shape, dtype) + "</Attribute>"
                  for name, (shape, dtype) in fields.items()
                  if name.startswith("triangle_") and len(shape) == 1 and shape[0] == tshape[0]),
                "</Grid>"]))
    body = ['<?xml version="1.0" ?>', '<Xdmf Version="3.0">', "<Domain>",
            '<Grid Name="particles" GridType="Collection" CollectionType="Temporal">',
            *particle_grids, "</Grid>"]
    if membrane_grids:
        body += ['<Grid Name="membrane" GridType="Collection" CollectionType="Temporal">',
                 *membrane_grids, "</Grid>"]
    for sub, grids in surfaces.items():
        body += [f'<Grid Name="{escape(sub)}" GridType="Collection" CollectionType="Temporal">',
                 *grids, "</Grid>"]
    body += ["</Domain>", "</Xdmf>", ""]
    xdmf_path = Path(xdmf_path)
    tmp = xdmf_path.with_name(xdmf_path.name + ".tmp")
    try:
        tmp.write_text("\n".join(body))
    except OSError as exc:  # a full disk: the last complete sidecar stays, no half file beside it
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(tmp)) from exc
    os.replace(tmp, xdmf_path)
