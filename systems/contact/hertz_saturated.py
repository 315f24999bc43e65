"""Hertz normal force with saturated friction, F_t = mu |F_n| (Brodu et al. 2015, Sect. V).

The multi-contact paper assumes that friction is always saturated: the
tangential force has the magnitude mu |F_n| and opposes the sliding velocity
of the contact points, whatever that velocity (its hydrogel grains have
mu of about 0.03, and Eq. (1) leaves out the tangential terms). This law is that
model as a scalar function of the contact-law interface
(``systems.contact.law``), so it serves particle pairs, walls and the
multi-contact geometry (``systems.multicontact.systems``) alike.

* Normal force: exactly Hertz-Mindlin's (``systems.contact.hertz_mindlin``, which
  this law calls for it): F_n = (4/3) E* sqrt(R* delta) delta - gamma_n v_n,
  damping from restitution, Hertz E*, not clamped unless ``clamp=True``.
  Units: N, positive when repulsive; ``n`` from the partner to i.
* Tangential force: F_t = -mu |F_n| v_t / |v_t|, where v_t is the tangential
  velocity of i's contact point relative to the partner's (lever arms
  a_i = r_i - delta/2, a_j = r_j - delta/2 along -n and +n: the contact point
  at mid-overlap). When v_t is exactly zero, F_t = 0. No history, no spring:
  at rest between steps the direction follows the instantaneous slip.
* Torques: -a_i n x F_t on i and -a_j n x F_t on the partner.

Use ``HertzMindlinLaw`` instead for frictions well above the paper's 0.03,
where sticking contacts matter. Rolling friction is not part of this law.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import inline

from ecs_dem.systems.contact.kinematics import contact_point_velocity
from ecs_dem.systems.contact.law import BoundLaw, LawFunction
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw, hertz_mindlin_core, material_pair_table


@inline
def hertz_saturated(g, p, k, h, x, update, dt):
    """One touching contact: Hertz normal force, friction mu |F_n| against the slip.

    Interface of ``systems.contact.law``: p = (E*, G*, beta_n, mu), k = (clamp,),
    h = () (no history), x = () (no inputs). Returns (F_i (3), T_i (3), T_j (3), F_n) [N, N m, N m, N].
    """
    # normal force: Hertz-Mindlin's own arithmetic (mu = 0: its tangential part is unused)
    core = hertz_mindlin_core(g, p[0], p[1], p[2], p[2], 0.0, 0.0, k[0], 0.0, 0.0, 0.0,
                              0.0, 0.0, 0.0, False, dt, False)
    fn = core[9]
    nx, ny, nz, vx, vy, vz, ai, aj = contact_point_velocity(g)
    vn = vx * nx + vy * ny + vz * nz
    vtx = vx - vn * nx
    vty = vy - vn * ny
    vtz = vz - vn * nz
    slip = math.sqrt(vtx * vtx + vty * vty + vtz * vtz)
    s = -p[3] * abs(fn) / slip if slip > 0.0 else 0.0
    ftx = s * vtx
    fty = s * vty
    ftz = s * vtz
    # n x F_t, lever -a_i n for i and +a_j n for the partner
    tx = ny * ftz - nz * fty
    ty = nz * ftx - nx * ftz
    tz = nx * fty - ny * ftx
    return (fn * nx + ftx, fn * ny + fty, fn * nz + ftz,
            -ai * tx, -ai * ty, -ai * tz, -aj * tx, -aj * ty, -aj * tz, fn)


SATURATED = LawFunction(hertz_saturated, ("estar", "gstar", "beta_n", "mu"), ("clamp",), (), ())


class SaturatedHertzLaw(HertzMindlinLaw):
    """Hertz normal force and saturated friction F_t = mu |F_n| (module docstring).

    Per-species parameters and mixing as ``HertzMindlinLaw`` (E*, damping from
    restitution, mean friction; a wall without species is rigid), and the same
    time-step limit (the Rayleigh time). ``clamp``: forbid attraction.
    """

    name = "hertz_saturated"
    history = ()

    def bind(self, species_table) -> BoundLaw:
        self.check_species(species_table)
        table = material_pair_table(species_table, self.pairs)
        if np.any(table["mu_roll"] > 0.0):
            raise InputError("hertz_saturated has no rolling resistance: set rolling_friction = 0 "
                             "for every species, or use HertzMindlinLaw")
        params = np.stack([table[name] for name in SATURATED.parameters], axis=-1)
        return BoundLaw(SATURATED, params, np.array([1.0 if self.clamp else 0.0]))


__all__ = ["hertz_saturated", "SATURATED", "SaturatedHertzLaw"]
