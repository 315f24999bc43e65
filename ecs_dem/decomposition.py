"""Cartesian domain decomposition with movable cut planes.

The ranks form a grid ``dims`` (``MPI.Compute_dims``); along each axis the
box is cut by ``dims[a] + 1`` planes shared by the whole grid (a tensor-product
decomposition). A row is owned by the rank whose cell holds its position; on a
non-periodic axis the outermost cells extend to infinity, so a particle that
leaves the box keeps an owner.

Load balance ("shifting planes"): the planes move so that each slab along an
axis holds the same number of rows (from a global histogram); a slab never
gets thinner than the ghost width, so ghosts still come from the adjacent
rank only.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import halo_kernels as hk
from .errors import InputError

_BINS = 4096


def choose_dims(size: int, lengths) -> list[int]:
    """Rank grid (nx, ny, nz) with nx ny nz = size that minimises the cut area.

    Interfaces cost communication in proportion to their area, so long axes
    are cut first (a tall pour box is cut in z, a flat chute in x).
    """
    L = np.asarray(lengths, dtype=np.float64)
    best, best_cost = [size, 1, 1], np.inf
    for nx in range(1, size + 1):
        if size % nx:
            continue
        for ny in range(1, size // nx + 1):
            if (size // nx) % ny:
                continue
            nz = size // (nx * ny)
            cost = (nx - 1) * L[1] * L[2] + (ny - 1) * L[0] * L[2] + (nz - 1) * L[0] * L[1]
            if cost < best_cost * (1 - 1e-12):
                best, best_cost = [nx, ny, nz], cost
    return best


class Decomposition:
    """Rank grid and cut planes of a box over a communicator."""

    def __init__(self, box, comm):
        self.box = box
        self.comm = comm
        self.dims, self.coords = comm.cartesian(box.periodic, choose_dims(comm.size, box.length))
        self.cuts = [np.linspace(box.lo[a], box.hi[a], self.dims[a] + 1) for a in range(3)]
        self._rank_of_coords = self._rank_table()
        self.balance_count = 0

    def _rank_table(self) -> np.ndarray:
        """Rank of every grid cell, gathered so each rank knows the whole map."""
        table = np.zeros(tuple(self.dims), dtype=np.int64)
        table[tuple(self.coords)] = self.comm.rank
        return self.comm.sum(table).astype(np.int64) if self.comm.size > 1 else table

    def neighbour_ranks(self) -> np.ndarray:
        """Ranks of the up to 26 grid cells around this rank's (wrapping on periodic axes),
        without this rank, in increasing order: where a row can go at a rebuild."""
        found = set()
        for step in itertools.product((-1, 0, 1), repeat=3):
            cell = []
            for a in range(3):
                k = self.coords[a] + step[a]
                if not 0 <= k < self.dims[a]:
                    if not self.box.periodic[a]:
                        break
                    k %= self.dims[a]
                cell.append(k)
            else:
                found.add(int(self._rank_of_coords[tuple(cell)]))
        found.discard(self.comm.rank)
        return np.array(sorted(found), dtype=np.int64)

    @property
    def every_rank_adjacent(self) -> bool:
        """True where every rank's 26-cell neighbourhood holds every other rank (each axis
        cut at most twice, or three times when periodic). A property of the grid, the
        same on every rank: a collective that some ranks skip by a per-rank test like
        ``neighbour_ranks().size == size - 1`` deadlocks (1 x 1 x 3 without periodic z:
        the middle rank neighbours both others, the outer ones one)."""
        return all(d <= 2 or (d == 3 and self.box.periodic[a]) for a, d in enumerate(self.dims))

    @property
    def lo(self) -> np.ndarray:
        return np.array([self.cuts[a][self.coords[a]] for a in range(3)])

    @property
    def hi(self) -> np.ndarray:
        return np.array([self.cuts[a][self.coords[a] + 1] for a in range(3)])

    def check_width(self, ghost_width: float) -> None:
        """Ghosts come from adjacent ranks only: every slab must be at least ghost_width wide."""
        for a in range(3):
            if self.dims[a] < 2:
                continue
            widths = np.diff(self.cuts[a])
            if widths.min() < ghost_width:
                raise InputError(
                    f"{self.dims[a]} ranks along {'xyz'[a]} make subdomains {widths.min():.4g} m "
                    f"wide, less than the ghost width {ghost_width:.4g} m (interaction range + "
                    "skin): use fewer ranks or a larger box")

    def owner_ranks(self, position: np.ndarray) -> np.ndarray:
        """Owning rank of each position (positions already wrapped on periodic axes)."""
        position = np.asarray(position, dtype=np.float64).reshape(-1, 3)
        return hk.owner_ranks(position, *(np.ascontiguousarray(self.cuts[a][1:-1])
                                          for a in range(3)), self._rank_of_coords)

    def balance(self, position: np.ndarray, min_width: float) -> bool:
        """Move the cut planes so every slab holds the same number of rows; True if moved."""
        moved = False
        for a in range(3):
            n = self.dims[a]
            if n < 2:
                continue
            lo, hi = self.box.lo[a], self.box.hi[a]
            x = np.clip(position[:, a], lo, hi)
            hist = np.histogram(x, bins=_BINS, range=(lo, hi))[0].astype(np.float64)
            hist = self.comm.sum(hist)
            total = hist.sum()
            if total == 0:
                continue
            cdf = np.concatenate(([0.0], np.cumsum(hist))) / total
            edges = np.linspace(lo, hi, _BINS + 1)
            targets = np.arange(1, n) / n
            inner = np.interp(targets, cdf, edges)
            cuts = np.concatenate(([lo], inner, [hi]))
            # keep every slab at least min_width wide, sweeping up then down; a few ulps more,
            # so that rounding cuts[k - 1] + min_width leaves no slab narrower than
            # check_width allows (six ranks along z once stopped a run on 3.5e-18 m)
            wide = min_width + 4 * np.spacing(max(abs(lo), abs(hi), min_width))
            for k in range(1, n + 1):
                cuts[k] = max(cuts[k], cuts[k - 1] + wide)
            cuts[n] = hi
            for k in range(n - 1, 0, -1):
                cuts[k] = min(cuts[k], cuts[k + 1] - wide)
            if np.any(np.diff(cuts) < min_width):
                continue  # box too small for balancing along this axis: keep the old cuts
            if not np.allclose(cuts, self.cuts[a], rtol=0, atol=1e-12 * (hi - lo)):
                self.cuts[a] = cuts
                moved = True
        if moved:
            self.balance_count += 1
        return moved
