"""Particle size distributions (components/insertion/psd.py).

Expected values are derived here in closed form: the moment transformation of a uniform
distribution, the medians of a lognormal (Hatch-Choate), the standard error of a sample
quantile; and the Kolmogorov-Smirnov test at 1 % on samples by number and by volume.
"""
import math

import numpy as np
import pytest

from ecs_dem.components.insertion.check import compare
from ecs_dem.components.insertion.psd import (
    PSD, Component, Mixture, PSDError, lognormal, normal, psd_from_config, read_psd, uniform,
    write_psd)

A, B = 1e-3, 3e-3


def test_uniform_by_number_in_volume_basis_is_the_fourth_power_law():
    psd = uniform(A, B)
    d = np.linspace(A, B, 9)
    np.testing.assert_allclose(psd.cdf(d, "volume"), (d**4 - A**4) / (B**4 - A**4), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(psd.cdf(d, "surface"), (d**3 - A**3) / (B**3 - A**3), rtol=1e-13,
                               atol=1e-15)
    assert psd.d50("volume") == pytest.approx(((A**4 + B**4) / 2) ** 0.25, rel=1e-13)
    assert psd.d50() == pytest.approx((A + B) / 2, rel=1e-14)
    # E[d^3] of a uniform d: (B^4 - A^4) / (4 (B - A)); Sauter mean D[3,2] from the moments
    assert psd.moment(3) == pytest.approx((B**4 - A**4) / (4 * (B - A)), rel=1e-13)
    m2 = (B**3 - A**3) / (3 * (B - A))
    assert psd.mean_diameter(3, 2) == pytest.approx(psd.moment(3) / m2, rel=1e-13)


def test_uniform_by_volume_in_number_basis_falls_as_d_to_the_minus_three():
    psd = uniform(A, B, basis="volume")
    d = np.linspace(A, B, 7)
    # number density ~ d^-3: Q0(d) = (A^-2 - d^-2) / (A^-2 - B^-2)
    np.testing.assert_allclose(psd.cdf(d, "number"), (A**-2 - d**-2) / (A**-2 - B**-2),
                               rtol=1e-12, atol=1e-15)
    y = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(psd.quantile(y, "number"),
                               (A**-2 - y * (A**-2 - B**-2)) ** -0.5, rtol=1e-12)
    # by length the density goes as d^(1-3): Q1(d) = (1/A - 1/d) / (1/A - 1/B)
    np.testing.assert_allclose(psd.cdf(d, "length"), (1 / A - 1 / d) / (1 / A - 1 / B),
                               rtol=1e-12, atol=1e-15)
    # by surface d^(2-3) = 1/d: a logarithm
    np.testing.assert_allclose(psd.cdf(d, "surface"), np.log(d / A) / np.log(B / A),
                               rtol=1e-12, atol=1e-15)
    assert psd.d50("surface") == pytest.approx(math.sqrt(A * B), rel=1e-13)


def test_conversion_round_trip_at_class_edges():
    psd = PSD.from_cdf([1e-3, 1.5e-3, 2e-3, 4e-3], [0, 0.2, 0.7, 1.0], "volume")
    for basis in ("number", "length", "surface"):
        table = psd.converted(basis)
        np.testing.assert_allclose(table.cdf(psd.edges, basis), psd.cdf(psd.edges, basis),
                                   rtol=1e-13, atol=1e-15)
    # by number, class by class: w_k times the mean of d^-3 over the class, normalised
    a, b = psd.edges[:-1], psd.edges[1:]
    w0 = psd.weights * (a**-2 - b**-2) / 2 / (b - a)
    np.testing.assert_allclose(psd.class_fractions("number"), w0 / w0.sum(), rtol=1e-13)


def test_lognormal_medians_hatch_choate():
    median, sigma = 2e-3, 0.3
    psd = lognormal(median, sigma, median * math.exp(-6 * sigma), median * math.exp(6 * sigma))
    # symmetric cut-offs in ln d, the median a table point: exact by number
    assert psd.d50() == pytest.approx(median, rel=1e-12)
    # other bases: median exp(s sigma^2); the tabulation error is O(h^2) with h = 12 sigma / 200
    for s in (1, 2, 3):
        assert psd.d50(s) == pytest.approx(median * math.exp(s * sigma**2), rel=2e-3)
    assert psd.mean_diameter(1, 0) == pytest.approx(median * math.exp(sigma**2 / 2), rel=2e-3)
    # d10 and d90 by number: median exp(-+1.2816 sigma)
    assert psd.d90() == pytest.approx(median * math.exp(1.2815516 * sigma), rel=2e-3)
    assert psd.d10() == pytest.approx(median * math.exp(-1.2815516 * sigma), rel=2e-3)


def test_normal_truncated_symmetric_keeps_its_mean_as_median():
    psd = normal(2e-3, 0.2e-3, 1.4e-3, 2.6e-3)
    assert psd.d50() == pytest.approx(2e-3, rel=1e-12)
    assert psd.mean_diameter(1, 0) == pytest.approx(2e-3, rel=1e-9)


@pytest.mark.parametrize("basis", ["number", "volume"])
def test_sampled_quantiles_within_their_standard_error(basis):
    psd = lognormal(2e-3, 0.35, 0.8e-3, 6e-3, basis=basis)
    n = 40000
    d = psd.sample(n, np.random.default_rng(7))
    assert d.min() >= psd.d_min and d.max() <= psd.d_max
    for p in (0.1, 0.5, 0.9):
        x = psd.quantile(p, "number")
        h = 1e-6 * x
        density = (psd.cdf(x + h) - psd.cdf(x - h)) / (2 * h)
        se = math.sqrt(p * (1 - p) / n) / density
        assert abs(np.quantile(d, p) - x) < 4 * se


@pytest.mark.parametrize("basis", ["number", "volume"])
def test_kolmogorov_smirnov_at_one_percent(basis):
    psd = PSD.from_cdf([1e-3, 1.5e-3, 2e-3, 3e-3, 4e-3], [0, 0.1, 0.5, 0.9, 1.0], basis)
    d = psd.sample(5000, np.random.default_rng(3))
    for b in ("number", "volume"):
        st = compare(psd, d, b)
        assert st["ok"], st
        assert st["D"] < 4 * st["expected"]
    # the test is not toothless: the same sample against sizes 3 % larger fails
    shifted = PSD(psd.edges * 1.03, psd.weights, psd.basis)
    assert not compare(shifted, d, "number")["ok"]


def test_mixture_volume_fractions_become_number_fractions():
    small, large = uniform(1e-3, 1.1e-3), uniform(2e-3, 2.2e-3)
    mix = Mixture([Component(small, 0.5, 0), Component(large, 0.5, 1)], basis="volume")
    ratio = large.moment(3) / small.moment(3)  # equal volumes: this many more small grains
    np.testing.assert_allclose(mix.number_fractions, [ratio / (1 + ratio), 1 / (1 + ratio)],
                               rtol=1e-13)
    n = 20000
    which, d = mix.sample(n, np.random.default_rng(2))
    f = mix.number_fractions[0]
    assert abs(np.mean(which == 0) - f) < 4 * math.sqrt(f * (1 - f) / n)
    vol0 = np.sum(d[which == 0] ** 3) / np.sum(d**3)
    assert vol0 == pytest.approx(0.5, abs=0.02)
    assert np.all(d[which == 1] >= 2e-3) and np.all(d[which == 0] <= 1.1e-3)


def test_csv_round_trip_and_header_basis(tmp_path):
    psd = PSD.from_cdf([1e-3, 2e-3, 4e-3], [0, 0.4, 1.0], "volume")
    path = tmp_path / "psd.csv"
    write_psd(path, psd)
    back = read_psd(path)
    assert back.basis == 3
    np.testing.assert_allclose(back.edges, psd.edges, rtol=1e-15)
    np.testing.assert_allclose(back.weights, psd.weights, rtol=1e-14)
    path.write_text("# sieve\n0.001, 0\n0.002, 0.5\n0.003, 1\n")
    assert read_psd(path).basis == 0 and read_psd(path, "surface").basis == 2
    assert psd_from_config(str(path), d_min=1e-3, d_max=3e-3).d50() == pytest.approx(2e-3)


@pytest.mark.parametrize("make, match", [
    (lambda: PSD.from_cdf([1e-3, 2e-3, 3e-3], [0, 0.5, 0.9]), "rise to 0.9"),
    (lambda: PSD.from_cdf([1e-3, 2e-3, 3e-3], [0, 50, 100]), "percent"),
    (lambda: PSD.from_cdf([1e-3, 2e-3, 3e-3], [0, 0.8, 0.6]), "must not fall"),
    (lambda: PSD.from_cdf([1e-3, 3e-3, 2e-3], [0, 0.5, 1]), "rise strictly"),
    (lambda: PSD.from_cdf([1e-3, 2e-3, 3e-3], [0.1, 0.5, 1]), "not 0"),
    (lambda: PSD.from_cdf([0.0, 2e-3], [0, 1]), "> 0"),
    (lambda: PSD.from_cdf([1e-3, 2e-3], [0, 1], "weight"), "basis"),
    (lambda: uniform(3e-3, 1e-3), "d_min < d_max"),
    (lambda: lognormal(2e-3, 0.0, 1e-3, 3e-3), "sigma"),
    (lambda: Mixture([Component(uniform(A, B), 0.6), Component(uniform(A, B), 0.6)]), "sum to 1"),
    (lambda: psd_from_config("gamma", d_min=A, d_max=B), "uniform, normal, lognormal"),
    (lambda: psd_from_config("lognormal", d_min=A, d_max=B), "psd_mean"),
])
def test_bad_distributions_name_the_fix(make, match):
    with pytest.raises(PSDError, match=match):
        make()


def test_normalize_rescales_fractions():
    psd = PSD.from_cdf([1e-3, 2e-3, 3e-3], [0, 50, 100], normalize=True)
    assert psd.d50() == pytest.approx(2e-3)
    hist = PSD.from_classes([1e-3, 2e-3, 3e-3], [2, 6], normalize=True)
    np.testing.assert_allclose(hist.weights, [0.25, 0.75])
