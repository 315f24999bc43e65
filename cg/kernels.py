"""Coarse-graining functions (kernels) phi: their value and their exact line integral.

Two families, each normalised in D = 1, 2 or 3 dimensions (the directions a grid
resolves; ``cg.grid``):

* Gaussian of width ``w`` (standard deviation per direction), cut off at the radius
  ``r_c = c w`` (``cutoff`` c, default 3) and normalised over that truncated ball, so that
  its integral over the D-dimensional space is exactly 1:
  phi(r) = A_D exp(-r^2 / (2 w^2)) for r < c w, 0 beyond, with
  1/A_1 = sqrt(2 pi) w erf(c / sqrt 2),
  1/A_2 = 2 pi w^2 (1 - exp(-c^2 / 2)),
  1/A_3 = (2 pi)^(3/2) w^3 [erf(c / sqrt 2) - sqrt(2/pi) c exp(-c^2 / 2)].
* Lucy's polynomial of support radius ``h``: phi(r) = A_D (1 + 3 s)(1 - s)^3 with s = r / h
  < 1, 0 beyond; A_1 = 5 / (4 h), A_2 = 5 / (pi h^2), A_3 = 105 / (16 pi h^3). Its width
  (standard deviation per direction in 3D) is h / sqrt(12).

A kernel is handed to the compiled functions as a small float64 array ``kp``
(:meth:`Kernel.params`): ``(family, w, r_c, A)`` with family 0 (Gaussian) or 1 (Lucy), w the
Gaussian's width or Lucy's h, r_c the support radius and A the normalisation (divided, for a
grid that averages some directions, by their extent: ``cg.grid``).

Compiled functions (``ecs_dem.jit.kernel``, pure, arrays and numbers only)::

    value(kp, rsq)                          phi at the squared distance rsq (m^2)
    line_integral(kp, d0, d1, d2, b0, b1, b2)
        int_0^1 phi(norm(d + s b)) ds: the kernel along the segment from d to d + b. The
        contact stress of a pair uses d = r - x_i, b = x_i - x_j (the branch vector).

Line integral: with L = norm(b), s0 the parameter of the point of the line closest to 0 and
p its distance, norm(d + s b)^2 = p^2 + L^2 (s - s0)^2. The segment is clipped to the support
(abs(t) < sqrt(r_c^2 - p^2) / L, t = s - s0), then
* Gaussian: A exp(-p^2/2w^2) w sqrt(pi/2) / L [erf(L t_b / (sqrt 2 w)) - erf(L t_a / (sqrt 2 w))]
  (erfc differences where both ends lie on the same side, for accuracy);
* Lucy: with q = L t / h, P = p / h, (1+3s)(1-s)^3 = 1 - 6 s^2 + 8 s^3 - 3 s^4 and
  s^2 = P^2 + q^2, the integral is A h / L [F(q_b) - F(q_a)] with
  F(q) = q - 6 (P^2 q + q^3/3) + 8 G(q) - 3 (P^4 q + 2 P^2 q^3 / 3 + q^5 / 5),
  G(q) = int (P^2 + q^2)^(3/2) dq = q (2 q^2 + 5 P^2) sqrt(P^2 + q^2) / 8 + 3 P^4 asinh(q/P) / 8;
  the difference of the two asinh terms is taken as one logarithm (``_lucy_difference``).
A segment shorter than 1e-3 r_c is integrated by Simpson's rule instead (error below
1e-15 of the kernel's peak), where the closed forms lose digits to cancellation.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel, inline

GAUSSIAN = 0
LUCY = 1
#: segments shorter than this fraction of the support radius use Simpson's rule
SHORT_SEGMENT = 1e-3


def gaussian_norm(width: float, cutoff: float, dim: int) -> float:
    """A_D of the Gaussian of `width` cut off at `cutoff` widths, in `dim` dimensions."""
    c, w = cutoff, width
    if dim == 1:
        return 1.0 / (math.sqrt(2.0 * math.pi) * w * math.erf(c / math.sqrt(2.0)))
    if dim == 2:
        return 1.0 / (2.0 * math.pi * w * w * (1.0 - math.exp(-0.5 * c * c)))
    inner = math.erf(c / math.sqrt(2.0)) - math.sqrt(2.0 / math.pi) * c * math.exp(-0.5 * c * c)
    return 1.0 / ((2.0 * math.pi) ** 1.5 * w ** 3 * inner)


def lucy_norm(radius: float, dim: int) -> float:
    """A_D of Lucy's polynomial of support `radius`, in `dim` dimensions."""
    h = radius
    if dim == 1:
        return 5.0 / (4.0 * h)
    if dim == 2:
        return 5.0 / (math.pi * h * h)
    return 105.0 / (16.0 * math.pi * h ** 3)


class Kernel:
    """A coarse-graining function: :meth:`gaussian` or :meth:`lucy` (module docstring).

    Attributes: ``family`` (GAUSSIAN or LUCY), ``width`` (m, standard deviation per
    direction of the 3D kernel), ``support`` (m, the radius beyond which phi = 0)."""

    def __init__(self, family: int, scale: float, support: float, width: float):
        self.family = family
        self.scale = scale      # the Gaussian's w, Lucy's h
        self.support = support
        self.width = width

    @classmethod
    def gaussian(cls, width: float, cutoff: float = 3.0) -> "Kernel":
        """A Gaussian of standard deviation `width` (m) cut off at `cutoff` widths."""
        if not (math.isfinite(width) and width > 0):
            raise InputError(f"coarse-graining: the Gaussian's width must be > 0 m (got {width})")
        if not (math.isfinite(cutoff) and cutoff >= 1.0):
            raise InputError(f"coarse-graining: the Gaussian's cutoff must be at least 1 width "
                             f"(got {cutoff}); 3 is usual")
        return cls(GAUSSIAN, float(width), float(cutoff) * float(width), float(width))

    @classmethod
    def lucy(cls, radius: float) -> "Kernel":
        """Lucy's polynomial of support `radius` (m); its width is radius / sqrt(12)."""
        if not (math.isfinite(radius) and radius > 0):
            raise InputError(f"coarse-graining: Lucy's support radius must be > 0 m "
                             f"(got {radius})")
        return cls(LUCY, float(radius), float(radius), float(radius) / math.sqrt(12.0))

    @property
    def name(self) -> str:
        return "gaussian" if self.family == GAUSSIAN else "lucy"

    def norm(self, dim: int) -> float:
        """A_D: the normalisation in `dim` (1, 2 or 3) dimensions."""
        if self.family == GAUSSIAN:
            return gaussian_norm(self.scale, self.support / self.scale, dim)
        return lucy_norm(self.scale, dim)

    def params(self, dim: int, extent: float = 1.0) -> np.ndarray:
        """The array ``kp`` of the compiled functions in `dim` dimensions, its norm divided by
        `extent` (the volume, area or length of the averaged directions, 1 for none)."""
        return np.array([float(self.family), self.scale, self.support,
                         self.norm(dim) / extent])

    def describe(self) -> dict:
        """The kernel as attributes of an output file."""
        return {"kernel": self.name, "width": self.width, "support": self.support,
                "scale": self.scale}


@inline
def _profile(family, scale, support, rsq):
    """phi / A at the squared distance rsq."""
    if rsq >= support * support:
        return 0.0
    if family == 0:
        return math.exp(-0.5 * rsq / (scale * scale))
    s = math.sqrt(rsq) / scale
    u = 1.0 - s
    return (1.0 + 3.0 * s) * u * u * u


@kernel
def value(kp, rsq):
    """phi at the squared distance rsq (module docstring)."""
    return kp[3] * _profile(int(kp[0]), kp[1], kp[2], rsq)


@inline
def _erf_difference(a, b):
    """erf(b) - erf(a) for a <= b, without cancellation when both have the same sign."""
    if a >= 0.0:
        return math.erfc(a) - math.erfc(b)
    if b <= 0.0:
        return math.erfc(-b) - math.erfc(-a)
    return math.erf(b) - math.erf(a)


@inline
def _lucy_polynomial(P2, q, rho):
    """F(q) of the module docstring without its asinh term (P2 = P^2, rho = sqrt(P2 + q^2))."""
    q2 = q * q
    g = q * (2.0 * q2 + 5.0 * P2) * rho / 8.0
    return (q - 6.0 * (P2 * q + q2 * q / 3.0) + 8.0 * g
            - 3.0 * (P2 * P2 * q + 2.0 * P2 * q2 * q / 3.0 + q2 * q2 * q / 5.0))


@inline
def _asinh_argument(P2, q, rho):
    """q + sqrt(P^2 + q^2) = P exp(asinh(q / P)), without cancellation for q < 0."""
    return q + rho if q >= 0.0 else P2 / (rho - q)


@inline
def _lucy_difference(P2, qa, qb):
    """F(q_b) - F(q_a); the two asinh terms of G as one logarithm:
    asinh(q_b/P) - asinh(q_a/P) = log((q_b + rho_b) / (q_a + rho_a))."""
    ra = math.sqrt(P2 + qa * qa)
    rb = math.sqrt(P2 + qb * qb)
    out = _lucy_polynomial(P2, qb, rb) - _lucy_polynomial(P2, qa, ra)
    if P2 > 1e-30:  # below, P^4 log(...) vanishes against the rest
        ratio = _asinh_argument(P2, qb, rb) / _asinh_argument(P2, qa, ra)
        out += 3.0 * P2 * P2 * math.log(ratio)  # 8 * 3/8 P^4 (asinh_b - asinh_a)
    return out


@kernel
def line_integral(kp, d0, d1, d2, b0, b1, b2):
    """int_0^1 phi(norm(d + s b)) ds (module docstring)."""
    family = int(kp[0])
    scale = kp[1]
    rc = kp[2]
    L2 = b0 * b0 + b1 * b1 + b2 * b2
    if L2 < (SHORT_SEGMENT * rc) ** 2:  # Simpson's rule on a short segment
        e0 = _profile(family, scale, rc, d0 * d0 + d1 * d1 + d2 * d2)
        m0, m1, m2 = d0 + 0.5 * b0, d1 + 0.5 * b1, d2 + 0.5 * b2
        em = _profile(family, scale, rc, m0 * m0 + m1 * m1 + m2 * m2)
        f0, f1, f2 = d0 + b0, d1 + b1, d2 + b2
        e1 = _profile(family, scale, rc, f0 * f0 + f1 * f1 + f2 * f2)
        return kp[3] * (e0 + 4.0 * em + e1) / 6.0
    L = math.sqrt(L2)
    s0 = -(d0 * b0 + d1 * b1 + d2 * b2) / L2
    c0, c1, c2 = d0 + s0 * b0, d1 + s0 * b1, d2 + s0 * b2
    p2 = c0 * c0 + c1 * c1 + c2 * c2
    if p2 >= rc * rc:
        return 0.0
    half = math.sqrt(rc * rc - p2) / L
    ta = max(-s0, -half)
    tb = min(1.0 - s0, half)
    if tb <= ta:
        return 0.0
    if family == 0:
        k = L / (math.sqrt(2.0) * scale)
        return (kp[3] * math.exp(-0.5 * p2 / (scale * scale)) * scale * math.sqrt(0.5 * math.pi)
                / L * _erf_difference(k * ta, k * tb))
    P2 = p2 / (scale * scale)
    qa = L * ta / scale
    qb = L * tb / scale
    return kp[3] * scale / L * _lucy_difference(P2, qa, qb)


__all__ = ["Kernel", "GAUSSIAN", "LUCY", "value", "line_integral", "gaussian_norm",
           "lucy_norm"]
