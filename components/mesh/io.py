"""Triangle meshes from and to files (through meshio), and membrane surfaces from ecs_dem's HDF5 output.

``read_mesh`` reads any surface format meshio reads (STL ASCII and binary,
OBJ, PLY, OFF, Gmsh .msh, VTK/VTU, Abaqus .inp, ...) into a
:class:`~ecs_dem.components.mesh.Mesh`, unvalidated: pass it to
``mesh_validation.validate_mesh`` before building a membrane from it.
Coordinates are taken as metres; scale with ``Mesh.scaled`` if the file uses
millimetres. ``write_mesh`` writes STL (binary by default), OBJ and whatever
meshio writes.

``surface_from_snapshot`` and ``surface_from_checkpoint`` rebuild the current
membrane surface from a run's output (to export it as STL or OBJ):

    snapshot file     /snapshots/<step:09d>/position (N, 3), gid (N,)  rows in rank order
                      /snapshots/<step:09d>/triangles (M, 3)  rows of that snapshot
                      /snapshots/<step:09d>/triangle_membrane (M,)  membrane id per triangle
    checkpoint file   /tables/particles/gid (N,), position (N, 3)
                      /tables/membrane_triangles/vertices (M, 3)  particle gids
                      /tables/membrane_triangles/membrane (M,)  membrane id per triangle

Both return only the vertices the triangles use, ordered by particle gid (so
every snapshot of a run numbers the surface's vertices alike).
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import h5py
import meshio
import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.components.mesh.surface import Mesh

SUPPORTED = ("STL (.stl, ASCII or binary), Wavefront OBJ (.obj), PLY (.ply), OFF (.off), "
             "Gmsh (.msh), VTK (.vtk), VTU (.vtu), Abaqus (.inp) and the other formats meshio "
             "reads (file_format names: " + ", ".join(sorted({f for fs in meshio.extension_to_filetypes.values()
                                                             for f in fs})) + ")")
# cells that carry no surface (Gmsh files list their geometry's points and curves)
SKIPPED_CELLS = ("vertex", "line", "line3", "line4")
VOLUME_CELLS = ("tetra", "hexahedron", "wedge", "pyramid", "polyhedron")
# meshio writers that have both a binary and a text encoding (the others ignore `binary`)
BINARY_WRITERS = {"stl", "ply", "vtk", "vtk42", "vtk51", "vtu", "gmsh", "gmsh22", "ansys",
                  "flac3d", "mdpa"}


def _file_format(path: Path, file_format: str | None, action: str) -> str:
    if file_format:
        return file_format
    suffixes = [s.lower() for s in path.suffixes]
    for k in range(len(suffixes)):                    # longest match first: .vol.gz before .gz
        formats = meshio.extension_to_filetypes.get("".join(suffixes[k:]))
        if formats:
            # .msh is Gmsh for our users, ANSYS only on request
            return "gmsh" if "gmsh" in formats else formats[0]
    raise InputError(f"cannot tell the mesh format of {path} from its extension "
                     f"{path.suffix or '(none)'!r} to {action} it: use one of the extensions of "
                     f"{SUPPORTED}, or pass file_format=")


def read_mesh(path, file_format: str | None = None) -> Mesh:
    """The triangles of a mesh file, vertices in the file's units taken as metres (not validated).

    file_format: a meshio format name (e.g. "stl", "obj", "gmsh", "vtu"); by
    default deduced from the extension. Points and lines (e.g. a Gmsh file's
    geometry curves) are skipped; any other non-triangle cell (quads,
    polygons, second-order triangles, volume cells) is an InputError naming
    the cell type and how to get triangles. 2D points get z = 0.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"mesh file {path} does not exist (supported formats: {SUPPORTED})")
    if not path.is_file():
        raise InputError(f"mesh file {path} is not a file (supported formats: {SUPPORTED})")
    fmt = _file_format(path, file_format, "read")
    # meshio reports a failed reader on stdout/stderr and then calls sys.exit: keep
    # its text for our message and turn the exit into an InputError. (Its binary-STL
    # test multiplies the first bytes of any file as a count: numpy overflow warnings.)
    chatter = io.StringIO()
    try:
        with contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter), \
                np.errstate(all="ignore"):
            raw = meshio.read(path, file_format=fmt)
    except (Exception, SystemExit) as exc:
        reason = " ".join(chatter.getvalue().replace("Error:", "").split()) \
            or f"{type(exc).__name__}: {exc}"
        raise InputError(f"cannot read mesh file {path} as {fmt}: {reason}. Check that the file is "
                         f"complete and of that format (supported formats: {SUPPORTED}; pass "
                         "file_format= if the extension does not say)") from None
    return _triangles_of(raw, path)


def _triangles_of(raw, path: Path) -> Mesh:
    blocks, other = [], {}
    for block in raw.cells:
        if block.type == "triangle":
            blocks.append(np.asarray(block.data, dtype=np.int64))
        elif block.type not in SKIPPED_CELLS:
            other[block.type] = other.get(block.type, 0) + len(block.data)
    if other:
        kind, count = next(iter(other.items()))
        if kind.startswith(VOLUME_CELLS):
            fix = ("this is a volume mesh: extract its boundary surface and triangulate it "
                   "(e.g. ParaView: Extract Surface, then Triangulate)")
        elif kind.startswith("triangle"):
            fix = "export first-order (3-node) triangles instead (Gmsh: Mesh.ElementOrder = 1)"
        else:
            fix = ("triangulate the surface first (e.g. ParaView: Filters > Triangulate; Blender: "
                   "Triangulate modifier; Gmsh: do not recombine into quads)")
        kinds = ", ".join(f"{n} {k}" for k, n in other.items())
        raise InputError(f"mesh file {path} holds {kinds} cells besides triangles; a membrane is "
                         f"a triangle mesh: {fix}")
    if not blocks or sum(len(b) for b in blocks) == 0:
        raise InputError(f"mesh file {path} holds no triangles: a membrane needs a triangulated "
                         "surface")
    points = np.asarray(raw.points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] not in (2, 3):
        raise InputError(f"mesh file {path} has points of shape {points.shape}; expected (n, 2) "
                         "or (n, 3)")
    if points.shape[1] == 2:
        points = np.column_stack([points, np.zeros(len(points))])
    return Mesh(points, np.concatenate(blocks))


def write_mesh(path, mesh: Mesh, file_format: str | None = None, binary: bool = True) -> None:
    """Write the mesh's triangles to `path` (vertices in metres); parent directories are created.

    file_format: a meshio format name, by default from the extension (.stl,
    .obj, .ply, .vtu, .msh, ...). binary: STL, PLY, VTK, VTU and Gmsh in their
    binary encoding (STL stores float32 coordinates); False writes text.
    Formats with one encoding (OBJ, OFF) ignore it.
    """
    path = Path(path)
    fmt = _file_format(path, file_format, "write")
    options = {"binary": bool(binary)} if fmt in BINARY_WRITERS else {}
    out = meshio.Mesh(mesh.vertices, [("triangle", mesh.triangles)])
    chatter = io.StringIO()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
            meshio.write(path, out, file_format=fmt, **options)
    except (Exception, SystemExit) as exc:
        reason = " ".join(chatter.getvalue().split()) or f"{type(exc).__name__}: {exc}"
        raise InputError(f"cannot write mesh file {path} as {fmt}: {reason}") from None


# ---------------------------------------------------------------------------- HDF5 output

def _open_h5(h5_path) -> h5py.File:
    path = Path(h5_path)
    if not path.is_file():
        raise InputError(f"HDF5 file {path} does not exist")
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise InputError(f"cannot open {path} as an HDF5 file ({exc}): give an ecs_dem snapshot "
                         "or checkpoint file") from None


def _dataset(group, name: str, path, what: str) -> np.ndarray:
    if name not in group:
        raise InputError(f"{path} has no {group.name.rstrip('/')}/{name}: {what}")
    return group[name][()]


def _surface(position, gid, rows, membrane_of, membrane, where: str) -> Mesh:
    """The triangles (rows into position) of one membrane (None: all), vertices compacted in gid order."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
    if membrane is not None:
        if membrane_of is None:
            raise InputError(f"{where} gives no membrane id per triangle, so membrane={membrane} "
                             "cannot be chosen: leave the membrane unset to take all triangles")
        ids = np.unique(membrane_of)
        rows = rows[np.asarray(membrane_of) == membrane]
        if len(rows) == 0:
            raise InputError(f"{where} has no triangles of membrane {membrane}; its membranes are "
                             f"{ids.tolist()}")
    if len(rows) == 0:
        raise InputError(f"{where} holds no membrane triangles")
    bad = np.flatnonzero(((rows < 0) | (rows >= len(position))).any(axis=1))
    if len(bad):
        raise InputError(f"{where}: triangle {bad[0]} refers to particle rows {rows[bad[0]].tolist()}, "
                         f"outside 0..{len(position) - 1} (a vertex missing from the file): the "
                         "file is incomplete; use another step or checkpoint")
    used = np.unique(rows)
    used = used[np.argsort(gid[used], kind="stable")]          # gid order
    new_index = np.empty(len(position), dtype=np.int64)
    new_index[used] = np.arange(len(used))
    return Mesh(np.asarray(position, dtype=np.float64)[used], new_index[rows])


def snapshot_steps(h5_path) -> list[int]:
    """The steps of the snapshots in an ecs_dem output file, ascending."""
    with _open_h5(h5_path) as f:
        return _steps(f, h5_path)


def _steps(f, path) -> list[int]:
    if "snapshots" not in f:
        raise InputError(f"{path} has no /snapshots group: it is not an ecs_dem snapshot file "
                         "(for a checkpoint use surface_from_checkpoint)")
    return sorted(int(name) for name in f["snapshots"] if name.isdigit())


def surface_from_snapshot(h5_path, step: int | None = None, membrane: int | None = None) -> Mesh:
    """The membrane surface at `step` (None: the last snapshot) of an ecs_dem output file.

    membrane: a membrane id (/snapshots/<step>/triangle_membrane); None: every
    membrane. Vertices [m] are the particles the triangles use, in gid order.
    """
    with _open_h5(h5_path) as f:
        steps = _steps(f, h5_path)
        if not steps:
            raise InputError(f"{h5_path} holds no snapshots yet")
        if step is None:
            step = steps[-1]
        if int(step) not in steps:
            shown = steps if len(steps) <= 10 else steps[:5] + ["..."] + steps[-5:]
            raise InputError(f"{h5_path} has no snapshot at step {step}; its snapshots are at "
                             f"steps {', '.join(map(str, shown))}")
        snap = f["snapshots"][f"{int(step):09d}"]
        what = "the snapshot holds no membrane (written without triangle connectivity)"
        position = _dataset(snap, "position", h5_path, what)
        gid = _dataset(snap, "gid", h5_path, what)
        rows = _dataset(snap, "triangles", h5_path, what)
        membrane_of = snap["triangle_membrane"][()] if "triangle_membrane" in snap else None
    return _surface(position, gid, rows, membrane_of, membrane, f"{h5_path} step {int(step)}")


def surface_from_checkpoint(h5_path, membrane: int | None = None) -> Mesh:
    """The membrane surface stored in an ecs_dem checkpoint (membrane None: every membrane)."""
    with _open_h5(h5_path) as f:
        if "tables" not in f:
            raise InputError(f"{h5_path} has no /tables group: it is not an ecs_dem checkpoint "
                             "(for an output file use surface_from_snapshot)")
        tables = f["tables"]
        if "particles" not in tables:
            raise InputError(f"{h5_path} has no /tables/particles: the checkpoint is incomplete")
        if "membrane_triangles" not in tables:
            raise InputError(f"{h5_path} has no /tables/membrane_triangles: the run had no membrane")
        particles, triangles = tables["particles"], tables["membrane_triangles"]
        gid = _dataset(particles, "gid", h5_path, "the checkpoint is incomplete")
        position = _dataset(particles, "position", h5_path, "the checkpoint is incomplete")
        vertices = _dataset(triangles, "vertices", h5_path, "the checkpoint is incomplete")
        membrane_of = triangles["membrane"][()] if "membrane" in triangles else None
    vertices = np.asarray(vertices, dtype=np.int64).reshape(-1, 3)
    order = np.argsort(gid, kind="stable")
    slot = np.clip(np.searchsorted(gid[order], vertices), 0, len(gid) - 1)
    rows = order[slot]
    missing = gid[rows] != vertices
    if missing.any():
        k = int(np.flatnonzero(missing.any(axis=1))[0])
        raise InputError(f"{h5_path}: membrane triangle {k} uses particle gid "
                         f"{int(vertices[missing][0])}, which /tables/particles does not hold: "
                         "the checkpoint is inconsistent")
    return _surface(position, gid, rows, membrane_of, membrane, str(h5_path))


__all__ = ["read_mesh", "write_mesh", "surface_from_snapshot", "surface_from_checkpoint",
           "snapshot_steps"]
