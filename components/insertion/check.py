"""Check inserted sizes against the requested PSD: CSV, plot and a Kolmogorov-Smirnov statistic.

:func:`compare` measures, in a basis (number or volume), the largest distance
D = max |F_n(d) - Q(d)| between the sample's empirical cumulative distribution F_n and the
requested Q (Kolmogorov-Smirnov). By number the n grains are independent draws, and for a
sample that follows Q, sqrt(n) D follows Kolmogorov's distribution: mean
sqrt(pi/2) ln 2 = 0.869 / sqrt(n), exceeded with probability 1 % at 1.628 / sqrt(n)
(Stephens' finite-n form: D (sqrt(n) + 0.12 + 0.11 / sqrt(n)) against the asymptotic law).
By volume each grain weighs d^3; the same law holds approximately with n replaced by the
effective count n_eff = (sum w)^2 / sum w^2 (Kish), which is smaller for a wide PSD.

:func:`write_check` writes ``<stem>.csv`` (both cumulative distributions by number and by
volume at the requested table's sizes and at every sampled size) and ``<stem>.png`` (the
plot of Thornton et al. 2023, Fig. 4: requested and inserted cumulative PSD, by number and
by volume).

Command line: draw and insert a sample, then check it::

    python -m ecs_dem.components.insertion.check --psd lognormal --mean 2e-3 --spread 0.3 \\
        --d-min 1e-3 --d-max 4e-3 --basis volume --count 5000 --out psd_check
    python -m ecs_dem.components.insertion.check --psd my_psd.csv --radii sample.csv
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.components.insertion.psd import PSD, _is_number, basis_exponent, psd_from_config

#: sqrt(n) D exceeds this with probability 1 % (Kolmogorov's distribution)
KS_CRITICAL_1PCT = 1.6276
#: the mean of sqrt(n) D for large n: sqrt(pi / 2) ln 2
KS_MEAN = math.sqrt(math.pi / 2.0) * math.log(2.0)


def kolmogorov_survival(x: float) -> float:
    """P(sqrt(n) D > x) for large n: 2 sum_k (-1)^(k-1) exp(-2 k^2 x^2)."""
    if x < 0.2:  # the series converges slowly here; the probability exceeds 1 - 1e-6
        return 1.0
    total = 0.0
    for k in range(1, 101):
        term = math.exp(-2.0 * k * k * x * x)
        total += term if k % 2 else -term
        if term < 1e-17:
            break
    return min(max(2.0 * total, 0.0), 1.0)


def empirical_cdf(diameter, basis="number"):
    """(sorted diameters, F after each): the sample's cumulative distribution in a basis."""
    s = basis_exponent(basis)
    d = np.sort(np.asarray(diameter, dtype=np.float64).reshape(-1))
    if d.size == 0:
        raise InputError("PSD check: the sample is empty: insert some grains first")
    w = d**s / np.sum(d**s)
    return d, np.cumsum(w)


def compare(psd: PSD, diameter, basis="number") -> dict:
    """KS distance between the sample (diameters, m) and ``psd`` in ``basis``: a dict with
    D, n (or n_eff by volume), expected (mean D for a sample that follows the PSD),
    critical (the 1 % level), p_value and ok (D below the 1 % level)."""
    s = basis_exponent(basis)
    d, f = empirical_cdf(diameter, s)
    q = psd.cdf(d, s)
    before = np.concatenate(([0.0], f[:-1]))
    dist = float(max(np.max(np.abs(f - q)), np.max(np.abs(before - q))))
    w = d**s
    n_eff = float(w.sum() ** 2 / np.sum(w * w))
    root = math.sqrt(n_eff)
    p = kolmogorov_survival(dist * (root + 0.12 + 0.11 / root))
    return {"basis": s, "D": dist, "n": n_eff, "expected": KS_MEAN / root,
            "critical": KS_CRITICAL_1PCT / (root + 0.12 + 0.11 / root), "p_value": p,
            "ok": p > 0.01}


def write_check(stem, psd: PSD, diameter, title: str = "") -> dict:
    """Write <stem>.csv and <stem>.png comparing the sample with the PSD by number and by
    volume; returns {"number": compare(...), "volume": compare(...)}."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    diameter = np.asarray(diameter, dtype=np.float64).reshape(-1)
    stats = {b: compare(psd, diameter, b) for b in ("number", "volume")}
    grid = np.unique(np.concatenate((psd.edges, diameter)))
    sample = {b: _step(diameter, grid, b) for b in ("number", "volume")}
    with open(stem.with_suffix(".csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["diameter", "requested_number", "inserted_number", "requested_volume",
                    "inserted_volume"])
        for i, x in enumerate(grid):
            w.writerow([f"{x:.9g}", f"{float(psd.cdf(x, 0)):.9g}", f"{sample['number'][i]:.9g}",
                        f"{float(psd.cdf(x, 3)):.9g}", f"{sample['volume'][i]:.9g}"])
    _plot(stem.with_suffix(".png"), psd, diameter, stats, title)
    return stats


def _step(diameter, at, basis) -> np.ndarray:
    """The empirical cumulative distribution at the diameters ``at`` (right-continuous)."""
    d, f = empirical_cdf(diameter, basis)
    k = np.searchsorted(d, at, side="right")
    return np.where(k > 0, f[np.maximum(k - 1, 0)], 0.0)


def _plot(path: Path, psd: PSD, diameter, stats: dict, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.6), dpi=100)
    x = np.linspace(psd.d_min, psd.d_max, 400)
    for basis, colour in (("number", "tab:blue"), ("volume", "tab:red")):
        d, f = empirical_cdf(diameter, basis)
        st = stats[basis]
        ax.plot(x * 1e3, psd.cdf(x, basis), color=colour, lw=2.5, alpha=0.45,
                label=f"requested, by {basis}")
        ax.step(np.concatenate(([psd.d_min], d)) * 1e3, np.concatenate(([0.0], f)),
                where="post", color=colour, lw=1.0,
                label=f"inserted, by {basis}: D = {st['D']:.3f} (1 % level {st['critical']:.3f})")
    ax.set_xlabel("diameter d (mm)")
    ax.set_ylabel("cumulative fraction Q(d)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title or f"{len(diameter)} inserted grains against the requested PSD", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _read_radii(path) -> np.ndarray:
    try:
        values = [float(line.split(",")[0]) for line in Path(path).read_text().splitlines()
                  if line.strip() and not line.lstrip().startswith("#")
                  and _is_number(line.split(",")[0])]
    except OSError as exc:
        raise InputError(f"PSD check: cannot read {path} ({exc.strerror}): check the path") from exc
    if not values:
        raise InputError(f"PSD check: {path} holds no radii (one per line, m)")
    return np.array(values)


def main(argv=None) -> int:
    from ecs_dem.components.insertion.insert import insert
    from ecs_dem.components.insertion.regions import BoxRegion

    ap = argparse.ArgumentParser(prog="python -m ecs_dem.components.insertion.check",
                                 description="Insert grains from a PSD (or read their radii) and "
                                 "compare the sample with the PSD: CSV, PNG, KS statistic.")
    ap.add_argument("--psd", default="lognormal",
                    help="uniform, normal, lognormal or a CSV file (diameter, cumulative)")
    ap.add_argument("--basis", default="number", help="number, length, surface or volume")
    ap.add_argument("--d-min", type=float, default=1e-3, help="cut-off diameter (m)")
    ap.add_argument("--d-max", type=float, default=4e-3, help="cut-off diameter (m)")
    ap.add_argument("--mean", type=float, default=2e-3, help="normal mean / lognormal median (m)")
    ap.add_argument("--spread", type=float, default=0.3,
                    help="normal std (m) / lognormal std of ln d")
    ap.add_argument("--count", type=int, default=5000, help="grains to insert")
    ap.add_argument("--solid-fraction", type=float, default=0.25,
                    help="of the cubic box the grains are inserted into")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--radii", help="check these radii (one per line, m) instead of inserting")
    ap.add_argument("--out", default="psd_check", help="output stem: <out>.csv, <out>.png")
    a = ap.parse_args(argv)
    try:
        psd = psd_from_config(a.psd, d_min=a.d_min, d_max=a.d_max, basis=a.basis, mean=a.mean,
                              spread=a.spread)
        if a.radii:
            diameter = 2.0 * _read_radii(a.radii)
        else:
            side = (a.count * psd.mean_volume() / a.solid_fraction) ** (1 / 3)
            grains = insert(BoxRegion((0, 0, 0), (side, side, side)), psd,
                            np.random.default_rng(a.seed), count=a.count)
            diameter = grains.diameter
        stats = write_check(a.out, psd, diameter)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(psd.summary())
    for b, st in stats.items():
        print(f"by {b}: D = {st['D']:.4f} over n = {st['n']:.0f} (expected {st['expected']:.4f}, "
              f"1 % level {st['critical']:.4f}, p = {st['p_value']:.3g}): "
              f"{'matches' if st['ok'] else 'DOES NOT MATCH'}")
    print(f"wrote {a.out}.csv and {a.out}.png")
    return 0 if all(st["ok"] for st in stats.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
