"""Coarse-grain an HDF5 output file: ``python -m ecs_dem.cg output.h5 --width W [options]``.

Writes the fields (``cg.from_output``) to ``<output>_cg.h5`` (``--out``) and its XDMF
sidecar, which ParaView opens beside the particles' ``<output>.xdmf``. Runs on any number
of ranks (``mpiexec -n 2 python -m ecs_dem.cg ...``): each reads and coarse-grains its
share of the particles and contacts.

Examples::

    # depth profiles of a chute: 1D in z, averaged over x and y, Gaussian of width 1 mm
    python -m ecs_dem.cg chute.h5 --width 1e-3 --cells 1 1 40 --average xy
    # a triaxial sample: rings about the axis, r and z, the last snapshot, Lucy's kernel
    python -m ecs_dem.cg triaxial.h5 --width 2e-3 --kernel lucy --cylinder 10 30 --steps last
"""
from __future__ import annotations

import argparse
import math
import sys

import h5py
import numpy as np

from ecs_dem.comm import default_comm
from ecs_dem.errors import InputError

from ecs_dem.cg.from_output import (CONTACT_FIELDS, PARTICLE_FIELDS, coarse_grain_file,
                                    snapshot_steps, write_fields)
from ecs_dem.cg.grid import CartesianGrid, CylindricalGrid
from ecs_dem.cg.kernels import Kernel


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ecs_dem.cg", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="fields: " + ", ".join(PARTICLE_FIELDS + CONTACT_FIELDS) + " (the contact "
        "fields need snapshots written with contacts: SnapshotWriter(contacts=True), "
        "[output] contacts = true)")
    p.add_argument("output", help="an ecs_dem HDF5 output file (with its /snapshots)")
    p.add_argument("--width", type=float, required=True,
                   help="the kernel's width w (m): the Gaussian's standard deviation; for "
                   "Lucy's kernel the same width, support radius sqrt(12) w")
    p.add_argument("--kernel", choices=("gauss", "lucy"), default="gauss")
    p.add_argument("--cutoff", type=float, default=3.0,
                   help="the Gaussian's cut-off, in widths (default 3)")
    grid = p.add_mutually_exclusive_group()
    grid.add_argument("--cells", type=int, nargs=3, metavar=("NX", "NY", "NZ"),
                      help="a Cartesian grid of NX x NY x NZ cells over --box (default)")
    grid.add_argument("--cylinder", type=int, nargs=2, metavar=("NR", "NZ"),
                      help="a cylindrical grid about a vertical axis: NR rings out to "
                      "--radius, NZ layers over --z")
    p.add_argument("--average", default="",
                   help="directions of a Cartesian grid to average over, e.g. xy")
    p.add_argument("--box", type=float, nargs=6, metavar=("X0", "Y0", "Z0", "X1", "Y1", "Z1"),
                   help="the Cartesian grid's box (m; default: the particles' bounds, by "
                   "their radii, in the first snapshot coarse-grained)")
    p.add_argument("--axis", type=float, nargs=2, metavar=("X", "Y"),
                   help="the cylinder's axis (m; default: the centre of the particles' bounds)")
    p.add_argument("--radius", type=float, help="the cylinder's radius (m; default: the "
                   "particles' largest distance from the axis)")
    p.add_argument("--z", type=float, nargs=2, metavar=("Z0", "Z1"),
                   help="the cylinder's z range (m; default: the particles' bounds)")
    p.add_argument("--steps", default="all",
                   help="the snapshots: all (default), last, or steps separated by commas")
    p.add_argument("--time-average", action="store_true",
                   help="average the fields over the chosen snapshots (one output)")
    p.add_argument("--fields", default=None,
                   help="fields separated by commas (default: all the file allows)")
    p.add_argument("--density", type=float, default=None,
                   help="the particles' density (kg/m^3) for a file without 'mass'")
    p.add_argument("--out", default=None, help="the fields file (default <output>_cg.h5)")
    return p


def _steps(spec: str, available: list[int]) -> list[int]:
    if spec == "all":
        return available
    if spec == "last":
        return available[-1:]
    try:
        steps = [int(s) for s in spec.split(",") if s.strip()]
    except ValueError:
        raise InputError(f"--steps {spec!r}: give all, last, or step numbers separated by "
                         "commas") from None
    missing = [s for s in steps if s not in available]
    if missing:
        raise InputError(f"--steps: no snapshot at step(s) {missing}; the file has "
                         f"{available[:5]}{' ...' if len(available) > 5 else ''}")
    return steps


def _bounds(path: str, step: int):
    with h5py.File(path, "r") as f:
        g = f[f"snapshots/{step:09d}"]
        x, r = g["position"][...], g["radius"][...]
    return x, r


def build(args, comm):
    """(grid, kernel, steps) from the parsed arguments."""
    if not (math.isfinite(args.width) and args.width > 0):
        raise InputError(f"--width {args.width}: give the kernel's width in metres, > 0")
    kernel = (Kernel.gaussian(args.width, args.cutoff) if args.kernel == "gauss"
              else Kernel.lucy(math.sqrt(12.0) * args.width))
    steps = _steps(args.steps, snapshot_steps(args.output, comm))
    if not steps:
        raise InputError(f"{args.output} has no snapshot")
    x, r = _bounds(args.output, steps[0]) if comm.rank == 0 else (None, None)
    x, r = comm.broadcast_object((x, r)) if comm.size > 1 else (x, r)
    if args.cylinder is not None:
        axis = (np.array(args.axis) if args.axis is not None
                else 0.5 * ((x - r[:, None]).min(0) + (x + r[:, None]).max(0))[:2])
        radius = args.radius if args.radius is not None else float(
            (np.hypot(x[:, 0] - axis[0], x[:, 1] - axis[1]) + r).max())
        z = args.z if args.z is not None else ((x[:, 2] - r).min(), (x[:, 2] + r).max())
        grid = CylindricalGrid(axis, radius, z, args.cylinder)
    else:
        cells = args.cells or (1, 1, 20)
        lo, hi = ((np.array(args.box[:3]), np.array(args.box[3:])) if args.box is not None
                  else ((x - r[:, None]).min(0), (x + r[:, None]).max(0)))
        grid = CartesianGrid(lo, hi, cells, average=args.average)
    return grid, kernel, steps


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    comm = default_comm()
    try:
        grid, kernel, steps = build(args, comm)
        fields = None if args.fields is None else args.fields
        results = coarse_grain_file(args.output, grid, kernel, steps, comm, fields,
                                    args.time_average, args.density)
        out = args.out or str(args.output).removesuffix(".h5") + "_cg.h5"
        write_fields(out, grid, kernel, results, source=str(args.output), comm=comm)
    except InputError as exc:
        if comm.rank == 0:
            print(f"error: {exc}", file=sys.stderr)
        return 2
    if comm.rank == 0:
        names = [n for n in next(iter(results.values()))[1] if not n.startswith("_")]
        print(f"wrote {out} and {out.removesuffix('.h5')}.xdmf: {len(results)} snapshot(s) "
              f"of {', '.join(names)} on a {grid.kind} grid {grid.shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
