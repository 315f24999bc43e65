"""XDMF sidecar so ParaView opens the HDF5 output directly.

One temporal collection "particles" (Polyvertex: one point per particle, with
every written field as a point attribute) and, when snapshots hold a
``triangles`` dataset (rows of vertex indices into that snapshot's
``position``), a temporal collection "membrane" of triangles on the same
points, with each ``triangle_<name>`` dataset as a cell attribute ``<name>``. A
snapshot subgroup ``<name>/`` with its own ``position`` and ``triangles`` (the
mesh walls' vertices and triangles) becomes a temporal collection ``<name>``
of triangles on its own points, with its point datasets as point attributes
and its ``triangle_<name>`` datasets as cell attributes; one with ``position``
and no ``triangles`` (rigid bodies' centres) a temporal collection ``<name>``
of points with its datasets as point attributes. The HDF5 file is
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


def _surface_grid(h5name: str, name: str, time: float, group: str, fields: dict) -> str:
    """A triangle grid on its own points (a snapshot's subgroup): every other dataset with one
    row per point is a point attribute, every ``triangle_<name>`` with one per triangle a
    cell attribute ``<name>``. Without ``triangles``: the points alone (Polyvertex)."""
    n = fields["position"][0][0]
    tshape, tdtype = fields.get("triangles", ((0, 3), None))
    if "triangles" in fields:
        topology = [f'<Topology TopologyType="Triangle" NumberOfElements="{tshape[0]}">',
                    _item(h5name, f"{group}/triangles", tshape, tdtype), "</Topology>"]
    else:
        topology = [f'<Topology TopologyType="Polyvertex" NumberOfElements="{n}" '
                    'NodesPerElement="1"/>']
    parts = [f'<Grid Name="{name}" GridType="Uniform">', f'<Time Value="{time!r}"/>', *topology,
             '<Geometry GeometryType="XYZ">', _item(h5name, f"{group}/position", *fields["position"]),
             "</Geometry>"]
    for key, (shape, dtype) in fields.items():
        cell = key.startswith("triangle_") and "triangles" in fields
        rows = tshape[0] if cell else n
        if key in ("position", "triangles") or not shape or shape[0] != rows:
            continue
        if len(shape) > 2 or (len(shape) == 2 and shape[1] != 3):
            continue  # ParaView attributes are scalars or 3-vectors
        kind = "Vector" if len(shape) == 2 else "Scalar"
        label = key[len("triangle_"):] if cell else key
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
                surfaces.setdefault(sub, []).append(
                    _surface_grid(h5name, f"{sub}_{step:09d}", time, f"{group}/{sub}", inner))
        if "position" not in fields:
            continue
        n = fields["position"][0][0]
        parts = [f'<Grid Name="step_{step:09d}" GridType="Uniform">', f'<Time Value="{time!r}"/>',
                 f'<Topology TopologyType="Polyvertex" NumberOfElements="{n}" NodesPerElement="1"/>',
                 '<Geometry GeometryType="XYZ">',
                 _item(h5name, f"{group}/position", *fields["position"]), "</Geometry>"]
        for name, (shape, dtype) in fields.items():
            if name in ("position", "triangles") or name.startswith("triangle_") or "/" in name:
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
