"""Linear spring-dashpot with tangential history: LAMMPS ``pair gran/hooke/history``.

Same parameters and semantics as LAMMPS (kn, kt, gamman, gammat, xmu,
dampflag), so LAMMPS's chute benchmark reproduces to the printed digits:

* del = x_i - x_j, r = |del|, n = del / r, overlap radsum - r.
* Normal: F_n = kn (radsum - r) - meff gamman v_n, with v_n = (v_i - v_j).n;
  not clamped (attraction possible at separation, as in LAMMPS).
* Tangential shear displacement s (history): every step
  s += v_t,rel dt, then its component along del is removed; the relative
  tangential velocity of the contact point is
  v_t - ((r_i w_i + r_j w_j) x n) (lever arms are the radii).
  F_t = -(kt s + meff gammat v_t,rel). When |F_t| > xmu |F_n| the force is
  scaled onto the cone and s is set consistently,
  s = (xmu|F_n|/|F_t|)(s + meff gammat v/kt) - meff gammat v/kt.
* dampflag = 0 switches tangential damping off (gammat = 0).
* Torque on i: -r_i n x F_t; on j: -r_j n x F_t.
* meff = m_i m_j / (m_i + m_j); a fixed particle counts as infinitely
  massive (LAMMPS: a frozen atom's partner mass).
* During set-up (``world.setup_phase``), history is used but not advanced,
  as in LAMMPS's setup force pass.

Walls (LAMMPS ``fix wall/gran hooke/history``): the same law with the wall as a
partner of radius 0 and infinite mass. The law is a scalar function of the
contact-law interface (``systems.contact.law``): its parameters are the
constants above, the same for every material pair.

Units: any consistent set (SI in ecs_dem; the chute is in LAMMPS's LJ units).
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import inline
from ecs_dem.table import Field, Halo

from ecs_dem.systems.contact.law import BoundLaw, LawFunction
from ecs_dem.systems.contact.pair_constants import PairTableMixin
from ecs_dem.systems.contact.time_step import linear_collision_time

HISTORY = (Field("tangential_spring", np.float64, (3,), Halo.LOCAL, 0.0, "m",
                 "shear displacement s (contact history)"),)


@inline
def hooke_history(g, p, k, h, x, update, dt):
    """One touching contact in LAMMPS's arithmetic (module docstring; interface of
    systems.contact.law): k = (kn, kt, gamman, gammat, xmu), h = shear s; no per-material
    parameters. Lever arms are the radii: w_sum = r_i w_i + r_j w_j.

    Returns (F_i (3), T_i (3), T_j (3), F_n, s (3)): normal force
    kn delta - meff gamman v_n; s += v_t,rel dt projected onto the tangent
    plane; F_t = -(kt s + meff gammat v_t,rel), scaled onto the Coulomb cone
    xmu |F_n| with s set consistently; torques -r_i n x F_t and -r_j n x F_t.
    """
    dx, dy, dz, rsq, delta, ri, rj, rstar, mstar, v0, v1, v2, wi0, wi1, wi2, wj0, wj1, wj2 = g
    kn, kt, gamman, gammat, xmu = k
    s0, s1, s2 = h
    r = math.sqrt(rsq)
    rinv = 1.0 / r
    rsqinv = 1.0 / rsq
    vnnr = v0 * dx + v1 * dy + v2 * dz
    vn0 = dx * vnnr * rsqinv
    vn1 = dy * vnnr * rsqinv
    vn2 = dz * vnnr * rsqinv
    vt0 = v0 - vn0
    vt1 = v1 - vn1
    vt2 = v2 - vn2
    wr0 = (ri * wi0 + rj * wj0) * rinv
    wr1 = (ri * wi1 + rj * wj1) * rinv
    wr2 = (ri * wi2 + rj * wj2) * rinv
    damp = mstar * gamman * vnnr * rsqinv
    ccel = kn * delta * rinv - damp
    vtr0 = vt0 - (dz * wr1 - dy * wr2)
    vtr1 = vt1 - (dx * wr2 - dz * wr0)
    vtr2 = vt2 - (dy * wr0 - dx * wr1)
    if update:
        s0 += vtr0 * dt
        s1 += vtr1 * dt
        s2 += vtr2 * dt
    shrmag = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    if update:
        rsht = (s0 * dx + s1 * dy + s2 * dz) * rsqinv
        s0 -= rsht * dx
        s1 -= rsht * dy
        s2 -= rsht * dz
    mg = mstar * gammat
    fs0 = -(kt * s0 + mg * vtr0)
    fs1 = -(kt * s1 + mg * vtr1)
    fs2 = -(kt * s2 + mg * vtr2)
    fs = math.sqrt(fs0 * fs0 + fs1 * fs1 + fs2 * fs2)
    fn = xmu * abs(ccel * r)
    if fs > fn:
        if shrmag != 0.0:
            ratio = fn / fs
            s0 = ratio * (s0 + mg * vtr0 / kt) - mg * vtr0 / kt
            s1 = ratio * (s1 + mg * vtr1 / kt) - mg * vtr1 / kt
            s2 = ratio * (s2 + mg * vtr2 / kt) - mg * vtr2 / kt
            fs0 *= ratio
            fs1 *= ratio
            fs2 *= ratio
        else:
            fs0 = 0.0
            fs1 = 0.0
            fs2 = 0.0
    t0 = rinv * (dy * fs2 - dz * fs1)
    t1 = rinv * (dz * fs0 - dx * fs2)
    t2 = rinv * (dx * fs1 - dy * fs0)
    return (dx * ccel + fs0, dy * ccel + fs1, dz * ccel + fs2,
            -(ri * t0), -(ri * t1), -(ri * t2), -(rj * t0), -(rj * t1), -(rj * t2),
            ccel * r, s0, s1, s2)


FUNCTION = LawFunction(hooke_history, (), ("kn", "kt", "gamman", "gammat", "xmu"),
                       ("tangential_spring",), (3,))


@inline
def hooke_history_pairs(g, p, k, h, x, update, dt):
    """``hooke_history`` with its constants per material pair: p = (kn, kt, gamman, gammat,
    xmu) of the pair, no common constants (the law with a pair table)."""
    return hooke_history(g, (), p, h, x, update, dt)


#: the law with per-pair constants (``LinearSpringDashpotLaw.set_pair``)
PAIR_FUNCTION = LawFunction(hooke_history_pairs, ("kn", "kt", "gamman", "gammat", "xmu"), (),
                            ("tangential_spring",), (3,))


class LinearSpringDashpotLaw(PairTableMixin):
    """Parameters of gran/hooke/history (LAMMPS defaults: kt = 2/7 kn, gammat = gamman / 2).

    Per-pair constants (``set_pair(a, b, kn=..., kt=..., gamman=..., gammat=..., mu=...)``,
    systems.contact.pair_constants; LAMMPS's ``pair_coeff i j``) replace, for that pair,
    the constants given here, which stay the default of every other pair; gamman and gammat
    are per unit effective mass (1/s), as here; ``dampflag`` = 0 does not switch off a
    pair's own gammat. A pair's kt defaults to 2/7 of its kn, its gammat to half its gamman
    (0 with dampflag = 0). An explicit table must give kn, gamman and mu for every pair of
    species.
    """

    name = "linear_spring_dashpot"
    history = HISTORY
    PAIR_CONSTANTS = ("kn", "kt", "gamman", "gammat", "mu")
    PAIR_REQUIRED = ("kn", "gamman", "mu")
    PAIR_POSITIVE = ("kn", "kt")

    def __init__(self, kn: float, gamman: float, friction: float, kt: float | None = None,
                 gammat: float | None = None, dampflag: int = 1):
        for name, value in (("kn", kn), ("gamman", gamman), ("friction", friction), ("kt", kt),
                            ("gammat", gammat)):
            if value is not None and not math.isfinite(value):
                raise InputError(f"linear_spring_dashpot: {name} must be finite (got {value})")
        if not kn > 0:
            raise InputError(f"linear_spring_dashpot: kn must be > 0 (got {kn})")
        if gamman < 0 or friction < 0:
            raise InputError("linear_spring_dashpot: gamman and friction must be >= 0")
        if dampflag not in (0, 1):
            raise InputError(f"linear_spring_dashpot: dampflag must be 0 or 1 (got {dampflag})")
        self.kn = float(kn)
        self.kt = float(kt) if kt is not None else 2.0 / 7.0 * self.kn
        self.gamman = float(gamman)
        gt = float(gammat) if gammat is not None else 0.5 * self.gamman
        self.gammat = gt if dampflag else 0.0
        self.xmu = float(friction)
        self.dampflag = int(dampflag)
        self.pairs = None
        if not self.kt > 0:
            raise InputError("linear_spring_dashpot: kt must be > 0")

    def bind(self, species_table) -> BoundLaw:
        """The same constants for every material pair (no per-species parameters); with a
        pair table, the constants per pair (``PAIR_FUNCTION``)."""
        m = species_table.n_owned + 1 if species_table is not None else 1
        if not self.pairs:
            return BoundLaw(FUNCTION, np.zeros((m, m, 0)),
                            np.array([self.kn, self.kt, self.gamman, self.gammat, self.xmu]))
        return BoundLaw(PAIR_FUNCTION, self.pair_parameters(m - 1), np.zeros(0))

    def pair_parameters(self, n_species: int) -> np.ndarray:
        """(M + 1, M + 1, 5): kn, kt, gamman, gammat, xmu of every material pair, the
        constants of the law where the pair table gives none (class docstring)."""
        pairs = self.pairs
        m = n_species + 1
        names = ("kn", "kt", "gamman", "gammat", "mu")
        default = (self.kn, self.kt, self.gamman, self.gammat, self.xmu)
        table = pairs.apply({n: np.full((m, m), v) for n, v in zip(names, default)}, n_species)
        kn_only = pairs.given("kn", n_species) & ~pairs.given("kt", n_species)
        table["kt"][kn_only] = 2.0 / 7.0 * table["kn"][kn_only]
        gn_only = pairs.given("gamman", n_species) & ~pairs.given("gammat", n_species)
        table["gammat"][gn_only] = 0.5 * self.dampflag * table["gamman"][gn_only]
        return np.stack([table[n] for n in names], axis=-1)

    def collision_time(self, meff: float) -> float:
        """Duration of a head-on collision of effective mass meff (systems.contact.time_step)."""
        return linear_collision_time(self.kn, meff, self.gamman)

    def stable_time_step(self, mass) -> tuple[float, str]:
        """Largest accepted step: a fifth of the collision time of the lightest pair.

        Velocity Verlet is unstable beyond 2/omega = 0.64 t_c; we refuse
        dt > t_c / 5 and recommend t_c / 50 (LAMMPS's chute uses t_c / 50).
        """
        if mass.size == 0:
            return np.inf, "no particles"
        meff = 0.5 * float(mass.min())
        tc = self.collision_time(meff)
        kn = [v["kn"] for v in self.pairs.pairs.values() if "kn" in v] if self.pairs else []
        if kn:  # the stiffest pair, undamped (damping lengthens the collision)
            tc = min(tc, linear_collision_time(max(kn), meff, 0.0))
        return tc / 5.0, f"the collision time of the lightest pair is {tc:.4g}; use about t_c/50"

    def time_step_limit(self, world) -> tuple[float, str]:
        """From the lightest particle that takes part in contacts (not patch-membrane vertices)."""
        p = world.particles
        return self.stable_time_step(p.mass[p.contact_group != -2])
