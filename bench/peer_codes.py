"""Peer codes for the side-by-side benchmarks (bench/vs_lammps.py, bench/vs_liggghts_drum.py):
finding and installing their Debian packages, and launching them and ecs_dem by name.

Debian's ``lammps`` and ``liggghts`` packages pull in Open MPI and switch the plain
``mpiexec``/``mpirun`` alternatives to it, so a peer runs under ``mpirun.openmpi`` and ecs_dem
(mpi4py built against MPICH) under ``mpiexec.mpich``, each called by name.
"""
from __future__ import annotations

import os
import shutil
import subprocess


def find_executable(names) -> str | None:
    """The path of the first of `names` on PATH, or None."""
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def apt_install(package: str) -> None:
    """``apt-get update; apt-get install`` Debian's `package` (sudo unless root)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    print(f"installing Debian's {package} package (apt-get update; apt-get install {package}) ...",
          flush=True)
    subprocess.run(sudo + ["apt-get", "update"], check=True, env=env)
    subprocess.run(sudo + ["apt-get", "install", "-y", "--no-install-recommends", package],
                   check=True, env=env)


def find_or_install(names, package: str, install: bool) -> str | None:
    """The peer's executable (first of `names` on PATH); when missing and `install`, apt-get
    `package` first and stop with a message naming what is missing if it brought none.
    None when missing and not `install`."""
    path = find_executable(names)
    if path is None and install:
        apt_install(package)
        path = find_executable(names)
        if path is None:
            raise SystemExit(f"apt-get installed {package} but none of its executables "
                             f"({', '.join(names)}) is on PATH: check `dpkg -L {package}`")
    return path


def openmpi_env() -> dict:
    """The environment of an Open MPI peer run: one OpenMP thread, root allowed, and no
    cross-memory-attach copy (containers often forbid it)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    return env


def openmpi_command(cmd: list[str], ranks: int) -> list[str]:
    """`cmd` under ``mpirun.openmpi`` on `ranks` ranks (as it is on one rank)."""
    if ranks <= 1:
        return cmd
    launcher = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
    if launcher is None:
        raise RuntimeError("no Open MPI launcher (mpirun.openmpi) for the peer code: install "
                           "openmpi-bin")
    return [launcher, "--allow-run-as-root", "--oversubscribe", "-n", str(ranks)] + cmd


def mpich_command(cmd: list[str], ranks: int) -> list[str]:
    """`cmd` under ``mpiexec.mpich`` on `ranks` ranks (as it is on one rank)."""
    if ranks <= 1:
        return cmd
    launcher = shutil.which("mpiexec.mpich")
    if launcher is None:
        raise RuntimeError("mpiexec.mpich not found (ecs_dem's mpi4py is built against MPICH)")
    return [launcher, "-n", str(ranks)] + cmd


def add_peer_arguments(ap, package: str, quick: str, unit: str) -> None:
    """The options every side-by-side benchmark takes: ``--install-<package>``, ``--quick``
    (help `quick`), ``--repeats`` (runs per code and `unit`) and ``--ranks``."""
    ap.add_argument(f"--install-{package}", action="store_true",
                    help=f"apt-get install Debian's {package} package if no executable is found")
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--repeats", type=int, default=3, help=f"runs per code, {unit}")
    ap.add_argument("--ranks", default="1,2", help="rank counts (default 1,2)")
