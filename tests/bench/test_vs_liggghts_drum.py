"""bench/vs_liggghts_drum.py: its matched law gives LIGGGHTS's Hertz-Mindlin stiffnesses and
damping (``model hertz tangential history``, written out here), and its schedule samples both
codes at the same steps. LIGGGHTS itself is not run."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import vs_liggghts_drum as bench  # noqa: E402

from ecs_dem import Box, World  # noqa: E402
from ecs_dem.components.species import add_species  # noqa: E402


def liggghts_contact(E, nu, e, rstar, mstar, delta):
    """LIGGGHTS 3.8 Hertz with history, one material: (k_n, gamma_n, k_t, gamma_t), where the
    force is k_n delta - gamma_n v_n and, sticking, -k_t xi - gamma_t v_t."""
    y_eff = 1.0 / (2.0 * (1.0 - nu * nu) / E)
    g = E / (2.0 * (1.0 + nu))
    g_eff = 1.0 / (2.0 * (2.0 - nu) / g)
    beta = math.log(e) / math.sqrt(math.log(e) ** 2 + math.pi ** 2)
    root = math.sqrt(rstar * delta)
    s_n, s_t = 2.0 * y_eff * root, 8.0 * g_eff * root
    c = -2.0 * math.sqrt(5.0 / 6.0) * beta
    return 4.0 / 3.0 * y_eff * root, c * math.sqrt(s_n * mstar), s_t, c * math.sqrt(s_t * mstar)


@pytest.mark.parametrize("nu, e", [(0.3, 0.5), (0.45, 0.9), (0.2, 0.1)])
def test_matched_law_has_liggghts_stiffness_and_damping(nu, e):
    cfg = dict(bench.PROBLEM, youngs_modulus=3e7, poisson_ratio=nu, restitution=e)
    world = World(Box((0, 0, 0), (1, 1, 1)), dt=1e-6)
    add_species(world, youngs_modulus=cfg["youngs_modulus"], poisson_ratio=nu,
                density=cfg["density"], restitution=e, friction=cfg["friction"])
    law = bench.liggghts_law(cfg)
    bound = law.bind(world.species)
    table = dict(zip(bound.function.parameters, bound.parameters[0, 0]))
    rstar, mstar, delta = 1.1e-3, 4e-5, 2e-5
    root = math.sqrt(rstar * delta)
    # ours (systems/contact/hertz_mindlin.py): k_n = 4/3 E* root, gamma_n = |beta_n| sqrt(M* k_n),
    # elastic tangential (2/3) 8 G* root, gamma_t = |beta_t| sqrt(M* 8 G* root)
    kn = 4.0 / 3.0 * table["estar"] * root
    ours = (kn, abs(table["beta_n"]) * math.sqrt(mstar * kn), 2.0 / 3.0 * 8.0 * table["gstar"] * root,
            abs(table["beta_t"]) * math.sqrt(mstar * 8.0 * table["gstar"] * root))
    theirs = liggghts_contact(cfg["youngs_modulus"], nu, e, rstar, mstar, delta)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert table["mu"] == cfg["friction"]
    # the default mixing differs from LIGGGHTS's in the tangential terms: the pair table matters
    mixed = dict(zip(bound.function.parameters,
                     type(law)().bind(world.species).parameters[0, 0]))
    assert abs(2.0 / 3.0 * 8.0 * mixed["gstar"] * root / theirs[2] - 1.0) > 0.1


def test_schedule_samples_whole_torque_intervals():
    s = bench.schedule(dict(bench.QUICK))
    assert s["per_sample"] % s["every"] == 0 and s["spin"] % s["per_sample"] == 0
    assert s["sampled"] == s["samples"] * s["per_sample"]
    assert s["spin"] * s["dt"] >= bench.QUICK["spin_up"]
    assert abs(s["sampled"] * s["dt"] / bench.QUICK["sample_time"] - 1.0) < 0.05
