"""Refuse a problem that cannot fit in memory before allocating it.

Linux overcommits memory: numpy's allocation of an array larger than the
machine succeeds, and the kernel's out-of-memory killer ends the process as
the pages are touched, with "Killed" and no message (``run/pour.py`` with
``particles=2e9``). So tables check each growth (``Table._reserve``) and
drivers check their particle counts (``check_particle_count``) against the
memory this rank can have: the node's available memory (``MemAvailable`` of
/proc/meminfo) shared by the ranks on the node. Where the available memory
is unknown (no /proc), nothing is checked.
"""
from __future__ import annotations

import os

from .errors import InputError

#: a floor of what a particle costs with its contacts: measured 0.92 kB per Hertz-Mindlin
#: sphere on one rank (bench/vs_lammps.py, docs/scaling.md); a count is refused only
#: when even this much does not fit
BYTES_PER_PARTICLE_FLOOR = 500


def available_bytes() -> int | None:
    """The memory the system can give new allocations without swapping (bytes), or None."""
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


def check_fits(nbytes: float, what: str, fix: str, ranks_on_node: int = 1) -> None:
    """InputError when `nbytes` (on this rank) exceed this rank's share of the node's
    available memory; `what` names the allocation, `fix` says what to change."""
    available = available_bytes()
    if available is None:
        return
    share = available / max(int(ranks_on_node), 1)
    if nbytes > share:
        on_node = (f", shared by the {ranks_on_node} ranks on this node"
                   if ranks_on_node > 1 else "")
        raise InputError(f"{what} needs about {_gb(nbytes)} of memory on this rank, but "
                         f"{_gb(available)} is available{on_node}: {fix}")


def check_particle_count(count: float, comm=None, what: str = "particles",
                         spread: bool = False) -> None:
    """InputError when `count` particles cannot fit at ``BYTES_PER_PARTICLE_FLOOR`` each on
    this rank (a driver calls it once its input is checked). ``spread``: the particles are
    divided among the ranks of `comm` from the start; else every rank holds all of them
    until the set-up sends each to its owner, as the drivers build them."""
    size = comm.size if comm is not None and spread else 1
    on_node = getattr(comm, "ranks_on_node", 1) if comm is not None else 1
    held = "per rank" if spread else "on every rank until the set-up spreads them"
    check_fits(float(count) / size * BYTES_PER_PARTICLE_FLOOR,
               f"{what} = {count:.6g} ({held})",
               f"ask for fewer {what}" + ("" if spread else
                                          " (more ranks do not help here)"),
               on_node)


__all__ = ["available_bytes", "check_fits", "check_particle_count", "BYTES_PER_PARTICLE_FLOOR"]
