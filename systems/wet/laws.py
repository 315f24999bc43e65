"""Wet contact laws: a dry law (Hertz-Mindlin or the linear law) plus a liquid bridge term.

Each law wraps a dry *base* law (``HertzMindlinLaw`` without rolling
resistance, or ``LinearSpringDashpotLaw``) and adds the force of a liquid
bridge (closed forms: ``systems.wet.capillary``) through the contact-law
interface (``systems.contact.law``): the base law acts while the bodies
overlap (its history is reset to zero whenever they do not), the bridge
while it exists and the separation s = -overlap is below its rupture
distance. The law's reach (``LawFunction.reach``) is the largest rupture
distance over all material pairs (times 1 + 1e-9, so that the migration
system always sees a bridge rupture before its pair leaves the law's
reach), so pairs that far apart are listed and evaluated.

History: the base law's, then ``bridge_volume`` (m^3, 0 for no bridge).

* ``LiquidBridgeWillet``: a bridge of a fixed volume per material pair
  (``bridge_volume``) forms when the bodies touch and breaks at its rupture
  distance; force of Willett et al. (2000). The law keeps the bridge itself
  (no liquid is accounted for).
* ``LiquidMigrationWillet``: the bridge's volume is the liquid the
  migration system (``systems.wet.migration``) moved into it from the
  particles' films; the same Willett force. The law only reads the volume.
* ``LiquidMigrationLS``: as ``LiquidMigrationWillet``, with the capillary
  force from the half-filling angle and viscous lubrication, normal and
  tangential, for ``min_separation <= s < s_c`` (Lian & Seville 2016).

Parameters per material pair (``set_pair(a, b, **values)``; a, b species
rows, or ``"rigid"`` for a wall without species; the base law's own
constants given there go to it), with defaults and SI units:
``surface_tension`` (N/m, 0.072, water), ``contact_angle`` (degrees in
[0, 90), 0), and per law ``bridge_volume`` (m^3, static), ``min_bridge_volume``
and ``max_bridge_volume`` (m^3, migrating: a bridge forms only with at least
the minimum, and takes at most the maximum), ``viscosity`` (Pa s, 1e-3) and
``min_separation`` (m, LS). Set them before the first step.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import inline
from ecs_dem.table import Field, Halo

from ecs_dem.systems.contact.hertz_mindlin import hertz_mindlin, HertzMindlinLaw
from ecs_dem.systems.contact.kinematics import contact_point_velocity
from ecs_dem.systems.contact.law import BoundLaw, LawFunction
from ecs_dem.systems.contact.linear_spring_dashpot import (LinearSpringDashpotLaw, hooke_history,
                                                           hooke_history_pairs)
from ecs_dem.systems.contact.pair_constants import RIGID
from ecs_dem.systems.wet.capillary import (bridge_holds, filling_scaled, normal_lubrication,
                                           tangential_lubrication, willett_scaled)

BRIDGE = Field("bridge_volume", np.float64, (1,), Halo.LOCAL, 0.0, "m^3",
               "liquid volume of the contact's bridge (0: no bridge)")
#: the margin of the law's reach over the largest rupture distance
REACH_MARGIN = 1e-9


@inline
def _bridge_force(g, f, fn_extra, fx_t, fy_t, fz_t, ti, tj, volume):
    """The law outputs of an attractive normal force f (N) plus a further normal force
    fn_extra (N, repulsive positive), a tangential force and torques; history `volume`."""
    r = math.sqrt(g[3])
    fn = fn_extra - f
    return (fn * g[0] / r + fx_t, fn * g[1] / r + fy_t, fn * g[2] / r + fz_t,
            ti[0], ti[1], ti[2], tj[0], tj[1], tj[2], fn, volume)


# The law functions take, in place of surface_tension and contact_angle, the derived
# capillary_tension = gamma cos(theta) (N/m) and rupture_cubed = (1 + theta/2)^3: no cosine
# or cube root per contact, so the contact loop stays vectorised (``WetLaw.bind``).
@inline
def willett_static_term(g, w, h, update):
    """Static Willett bridge: w = (capillary_tension, rupture_cubed, bridge_volume), h =
    (bridge volume,). The bridge forms at contact with the pair's volume."""
    s = -g[4]
    v = h[0]
    if s < 0.0 or v > 0.0:  # touching, or a bridge
        v = w[2]
    active = v > 0.0 and bridge_holds(s, v, w[1])
    f = willett_scaled(max(s, 0.0), 2.0 * g[7], v, w[0]) if active else 0.0
    kept = v if active else 0.0
    zero = (0.0, 0.0, 0.0)
    return _bridge_force(g, f, 0.0, 0.0, 0.0, 0.0, zero, zero, kept if update else h[0])


@inline
def willett_migration_term(g, w, h, update):
    """Willett bridge of the volume in h: w = (capillary_tension, rupture_cubed,
    min_bridge_volume, max_bridge_volume)."""
    s = -g[4]
    v = h[0]
    active = v > 0.0 and bridge_holds(s, v, w[1])
    f = willett_scaled(max(s, 0.0), 2.0 * g[7], v, w[0]) if active else 0.0
    zero = (0.0, 0.0, 0.0)
    return _bridge_force(g, f, 0.0, 0.0, 0.0, 0.0, zero, zero, v)


@inline
def lian_seville_term(g, w, h, update):
    """Capillary force from the half-filling angle and lubrication: w = (capillary_tension,
    rupture_cubed, viscosity, min_separation, min_bridge_volume, max_bridge_volume)."""
    s = -g[4]
    v = h[0]
    rstar = g[7]
    active = v > 0.0 and bridge_holds(s, v, w[1])
    f = filling_scaled(max(s, 0.0), 2.0 * rstar, v, w[0]) if active else 0.0
    viscous = active and s >= w[3] and s > 0.0
    sl = max(s, w[3]) if viscous else 1.0
    nx, ny, nz, vx, vy, vz, ai, aj = contact_point_velocity(g)
    vn = g[9] * nx + g[10] * ny + g[11] * nz
    fn_visc = -normal_lubrication(sl, rstar, w[2]) * vn if viscous else 0.0
    vcn = vx * nx + vy * ny + vz * nz
    ct = tangential_lubrication(sl, rstar, w[2]) if viscous else 0.0
    ftx = -ct * (vx - vcn * nx)
    fty = -ct * (vy - vcn * ny)
    ftz = -ct * (vz - vcn * nz)
    tx = ny * ftz - nz * fty  # n x F_t; levers -a_i n for i, +a_j n for the partner
    ty = nz * ftx - nx * ftz
    tz = nx * fty - ny * ftx
    return _bridge_force(g, f, fn_visc, ftx, fty, ftz, (-ai * tx, -ai * ty, -ai * tz),
                         (-aj * tx, -aj * ty, -aj * tz), v)


@inline
def _combined(b, w, delta):
    """A base law's outputs b (10 + 3 history values) while the bodies overlap (zeros
    otherwise, its history reset) plus the bridge's outputs w (10 + 1). One select per value
    (the base's values are not finite apart): two whole tuples returned from two branches
    stop LLVM from vectorising the contact loop (2.5 times slower)."""
    t = delta > 0.0
    return (w[0] + (b[0] if t else 0.0), w[1] + (b[1] if t else 0.0), w[2] + (b[2] if t else 0.0),
            w[3] + (b[3] if t else 0.0), w[4] + (b[4] if t else 0.0), w[5] + (b[5] if t else 0.0),
            w[6] + (b[6] if t else 0.0), w[7] + (b[7] if t else 0.0), w[8] + (b[8] if t else 0.0),
            w[9] + (b[9] if t else 0.0), b[10] if t else 0.0, b[11] if t else 0.0,
            b[12] if t else 0.0, w[10])


# One function per (base, bridge): a law function is a module-level function the contact
# pipeline imports by name. p = base parameters + bridge parameters, k = base constants +
# (reach,), h = base history (3) + (bridge volume,).
@inline
def hertz_mindlin_willett(g, p, k, h, x, update, dt):
    return _combined(hertz_mindlin(g, p[:5], k[:1], h[:3], x, update, dt),
                     willett_static_term(g, p[5:], h[3:], update), g[4])


@inline
def hertz_mindlin_willett_migration(g, p, k, h, x, update, dt):
    return _combined(hertz_mindlin(g, p[:5], k[:1], h[:3], x, update, dt),
                     willett_migration_term(g, p[5:], h[3:], update), g[4])


@inline
def hertz_mindlin_lian_seville(g, p, k, h, x, update, dt):
    return _combined(hertz_mindlin(g, p[:5], k[:1], h[:3], x, update, dt),
                     lian_seville_term(g, p[5:], h[3:], update), g[4])


@inline
def linear_willett(g, p, k, h, x, update, dt):
    return _combined(hooke_history(g, (), k[:5], h[:3], x, update, dt),
                     willett_static_term(g, p, h[3:], update), g[4])


@inline
def linear_willett_migration(g, p, k, h, x, update, dt):
    return _combined(hooke_history(g, (), k[:5], h[:3], x, update, dt),
                     willett_migration_term(g, p, h[3:], update), g[4])


@inline
def linear_lian_seville(g, p, k, h, x, update, dt):
    return _combined(hooke_history(g, (), k[:5], h[:3], x, update, dt),
                     lian_seville_term(g, p, h[3:], update), g[4])


@inline
def linear_pairs_willett(g, p, k, h, x, update, dt):
    return _combined(hooke_history_pairs(g, p[:5], (), h[:3], x, update, dt),
                     willett_static_term(g, p[5:], h[3:], update), g[4])


@inline
def linear_pairs_willett_migration(g, p, k, h, x, update, dt):
    return _combined(hooke_history_pairs(g, p[:5], (), h[:3], x, update, dt),
                     willett_migration_term(g, p[5:], h[3:], update), g[4])


@inline
def linear_pairs_lian_seville(g, p, k, h, x, update, dt):
    return _combined(hooke_history_pairs(g, p[:5], (), h[:3], x, update, dt),
                     lian_seville_term(g, p[5:], h[3:], update), g[4])


#: (base law function, bridge model) -> the combined law function
COMBINED = {
    (hertz_mindlin, "willett"): hertz_mindlin_willett,
    (hertz_mindlin, "willett_migration"): hertz_mindlin_willett_migration,
    (hertz_mindlin, "lian_seville"): hertz_mindlin_lian_seville,
    (hooke_history, "willett"): linear_willett,
    (hooke_history, "willett_migration"): linear_willett_migration,
    (hooke_history, "lian_seville"): linear_lian_seville,
    (hooke_history_pairs, "willett"): linear_pairs_willett,
    (hooke_history_pairs, "willett_migration"): linear_pairs_willett_migration,
    (hooke_history_pairs, "lian_seville"): linear_pairs_lian_seville,
}


class WetLaw:
    """A dry base law plus a liquid bridge (module docstring); subclasses name the bridge."""

    model: str = ""
    #: the bridge's parameters, in the order the law function takes them
    PARAMETERS: tuple = ()
    #: their defaults (SI; the contact angle in degrees)
    DEFAULTS: dict = {}
    #: the bridge volume that sets a pair's rupture distance (its largest)
    VOLUME: str = ""
    #: whether the migration system moves liquid into and out of the bridges
    migrating = True

    def __init__(self, base, **values):
        if not isinstance(base, (HertzMindlinLaw, LinearSpringDashpotLaw)):
            raise InputError(f"{type(self).__name__}: the base law must be a HertzMindlinLaw or a "
                             f"LinearSpringDashpotLaw (got {type(base).__name__})")
        self.base = base
        self.defaults = dict(self.DEFAULTS)
        self._pair_values: dict = {}
        self._set(self.defaults, values)
        self.name = f"{base.name}+{self.model}"
        self.history = tuple(base.history) + (BRIDGE,)

    @property
    def pairs(self):
        """The base law's pair table (a change binds the law again)."""
        return self.base.pairs

    def _set(self, target: dict, values: dict) -> None:
        for name, value in values.items():
            if name not in self.PARAMETERS:
                raise InputError(f"{type(self).__name__}: unknown parameter {name!r}; the "
                                 f"parameters are {', '.join(self.PARAMETERS)}")
            target[name] = float(value)
        self.check(target | {k: v for k, v in self.defaults.items() if k not in target})

    def check(self, v: dict) -> None:
        """Refuse parameters outside their range (clear errors naming the fix)."""
        who = type(self).__name__
        if not 0.0 <= v["contact_angle"] < 90.0:
            raise InputError(f"{who}: contact_angle {v['contact_angle']} deg is outside [0, 90); "
                             "give the contact angle of the liquid on the solid in degrees")
        if not v["surface_tension"] >= 0.0:
            raise InputError(f"{who}: surface_tension must be >= 0 N/m (got "
                             f"{v['surface_tension']})")
        for name in ("bridge_volume", "max_bridge_volume"):
            if name in v and not (math.isfinite(v[name]) and v[name] > 0.0):
                raise InputError(f"{who}: {name} must be > 0 m^3 (got {v[name]})")
        if "min_bridge_volume" in v:
            if not v["min_bridge_volume"] >= 0.0:
                raise InputError(f"{who}: min_bridge_volume must be >= 0 m^3 (got "
                                 f"{v['min_bridge_volume']})")
            if v["max_bridge_volume"] < v["min_bridge_volume"]:
                raise InputError(f"{who}: max_bridge_volume {v['max_bridge_volume']} m^3 is below "
                                 f"min_bridge_volume {v['min_bridge_volume']} m^3; raise the "
                                 "maximum or lower the minimum")
        if "viscosity" in v and not v["viscosity"] >= 0.0:
            raise InputError(f"{who}: viscosity must be >= 0 Pa s (got {v['viscosity']})")
        if "min_separation" in v and not v["min_separation"] > 0.0:
            raise InputError(f"{who}: min_separation must be > 0 m (got {v['min_separation']}): "
                             "lubrication diverges at contact")

    def set_pair(self, a, b, **values):
        """Values of the material pair (a, b): the bridge's parameters here, the base law's
        constants to the base law. Returns the law."""
        own = {k: v for k, v in values.items() if k in self.PARAMETERS}
        rest = {k: v for k, v in values.items() if k not in self.PARAMETERS}
        if rest:
            self.base.set_pair(a, b, **rest)
        if own:
            key = tuple(sorted((a, b), key=str))
            entry = dict(self._pair_values.get(key, {}))
            self._set(entry, own)
            self._pair_values[key] = entry
        return self

    def parameter_table(self, m: int) -> np.ndarray:
        """The bridge's parameters per material pair, (m + 1, m + 1, K), as set (the contact
        angle in radians); material m is the rigid one."""
        table = np.empty((m + 1, m + 1, len(self.PARAMETERS)))
        table[...] = [self.defaults[name] for name in self.PARAMETERS]
        for (a, b), values in self._pair_values.items():
            rows = [m if x == RIGID else int(x) for x in (a, b)]
            if not all(0 <= r <= m for r in rows):
                raise InputError(f"{type(self).__name__}.set_pair({a!r}, {b!r}): not a species "
                                 f"row (0 .. {m - 1}) or 'rigid'")
            for name, value in values.items():
                q = self.PARAMETERS.index(name)
                table[rows[0], rows[1], q] = table[rows[1], rows[0], q] = value
        table[..., self.PARAMETERS.index("contact_angle")] *= math.pi / 180.0
        return table

    def reach_of(self, table: np.ndarray) -> float:
        """The largest rupture distance over the material pairs (m), times 1 + REACH_MARGIN."""
        theta = table[..., self.PARAMETERS.index("contact_angle")]
        volume = table[..., self.PARAMETERS.index(self.VOLUME)]
        return float(np.max((1.0 + 0.5 * theta) * np.cbrt(volume))) * (1.0 + REACH_MARGIN)

    def bind(self, species) -> BoundLaw:
        base = self.base.bind(species)
        fn = base.function.fn
        if (fn, self.model) not in COMBINED:
            raise InputError(f"{type(self).__name__}: the base law {self.base.name} with its "
                             f"{base.function.tag} function has no wet variant (Hertz-Mindlin "
                             "with rolling resistance is not supported); use mu_roll = 0")
        m = base.parameters.shape[0] - 1
        wet = self.parameter_table(m)
        reach = self.reach_of(wet)
        theta = wet[..., 1].copy()
        wet[..., 0] *= np.cos(theta)                  # capillary_tension = gamma cos(theta)
        wet[..., 1] = (1.0 + 0.5 * theta) ** 3         # rupture_cubed
        names = ("capillary_tension", "rupture_cubed") + self.PARAMETERS[2:]
        function = LawFunction(
            COMBINED[(fn, self.model)], base.function.parameters + names,
            base.function.constants + ("reach",), base.function.history + ("bridge_volume",),
            base.function.history_widths + (1,), reach="reach")
        return BoundLaw(function, np.concatenate([base.parameters, wet], axis=2),
                        np.append(base.constants, reach))

    def time_step_limit(self, world):
        return self.base.time_step_limit(world)


class LiquidBridgeWillet(WetLaw):
    """A bridge of a fixed volume per material pair, Willett's force (module docstring)."""

    model = "willett"
    migrating = False
    PARAMETERS = ("surface_tension", "contact_angle", "bridge_volume")
    DEFAULTS = {"surface_tension": 0.072, "contact_angle": 0.0, "bridge_volume": 1e-12}
    VOLUME = "bridge_volume"


class LiquidMigrationWillet(WetLaw):
    """Bridges filled from the films by the migration system, Willett's force."""

    model = "willett_migration"
    PARAMETERS = ("surface_tension", "contact_angle", "min_bridge_volume", "max_bridge_volume")
    DEFAULTS = {"surface_tension": 0.072, "contact_angle": 0.0, "min_bridge_volume": 0.0,
                "max_bridge_volume": 1e-12}
    VOLUME = "max_bridge_volume"


class LiquidMigrationLS(WetLaw):
    """Bridges filled by the migration system; capillary force from the half-filling angle and
    lubrication (Lian & Seville 2016)."""

    model = "lian_seville"
    PARAMETERS = ("surface_tension", "contact_angle", "viscosity", "min_separation",
                  "min_bridge_volume", "max_bridge_volume")
    DEFAULTS = {"surface_tension": 0.072, "contact_angle": 0.0, "viscosity": 1e-3,
                "min_separation": 1e-7, "min_bridge_volume": 0.0, "max_bridge_volume": 1e-12}
    VOLUME = "max_bridge_volume"


__all__ = ["WetLaw", "LiquidBridgeWillet", "LiquidMigrationWillet", "LiquidMigrationLS",
           "BRIDGE", "REACH_MARGIN"]
