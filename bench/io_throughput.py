"""Snapshot write throughput (MB/s) for 10^6 particles on 1 and 2 ranks (a benchmark).

Each rank holds an equal share of a particle table and writes the default
snapshot fields (gid, position, velocity, angular_velocity, radius, species:
92 bytes a particle) collectively into one HDF5 file; the median of several
writes is reported.

    python bench/io_throughput.py [--particles 1000000] [--repeats 3] [--dir output/bench_io]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worker_result import print_result, run_for_result  # noqa: E402

FIELDS = ("gid", "position", "velocity", "angular_velocity", "radius", "species")


def worker(particles: int, repeats: int, directory: Path) -> None:
    from ecs_dem.comm import default_comm
    from ecs_dem.components.particles import PARTICLE_FIELDS
    from ecs_dem.io.hdf5_output import Hdf5Output
    from ecs_dem.table import Table

    comm = default_comm()
    share = particles // comm.size + (comm.rank < particles % comm.size)
    first = comm.exscan(share)
    rng = np.random.default_rng(comm.rank)
    table = Table("particles", PARTICLE_FIELDS, capacity=share)
    table.append(share, gid=np.arange(first, first + share), position=rng.random((share, 3)),
                 velocity=rng.random((share, 3)), angular_velocity=rng.random((share, 3)),
                 radius=rng.random(share), species=np.zeros(share, np.int32))
    nbytes = comm.sum(sum(table.owned(f).nbytes for f in FIELDS))
    times = []
    path = directory / f"snapshots_{comm.size}ranks.h5"
    with Hdf5Output(path, None, comm) as out:
        for step in range(repeats):
            comm.barrier()
            t0 = time.perf_counter()
            out.write_snapshot(step, 0.0, table, FIELDS)
            comm.barrier()
            times.append(time.perf_counter() - t0)
    if comm.rank == 0:
        t = float(np.median(times))
        print_result({"ranks": comm.size, "particles": particles, "MB": nbytes / 1e6,
                      "seconds": t, "MB_per_s": nbytes / 1e6 / t})
        path.unlink()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--particles", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("output/bench_io"))
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.worker:
        worker(args.particles, args.repeats, args.dir)
        return 0
    print(f"{'ranks':>5s} {'particles':>10s} {'MB':>8s} {'s/snapshot':>11s} {'MB/s':>8s}")
    for ranks in (1, 2):
        r = run_for_result(["mpiexec.mpich", "-n", str(ranks), sys.executable, __file__, "--worker",
                            "--particles", str(args.particles), "--repeats", str(args.repeats),
                            "--dir", str(args.dir)], timeout=1800)
        print(f"{r['ranks']:5d} {r['particles']:10d} {r['MB']:8.1f} {r['seconds']:11.3f} {r['MB_per_s']:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
