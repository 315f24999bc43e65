"""Smaller (or larger) copies of the two peer problems, as LAMMPS data files both codes read.

Strong scaling at a fixed number of ranks needs the same problem at several
sizes. Both problems are cut from their peer data files
(bench/peer_data.py) so that the particle density, the contacts per
particle and every material setting stay those of the full problem:

* chute: the periodic box is cut to a fraction of its area in x and y (same
  aspect ratio, same depth); mobile particles that would overlap a particle
  across the new periodic seam are dropped (the frozen base is kept whole, so
  nothing falls through it; base-base pairs are excluded by both codes);
* bed: the settled bed tiled 2 x 2 (80,000 spheres, 0.28 m square) is cut to
  a square of the wanted area with its walls moved in; spheres that would
  reach through a new wall are dropped.

The files are written with ``write_sphere_data`` (LAMMPS ``atom_style
sphere``, with a Velocities section) so the two codes start from identical
states: ``run/chute.py``'s ``build_world`` and ``bench/one_rank.py``'s
``build_bed`` read them unchanged (the bed's walls follow the box).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ecs_dem.io.lammps_data import SphereData, read_sphere_data

from peer_data import BED, chute_data, missing, peer_file  # noqa: E402
FULL = {"chute": 32000, "bed": 80000}  # particles of the data each problem is cut from


def write_sphere_data(path: Path, d: SphereData, title: str) -> None:
    """A LAMMPS data file (atom_style sphere, Atoms + Velocities) holding `d`."""
    n = d.id.size
    lines = [f"{title}", "", f"{n} atoms", f"{int(d.type.max())} atom types", ""]
    for a, ax in enumerate("xyz"):
        lines.append(f"{float(d.box_lo[a])!r} {float(d.box_hi[a])!r} {ax}lo {ax}hi")
    lines += ["", "Atoms # sphere", ""]
    for k in range(n):
        x = d.position[k].tolist()
        lines.append(f"{d.id[k]} {d.type[k]} {float(d.diameter[k])!r} {float(d.density[k])!r} "
                     f"{x[0]!r} {x[1]!r} {x[2]!r} 0 0 0")
    lines += ["", "Velocities", ""]
    for k in range(n):
        v, w = d.velocity[k].tolist(), d.angular_velocity[k].tolist()
        lines.append(f"{d.id[k]} {v[0]!r} {v[1]!r} {v[2]!r} {w[0]!r} {w[1]!r} {w[2]!r}")
    path.write_text("\n".join(lines) + "\n")


def _subset(d: SphereData, keep: np.ndarray, hi) -> SphereData:
    return SphereData(d.box_lo.copy(), np.asarray(hi, dtype=np.float64), d.id[keep], d.type[keep],
                      d.diameter[keep], d.density[keep], d.position[keep], d.image[keep],
                      d.velocity[keep], d.angular_velocity[keep])


def _seam_overlaps(x: np.ndarray, diameter: np.ndarray, mobile: np.ndarray,
                   length: np.ndarray) -> np.ndarray:
    """Mobile rows that overlap another row across a periodic seam in x or y (corners
    included): brute force, by blocks, over the rows within one diameter of a seam."""
    reach = float(diameter.max())
    near = np.flatnonzero(np.any((x[:, :2] < reach) | (x[:, :2] > length[:2] - reach), axis=1))
    bad = set()
    for start in range(0, near.size, 512):
        a = near[start:start + 512]
        d = x[a][:, None, :] - x[near][None, :, :]
        crossed = np.abs(d[..., :2]) > 0.5 * length[:2]
        d[..., :2] -= length[:2] * np.round(d[..., :2] / length[:2])  # nearest image
        touch = (np.linalg.norm(d, axis=2) < 0.5 * (diameter[a][:, None] + diameter[near][None, :])
                 ) & np.any(crossed, axis=2)
        for i, j in zip(*np.nonzero(touch)):
            i, j = int(a[i]), int(near[j])
            if mobile[i] and i not in bad and j not in bad:
                bad.add(i)
            elif mobile[j] and i not in bad and j not in bad:
                bad.add(j)
    return np.array(sorted(bad), dtype=np.int64)


def shrink_chute(particles: int, frozen_type: int = 2) -> SphereData:
    """The chute cut to about `particles` spheres (same depth and aspect ratio)."""
    d = chute_data()
    if particles >= d.id.size:
        return d
    scale = np.sqrt(particles / d.id.size)
    hi = d.box_hi.copy()
    hi[:2] = d.box_lo[:2] + scale * (d.box_hi[:2] - d.box_lo[:2])
    x = d.position - d.box_lo
    keep = np.flatnonzero((x[:, 0] < hi[0] - d.box_lo[0]) & (x[:, 1] < hi[1] - d.box_lo[1]))
    d = _subset(d, keep, hi)
    bad = _seam_overlaps(d.position - d.box_lo, d.diameter, d.type != frozen_type,
                         hi - d.box_lo)
    return _subset(d, np.setdiff1d(np.arange(d.id.size), bad), hi)


def shrink_bed(particles: int) -> SphereData:
    """The settled Hertz-Mindlin bed, tiled 2 x 2, cut to about `particles` spheres."""
    if peer_file(BED) is None:
        raise SystemExit(f"bed: {missing(BED)}")
    base = read_sphere_data(peer_file(BED))
    side = float(base.box_hi[0] - base.box_lo[0])
    tiles = [(i * side, j * side) for i in range(2) for j in range(2)]
    step = int(base.id.max()) + 1
    cat = lambda f: np.concatenate([f(k, s) for k, s in enumerate(tiles)])  # noqa: E731
    d = SphereData(base.box_lo.copy(), np.array([2 * side, 2 * side, base.box_hi[2]]),
                   cat(lambda k, s: base.id + k * step), cat(lambda k, s: base.type),
                   cat(lambda k, s: base.diameter), cat(lambda k, s: base.density),
                   cat(lambda k, s: base.position + np.array([s[0], s[1], 0.0])),
                   cat(lambda k, s: base.image), cat(lambda k, s: base.velocity),
                   cat(lambda k, s: base.angular_velocity))
    cut = 2 * side * min(np.sqrt(particles / d.id.size), 1.0)
    r = 0.5 * d.diameter
    keep = np.flatnonzero((d.position[:, 0] + r <= cut) & (d.position[:, 1] + r <= cut))
    return _subset(d, keep, (cut, cut, d.box_hi[2]))


def write_problem(problem: str, particles: int, directory: Path) -> tuple[Path, int, float]:
    """Write `problem` cut to about `particles` spheres; returns (path, particles, box side x)."""
    shrink = shrink_chute if problem == "chute" else shrink_bed
    asked = particles
    for _ in range(3):  # the cut drops spheres at seams and walls: ask for more until near
        d = shrink(asked)
        if abs(d.id.size - particles) <= 0.02 * particles or asked >= FULL[problem]:
            break
        asked = min(int(asked * particles / d.id.size), FULL[problem])
    d.id = np.arange(1, d.id.size + 1, dtype=np.int64)  # dense ids: gids index arrays
    path = directory / f"{problem}_{particles}.data"
    write_sphere_data(path, d, f"{problem} cut to {d.id.size} spheres by bench/shrunk_problems.py")
    return path, int(d.id.size), float(d.box_hi[0] - d.box_lo[0])
