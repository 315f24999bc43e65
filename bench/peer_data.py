"""The peer benchmarks' initial states, for the scripts in bench/.

LAMMPS's ``data.chute`` (the state LAMMPS's bench/in.chute reads) and the
settled Hertz-Mindlin bed ``hm_bed.data`` are not part of the repository: the
scripts look for them in the folder ``ECS_DEM_PEER_DATA`` names, else in
``shared/lammps-bench`` in the folder above the clone. Without them the chute falls back
to the state ``run/chute.py`` generates (the deck's box, count and density,
grains at rest: its rates are not those of the flowing state LAMMPS's file
holds), and the bed problem is skipped with a note saying which file is missing.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PEER_DATA = Path(os.environ.get("ECS_DEM_PEER_DATA", REPO.parent / "shared" / "lammps-bench"))
CHUTE, BED = "data.chute", "hm_bed.data"


def peer_file(name: str) -> Path | None:
    """The peer data file `name`, or None when it is not there."""
    path = PEER_DATA / name
    return path if path.is_file() else None


def chute_setting() -> str:
    """run/chute.py's ``data`` setting: LAMMPS's file if present, else "" (generated)."""
    path = peer_file(CHUTE)
    return str(path) if path else ""


def chute_data():
    """The chute's initial state as ``SphereData``: LAMMPS's file, else the generated one."""
    from ecs_dem.io.lammps_data import read_sphere_data
    from ecs_dem.run.chute import chute_state

    path = peer_file(CHUTE)
    return read_sphere_data(path) if path else chute_state()


def missing(name: str) -> str:
    """The note a script prints when it skips a problem for want of `name`."""
    return (f"{name} not found in {PEER_DATA} (set ECS_DEM_PEER_DATA to the folder holding "
            "LAMMPS's benchmark data files): skipped")


def available_problems(problems: list[str]) -> list[str]:
    """`problems` without "bed" when its data file is missing (printing the note)."""
    if "bed" in problems and peer_file(BED) is None:
        print(f"bed: {missing(BED)}")
        return [p for p in problems if p != "bed"]
    return problems
