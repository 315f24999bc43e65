"""The triaxial test with clumps (run/triaxial, grain_shape): the preparation grows rigid
clumps from a PSD and leaves no overlap between pebbles of different bodies, nor with the
platens or the cylinder; the test world takes the packing's bodies; bad shapes are refused.
The whole test with clumps runs as the spheres' does (the measurement: docs/user-guide/
clumps.md)."""
import math

import numpy as np
import pytest

from ecs_dem.components.clumps import library
from ecs_dem.components.clumps.shapes import equivalent_diameter
from ecs_dem.components.clumps.template import rotation_matrix
from ecs_dem.errors import ConfigValueError
from ecs_dem.run.triaxial.driver import DEFAULTS, build_world, check_sample, run_name
from ecs_dem.run.triaxial.preparation import packing_key, packing_path, prepare

FAST = dict(prep_grow_time=0.006, prep_relax_time=0.002, grains=150, solid_fraction=0.4,
            psd="uniform", psd_basis="volume")


@pytest.fixture(scope="module")
def prepared():
    cfg = dict(DEFAULTS, grain_shape="tetrahedron", **FAST)
    return cfg, prepare(cfg, log=lambda *a: None)


def pebbles_of(pack, template):
    """Pebble centres, radii and body labels of the packing, from each body's state."""
    rot = rotation_matrix(pack["orientation"])
    s = pack["scale"]
    x = pack["position"][:, None] + np.einsum("nij,kj->nki", rot, template.offsets) * s[:, None, None]
    r = template.radii[None] * s[:, None]
    label = np.repeat(np.arange(s.size), template.count)
    return x.reshape(-1, 3), r.reshape(-1), label


def test_prepared_clumps_do_not_overlap_and_stay_inside(prepared):
    cfg, pack = prepared
    template = library.tetrahedron(1.0)
    x, r, label = pebbles_of(pack, template)
    assert pack["scale"].size == 150
    d = np.linalg.norm(x[:, None] - x[None], axis=2) - r[:, None] - r[None]
    d[label[:, None] == label[None]] = np.inf
    assert d.min() >= -1e-12 * r.max()
    assert np.all(x[:, 2] >= r) and np.all(x[:, 2] + r <= cfg["height"])
    assert np.all(np.hypot(x[:, 0], x[:, 1]) + r <= cfg["radius"])
    # the volume-equivalent radii follow the scale; the solid fraction is the clumps' volume
    np.testing.assert_allclose(pack["radius"], 0.5 * equivalent_diameter(template) * pack["scale"],
                               rtol=1e-12)
    volume = math.pi * cfg["radius"] ** 2 * cfg["height"]
    assert pack["solid_fraction"] == pytest.approx(
        np.sum(4 / 3 * math.pi * pack["radius"] ** 3) / volume, rel=1e-12)
    # grown to about full size: the radii lie in the PSD's range, shrunk by a little
    assert 0.9 < pack["shrink"] <= 1.0
    assert pack["radius"].min() >= 0.9 * cfg["radius_min"]
    assert pack["radius"].max() <= cfg["radius_max"]


def test_the_test_world_holds_the_packings_bodies(prepared):
    cfg, pack = prepared
    world, _ = build_world(cfg, pack)
    b = world.bodies
    assert b.n_owned == 150
    np.testing.assert_array_equal(b.com[:150], pack["position"])
    assert np.count_nonzero(world.particles.body[:world.particles.n_owned] >= 0) == 600
    assert run_name(cfg) == "small_patch_seed1_tetrahedron"


def test_the_shape_is_checked_and_keys_its_own_packing(tmp_path):
    with pytest.raises(ConfigValueError, match="grain_shape.*dimer"):
        check_sample(dict(DEFAULTS, grain_shape="cube"))
    spheres = dict(DEFAULTS)
    dimers = dict(DEFAULTS, grain_shape="dimer")
    assert packing_key(dimers).size == packing_key(spheres).size + 1
    assert packing_path(spheres, tmp_path).name == "small_seed1_packing.npz"
    assert packing_path(dimers, tmp_path).name == "small_seed1_dimer_packing.npz"
    assert run_name(spheres) == "small_patch_seed1"
