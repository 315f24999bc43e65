"""Random sequential insertion (components/insertion/insert.py): no overlaps, inside the region,
reproducible, the requested sizes, clear errors; random orientations uniform."""
import math

import numpy as np
import pytest

from ecs_dem.components.insertion.check import compare
from ecs_dem.components.insertion.insert import (
    InsertionError, add_to_world, insert, place_spheres, random_quaternions)
from ecs_dem.components.insertion.psd import PSD, Component, Mixture, lognormal, uniform
from ecs_dem.components.insertion.regions import BoxRegion, CylinderRegion, MeshRegion
from ecs_dem.components.mesh.generators import icosphere
from helpers import make_world


def pair_gaps(x, r):
    """Smallest surface gap over all pairs (brute force)."""
    best = np.inf
    for i in range(len(x) - 1):
        d = np.linalg.norm(x[i + 1:] - x[i], axis=1) - r[i + 1:] - r[i]
        best = min(best, float(d.min()))
    return best


REGIONS = {
    "box": lambda: BoxRegion((0, 0, 0), (0.04, 0.03, 0.05)),
    "cylinder": lambda: CylinderRegion((0.0, 0.0, 0.0), 0.02, 0.05, axis="x"),
    "sphere mesh": lambda: MeshRegion(icosphere(0.025, 2)),
}


@pytest.mark.parametrize("name", REGIONS)
def test_no_overlaps_and_inside(name):
    region = REGIONS[name]()
    psd = uniform(2e-3, 4e-3)
    grains = insert(region, psd, np.random.default_rng(5), solid_fraction=0.2)
    x, r = grains.position, grains.radius
    assert len(grains) > 100
    assert pair_gaps(x, r) >= 0.0
    assert np.all(region.contains(x, r))
    # the solid fraction reached, to within the last grain
    phi = grains.solid_volume() / region.volume
    assert 0.2 <= phi < 0.2 + math.pi / 6 * 4e-3**3 / region.volume + 1e-12


def test_existing_particles_and_gap_are_respected():
    region = BoxRegion((0, 0, 0), (0.03, 0.03, 0.03))
    rng = np.random.default_rng(1)
    old = place_spheres(region, np.full(60, 2e-3), rng)
    r_new = np.full(150, 1e-3)
    new = place_spheres(region, r_new, rng, existing=(old, 2e-3), gap=2e-4)
    assert pair_gaps(new, r_new) >= 2e-4 - 1e-15
    d = np.linalg.norm(new[:, None, :] - old[None, :, :], axis=2)
    assert d.min() >= 3e-3 + 2e-4 - 1e-15
    assert np.all(region.contains(new, r_new + 2e-4))


def test_reproducible_with_a_seed():
    region = CylinderRegion((0, 0, 0), 0.02, 0.04)
    psd = lognormal(2e-3, 0.3, 1e-3, 4e-3)
    a = insert(region, psd, np.random.default_rng(11), count=400)
    b = insert(region, psd, np.random.default_rng(11), count=400)
    c = insert(region, psd, np.random.default_rng(12), count=400)
    np.testing.assert_array_equal(a.position, b.position)
    np.testing.assert_array_equal(a.diameter, b.diameter)
    np.testing.assert_array_equal(a.orientation, b.orientation)
    assert not np.array_equal(a.position, c.position)


@pytest.mark.parametrize("basis", ["number", "volume"])
def test_inserted_sizes_follow_the_psd(basis):
    psd = PSD.from_cdf([1e-3, 1.5e-3, 2e-3, 3e-3], [0, 0.3, 0.8, 1.0], basis)
    region = BoxRegion((0, 0, 0), (0.1, 0.1, 0.1))
    grains = insert(region, psd, np.random.default_rng(4), count=3000)
    for b in ("number", "volume"):
        assert compare(psd, grains.diameter, b)["ok"]


def test_too_dense_names_the_count_reached_and_the_fix():
    region = BoxRegion((0, 0, 0), (0.02, 0.02, 0.02))
    n = int(0.45 * region.volume / (4 / 3 * math.pi * 1e-3**3))  # 0.45: beyond the jamming limit
    with pytest.raises(InsertionError, match=r"reached \d+ grains.*0\.3-0\.38.*fewer grains"):
        place_spheres(region, np.full(n, 1e-3), np.random.default_rng(0), max_attempts=500)
    with pytest.raises(InsertionError, match="wider than the region"):
        place_spheres(region, [0.011], np.random.default_rng(0))
    with pytest.raises(InsertionError, match="either count or solid_fraction"):
        insert(region, uniform(1e-3, 2e-3), np.random.default_rng(0))


def test_random_quaternions_are_uniform_rotations():
    n = 20000
    q = random_quaternions(n, np.random.default_rng(3))
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, rtol=1e-14)
    w, x, y, z = q.T
    # the body z axis in the lab frame: third column of the rotation matrix
    axis = np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=1)
    # uniform on the sphere: mean 0 (standard error 1/sqrt(3n)), mean of squares 1/3 each
    assert np.all(np.abs(axis.mean(axis=0)) < 4 / math.sqrt(3 * n))
    # var(a^2) = 1/5 - 1/9 for a uniform unit vector's component
    assert np.all(np.abs((axis**2).mean(axis=0) - 1 / 3) < 4 * math.sqrt((0.2 - 1 / 9) / n))


def test_mixture_goes_into_the_world_by_species():
    from ecs_dem.components.species import add_species

    world = make_world(box_lo=(0, 0, 0), box_hi=(0.05, 0.05, 0.05))
    add_species(world, youngs_modulus=1e8, poisson_ratio=0.3, density=1000.0)
    mix = Mixture([Component(uniform(2e-3, 3e-3), 0.5, 0), Component(uniform(3e-3, 4e-3), 0.5, 1)],
                  basis="volume")
    grains = insert(BoxRegion((0, 0, 0), (0.05, 0.05, 0.05)), mix, np.random.default_rng(8),
                    count=300)
    add_to_world(world, grains)
    p = world.particles
    assert p.n_owned == 300
    big = p.species[:300] == 1
    assert np.all(p.radius[:300][big] >= 1.5e-3) and np.all(p.radius[:300][~big] <= 1.5e-3)
    # species 1 has density 1000: mass follows
    np.testing.assert_allclose(p.mass[:300][big], 1000 * 4 / 3 * np.pi * p.radius[:300][big] ** 3,
                               rtol=1e-14)
    assert pair_gaps(p.position[:300], p.radius[:300]) >= 0
