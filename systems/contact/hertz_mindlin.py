"""Hertz-Mindlin contact law as MercuryDPM defines it (Thornton et al. 2023, Sect. 4).

Conventions (docs/physics.md, Hertz-Mindlin):

* ``n`` is the unit normal from the partner (j, or the wall) to particle i;
  overlap delta >= 0; a positive normal force pushes i along +n.
* Normal, Eqs. (4.1)-(4.4): F_n = k_n delta - gamma_n v_n with
  k_n = 4/3 E* sqrt(R* delta), gamma_n = |beta_n| sqrt(M* k_n),
  beta_n = sqrt(5) ln(eps) / sqrt(ln^2 eps + pi^2), v_n = (v_i - v_j).n.
  1/E* = (1-nu_1^2)/E_1 + (1-nu_2^2)/E_2 (the Hertz value; docs/physics.md).
  Default: the normal force is *not* clamped at zero, as in MercuryDPM, so the
  restitution coefficient equals eps at every impact speed. ``clamp=True``
  forbids attraction; restitution then comes out slightly higher
  (0.902 for eps = 0.9).
* Tangential, Eqs. (4.5)-(4.8): F_t = -(2/3) k_t xi - gamma_t v_t with
  k_t = 8 G* sqrt(R* delta), gamma_t = |beta_t| sqrt(M* k_t),
  beta_t = sqrt(2/3) beta_n (unless a pair gives its own), 1/G* = (2-nu_1)/G_1 + (2-nu_2)/G_2.
  Each step xi is rotated into the current tangent plane keeping its length,
  then xi += v_t dt. Coulomb test on the elastic part: when
  |(2/3) k_t xi| > mu |F_n| the contact slides, F_t = -mu |F_n| xi_hat and xi
  is rescaled to mu |F_n| / ((2/3) k_t).
* Rolling resistance (optional, Luding 2008 spring model, Eq. (4.9) with R*):
  xi_r += v_r dt with v_r = -R* (w_i - w_j) x n, F_r = -k_r xi_r with
  k_r = (2/3) k_t, capped at mu_r |F_n|; torque on i -R* n x F_r.
* Contact point at mid-overlap: lever arms r - delta/2.
* A fixed particle (or a wall) acts as infinitely massive: M* is the other
  particle's mass. A wall without species is rigid (E -> infinity).
* Per-pair constants: ``HertzMindlinLaw.set_pair(a, b, estar=..., ...)`` replaces
  the mixed values of a pair (systems.contact.pair_constants).

Units: SI. History: ``tangential_spring`` and ``rolling_spring`` (m), per
contact (pair rows, particle fields ``wall_tangential_spring`` ... per wall).
The law is a scalar function of the contact-law interface
(``systems.contact.law``): the same arithmetic for particle pairs, walls and
(membrane) triangles. Without rolling friction anywhere the variant without
the rolling spring runs (its history stays zero and is never read).
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import inline
from ecs_dem.table import Field, Halo

from ecs_dem.systems.contact.kinematics import contact_point_velocity, rotated_into_plane
from ecs_dem.systems.contact.law import BoundLaw, LawFunction
from ecs_dem.systems.contact.pair_constants import PairTableMixin
from ecs_dem.systems.contact.time_step import rayleigh_time

HISTORY = (
    Field("tangential_spring", np.float64, (3,), Halo.LOCAL, 0.0, "m",
          "Mindlin tangential spring xi (contact history)"),
    Field("rolling_spring", np.float64, (3,), Halo.LOCAL, 0.0, "m",
          "rolling spring xi_r (contact history)"),
)


def beta_from_restitution(eps):
    """beta_n of Eq. (4.4) (negative for eps < 1); eps = 1 gives 0."""
    eps = np.asarray(eps, dtype=np.float64)
    le = np.log(eps)
    return np.sqrt(5.0) * le / np.sqrt(le * le + np.pi * np.pi)


@inline
def hertz_mindlin_core(g, estar, gstar, beta_n, beta_t, mu, mu_roll, clamp, ts0, ts1, ts2, rs0,
                       rs1, rs2, update, dt, rolling):
    """One contact (module docstring; geometry and outputs as in systems.contact.law).

    E*, G* [Pa]; beta_n (Eq. 4.4) and beta_t (their magnitudes are used); mu, mu_roll;
    clamp (1: F_n >= 0); ts, rs the tangential and rolling springs before the step [m].
    ``rolling`` is a
    constant at each call site: without it the rolling branch compiles away.
    Returns (F_i (3), T_i (3), T_j (3), F_n, ts (3), rs (3)).
    """
    delta, rstar, mstar = g[4], g[7], g[8]
    wi0, wi1, wi2, wj0, wj1, wj2 = g[12], g[13], g[14], g[15], g[16], g[17]
    nx, ny, nz, vx, vy, vz, ai, aj = contact_point_velocity(g)

    sqrt_rd = math.sqrt(rstar * delta)
    kn = (4.0 / 3.0) * estar * sqrt_rd
    gamma_n = abs(beta_n) * math.sqrt(mstar * kn)
    vn = vx * nx + vy * ny + vz * nz
    fn = kn * delta - gamma_n * vn
    if clamp != 0.0 and fn < 0.0:
        fn = 0.0
    fn_abs = abs(fn)

    vtx = vx - vn * nx
    vty = vy - vn * ny
    vtz = vz - vn * nz
    kt = 8.0 * gstar * sqrt_rd
    gamma_t = abs(beta_t) * math.sqrt(mstar * kt)
    ts0, ts1, ts2 = rotated_into_plane(ts0, ts1, ts2, nx, ny, nz)
    if update:
        ts0 += vtx * dt
        ts1 += vty * dt
        ts2 += vtz * dt
    k_el = (2.0 / 3.0) * kt
    ex = -k_el * ts0
    ey = -k_el * ts1
    ez = -k_el * ts2
    f_el = math.sqrt(ex * ex + ey * ey + ez * ez)
    cap = mu * fn_abs
    if f_el > cap:
        if f_el > 0.0:
            s = cap / f_el
            ftx = ex * s
            fty = ey * s
            ftz = ez * s
            ts0 = -ftx / k_el
            ts1 = -fty / k_el
            ts2 = -ftz / k_el
        else:
            ftx = 0.0
            fty = 0.0
            ftz = 0.0
    else:
        ftx = ex - gamma_t * vtx
        fty = ey - gamma_t * vty
        ftz = ez - gamma_t * vtz

    trx = 0.0
    try_ = 0.0
    trz = 0.0
    if rolling and mu_roll > 0.0:
        wx = wi0 - wj0
        wy = wi1 - wj1
        wz = wi2 - wj2
        # v_r = -R* (w x n)
        vrx = -rstar * (wy * nz - wz * ny)
        vry = -rstar * (wz * nx - wx * nz)
        vrz = -rstar * (wx * ny - wy * nx)
        rs0, rs1, rs2 = rotated_into_plane(rs0, rs1, rs2, nx, ny, nz)
        if update:
            rs0 += vrx * dt
            rs1 += vry * dt
            rs2 += vrz * dt
        frx = -k_el * rs0
        fry = -k_el * rs1
        frz = -k_el * rs2
        fr = math.sqrt(frx * frx + fry * fry + frz * frz)
        rcap = mu_roll * fn_abs
        if fr > rcap and fr > 0.0:
            s = rcap / fr
            frx *= s
            fry *= s
            frz *= s
            rs0 = -frx / k_el
            rs1 = -fry / k_el
            rs2 = -frz / k_el
        # torque on i: -R* n x F_r
        trx = -rstar * (ny * frz - nz * fry)
        try_ = -rstar * (nz * frx - nx * frz)
        trz = -rstar * (nx * fry - ny * frx)
    # n x F_t, lever -a_i n for i and +a_j n for the partner
    tx = ny * ftz - nz * fty
    ty = nz * ftx - nx * ftz
    tz = nx * fty - ny * ftx
    return (fn * nx + ftx, fn * ny + fty, fn * nz + ftz,
            -ai * tx + trx, -ai * ty + try_, -ai * tz + trz,
            -aj * tx - trx, -aj * ty - try_, -aj * tz - trz, fn,
            ts0, ts1, ts2, rs0, rs1, rs2)


@inline
def hertz_mindlin(g, p, k, h, x, update, dt):
    """Hertz-Mindlin without rolling resistance: p = (E*, G*, beta_n, beta_t, mu),
    k = (clamp,), h = tangential spring (``hertz_mindlin_core``)."""
    out = hertz_mindlin_core(g, p[0], p[1], p[2], p[3], p[4], 0.0, k[0], h[0], h[1], h[2],
                             0.0, 0.0, 0.0, update, dt, False)
    return out[:13]


@inline
def hertz_mindlin_rolling(g, p, k, h, x, update, dt):
    """Hertz-Mindlin with the rolling spring: p = (E*, G*, beta_n, beta_t, mu, mu_roll),
    k = (clamp,), h = tangential and rolling springs (``hertz_mindlin_core``)."""
    return hertz_mindlin_core(g, p[0], p[1], p[2], p[3], p[4], p[5], k[0], h[0], h[1], h[2],
                              h[3], h[4], h[5], update, dt, True)


SLIDING = LawFunction(hertz_mindlin, ("estar", "gstar", "beta_n", "beta_t", "mu"), ("clamp",),
                      ("tangential_spring",), (3,))
ROLLING = LawFunction(hertz_mindlin_rolling,
                      ("estar", "gstar", "beta_n", "beta_t", "mu", "mu_roll"),
                      ("clamp",), ("tangential_spring", "rolling_spring"), (3, 3))


def _moduli(E, nu):
    """(1 - nu^2)/E and (2 - nu)/G per species: the compliance terms of E* and G*."""
    G = E / (2.0 * (1.0 + nu))
    return (1.0 - nu * nu) / E, (2.0 - nu) / G


def material_pair_table(species_table, pairs=None) -> dict[str, np.ndarray]:
    """E*, G*, beta_n, beta_t, mu, mu_roll of every material pair, (M + 1, M + 1) each.

    Two species: E*, G* from the Hertz compliance sums (docs/physics.md);
    restitution, friction and rolling friction are arithmetic means;
    beta_t = sqrt(2/3) beta_n. Against the rigid material M (a wall without
    species): the compliance of the particle alone and the particle's own
    restitution and friction. `pairs` (a ``PairConstants``,
    systems.contact.pair_constants) overrides pair by pair; where it gives
    beta_n but not beta_t, beta_t = sqrt(2/3) times the given beta_n.
    """
    sp = species_table
    cE, cG = _moduli(sp.youngs_modulus, sp.poisson_ratio)
    cE = np.append(cE, 0.0)  # the rigid material: E, G -> infinity
    cG = np.append(cG, 0.0)
    rigid = np.zeros(cE.size, dtype=bool)
    rigid[-1] = True

    def mixed(values):
        v = np.append(values, 0.0)
        mean = 0.5 * (v[:, None] + v[None, :])
        mean[-1, :] = v  # against the rigid material: the other body's own value
        mean[:, -1] = v
        return mean

    with np.errstate(divide="ignore"):
        estar = 1.0 / (cE[:, None] + cE[None, :])
        gstar = 1.0 / (cG[:, None] + cG[None, :])
    restitution = mixed(sp.restitution)
    restitution[-1, -1] = 1.0  # rigid-rigid: never evaluated
    beta_n = beta_from_restitution(restitution)
    table = dict(estar=estar, gstar=gstar, beta_n=beta_n, beta_t=beta_n * np.sqrt(2.0 / 3.0),
                 mu=mixed(sp.friction), mu_roll=mixed(sp.rolling_friction))
    if not pairs:
        return table
    m = sp.n_owned
    out = pairs.apply(table, m)
    derived = pairs.given("beta_n", m) & ~pairs.given("beta_t", m)
    out["beta_t"][derived] = out["beta_n"][derived] * np.sqrt(2.0 / 3.0)
    return out


class HertzMindlinLaw(PairTableMixin):
    """Hertz-Mindlin as MercuryDPM defines it (module docstring); per-species parameters.

    ``clamp``: forbid attraction (F_n >= 0); default off, as MercuryDPM.

    Per-pair constants (``set_pair(a, b, **constants)``, systems.contact.pair_constants)
    override the mixing of ``material_pair_table``: ``estar``, ``gstar`` [Pa], ``beta_n``,
    ``beta_t`` (damping factors: gamma = beta sqrt(M* k), magnitudes), ``mu``, ``mu_roll``.
    An explicit table must give estar, gstar, beta_n and mu for every pair of species. The
    time-step check reads the species' own constants (the Rayleigh time), not the pairs'.
    """

    name = "hertz_mindlin"
    history = HISTORY
    PAIR_CONSTANTS = ("estar", "gstar", "beta_n", "beta_t", "mu", "mu_roll")
    PAIR_REQUIRED = ("estar", "gstar", "beta_n", "mu")

    def __init__(self, clamp: bool = False):
        self.clamp = bool(clamp)
        self.pairs = None

    def bind(self, species_table) -> BoundLaw:
        """The law function for these species (the rolling variant only if some mu_r > 0)."""
        self.check_species(species_table)
        table = material_pair_table(species_table, self.pairs)
        function = ROLLING if np.any(table["mu_roll"] > 0.0) else SLIDING
        params = np.stack([table[name] for name in function.parameters], axis=-1)
        return BoundLaw(function, params, np.array([1.0 if self.clamp else 0.0]))

    def time_step_limit(self, world) -> tuple[float, str]:
        """The Rayleigh time of the smallest particle that takes part in contacts (the vertices
        of a patch membrane, contact group -2, touch nothing as spheres)."""
        p = world.particles
        self.check_species(world.tables.get("species"))
        touches = p.contact_group != -2
        return self.stable_time_step(world.species, p.radius[touches], p.species[touches])

    def stable_time_step(self, species_table, radius, species) -> tuple[float, str]:
        """Largest accepted step: the Rayleigh time of the smallest particle.

        t_R = pi r sqrt(rho/G) / (0.1631 nu + 0.8766). Hertz collisions last
        several t_R; accuracy asks for about 0.1-0.2 t_R, the default check
        refuses a step above t_R.
        """
        if radius.size == 0:
            return np.inf, "no particles"
        sp = species_table
        t_r = rayleigh_time(radius, sp.density[species], sp.youngs_modulus[species],
                            sp.poisson_ratio[species])
        k = int(np.argmin(t_r))
        return float(t_r[k]), (f"the Rayleigh time of the smallest particle (r = {radius[k]:.4g} m) "
                               f"is {t_r[k]:.4g} s; use dt of about 0.1-0.2 of it")

    def check_species(self, species_table) -> None:
        if species_table is None or species_table.n_owned == 0:
            raise InputError("hertz_mindlin: add a species (E, nu, density, restitution, friction)")
