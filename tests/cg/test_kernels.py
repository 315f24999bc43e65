"""Kernels: normalisation over their support and exact line integrals against quadrature."""
import math

import numpy as np
import pytest

from ecs_dem.cg.kernels import Kernel, line_integral, value
from ecs_dem.errors import InputError

KERNELS = [Kernel.gaussian(0.7, 3.0), Kernel.gaussian(0.4, 2.0), Kernel.lucy(1.3)]


def gauss_legendre(f, a, b, pieces=64, order=20):
    """int_a^b f by composite Gauss-Legendre (f vectorised)."""
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(a, b, pieces + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        t = 0.5 * (hi - lo) * x + 0.5 * (hi + lo)
        total += 0.5 * (hi - lo) * np.dot(w, f(t))
    return total


def phi(kp, r):
    return np.array([value(kp, float(x) ** 2) for x in np.atleast_1d(r)])


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_normalised_over_support(k, dim):
    kp = k.params(dim)
    rc = k.support
    # radial integral: surface of the unit sphere in dim dimensions times r^(dim-1);
    # pieces split at the support so the kernel's cut falls on an edge
    surface = {1: 2.0, 2: 2.0 * math.pi, 3: 4.0 * math.pi}[dim]
    total = surface * gauss_legendre(lambda r: phi(kp, r) * r ** (dim - 1), 0.0, rc)
    assert total == pytest.approx(1.0, abs=1e-12)
    assert value(kp, (1.0000001 * rc) ** 2) == 0.0


def test_lucy_width_is_its_standard_deviation():
    k = Kernel.lucy(2.0)
    kp = k.params(3)
    second = 4.0 * math.pi / 3.0 * gauss_legendre(lambda r: phi(kp, r) * r ** 4, 0.0, 2.0)
    assert math.sqrt(second) == pytest.approx(k.width, rel=1e-12)


def segment_quadrature(kp, d, b):
    """int_0^1 phi(|d + s b|) ds, split where the segment enters and leaves the support."""
    rc = kp[2]
    L2 = b @ b
    s0 = -(d @ b) / L2
    p2 = (d + s0 * b) @ (d + s0 * b)
    cuts = [0.0, 1.0]
    if p2 < rc * rc:
        half = math.sqrt(rc * rc - p2 / 1.0) / math.sqrt(L2)
        cuts += [x for x in (s0 - half, s0 + half) if 0.0 < x < 1.0]
    cuts = sorted(cuts)
    f = lambda s: np.array([value(kp, float((d + t * b) @ (d + t * b))) for t in s])
    return sum(gauss_legendre(f, a, c, pieces=16) for a, c in zip(cuts[:-1], cuts[1:]))


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_line_integral_against_quadrature(k, rng):
    kp = k.params(3)
    rc = k.support
    for _ in range(40):
        d = rng.uniform(-1.2 * rc, 1.2 * rc, 3)
        b = rng.normal(size=3) * rng.choice([0.01, 0.3, 1.0, 3.0]) * rc
        expected = segment_quadrature(kp, d, b)
        got = line_integral(kp, *d, *b)
        assert got == pytest.approx(expected, abs=1e-12 * kp[3])
    # a segment through the centre, and one along a line through it
    for d, b in ((np.array([-0.5, 0, 0]) * rc, np.array([1.0, 0, 0]) * rc),
                 (np.array([0.1, 0, 0]) * rc, np.array([0.5, 0, 0]) * rc),
                 (np.array([0.2, 0.1, 0]) * rc, np.array([1e-5, 0, 0]) * rc)):
        assert line_integral(kp, *d, *b) == pytest.approx(segment_quadrature(kp, d, b),
                                                          abs=1e-12 * kp[3])


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_line_integral_in_one_dimension_is_the_kernels_integral(k):
    """In 1D, L times the line integral from z0 to z1 is the kernel's integral over [z0, z1]:
    the whole line gives 1."""
    kp = k.params(1)
    rc = k.support
    assert 4.0 * rc * line_integral(kp, -2.0 * rc, 0, 0, 4.0 * rc, 0, 0) == pytest.approx(1.0, abs=1e-14)
    assert 4.0 * rc * line_integral(kp, 0.0, 0, 0, 4.0 * rc, 0, 0) == pytest.approx(0.5, abs=1e-14)


def test_bad_widths_are_refused():
    with pytest.raises(InputError, match="width must be > 0"):
        Kernel.gaussian(0.0)
    with pytest.raises(InputError, match="cutoff"):
        Kernel.gaussian(1.0, 0.5)
    with pytest.raises(InputError, match="support radius"):
        Kernel.lucy(-1.0)
