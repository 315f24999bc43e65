"""The triaxial preparation with a particle size distribution (run/triaxial/preparation.py):
the grain count from the PSD's mean volume, the insertion without contacts in the cylinder at
the start scale, the sizes against the PSD, and the checks on bad settings. Without a psd
the preparation draws its uniform radii as before (the demo's CSV stays the same)."""
import math

import numpy as np
import pytest

from ecs_dem.components.insertion.check import compare
from ecs_dem.errors import InputError
from ecs_dem.run.triaxial.driver import DEFAULTS, check_sample
from ecs_dem.run.triaxial.preparation import (
    PACKING_KEYS, grain_count, insert, packing_key, size_distribution)

PSD = dict(psd="lognormal", psd_mean=4.6e-3, psd_spread=0.1, psd_basis="volume",
           radius_min=1.8e-3, radius_max=3.0e-3)


def test_psd_sample_is_placed_without_contacts_and_follows_the_psd():
    cfg = dict(DEFAULTS, **PSD)
    check_sample(cfg)
    psd = size_distribution(cfg)
    n = grain_count(cfg)
    volume = math.pi * cfg["radius"] ** 2 * cfg["height"]
    assert n == round(cfg["solid_fraction"] * volume / psd.mean_volume())
    position, radius = insert(cfg, np.random.default_rng(cfg["seed"]))
    s0 = cfg["prep_start_scale"]
    r = s0 * radius
    assert radius.size == n
    rho = np.hypot(position[:, 0], position[:, 1])
    assert np.all(rho <= cfg["radius"] - r) and np.all(position[:, 2] >= r)
    assert np.all(position[:, 2] <= cfg["height"] - r)
    for i in range(n - 1):
        d = np.linalg.norm(position[i + 1:] - position[i], axis=1)
        assert np.all(d >= r[i + 1:] + r[i])
    for basis in ("number", "volume"):
        assert compare(psd, 2 * radius, basis)["ok"]
    # the cache key holds the distribution: another spread prepares another packing
    other = dict(cfg, psd_spread=0.12)
    assert not np.array_equal(packing_key(cfg), packing_key(other))


def test_default_draws_uniform_radii_first():
    cfg = dict(DEFAULTS)
    assert size_distribution(cfg) is None
    _, radius = insert(cfg, np.random.default_rng(3))
    expected = np.random.default_rng(3).uniform(cfg["radius_min"], cfg["radius_max"], radius.size)
    np.testing.assert_array_equal(radius, expected)
    assert packing_key(cfg).size == len(PACKING_KEYS)


def test_psd_outside_the_radius_range_is_refused(tmp_path):
    path = tmp_path / "sand.csv"
    path.write_text("diameter,volume\n0.002,0\n0.004,0.5\n0.008,1\n")
    with pytest.raises(InputError, match="set radius_min and radius_max to cover them"):
        size_distribution(dict(DEFAULTS, psd=str(path)))
    with pytest.raises(InputError, match="lower prep_start_scale"):
        insert(dict(DEFAULTS, **PSD, prep_start_scale=1.0, solid_fraction=0.6),
               np.random.default_rng(1))
