"""Post-processing cost: coarse-graining a 10^6-particle snapshot from its HDF5 file.

A synthetic snapshot in the output layout (``ecs_dem.io.hdf5_output``): spheres of
radius 0.5 mm on a jittered cubic lattice of spacing 0.98 mm (each overlaps its six
neighbours), random velocities, and the contact network from a neighbour search over
the lattice (each touching pair once: about 3 per particle) with random forces. The
file is written once (rank 0) and reused; then ``python -m ecs_dem.cg``'s work
(``cg.from_output.coarse_grain_file`` and ``write_fields``) is timed on every rank
count it runs on, for a depth profile (1D, averaged over x and y) and a 3D grid.

    python bench/cg_post.py                          # 1 rank, 10^6 particles
    mpiexec.mpich -n 2 .venv/bin/python bench/cg_post.py
    python bench/cg_post.py --side 50 --file /tmp/small.h5   # 125,000 particles

Target (issue #51): under a minute on 2 ranks for 10^6 particles.
"""
from __future__ import annotations

import argparse
import os
import time

import h5py
import numpy as np

from ecs_dem.comm import default_comm
from ecs_dem.cg.from_output import coarse_grain_file, write_fields
from ecs_dem.cg.grid import CartesianGrid
from ecs_dem.cg.kernels import Kernel

R = 0.5e-3
SPACING = 0.98e-3


def synthetic_snapshot(path: str, side: int, seed: int = 3) -> tuple[int, int]:
    """Write the snapshot of the module docstring; returns (particles, contacts)."""
    rng = np.random.default_rng(seed)
    n = side**3
    k = np.arange(n)
    cell = np.stack([k // side**2, (k // side) % side, k % side], axis=1)
    position = (cell + 0.5) * SPACING + rng.uniform(-0.005, 0.005, (n, 3)) * SPACING
    radius = np.full(n, R)
    i_list, j_list = [], []
    for axis in range(3):  # the lattice's neighbours, each pair once
        step = (side**2, side, 1)[axis]
        has = cell[:, axis] < side - 1
        i = k[has]
        j = i + step
        touch = np.linalg.norm(position[i] - position[j], axis=1) < 2 * R
        i_list.append(i[touch])
        j_list.append(j[touch])
    i, j = np.concatenate(i_list), np.concatenate(j_list)
    branch = position[i] - position[j]
    normal = branch / np.linalg.norm(branch, axis=1)[:, None]
    force = normal * rng.uniform(0.1, 1.0, (i.size, 1)) + rng.normal(0, 0.05, (i.size, 3))
    with h5py.File(path, "w") as f:
        g = f.create_group("snapshots/000000000")
        g.attrs["step"], g.attrs["time"] = 0, 0.0
        g["gid"] = k.astype(np.int64)
        g["position"] = position
        g["velocity"] = rng.normal(0, 0.01, (n, 3))
        g["radius"] = radius
        g["mass"] = 2500.0 * 4 / 3 * np.pi * radius**3
        c = g.create_group("contacts")
        c["i"], c["j"], c["force"], c["branch"] = i, j, force, branch
        c["contact_point"] = position[i] - R * normal
        f.create_group("timeseries")
    return n, int(i.size)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--side", type=int, default=100, help="lattice side (side^3 particles)")
    p.add_argument("--file", default=None, help="the snapshot file (made if missing)")
    args = p.parse_args(argv)
    comm = default_comm()
    path = args.file or os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                     f"ecs_dem_cg_post_{args.side}.h5")
    if comm.rank == 0 and not os.path.isfile(path):
        t0 = time.perf_counter()
        n, m = synthetic_snapshot(path, args.side)
        print(f"wrote {path}: {n} particles, {m} contacts ({time.perf_counter() - t0:.1f} s)")
    comm.barrier()
    box = args.side * SPACING
    cases = (("depth profile, 100 layers", CartesianGrid((0, 0, 0), (box, box, box),
                                                         (1, 1, 100), average="xy"),
              Kernel.gaussian(2 * R)),
             ("3D grid 25^3", CartesianGrid((0, 0, 0), (box, box, box), (25, 25, 25)),
              Kernel.gaussian(0.5 * box / 25)))
    for label, grid, kernel in cases:
        comm.barrier()
        t0 = time.perf_counter()
        results = coarse_grain_file(path, grid, kernel, comm=comm)
        t1 = time.perf_counter()
        out = write_fields(path.removesuffix(".h5") + "_cg.h5", grid, kernel, results,
                           source=path, comm=comm)
        t2 = time.perf_counter()
        if comm.rank == 0:
            print(f"{label}: {args.side**3} particles on {comm.size} rank(s): coarse-grained "
                  f"in {t1 - t0:.1f} s, written in {t2 - t1:.2f} s ({out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
