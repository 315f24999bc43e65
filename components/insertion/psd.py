"""Particle size distributions (PSD): cumulative fractions by number, length, surface or volume.

A :class:`PSD` is a list of size classes, diameters ``edges[0] < edges[1] < ... < edges[m]``
in metres (all > 0), and the fraction ``weights[k]`` of class k measured in one *basis*
r (ISO 9276 notation Q_r): 0 by number, 1 by length, 2 by surface, 3 by volume (mass at one
density). Within a class the density of the given basis is constant, so the cumulative
distribution Q_r(d) of the given basis is piecewise linear between the class edges, as the
table of a sieve analysis or a MercuryDPM PSD reads.

Conversions between bases (the moment transformation). With q_r the density of basis r,
q_s(d) = d^(s-r) q_r(d) / integral d^(s-r) q_r(d) dd. In class k with constant
q_r = w_k / (b_k - a_k) the basis-s density is proportional to d^(s-r), so every quantity of
every basis is exact, in closed form, from the integrals
I_p(a, x) = integral_a^x t^p dt = (x^(p+1) - a^(p+1)) / (p+1) (p != -1), ln(x / a) (p = -1):

- the class fractions in basis s: w_k^s = w_k I_(s-r)(a_k, b_k) / (b_k - a_k), normalised;
- the cumulative Q_s(d) inside class k: the classes below plus w_k^s I_(s-r)(a_k, d) /
  I_(s-r)(a_k, b_k);
- the quantile (inverse) d = (a^(p+1) + (p+1) y)^(1/(p+1)), or a e^y for p = -1, with y the
  part of I_(s-r) still needed inside the class.

A distribution given by volume is therefore *not* piecewise linear by number (inside a class
its number density falls as d^-3), and the converted one is exact, not the per-class
representative-size approximation. Sampling draws diameters by number: uniform u in [0, 1)
mapped through the exact inverse of Q_0 (inverse transform sampling), so the sample follows
the requested distribution in every basis.

Named forms are made piecewise linear on many classes between cut-offs (:func:`uniform` is
exact; :func:`normal` and :func:`lognormal` are truncated at the cut-offs and tabulated at
``classes`` points, equal steps in d or in ln d; the tabulated Q_r is exact at the points and
off by O(h^2) between them).

Mixtures (:class:`Mixture`): several components, each a PSD with a species and a shape, with
fractions by number or by volume; a particle picks its component first, then its size.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ecs_dem.errors import InputError

#: basis names and their exponent r (ISO 9276: Q_0 number, Q_1 length, Q_2 surface, Q_3 volume)
BASES = {"number": 0, "length": 1, "surface": 2, "area": 2, "volume": 3, "mass": 3}
BASIS_NAMES = {0: "number", 1: "length", 2: "surface", 3: "volume"}
#: fractions that rise to 1 within this are accepted (and rescaled to 1 exactly)
SUM_TOLERANCE = 1e-6


class PSDError(InputError):
    """A size distribution that cannot be used; the message names the defect and the fix."""


def basis_exponent(basis) -> int:
    """0, 1, 2, 3 from a basis name ("number", "length", "surface", "volume") or exponent."""
    if isinstance(basis, (int, np.integer)) and int(basis) in BASIS_NAMES:
        return int(basis)
    key = str(basis).strip().lower()
    if key in BASES:
        return BASES[key]
    raise PSDError(f"PSD basis {basis!r} is unknown: use one of number, length, surface, "
                   "volume (or 0, 1, 2, 3)")


def _power_integral(a, x, p: int):
    """integral_a^x t^p dt, elementwise (a, x > 0)."""
    if p == -1:
        return np.log(x / a)
    return (x ** (p + 1) - a ** (p + 1)) / (p + 1)


def _power_integral_inverse(a, y, p: int):
    """The x with integral_a^x t^p dt = y."""
    if p == -1:
        return a * np.exp(y)
    return np.maximum(a ** (p + 1) + (p + 1) * y, 0.0) ** (1.0 / (p + 1))


@dataclass(frozen=True)
class PSD:
    """Size classes ``edges`` (m+1 diameters, m) and their fractions ``weights`` in ``basis``.

    Build one with :meth:`from_cdf`, :meth:`from_classes`, :func:`uniform`, :func:`normal`,
    :func:`lognormal` or :func:`read_psd`; the constructor checks and normalises as they do.
    """

    edges: np.ndarray
    weights: np.ndarray
    basis: int = 0

    def __post_init__(self):
        e = np.ascontiguousarray(self.edges, dtype=np.float64).reshape(-1)
        w = np.ascontiguousarray(self.weights, dtype=np.float64).reshape(-1)
        r = basis_exponent(self.basis)
        if e.size < 2 or w.size != e.size - 1:
            raise PSDError(f"PSD: need m+1 class edges for m class fractions, got {e.size} edges "
                           f"and {w.size} fractions")
        if not np.all(np.isfinite(e)) or e[0] <= 0:
            raise PSDError(f"PSD: class edges must be finite diameters > 0 in metres (got smallest "
                           f"{e.min()!r}); a size of 0 has no volume: start at the smallest grain")
        if np.any(np.diff(e) <= 0):
            k = int(np.flatnonzero(np.diff(e) <= 0)[0])
            raise PSDError(f"PSD: sizes must rise strictly, but size {k + 1} ({e[k + 1]:.6g} m) "
                           f"follows {e[k]:.6g} m: sort the table and merge repeated sizes")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            k = int(np.flatnonzero(~(np.isfinite(w) & (w >= 0)))[0])
            raise PSDError(f"PSD: the fraction of class {k} ({e[k]:.6g}-{e[k + 1]:.6g} m) is "
                           f"{w[k]!r}; cumulative fractions must not fall (fractions >= 0)")
        total = float(w.sum())
        if abs(total - 1.0) > SUM_TOLERANCE:
            hint = (" (percent? divide by 100)" if abs(total - 100.0) < 100 * SUM_TOLERANCE
                    else "")
            raise PSDError(f"PSD: the fractions rise to {total:.8g}, not 1{hint}: give cumulative "
                           "fractions from 0 at the smallest size to 1 at the largest, or class "
                           "fractions that sum to 1 (or pass normalize=True)")
        object.__setattr__(self, "edges", e)
        object.__setattr__(self, "weights", w / total)
        object.__setattr__(self, "basis", r)

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_cdf(cls, sizes, cumulative, basis="number", *, normalize: bool = False) -> "PSD":
        """Cumulative fractions Q_r(d) at the diameters ``sizes`` (ascending, m). The first
        value is the fraction below the smallest size and must be 0; the last must be 1
        (``normalize=True`` rescales Q - Q[0] to end at 1 instead)."""
        d = np.asarray(sizes, dtype=np.float64).reshape(-1)
        q = np.asarray(cumulative, dtype=np.float64).reshape(-1)
        if d.size != q.size:
            raise PSDError(f"PSD: {d.size} sizes but {q.size} cumulative fractions: give one "
                           "fraction per size")
        if d.size < 2:
            raise PSDError("PSD: a cumulative distribution needs at least two sizes")
        if normalize:
            q = (q - q[0]) / max(q[-1] - q[0], 1e-300)
        if abs(q[0]) > SUM_TOLERANCE:
            raise PSDError(f"PSD: the cumulative fraction at the smallest size {d[0]:.6g} m is "
                           f"{q[0]:.6g}, not 0: add a smaller size with fraction 0 (no grain is "
                           "smaller than the first size)")
        return cls(d, np.diff(q), basis)

    @classmethod
    def from_classes(cls, edges, fractions, basis="number", *, normalize: bool = False) -> "PSD":
        """Fractions per size class (a histogram, the PDF times the class width): class k runs
        from edges[k] to edges[k+1]. They must sum to 1 unless ``normalize``."""
        w = np.asarray(fractions, dtype=np.float64)
        if normalize:
            w = w / max(float(w.sum()), 1e-300)
        return cls(edges, w, basis)

    # ---- the distribution in any basis ----------------------------------------------------
    @property
    def basis_name(self) -> str:
        return BASIS_NAMES[self.basis]

    @property
    def d_min(self) -> float:
        return float(self.edges[0])

    @property
    def d_max(self) -> float:
        return float(self.edges[-1])

    def _scaled(self):
        """Edges in units of the largest size (no overflow of d^-3 for micrometre grains)."""
        return self.edges / self.edges[-1]

    def class_fractions(self, basis="number") -> np.ndarray:
        """The fraction of each class in another basis (the moment transformation)."""
        s = basis_exponent(basis)
        if s == self.basis:
            return self.weights.copy()
        x = self._scaled()
        a, b = x[:-1], x[1:]
        w = self.weights * _power_integral(a, b, s - self.basis) / (b - a)
        return w / w.sum()

    def converted(self, basis) -> "PSD":
        """The same distribution, tabulated by another basis at the same class edges. The class
        fractions are exact; the new one is piecewise linear in its own basis, which the
        original is not: convert for a table, sample from the original."""
        return PSD(self.edges, self.class_fractions(basis), basis)

    def cdf(self, d, basis="number") -> np.ndarray:
        """Q_s(d): the fraction (in basis s) of grains smaller than the diameters d (m)."""
        s = basis_exponent(basis)
        d = np.asarray(d, dtype=np.float64)
        x = np.clip(d / self.edges[-1], self._scaled()[0], 1.0)
        e = self._scaled()
        k = np.clip(np.searchsorted(e, x, side="right") - 1, 0, e.size - 2)
        w = self.class_fractions(s)
        below = np.concatenate(([0.0], np.cumsum(w)))
        p = s - self.basis
        a, b = e[k], e[k + 1]
        inside = w[k] * _power_integral(a, x, p) / _power_integral(a, b, p)
        return np.clip(below[k] + inside, 0.0, 1.0)

    def quantile(self, y, basis="number") -> np.ndarray:
        """The diameter d with Q_s(d) = y (y in [0, 1]): d50 by volume is quantile(0.5,
        "volume")."""
        s = basis_exponent(basis)
        y = np.asarray(y, dtype=np.float64)
        if np.any((y < 0) | (y > 1)) or not np.all(np.isfinite(y)):
            raise PSDError(f"PSD quantile: fractions must lie in [0, 1], got {y!r}")
        w = self.class_fractions(s)
        below = np.concatenate(([0.0], np.cumsum(w)))
        below[-1] = 1.0
        e = self._scaled()
        k = np.clip(np.searchsorted(below, y, side="right") - 1, 0, w.size - 1)
        # empty classes never hold a quantile: move to the next class with weight
        nonempty = np.flatnonzero(w > 0)
        k = nonempty[np.clip(np.searchsorted(nonempty, k), 0, nonempty.size - 1)]
        p = s - self.basis
        a, b = e[k], e[k + 1]
        part = np.clip((y - below[k]) / w[k], 0.0, 1.0) * _power_integral(a, b, p)
        x = np.clip(_power_integral_inverse(a, part, p), a, b)
        return x * self.edges[-1]

    def d10(self, basis="number") -> float:
        return float(self.quantile(0.1, basis))

    def d50(self, basis="number") -> float:
        return float(self.quantile(0.5, basis))

    def d90(self, basis="number") -> float:
        return float(self.quantile(0.9, basis))

    def moment(self, k: float) -> float:
        """The k-th moment of the diameter by number, E[d^k] (m^k): moment(3) pi/6 is the
        mean grain volume."""
        x = self._scaled()
        a, b = x[:-1], x[1:]
        w0 = self.class_fractions(0)
        p0 = -self.basis
        # number density in class j: w0_j t^p0 / I_p0(a, b); its k-th moment is a ratio of
        # the power integrals I_(p0+k) / I_p0
        num = _power_integral_general(a, b, p0 + k)
        den = _power_integral(a, b, p0)
        return float(np.sum(w0 * num / den)) * self.edges[-1] ** k

    def mean_diameter(self, p: int = 1, q: int = 0) -> float:
        """The moment-ratio mean D[p,q] = (E[d^p] / E[d^q])^(1/(p-q)) by number: D[1,0] the
        number mean, D[3,2] the Sauter mean, D[4,3] the volume-weighted (De Brouckere) mean."""
        if p == q:
            raise PSDError("PSD mean_diameter: p and q must differ (D[p,q], e.g. D[3,2])")
        return (self.moment(p) / self.moment(q)) ** (1.0 / (p - q))

    def mean_volume(self) -> float:
        """The mean volume of a sphere drawn by number, pi/6 E[d^3] (m^3)."""
        return math.pi / 6.0 * self.moment(3)

    # ---- sampling -----------------------------------------------------------------------
    def sample(self, n: int, rng) -> np.ndarray:
        """n diameters (m) drawn by number: the exact inverse of Q_0 at n uniform numbers of
        ``rng`` (a numpy Generator); the same seed gives the same sizes on every rank."""
        n = int(n)
        if n < 0:
            raise PSDError(f"PSD sample: n = {n} must be >= 0")
        return self.quantile(rng.random(n), "number")

    def sample_radii(self, n: int, rng) -> np.ndarray:
        """n radii (m), half the diameters of :meth:`sample`."""
        return 0.5 * self.sample(n, rng)

    def table(self, basis="number", points: int | None = None):
        """(diameters, Q_s): the cumulative distribution at the class edges, or at ``points``
        diameters between d_min and d_max (for a plot)."""
        d = self.edges if points is None else np.linspace(self.d_min, self.d_max, int(points))
        return d, self.cdf(d, basis)

    def summary(self) -> str:
        return (f"d10/d50/d90 by number {self.d10() * 1e3:.4g}/{self.d50() * 1e3:.4g}/"
                f"{self.d90() * 1e3:.4g} mm, by volume {self.d10('volume') * 1e3:.4g}/"
                f"{self.d50('volume') * 1e3:.4g}/{self.d90('volume') * 1e3:.4g} mm, "
                f"sizes {self.d_min * 1e3:.4g}-{self.d_max * 1e3:.4g} mm")


def _power_integral_general(a, b, p: float):
    """integral_a^b t^p dt for a real exponent p."""
    if abs(p + 1.0) < 1e-12:
        return np.log(b / a)
    return (b ** (p + 1) - a ** (p + 1)) / (p + 1)


# ---- named forms --------------------------------------------------------------------------
def _check_cutoffs(name: str, d_min, d_max) -> tuple[float, float]:
    lo, hi = float(d_min), float(d_max)
    if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo < hi):
        raise PSDError(f"{name} PSD: need cut-offs 0 < d_min < d_max (diameters in metres), got "
                       f"{d_min!r}, {d_max!r}: swap them or widen the range")
    return lo, hi


def uniform(d_min: float, d_max: float, basis="number") -> PSD:
    """Diameters uniform between d_min and d_max in the given basis (exact, one class)."""
    lo, hi = _check_cutoffs("uniform", d_min, d_max)
    return PSD(np.array([lo, hi]), np.array([1.0]), basis)


def _tabulated(name, cdf: Callable, lo, hi, classes, basis, log: bool) -> PSD:
    classes = int(classes)
    if classes < 1:
        raise PSDError(f"{name} PSD: classes = {classes} must be >= 1")
    d = np.geomspace(lo, hi, classes + 1) if log else np.linspace(lo, hi, classes + 1)
    q = cdf(d)
    if q[-1] - q[0] <= 0:
        raise PSDError(f"{name} PSD: no probability between the cut-offs {lo:.6g} and {hi:.6g} m "
                       "(they lie far in one tail): move them towards the centre")
    return PSD.from_cdf(d, (q - q[0]) / (q[-1] - q[0]), basis)


def normal(mean: float, std: float, d_min: float, d_max: float, basis="number",
           classes: int = 200) -> PSD:
    """A normal distribution of the diameter (mean, std in m) in the given basis, truncated at
    the cut-offs d_min > 0 and d_max, tabulated at ``classes`` equal steps."""
    lo, hi = _check_cutoffs("normal", d_min, d_max)
    if not (np.isfinite(std) and std > 0):
        raise PSDError(f"normal PSD: std = {std!r} must be > 0 (m); for one size use "
                       "uniform(d, d * (1 + 1e-9))")
    phi = np.vectorize(lambda z: 0.5 * math.erfc(-z / math.sqrt(2.0)))
    return _tabulated("normal", lambda d: phi((d - mean) / std), lo, hi, classes, basis, False)


def lognormal(median: float, sigma: float, d_min: float, d_max: float, basis="number",
              classes: int = 200) -> PSD:
    """ln d normal with median ``median`` (m) and standard deviation ``sigma`` (of ln d,
    dimensionless) in the given basis, truncated at d_min, d_max, tabulated at ``classes``
    equal steps of ln d. Untruncated, the other bases are lognormal too with the same sigma
    and medians median * exp((s - r) sigma^2) (Hatch-Choate)."""
    lo, hi = _check_cutoffs("lognormal", d_min, d_max)
    if not (np.isfinite(median) and median > 0):
        raise PSDError(f"lognormal PSD: median = {median!r} must be a diameter > 0 in metres")
    if not (np.isfinite(sigma) and sigma > 0):
        raise PSDError(f"lognormal PSD: sigma = {sigma!r} (of ln d) must be > 0")
    phi = np.vectorize(lambda z: 0.5 * math.erfc(-z / math.sqrt(2.0)))
    return _tabulated("lognormal", lambda d: phi(np.log(d / median) / sigma), lo, hi, classes,
                      basis, True)


def read_psd(path, basis=None) -> PSD:
    """A cumulative PSD from a CSV file: two columns, diameter (m) and cumulative fraction,
    with an optional header line; a header ``diameter,volume`` (or number, length, surface)
    names the basis, else ``basis`` (default number) does."""
    path = Path(path)
    try:
        rows = list(csv.reader(path.read_text().splitlines()))
    except OSError as exc:
        raise PSDError(f"PSD file {path}: cannot read it ({exc.strerror}): check the path") from exc
    rows = [r for r in rows if r and not r[0].lstrip().startswith("#")]
    named = None
    if rows and not _is_number(rows[0][0]):
        header = [c.strip().lower() for c in rows[0]]
        named = next((c for c in header[1:] if c in BASES), None)
        rows = rows[1:]
    try:
        data = np.array([[float(r[0]), float(r[1])] for r in rows])
    except (ValueError, IndexError) as exc:
        raise PSDError(f"PSD file {path}: every line must hold a diameter (m) and a cumulative "
                       f"fraction, separated by a comma ({exc})") from exc
    if data.shape[0] < 2:
        raise PSDError(f"PSD file {path}: needs at least two lines of diameter, fraction")
    return PSD.from_cdf(data[:, 0], data[:, 1], named or (basis if basis is not None else 0))


def write_psd(path, psd: PSD, basis=None) -> None:
    """The CSV :func:`read_psd` reads: class edges and the cumulative fraction."""
    b = psd.basis if basis is None else basis_exponent(basis)
    d, q = psd.table(b)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["diameter", BASIS_NAMES[b]])
        for x, y in zip(d, q):
            w.writerow([repr(float(x)), repr(float(y))])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ---- shapes and mixtures -------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """What the insertion needs to know of a grain shape at size d (its diameter, or for a
    clump the diameter of the sphere it is scaled to):

    - ``bounding`` * d: the radius of a sphere about the grain's reference point that holds
      the whole grain (the insertion keeps these spheres apart);
    - ``volume`` * d^3: the solid volume (volume fractions of mixtures, solid fraction);
    - ``add(world, position, orientation, diameter, species)``: puts the grains in the world
      (spheres: ``add_particles``; a clump template: its body and pebbles, rotated by the
      unit quaternions ``orientation``).
    """

    name: str
    bounding: float
    volume: float
    add: Callable | None = None


def _add_spheres(world, position, orientation, diameter, species):
    from ecs_dem.components.particles import add_particles
    return add_particles(world, position, 0.5 * diameter, species)


SPHERE = Shape("sphere", 0.5, math.pi / 6.0, _add_spheres)


@dataclass(frozen=True)
class Component:
    """One kind of grain in a mixture: its size distribution, species row and shape."""

    psd: PSD
    fraction: float
    species: int = 0
    shape: Shape = SPHERE


@dataclass
class Mixture:
    """Several components with fractions by ``basis`` "number" or "volume" (solid volume).

    ``sample(n, rng)`` returns (component index, diameter) per grain: the component by its
    number fraction (a volume fraction phi_i becomes the number fraction
    phi_i / V_i / sum_j phi_j / V_j with V_i the component's mean grain volume), then the
    size from the component's PSD."""

    components: list
    basis: str = "number"
    number_fractions: np.ndarray = field(init=False)

    def __post_init__(self):
        if not self.components:
            raise PSDError("mixture: give at least one component")
        comps = [c if isinstance(c, Component) else Component(*c) for c in self.components]
        self.components = comps
        f = np.array([c.fraction for c in comps], dtype=np.float64)
        if not np.all(np.isfinite(f)) or np.any(f < 0) or abs(f.sum() - 1.0) > SUM_TOLERANCE:
            raise PSDError(f"mixture: component fractions {f.tolist()} must be >= 0 and sum to "
                           "1: rescale them")
        b = str(self.basis).lower()
        if b == "number":
            nf = f
        elif b in ("volume", "mass"):
            v = np.array([c.shape.volume * c.psd.moment(3) for c in comps])
            nf = f / v
        else:
            raise PSDError(f"mixture: basis {self.basis!r} must be number or volume")
        self.number_fractions = nf / nf.sum()

    def sample(self, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
        which = np.searchsorted(np.cumsum(self.number_fractions), rng.random(int(n)),
                                side="right")
        which = np.minimum(which, len(self.components) - 1)
        d = np.empty(int(n))
        for i, c in enumerate(self.components):
            rows = np.flatnonzero(which == i)
            d[rows] = c.psd.sample(rows.size, rng)
        return which, d

    def mean_volume(self) -> float:
        """Mean solid volume per grain (m^3)."""
        return float(sum(nf * c.shape.volume * c.psd.moment(3)
                         for nf, c in zip(self.number_fractions, self.components)))


def psd_from_config(form: str, *, d_min: float, d_max: float, basis="number",
                    mean: float = 0.0, spread: float = 0.0) -> PSD:
    """The PSD a driver's config names: ``form`` "uniform" (between the cut-offs), "normal"
    (``mean`` and standard deviation ``spread``, m), "lognormal" (median ``mean`` in m and
    ``spread`` the standard deviation of ln d), each truncated at the diameters d_min, d_max
    and in ``basis``; or the path of a CSV file (:func:`read_psd`: its own sizes, the basis
    from its header or ``basis``)."""
    key = str(form).strip()
    name = key.lower()
    if name == "uniform":
        return uniform(d_min, d_max, basis)
    if name in ("normal", "lognormal"):
        if not mean > 0 or not spread > 0:
            raise PSDError(f"{name} PSD: set psd_mean (m) and psd_spread (> 0) in the config "
                           f"(got {mean!r}, {spread!r})")
        make = normal if name == "normal" else lognormal
        return make(mean, spread, d_min, d_max, basis)
    if Path(key).suffix.lower() in (".csv", ".txt"):
        return read_psd(key, basis)
    raise PSDError(f"psd = {form!r}: use uniform, normal, lognormal or the path of a CSV file "
                   "(diameter, cumulative fraction)")


__all__ = ["PSD", "PSDError", "BASES", "psd_from_config", "uniform", "normal", "lognormal",
           "read_psd", "write_psd", "Shape", "SPHERE", "Component", "Mixture", "basis_exponent"]
