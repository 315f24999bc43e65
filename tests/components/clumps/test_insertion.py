"""Clumps drawn from a size distribution (components/clumps/shapes.py) and the overlap check of
add_clumps: no pebbles of different bodies overlap, the inserted sizes follow the PSD, bad
input is refused with the fix."""
import math

import numpy as np
import pytest

from ecs_dem.components.clumps import library
from ecs_dem.components.clumps.bodies import add_clumps, body_reach
from ecs_dem.components.clumps.shapes import clump_shape, equivalent_diameter
from ecs_dem.components.insertion.check import compare
from ecs_dem.components.insertion.insert import add_to_world, insert
from ecs_dem.components.insertion.psd import SPHERE, PSD, Component, Mixture, uniform
from ecs_dem.components.insertion.regions import BoxRegion
from ecs_dem.errors import InputError
from helpers import make_world

DENSITY = 2500.0
REGION = BoxRegion((0, 0, 0), (0.06, 0.06, 0.06))


def smallest_gap(x, r, label):
    """Smallest surface gap between spheres of different labels (brute force)."""
    best = np.inf
    for i in range(len(x) - 1):
        other = label[i + 1:] != label[i]
        d = np.linalg.norm(x[i + 1:][other] - x[i], axis=1) - r[i + 1:][other] - r[i]
        if d.size:
            best = min(best, float(d.min()))
    return best


def mixed_world(seed=3, count=600):
    """Spheres, dimers and tetrahedra from one volume-based PSD, a third of the volume each."""
    psd = PSD.from_cdf([2e-3, 3e-3, 4e-3], [0, 0.6, 1.0], "volume")
    mix = Mixture([Component(psd, 1 / 3, 0, SPHERE),
                   Component(psd, 1 / 3, 0, clump_shape(library.dimer(1e-3))),
                   Component(psd, 1 / 3, 0, clump_shape(library.tetrahedron(1e-3)))],
                  basis="volume")
    world = make_world(material=dict(density=DENSITY), box_lo=REGION.lo, box_hi=REGION.hi)
    grains = insert(REGION, mix, np.random.default_rng(seed), count=count)
    add_to_world(world, grains)
    return world, grains, psd


def test_mixture_of_spheres_and_clumps_inserts_without_overlaps():
    world, grains, _ = mixed_world()
    p, b = world.particles, world.bodies
    n = p.n_owned
    assert b.n_owned == np.count_nonzero(grains.component > 0) > 300
    label = np.where(p.body[:n] >= 0, p.body[:n], -2 - np.arange(n))  # free spheres: own label
    assert smallest_gap(p.position[:n], p.radius[:n], label) >= -1e-15
    assert np.all(REGION.contains(p.position[:n], p.radius[:n]))
    # every pebble at its template offset from the centre of mass, turned by the orientation
    for k in range(0, b.n_owned, 37):
        rows = b.pebbles[k][b.pebbles[k] >= 0]
        from ecs_dem.components.clumps.template import rotation_matrix
        arm = p.position[rows] - b.com[k]
        np.testing.assert_allclose(arm, p.body_offset[rows] @ rotation_matrix(b.orientation[k]).T,
                                   atol=1e-15)
    # the orientations are the insertion's random ones, not all alike
    assert np.std(b.orientation[:b.n_owned, 0]) > 0.1


@pytest.mark.parametrize("basis", ["number", "volume"])
def test_clump_sizes_from_their_mass_follow_the_psd(basis):
    """The volume-equivalent diameter of each body, (6 m / (pi rho))^(1/3), from the mass
    add_clumps gave it, passes the Kolmogorov-Smirnov test at 1 % against the PSD."""
    psd = PSD.from_cdf([1e-3, 1.5e-3, 2e-3, 3e-3], [0, 0.3, 0.8, 1.0], basis)
    world = make_world(material=dict(density=DENSITY), box_lo=(0, 0, 0), box_hi=(0.1, 0.1, 0.1))
    shape = clump_shape(library.elongated(1e-3))
    grains = insert(BoxRegion((0, 0, 0), (0.1, 0.1, 0.1)), Mixture([Component(psd, 1.0, 0, shape)]),
                    np.random.default_rng(4), count=2500)
    add_to_world(world, grains)
    b = world.bodies
    d = (6 * b.mass[:b.n_owned] / (math.pi * DENSITY)) ** (1 / 3)
    np.testing.assert_allclose(d, grains.diameter, rtol=1e-12)
    for check in ("number", "volume"):
        assert compare(psd, d, check)["ok"]
    # the moments scale as the fifth power of the size
    t = library.elongated(1e-3)
    s = d / equivalent_diameter(t)
    np.testing.assert_allclose(b.moments[:b.n_owned], DENSITY * np.outer(s**5, t.moments),
                               rtol=1e-12)
    # the ghost width covers the largest scaled reach
    assert body_reach(world) == pytest.approx(t.reach * s.max(), rel=1e-12)


def test_bounding_size_keeps_the_clump_inside_its_diameter():
    t = library.tetrahedron(1e-3)
    shape = clump_shape(t, size="bounding")
    assert shape.bounding == 0.5
    assert shape.volume == pytest.approx(t.volume / (2 * t.extent) ** 3)
    assert clump_shape(t).volume == pytest.approx(math.pi / 6)
    with pytest.raises(InputError, match="size 'sieve'"):
        clump_shape(t, size="sieve")
    with pytest.raises(InputError, match="ClumpTemplate"):
        clump_shape("tetrahedron")


def test_overlapping_clumps_are_refused_and_touching_ones_pass():
    world = make_world()
    dimer = library.dimer(1e-3)                      # pebbles at x = -1, +1 mm
    with pytest.raises(InputError, match="clump 1 of this call overlaps a pebble of clump 0|"
                                         "clump 0 of this call overlaps a pebble of clump 1"):
        add_clumps(world, dimer, [[0, 0, 0], [0, 1.5e-3, 0]])
    add_clumps(world, dimer, [[0, 0, 0], [0, 2e-3, 0]])  # touching: allowed
    with pytest.raises(InputError, match="already in the world.*components.insertion"):
        add_clumps(world, dimer, [[3e-3, 0, 0]])
    add_clumps(world, dimer, [[4e-3, 0, 0]])
    assert world.bodies.n_owned == 3
    with pytest.raises(InputError, match="scale"):
        add_clumps(world, dimer, [[0, 0, 0.01]], scale=-1.0)


def test_the_ghost_width_covers_a_long_clump():
    """A pebble beyond the ghost width of its anchor is impossible: the placement system
    widens the ghost width to the largest reach."""
    world = make_world(box_lo=(0, 0, 0), box_hi=(0.1, 0.1, 0.1))
    long = library.elongated(5e-3)
    add_clumps(world, long, [[0.05, 0.05, 0.05]])
    from clump_scenarios import add_clump_systems
    add_clump_systems(world)
    world.setup()
    assert world.domain.ghost_width >= long.reach


def test_uniform_psd_of_clumps_fills_the_solid_fraction():
    """A solid fraction of clumps by their own volume (a dimer fills a quarter of its
    bounding sphere: 0.05 of the box in dimers is 0.2 in bounding spheres)."""
    shape = clump_shape(library.dimer(1e-3))
    grains = insert(REGION, Mixture([Component(uniform(2e-3, 3e-3), 1.0, 0, shape)]),
                    np.random.default_rng(9), solid_fraction=0.05)
    phi = grains.solid_volume() / REGION.volume
    assert 0.05 <= phi < 0.05 + math.pi / 6 * 3e-3**3 / REGION.volume + 1e-12
    world = make_world(material=dict(density=DENSITY), box_lo=REGION.lo, box_hi=REGION.hi)
    add_to_world(world, grains)
    b = world.bodies
    assert float(b.mass[:b.n_owned].sum()) / DENSITY == pytest.approx(grains.solid_volume(),
                                                                      rel=1e-12)
