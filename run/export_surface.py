"""Export a membrane surface from an ecs_dem output or checkpoint file to STL, OBJ, or any meshio format.

    python run/export_surface.py output/triaxial.h5 --out surface.stl                # last snapshot
    python run/export_surface.py output/triaxial.h5 --step 25000 --membrane 0 --out m0.obj
    python run/export_surface.py output/triaxial.checkpoint.h5 --out surface.stl     # checkpoint
    python run/export_surface.py output/triaxial.h5 --out surface.stl --ascii         # STL as text

The file kind is told by its groups: /snapshots (output) or /tables
(checkpoint). The format follows --out's extension (or --format); STL is
binary unless --ascii. Coordinates are written in metres.

From Python, ``export_arrays(vertices, triangles, out)`` writes any surface held in
arrays (a worn mesh wall, say) the same way.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import h5py
import numpy as np

from ecs_dem import InputError
from ecs_dem.components.mesh import Mesh
from ecs_dem.components.mesh.io import surface_from_checkpoint, surface_from_snapshot, write_mesh


def export_arrays(vertices, triangles, out, *, file_format: str | None = None,
                  binary: bool = True) -> Mesh:
    """Write the surface of `vertices` (n, 3) m and `triangles` (m, 3) vertex indices to `out`
    (STL, OBJ or any meshio format, as the command line does) and return it as a Mesh.

    For surfaces held in arrays rather than in a run's file: a mesh wall after
    ``systems.mesh_wall.wear`` moved its vertices, a generated mesh. Vertices no triangle
    uses are written too (STL keeps only the triangles)."""
    mesh = Mesh(vertices, triangles)
    if not np.all(np.isfinite(mesh.vertices)):
        bad = int(np.flatnonzero(~np.isfinite(mesh.vertices).all(axis=1))[0])
        raise InputError(f"export: vertex {bad} has a non-finite position {mesh.vertices[bad]}")
    t = mesh.triangles
    if t.size and (t.min() < 0 or t.max() >= len(mesh.vertices)):
        raise InputError(f"export: triangle vertex indices must lie in [0, {len(mesh.vertices)}) "
                         f"(the rows of vertices), got [{t.min()}, {t.max()}]")
    write_mesh(out, mesh, file_format=file_format, binary=binary)
    return mesh


def _step(text: str):
    if text == "last":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--step takes a step number or 'last', got {text!r}") from None


def _kind(path: str) -> str:
    if Path(path).is_dir():
        raise InputError(f"{path} is a directory: give an ecs_dem output or checkpoint file in it")
    try:
        with h5py.File(path, "r") as f:
            groups = set(f)
    except FileNotFoundError:
        raise InputError(f"{path} does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot open {path} as an HDF5 file ({exc}): give an ecs_dem output "
                         "or checkpoint file") from None
    if "snapshots" in groups:
        return "snapshot"
    if "tables" in groups:
        return "checkpoint"
    raise InputError(f"{path} has neither /snapshots (an ecs_dem output file) nor /tables (a "
                     f"checkpoint); its groups are {sorted(groups) or 'none'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("file", help="ecs_dem output (.h5 with /snapshots) or checkpoint file")
    parser.add_argument("--step", type=_step, default=None,
                        help="snapshot step to export, or 'last' (default); output files only")
    parser.add_argument("--membrane", type=int, default=None,
                        help="membrane id to export (default: every membrane)")
    parser.add_argument("--out", required=True, help="surface file to write, e.g. surface.stl")
    parser.add_argument("--format", default=None,
                        help="meshio format name (default: from --out's extension)")
    parser.add_argument("--ascii", action="store_true", help="write STL/PLY/VTK as text")
    args = parser.parse_args(argv)
    try:
        if Path(args.out).resolve() == Path(args.file).resolve():
            raise InputError(f"--out {args.out} is the file being read: choose another name "
                             "(the surface would replace the run's data)")
        kind = _kind(args.file)
        if kind == "checkpoint":
            if args.step is not None:
                raise InputError(f"{args.file} is a checkpoint (one state): --step applies to "
                                 "output files with snapshots; leave it out")
            mesh = surface_from_checkpoint(args.file, membrane=args.membrane)
            source = "the checkpoint"
        else:
            mesh = surface_from_snapshot(args.file, step=args.step, membrane=args.membrane)
            source = "the last snapshot" if args.step is None else f"step {args.step}"
        write_mesh(args.out, mesh, file_format=args.format, binary=not args.ascii)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    which = "every membrane" if args.membrane is None else f"membrane {args.membrane}"
    print(f"wrote {args.out}: {len(mesh.vertices)} vertices, {len(mesh.triangles)} triangles "
          f"({which}, {source} of {args.file})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
