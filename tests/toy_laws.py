"""A contact law for the tests of the law interface: per-particle inputs and integer history.

``sticky``: a linear spring k delta plus an attraction c (q_i + q_j) while touching,
where q is the particle field ``stickiness`` (the partner's is 0 for a wall); no
tangential force. History: ``contact_steps`` (int32), the steps the contact has been
advanced while touching, and ``ever_pushed`` (bool), whether its normal force was ever
repulsive above 1 N.
"""
from __future__ import annotations

import numpy as np

from ecs_dem.jit import inline
from ecs_dem.table import Field, Halo
from ecs_dem.systems.contact.law import BoundLaw, LawFunction

K = 1e3    # N/m
C = 0.5    # N per unit of stickiness

HISTORY = (Field("contact_steps", np.int32, (1,), Halo.LOCAL, 0, "", "steps in contact"),
           Field("ever_pushed", np.bool_, (1,), Halo.LOCAL, False, "", "F_n once above 1 N"))


@inline
def sticky(g, p, k, h, x, update, dt):
    dx, dy, dz, rsq, delta = g[0], g[1], g[2], g[3], g[4]
    r = np.sqrt(rsq)
    fn = k[0] * delta - k[1] * (x[0] + x[1])
    steps = h[0] + 1.0 if update else h[0]
    pushed = 1.0 if (h[1] != 0.0 or fn > 1.0) else 0.0
    return (fn * dx / r, fn * dy / r, fn * dz / r, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, fn, steps, pushed)


FUNCTION = LawFunction(sticky, (), ("k", "c"), ("contact_steps", "ever_pushed"), (1, 1),
                       (np.int32, np.bool_), ("stickiness",))


class StickyLaw:
    name = "sticky"
    history = HISTORY

    def bind(self, species_table) -> BoundLaw:
        m = species_table.n_owned + 1 if species_table is not None else 1
        return BoundLaw(FUNCTION, np.zeros((m, m, 0)), np.array([K, C]))

    def time_step_limit(self, world):
        return np.inf, "no limit"
