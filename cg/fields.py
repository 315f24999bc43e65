"""Continuum fields from particles and contacts (Weinhart, Thornton, Luding & Bokhove,
Granular Matter 14 (2012) 289; Goldhirsch, Granular Matter 12 (2010) 239).

Pure functions of arrays; no World, no MPI. The entry point::

    sums = coarse_grain(grid, kernel, position, velocity, mass, radius, n=None,
                        pairs=None, boundary=None)
    fields = derive(sums)

* ``position``, ``velocity`` (N, 3), ``mass``, ``radius`` (N,): particle rows; the first
  ``n`` of them (all by default) add their mass, momentum and volume; rows beyond are
  only read by contacts (the ghost rows of a rank).
* ``pairs = (i, j, force, branch)``: contacts between particles: rows i and j, the force
  on i from j (N, (P, 3)), and the branch vector x_i - x_j (m, (P, 3), the minimum image
  across a periodic boundary). Each contact is listed once.
* ``boundary = (i, force, point)``: contacts of particles with walls, membranes or other
  boundaries: the particle's row, the force on it from the boundary (N) and the contact
  point (m).

``coarse_grain`` returns a :class:`Sums`: the additive sums on the grid's cells, which add
across ranks (``Sums.flat`` / ``Sums.from_flat``) and over a time window
(:class:`TimeAverage`); ``derive`` turns them into the fields. With phi the kernel
(``cg.kernels``), r the grid point, x_i the particle centres and V_i = 4/3 pi r_i^3:

==================== ======================================================== =========
field                definition                                                unit
==================== ======================================================== =========
density              rho = sum_i m_i phi(r - x_i)                              kg/m^3
momentum             p = sum_i m_i v_i phi(r - x_i)                             kg/(m^2 s)
velocity             u = p / rho (0 where rho = 0)                              m/s
kinetic_stress       sigma_k = sum_i m_i v_i v_i phi - p p / rho                Pa
contact_stress       sigma_c (below)                                            Pa
stress               sigma = sigma_k + sigma_c                                  Pa
boundary_force       t = sum_b f_b phi(r - c_b)                                 N/m^3
volume_fraction      nu = sum_i V_i phi(r - x_i)                                1
fabric               F = sum_i V_i (sum over i's contacts c of n_c n_c) phi    1
coordination         Z = tr F / nu (0 where nu = 0)                             1
pressure             P = tr sigma / 3                                           Pa
deviatoric_stress    s = sigma - P I                                            Pa
stress_ratio         q / P with q = sqrt(3/2 s:s) (0 where P = 0)               1
temperature          T = tr sigma_k / (3 rho) (granular temperature, per mass)  m^2/s^2
==================== ======================================================== =========

Sign convention: **compressive stress is positive** (as in soil mechanics and in
Weinhart et al.): a pair pushing apart (force on i along x_i - x_j) gives a positive
contact stress. The contact stress of a pair is the branch-vector line integral

    sigma_c(r) = sum_pairs f_ij (x) b_ij int_0^1 phi(r - x_i + s b_ij) ds,   b_ij = x_i - x_j,

and a boundary contact adds f_b (x) (x_i - c_b) int_0^1 phi(r - x_i + s (x_i - c_b)) ds,
the segment from its contact point to the particle's centre. With these, the momentum
balance holds exactly at every point and every instant:

    -div sigma_c + t + sum_i (F_i^other) phi(r - x_i) = sum_i m_i a_i phi(r - x_i),

F_i^other the non-contact forces (gravity: rho g); statically -div sigma + t + rho g = 0.
The volume integral of sigma_c over space is the virial sum_pairs f_ij (x) b_ij (plus the
boundary segments'), for either kernel. The fabric counts both partners of a pair, each
at its own centre with n the unit vector along the branch, and a boundary contact at its
particle with n along x_i - c_b; the coordination number is then the mean number of
contacts per particle, weighted by volume.

Vectors and tensors have the grid's components: x, y, z for a Cartesian grid, (r, theta,
z) for a cylindrical one. Shapes: a scalar field is ``grid.shape``, a vector ``(*shape,
3)``, a tensor ``(*shape, 3, 3)``.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel

from ecs_dem.cg.kernels import line_integral, value

#: the additive sums: name -> tensor rank (0 scalar, 1 vector, 2 tensor)
SUMS = {"density": 0, "momentum": 1, "momentum_flux": 2, "volume_fraction": 0,
        "contact_stress": 2, "boundary_force": 1, "fabric": 2}


# ------------------------------------------------------------------ sample-point bins
def bin_points(points: np.ndarray, resolved: np.ndarray, size: float):
    """Sort the sample points into cubic bins of `size` along the resolved directions (one
    bin along an averaged one): (origin, size, counts, start, items)."""
    lo = points.min(axis=0)
    hi = points.max(axis=0)
    counts = np.where(resolved, np.floor((hi - lo) / size).astype(np.int64) + 1, 1)
    idx = np.where(resolved, np.floor((points - lo) / size).astype(np.int64), 0)
    idx = np.minimum(idx, counts - 1)
    flat = (idx[:, 0] * counts[1] + idx[:, 1]) * counts[2] + idx[:, 2]
    order = np.argsort(flat, kind="stable").astype(np.int64)
    start = np.zeros(int(np.prod(counts)) + 1, dtype=np.int64)
    np.add.at(start, flat + 1, 1)
    return lo, float(size), counts.astype(np.int64), np.cumsum(start), order


@kernel
def _bin_range(origin, size, counts, lo, hi, a):
    """The bins along direction a that [lo, hi] overlaps (first, last + 1)."""
    if counts[a] == 1:
        return 0, 1
    k0 = int(math.floor((lo - origin[a]) / size))
    k1 = int(math.floor((hi - origin[a]) / size)) + 1
    return max(k0, 0), min(k1, counts[a])


@kernel
def _points_near(origin, size, counts, start, items, lo0, hi0, lo1, hi1, lo2, hi2, out):
    """The sample points in the bins that the box [lo, hi] overlaps into out; their count."""
    a0, a1 = _bin_range(origin, size, counts, lo0, hi0, 0)
    b0, b1 = _bin_range(origin, size, counts, lo1, hi1, 1)
    c0, c1 = _bin_range(origin, size, counts, lo2, hi2, 2)
    m = 0
    for a in range(a0, a1):
        for b in range(b0, b1):
            for c in range(c0, c1):
                cell = (a * counts[1] + b) * counts[2] + c
                for k in range(start[cell], start[cell + 1]):
                    out[m] = items[k]
                    m += 1
    return m


@kernel
def _weight(points, s, mask, kp, x0, x1, x2):
    """phi(r_s - x) over the resolved directions."""
    d0 = (points[s, 0] - x0) * mask[0]
    d1 = (points[s, 1] - x1) * mask[1]
    d2 = (points[s, 2] - x2) * mask[2]
    return value(kp, d0 * d0 + d1 * d1 + d2 * d2)


@kernel
def _particle_sums(points, mask, origin, size, counts, start, items, kp, position, velocity,
                   mass, volume, n, rho, mom, flux, vol):
    """Mass, momentum, momentum flux and volume of the first n rows onto the points."""
    rc = kp[2]
    near = np.empty(points.shape[0], dtype=np.int64)
    for i in range(n):
        x0, x1, x2 = position[i, 0], position[i, 1], position[i, 2]
        found = _points_near(origin, size, counts, start, items, x0 - rc, x0 + rc, x1 - rc,
                             x1 + rc, x2 - rc, x2 + rc, near)
        m = mass[i]
        v = (velocity[i, 0], velocity[i, 1], velocity[i, 2])
        for t in range(found):
            s = near[t]
            w = _weight(points, s, mask, kp, x0, x1, x2)
            if w == 0.0:
                continue
            rho[s] += m * w
            vol[s] += volume[i] * w
            for u in range(3):
                mom[s, u] += m * v[u] * w
                for e in range(3):
                    flux[s, u, e] += m * v[u] * v[e] * w


@kernel
def _segment_sums(points, mask, origin, size, counts, start, items, kp, ends, forces, branches,
                  stress):
    """f (x) b int_0^1 phi(r - e + s b) ds onto the points, per segment from e (x_i) to
    e - b (x_j, or a boundary contact point): phi(r - x_i + s b) = phi(d + s b), d = r - e."""
    rc = kp[2]
    near = np.empty(points.shape[0], dtype=np.int64)
    for q in range(ends.shape[0]):
        e0, e1, e2 = ends[q, 0], ends[q, 1], ends[q, 2]
        b0, b1, b2 = branches[q, 0], branches[q, 1], branches[q, 2]
        found = _points_near(origin, size, counts, start, items,
                             min(e0, e0 - b0) - rc, max(e0, e0 - b0) + rc,
                             min(e1, e1 - b1) - rc, max(e1, e1 - b1) + rc,
                             min(e2, e2 - b2) - rc, max(e2, e2 - b2) + rc, near)
        f = (forces[q, 0], forces[q, 1], forces[q, 2])
        bb = (b0, b1, b2)
        for t in range(found):
            s = near[t]
            w = line_integral(kp, (points[s, 0] - e0) * mask[0], (points[s, 1] - e1) * mask[1],
                              (points[s, 2] - e2) * mask[2], b0 * mask[0], b1 * mask[1],
                              b2 * mask[2])
            if w == 0.0:
                continue
            for u in range(3):
                for e in range(3):
                    stress[s, u, e] += f[u] * bb[e] * w


@kernel
def _point_sums(points, mask, origin, size, counts, start, items, kp, where, vectors, weights,
                out_vector, tensors, out_tensor):
    """weights[q] * vectors[q] phi(r - where[q]) into out_vector, and
    weights[q] * tensors[q] phi(r - where[q]) into out_tensor (either may be empty)."""
    rc = kp[2]
    has_vector = out_vector.shape[0] > 0
    has_tensor = out_tensor.shape[0] > 0
    near = np.empty(points.shape[0], dtype=np.int64)
    for q in range(where.shape[0]):
        x0, x1, x2 = where[q, 0], where[q, 1], where[q, 2]
        found = _points_near(origin, size, counts, start, items, x0 - rc, x0 + rc, x1 - rc,
                             x1 + rc, x2 - rc, x2 + rc, near)
        for t in range(found):
            s = near[t]
            w = _weight(points, s, mask, kp, x0, x1, x2) * weights[q]
            if w == 0.0:
                continue
            if has_vector:
                for u in range(3):
                    out_vector[s, u] += vectors[q, u] * w
            if has_tensor:
                for u in range(3):
                    for e in range(3):
                        out_tensor[s, u, e] += tensors[q, u, e] * w


# ------------------------------------------------------------------ sums and fields
class Sums:
    """The additive sums on a grid's cells (``SUMS``: name -> rank); ``count`` snapshots."""

    def __init__(self, grid, arrays: dict, count: int = 1):
        self.grid = grid
        self.arrays = arrays
        self.count = count

    @classmethod
    def zeros(cls, grid) -> "Sums":
        return cls(grid, {name: np.zeros(grid.shape + (3,) * rank)
                          for name, rank in SUMS.items()}, 0)

    def flat(self) -> np.ndarray:
        """Every sum in one float64 array (a message to reduce over ranks)."""
        return np.concatenate([self.arrays[name].ravel() for name in SUMS])

    @classmethod
    def from_flat(cls, grid, flat: np.ndarray, count: int = 1) -> "Sums":
        out, k = {}, 0
        for name, rank in SUMS.items():
            shape = grid.shape + (3,) * rank
            size = int(np.prod(shape))
            out[name] = flat[k:k + size].reshape(shape).copy()
            k += size
        return cls(grid, out, count)

    def __add__(self, other: "Sums") -> "Sums":
        return Sums(self.grid, {k: v + other.arrays[k] for k, v in self.arrays.items()},
                    self.count + other.count)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]


class TimeAverage:
    """Sums over a window of snapshots; :meth:`mean` is their average (derive the fields
    from it: the velocity is then the mean momentum over the mean density)."""

    def __init__(self, grid):
        self.total = Sums.zeros(grid)

    def add(self, sums: Sums) -> None:
        self.total = self.total + sums

    @property
    def count(self) -> int:
        return self.total.count

    def mean(self) -> Sums:
        if self.total.count == 0:
            raise InputError("coarse-graining: no snapshot in the time-averaging window")
        c = self.total.count
        return Sums(self.total.grid, {k: v / c for k, v in self.total.arrays.items()}, 1)


def _as_rows(a, name: str, width: int | None, dtype=np.float64) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=dtype)
    if width is None:
        if a.ndim != 1:
            raise InputError(f"coarse-graining: {name} must be one value per row")
    elif a.ndim != 2 or a.shape[1] != width:
        raise InputError(f"coarse-graining: {name} must have shape (rows, {width}), "
                         f"got {a.shape}")
    return a


def coarse_grain(grid, kernel, position, velocity, mass, radius, n: int | None = None,
                 pairs=None, boundary=None) -> Sums:
    """The sums on `grid` of the particles' first `n` rows, the `pairs` and the `boundary`
    contacts (module docstring). Pure: nothing is kept between calls."""
    grid.check(kernel)
    position = _as_rows(position, "position", 3)
    velocity = _as_rows(velocity, "velocity", 3)
    mass = _as_rows(mass, "mass", None)
    radius = _as_rows(radius, "radius", None)
    rows = position.shape[0]
    if not (velocity.shape[0] == mass.size == radius.size == rows):
        raise InputError("coarse-graining: position, velocity, mass and radius must have one "
                         "row per particle")
    n = rows if n is None else int(n)
    if not 0 <= n <= rows:
        raise InputError(f"coarse-graining: n = {n} particles to count, but {rows} rows given")
    points = grid.points
    S = points.shape[0]
    mask = grid.resolved.astype(np.float64)
    kp = kernel.params(grid.dim, grid.extent)
    bins = bin_points(points, grid.resolved, kernel.support)
    volume = 4.0 / 3.0 * math.pi * radius ** 3
    rho, vol = np.zeros(S), np.zeros(S)
    mom, fb = np.zeros((S, 3)), np.zeros((S, 3))
    flux, stress, fabric = np.zeros((S, 3, 3)), np.zeros((S, 3, 3)), np.zeros((S, 3, 3))
    none3 = np.zeros((0, 3))
    none33 = np.zeros((0, 3, 3))
    _particle_sums(points, mask, *bins, kp, position, velocity, mass, volume, n, rho, mom,
                   flux, vol)
    if pairs is not None:
        pi, pj, f, b = pairs
        pi = _as_rows(pi, "pair rows i", None, np.int64)
        pj = _as_rows(pj, "pair rows j", None, np.int64)
        f = _as_rows(f, "pair forces", 3)
        b = _as_rows(b, "branch vectors", 3)
        if not (pi.size == pj.size == f.shape[0] == b.shape[0]):
            raise InputError("coarse-graining: the pair arrays (i, j, force, branch) must "
                             "have one row per contact")
        if pi.size and (min(pi.min(), pj.min()) < 0 or max(pi.max(), pj.max()) >= rows):
            raise InputError("coarse-graining: a pair's row lies outside the particle rows")
        xi = position[pi]
        _segment_sums(points, mask, *bins, kp, xi, f, b, stress)
        length = np.sqrt(np.sum(b * b, axis=1))
        if np.any(length == 0.0):
            raise InputError("coarse-graining: a pair with a zero branch vector (two particles "
                             "at the same place)")
        nn = b / length[:, None]
        nn_outer = np.ascontiguousarray(nn[:, :, None] * nn[:, None, :])
        where = np.concatenate([xi, xi - b])
        weights = np.concatenate([volume[pi], volume[pj]])
        _point_sums(points, mask, *bins, kp, where, none3, weights, none3,
                    np.concatenate([nn_outer, nn_outer]), fabric)
    if boundary is not None:
        bi, bf, bc = boundary
        bi = _as_rows(bi, "boundary contact rows", None, np.int64)
        bf = _as_rows(bf, "boundary forces", 3)
        bc = _as_rows(bc, "boundary contact points", 3)
        if not (bi.size == bf.shape[0] == bc.shape[0]):
            raise InputError("coarse-graining: the boundary arrays (i, force, point) must "
                             "have one row per contact")
        if bi.size and (bi.min() < 0 or bi.max() >= rows):
            raise InputError("coarse-graining: a boundary contact's row lies outside the "
                             "particle rows")
        xi = position[bi]
        arm = np.ascontiguousarray(xi - bc)
        _segment_sums(points, mask, *bins, kp, xi, bf, arm, stress)
        _point_sums(points, mask, *bins, kp, bc, bf, np.ones(bi.size), fb, none33, none33)
        length = np.sqrt(np.sum(arm * arm, axis=1))
        nn = arm / np.where(length > 0.0, length, 1.0)[:, None]
        _point_sums(points, mask, *bins, kp, xi, none3, volume[bi], none3,
                    np.ascontiguousarray(nn[:, :, None] * nn[:, None, :]), fabric)
    arrays = {"density": grid.reduce(rho, 0), "momentum": grid.reduce(mom, 1),
              "momentum_flux": grid.reduce(flux, 2), "volume_fraction": grid.reduce(vol, 0),
              "contact_stress": grid.reduce(stress, 2), "boundary_force": grid.reduce(fb, 1),
              "fabric": grid.reduce(fabric, 2)}
    return Sums(grid, arrays)


def _safe_divide(a, b):
    return np.divide(a, b, out=np.zeros(np.broadcast_shapes(a.shape, b.shape)), where=b != 0)


def derive(sums: Sums) -> dict:
    """The fields of the module docstring from `sums` (one snapshot or a time average)."""
    rho = sums["density"]
    p = sums["momentum"]
    u = _safe_divide(p, rho[..., None])
    kinetic = sums["momentum_flux"] - p[..., :, None] * u[..., None, :]
    stress = kinetic + sums["contact_stress"]
    pressure = np.trace(stress, axis1=-2, axis2=-1) / 3.0
    dev = stress - pressure[..., None, None] * np.eye(3)
    q = np.sqrt(1.5 * np.sum(dev * dev, axis=(-2, -1)))
    nu = sums["volume_fraction"]
    return {
        "density": rho, "momentum": p, "velocity": u, "kinetic_stress": kinetic,
        "contact_stress": sums["contact_stress"], "stress": stress,
        "boundary_force": sums["boundary_force"], "volume_fraction": nu,
        "fabric": sums["fabric"],
        "coordination": _safe_divide(np.trace(sums["fabric"], axis1=-2, axis2=-1), nu),
        "pressure": pressure, "deviatoric_stress": dev,
        "stress_ratio": _safe_divide(q, pressure),
        "temperature": _safe_divide(np.trace(kinetic, axis1=-2, axis2=-1), 3.0 * rho),
    }


__all__ = ["coarse_grain", "derive", "Sums", "TimeAverage", "SUMS", "bin_points"]
