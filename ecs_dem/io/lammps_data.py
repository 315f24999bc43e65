"""Reader for LAMMPS data files with ``atom_style sphere``.

Atoms lines: ``id type diameter density x y z [ix iy iz]``; Velocities lines:
``id vx vy vz wx wy wz``. Users bring packings from LAMMPS and LIGGGHTS this
way. Only the sections needed for spheres are read; others are skipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError


@dataclass
class SphereData:
    """Arrays of a sphere data file, sorted by atom id. Mass = density * pi/6 d^3 (3D)."""

    box_lo: np.ndarray
    box_hi: np.ndarray
    id: np.ndarray
    type: np.ndarray
    diameter: np.ndarray
    density: np.ndarray
    position: np.ndarray
    image: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray

    @property
    def radius(self) -> np.ndarray:
        return 0.5 * self.diameter

    @property
    def mass(self) -> np.ndarray:
        # LAMMPS: 4/3 pi r^3 rho with r = d/2
        r = 0.5 * self.diameter
        return 4.0 * np.pi / 3.0 * r * r * r * self.density


_SECTIONS = {"Atoms", "Velocities", "Masses", "Pair Coeffs", "PairIJ Coeffs", "Bonds", "Angles",
             "Dihedrals", "Impropers", "Ellipsoids", "Lines", "Triangles", "Bodies"}


def _numbers(path, section: str, lines: list[str]) -> np.ndarray:
    """The lines of a section as a 2-D float array; InputError naming the bad line otherwise."""
    rows = [ln.split() for ln in lines]
    if not rows:
        return np.empty((0, 0))
    try:
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(rows[0]))
    except ValueError:
        pass
    for k, r in enumerate(rows):  # slow path: say which line is malformed
        if len(r) != len(rows[0]):
            raise InputError(f"{path}: line {k + 1} of the {section} section has {len(r)} columns, "
                             f"the first has {len(rows[0])}: {lines[k]!r}")
        try:
            [float(w) for w in r]
        except ValueError:
            raise InputError(f"{path}: line {k + 1} of the {section} section is not numeric: "
                             f"{lines[k]!r}") from None
    raise InputError(f"{path}: malformed {section} section")  # pragma: no cover


def read_sphere_data(path) -> SphereData:
    """Read a LAMMPS ``atom_style sphere`` data file."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"LAMMPS data file {path} is a directory: give the data file in it")
    if not path.is_file():
        raise InputError(f"LAMMPS data file {path} does not exist")
    lines = path.read_text().splitlines()
    natoms = None
    lo = np.zeros(3)
    hi = np.zeros(3)
    sections: dict[str, list[str]] = {}
    current = None
    for raw in lines[1:]:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head = line.split()[0] if line else ""
        if line in _SECTIONS or line.split("#")[0].strip() in _SECTIONS:
            current = line
            sections[current] = []
            continue
        if current is None:
            words = line.split()
            if len(words) >= 2 and words[1] == "atoms":
                natoms = int(words[0])
            for a, ax in enumerate("xyz"):
                if len(words) >= 4 and words[2] == f"{ax}lo" and words[3] == f"{ax}hi":
                    lo[a], hi[a] = float(words[0]), float(words[1])
            continue
        if head[0].isalpha():
            current = line
            sections[current] = []
            continue
        sections[current].append(line)
    if "Atoms" not in sections or natoms is None:
        raise InputError(f"{path}: no 'N atoms' header or no Atoms section")
    atoms = _numbers(path, "Atoms", sections["Atoms"])
    if atoms.shape[0] != natoms:
        raise InputError(f"{path}: header says {natoms} atoms, Atoms section has {atoms.shape[0]}")
    if atoms.shape[1] not in (7, 10):
        raise InputError(f"{path}: Atoms lines have {atoms.shape[1]} columns; atom_style sphere "
                         "needs 'id type diameter density x y z [ix iy iz]'")
    order = np.argsort(atoms[:, 0])
    atoms = atoms[order]
    ids = atoms[:, 0].astype(np.int64)
    image = atoms[:, 7:10].astype(np.int64) if atoms.shape[1] == 10 else np.zeros((natoms, 3), np.int64)
    vel = np.zeros((natoms, 3))
    omega = np.zeros((natoms, 3))
    if "Velocities" in sections:
        v = _numbers(path, "Velocities", sections["Velocities"])
        if v.shape != (natoms, 7):
            raise InputError(f"{path}: Velocities section must have {natoms} lines of "
                             "'id vx vy vz wx wy wz'")
        v = v[np.argsort(v[:, 0])]
        if np.any(v[:, 0].astype(np.int64) != ids):
            raise InputError(f"{path}: Velocities ids do not match Atoms ids")
        vel, omega = v[:, 1:4].copy(), v[:, 4:7].copy()
    return SphereData(lo, hi, ids, atoms[:, 1].astype(np.int64), atoms[:, 2].copy(),
                      atoms[:, 3].copy(), atoms[:, 4:7].copy(), image, vel, omega)
