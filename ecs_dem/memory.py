"""Refuse a problem that cannot fit in memory before allocating it.

Linux overcommits memory: numpy's allocation of an array larger than the
machine succeeds, and the kernel's out-of-memory killer ends the process as
the pages are touched, with "Killed" and no message (``run/pour.py`` with
``particles=2e9``). So tables check each growth (``Table._reserve``) and
drivers check their particle counts (``check_particle_count``) against the
memory this rank can have: the node's available memory (``MemAvailable`` of
/proc/meminfo) shared by the ranks on the node, or less where the process
runs under a memory limit of its control group (a batch system's job limit:
Slurm confines a job to the memory it asked for, and the kernel kills the
job's processes at that limit, not at the node's). The limit is read from
cgroup v2 (``memory.max`` less ``memory.current``) or v1
(``memory.limit_in_bytes`` less ``memory.usage_in_bytes``), the usage less
its inactive file cache (which the kernel reclaims before it kills: the
working set, as container runtimes count it), for the process's group and
each group above it, the tightest winning. Where the
available memory is unknown (no /proc), nothing is checked.
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import InputError

#: where the kernel lists the process's control groups, and where their files are mounted
PROC_CGROUP = Path("/proc/self/cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: a limit at or above this is "no limit" (cgroup v1 writes 2^63 rounded down to a page)
NO_LIMIT = 1 << 60

#: ranks of this job sharing the node's memory, set by ``ecs_dem.comm`` when MPI starts
#: (``share_node``): a check without a communicator (a table's growth, a mesh generator)
#: takes this rank's share of the node
_ranks_on_node = 1


def share_node(ranks: int) -> None:
    """Record that `ranks` ranks of this job share the node (``check_fits``'s default)."""
    global _ranks_on_node
    _ranks_on_node = max(int(ranks), 1)


def ranks_on_node() -> int:
    """The ranks ``share_node`` recorded (1 before MPI starts, and without MPI)."""
    return _ranks_on_node


#: a floor of what a particle costs with its contacts: measured 0.92 kB per Hertz-Mindlin
#: sphere on one rank (bench/vs_lammps.py, docs/performance.md); a count is refused only
#: when even this much does not fit
BYTES_PER_PARTICLE_FLOOR = 500


def available_bytes() -> int | None:
    """The memory this process can be given (bytes): the node's available memory, or the
    headroom under its control group's memory limit when that is less; None when unknown."""
    node, limit = node_available_bytes(), cgroup_headroom()
    if node is None or limit is None:
        return limit if node is None else node
    return min(node, limit)


def _read_int(path: Path) -> int | None:
    """The number in a cgroup file; None for "max" (no limit), a missing or unreadable file."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _memory_groups() -> list[tuple[Path, str, str]]:
    """(directory, limit file, usage file) of the process's memory control group and every
    group above it, innermost first: cgroup v1's ``memory`` hierarchy, else v2's unified
    one. Inside a container the listed path may not exist under the mount (the container
    sees its own group as the root): the mount's root is then the innermost."""
    try:
        lines = PROC_CGROUP.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if "memory" in parts[1].split(","):
            found.append((CGROUP_ROOT / "memory", parts[2], "memory.limit_in_bytes",
                          "memory.usage_in_bytes"))
        elif parts[0] == "0" and parts[1] == "":
            root = CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() \
                else CGROUP_ROOT / "unified"
            found.append((root, parts[2], "memory.max", "memory.current"))
    if not found:
        return []
    root, path, limit_file, usage_file = min(found, key=lambda f: f[2] != "memory.limit_in_bytes")
    rel = Path(path.lstrip("/"))
    chain = [rel, *rel.parents] if (root / rel).is_dir() else [Path(".")]
    return [(root / d, limit_file, usage_file) for d in chain]


def _inactive_file(directory: Path) -> int:
    """The group's inactive file cache in bytes (``memory.stat``: v1's
    ``total_inactive_file``, v2's ``inactive_file``), 0 when not given."""
    try:
        lines = (directory / "memory.stat").read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return 0
    for line in lines:
        key, _, value = line.partition(" ")
        if key in ("total_inactive_file", "inactive_file") and value.strip().isdigit():
            return int(value)
    return 0


def cgroup_headroom() -> int | None:
    """Bytes this process's memory control groups still allow (the tightest over the group
    and the groups above it), or None where no group sets a limit or none can be read."""
    tightest = None
    for directory, limit_file, usage_file in _memory_groups():
        limit = _read_int(directory / limit_file)
        if limit is None or limit >= NO_LIMIT:
            continue
        usage = (_read_int(directory / usage_file) or 0) - _inactive_file(directory)
        headroom = max(limit - max(usage, 0), 0)
        tightest = headroom if tightest is None else min(tightest, headroom)
    return tightest


def node_available_bytes() -> int | None:
    """The memory the node can give new allocations without swapping (bytes), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gb(nbytes: float) -> str:
    gb = nbytes / 1e9
    return f"{gb:,.0f} GB" if gb >= 100 else f"{gb:.3g} GB"


def check_fits(nbytes: float, what: str, fix: str, ranks_on_node: int | None = None) -> None:
    """InputError when `nbytes` (on this rank) exceed this rank's share of the node's
    available memory (`ranks_on_node` ranks share it, by default those ``share_node``
    recorded); `what` names the allocation, `fix` says what to change."""
    if ranks_on_node is None:
        ranks_on_node = _ranks_on_node
    available = available_bytes()
    if available is None:
        return
    share = available / max(int(ranks_on_node), 1)
    if nbytes > share:
        on_node = (f", shared by the {ranks_on_node} ranks on this node"
                   if ranks_on_node > 1 else "")
        limit = cgroup_headroom()
        under = (" under this job's memory limit (its control group)"
                 if limit is not None and limit <= available else "")
        raise InputError(f"{what} needs about {_gb(nbytes)} of memory on this rank, but "
                         f"{_gb(available)} is available{under}{on_node}: {fix}")


def check_particle_count(count: float, comm=None, what: str = "particles",
                         spread: bool = False) -> None:
    """InputError when `count` particles cannot fit at ``BYTES_PER_PARTICLE_FLOOR`` each on
    this rank (a driver calls it once its input is checked). ``spread``: the particles are
    divided among the ranks of `comm` from the start; else every rank holds all of them
    until the set-up sends each to its owner, as the drivers build them."""
    size = comm.size if comm is not None and spread else 1
    on_node = getattr(comm, "ranks_on_node", 1) if comm is not None else None
    held = "per rank" if spread else "on every rank until the set-up spreads them"
    check_fits(float(count) / size * BYTES_PER_PARTICLE_FLOOR,
               f"{what} = {count:.6g} ({held})",
               f"ask for fewer {what}" + ("" if spread else
                                          " (more ranks do not help here)"),
               on_node)


__all__ = ["available_bytes", "cgroup_headroom", "check_fits", "check_particle_count",
           "node_available_bytes", "ranks_on_node", "share_node", "BYTES_PER_PARTICLE_FLOOR"]
