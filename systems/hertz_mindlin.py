"""Hertz-Mindlin contact law as MercuryDPM defines it (Thornton et al. 2023, Sect. 4).

Conventions (../shared/PHYSICS-NOTES.md, Hertz-Mindlin):

* ``n`` is the unit normal from the partner (j, or the wall) to particle i;
  overlap delta >= 0; a positive normal force pushes i along +n.
* Normal, Eqs. (4.1)-(4.4): F_n = k_n delta - gamma_n v_n with
  k_n = 4/3 E* sqrt(R* delta), gamma_n = |beta_n| sqrt(M* k_n),
  beta_n = sqrt(5) ln(eps) / sqrt(ln^2 eps + pi^2), v_n = (v_i - v_j).n.
  1/E* = (1-nu_1^2)/E_1 + (1-nu_2^2)/E_2 (the Hertz value; PHYSICS-NOTES).
  Default: the normal force is *not* clamped at zero, as in MercuryDPM, so the
  restitution coefficient equals eps at every impact speed. ``clamp=True``
  forbids attraction; restitution then comes out slightly higher
  (0.902 for eps = 0.9).
* Tangential, Eqs. (4.5)-(4.8): F_t = -(2/3) k_t xi - gamma_t v_t with
  k_t = 8 G* sqrt(R* delta), gamma_t = |beta_t| sqrt(M* k_t),
  beta_t = sqrt(2/3) beta_n, 1/G* = (2-nu_1)/G_1 + (2-nu_2)/G_2.
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

Units: SI. History: ``tangential_spring`` and ``rolling_spring`` (m), per pair
(in the ``pairs`` table) and per particle and wall (particle fields
``wall_tangential_spring`` / ``wall_rolling_spring``).
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import inline, kernel

from .contact_geometry import rotate_into_plane
from .time_step import rayleigh_time


def beta_from_restitution(eps):
    """beta_n of Eq. (4.4) (negative for eps < 1); eps = 1 gives 0."""
    eps = np.asarray(eps, dtype=np.float64)
    le = np.log(eps)
    return np.sqrt(5.0) * le / np.sqrt(le * le + np.pi * np.pi)


@inline
def hertz_mindlin(nx, ny, nz, delta, vx, vy, vz, wx, wy, wz, rstar, mstar, estar, gstar,
                  beta_n, mu, mu_roll, clamp, tspring, rspring, update, dt):
    """Forces on particle i of one contact (see the module docstring).

    Parameters: n (unit, from partner to i); delta > 0 overlap [m]; v the
    relative velocity of i's contact point w.r.t. the partner's [m/s]; w the
    relative angular velocity w_i - w_j [rad/s]; R* [m], M* [kg], E*, G* [Pa];
    beta_n (Eq. 4.4); mu, mu_roll; clamp; tspring, rspring (3,) history [m],
    updated in place; update (advance history); dt [s].

    Returns (fn, ftx, fty, ftz, trx, try, trz): normal force magnitude along
    +n, tangential force on i, rolling torque on i (the partner gets minus).
    """
    sqrt_rd = math.sqrt(rstar * delta)
    kn = (4.0 / 3.0) * estar * sqrt_rd
    gamma_n = abs(beta_n) * math.sqrt(mstar * kn)
    vn = vx * nx + vy * ny + vz * nz
    fn = kn * delta - gamma_n * vn
    if clamp and fn < 0.0:
        fn = 0.0
    fn_abs = abs(fn)

    vtx = vx - vn * nx
    vty = vy - vn * ny
    vtz = vz - vn * nz
    kt = 8.0 * gstar * sqrt_rd
    gamma_t = abs(beta_n) * math.sqrt(2.0 / 3.0) * math.sqrt(mstar * kt)
    rotate_into_plane(tspring, nx, ny, nz)
    if update:
        tspring[0] += vtx * dt
        tspring[1] += vty * dt
        tspring[2] += vtz * dt
    k_el = (2.0 / 3.0) * kt
    ex = -k_el * tspring[0]
    ey = -k_el * tspring[1]
    ez = -k_el * tspring[2]
    f_el = math.sqrt(ex * ex + ey * ey + ez * ez)
    cap = mu * fn_abs
    if f_el > cap:
        if f_el > 0.0:
            s = cap / f_el
            ftx = ex * s
            fty = ey * s
            ftz = ez * s
            tspring[0] = -ftx / k_el
            tspring[1] = -fty / k_el
            tspring[2] = -ftz / k_el
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
    if mu_roll > 0.0:
        # v_r = -R* (w x n)
        vrx = -rstar * (wy * nz - wz * ny)
        vry = -rstar * (wz * nx - wx * nz)
        vrz = -rstar * (wx * ny - wy * nx)
        rotate_into_plane(rspring, nx, ny, nz)
        if update:
            rspring[0] += vrx * dt
            rspring[1] += vry * dt
            rspring[2] += vrz * dt
        frx = -k_el * rspring[0]
        fry = -k_el * rspring[1]
        frz = -k_el * rspring[2]
        fr = math.sqrt(frx * frx + fry * fry + frz * frz)
        rcap = mu_roll * fn_abs
        if fr > rcap and fr > 0.0:
            s = rcap / fr
            frx *= s
            fry *= s
            frz *= s
            rspring[0] = -frx / k_el
            rspring[1] = -fry / k_el
            rspring[2] = -frz / k_el
        # torque on i: -R* n x F_r
        trx = -rstar * (ny * frz - nz * fry)
        try_ = -rstar * (nz * frx - nx * frz)
        trz = -rstar * (nx * fry - ny * frx)
    return fn, ftx, fty, ftz, trx, try_, trz


@kernel
def pair_forces(pair_i, pair_j, position, velocity, angular_velocity, radius, mass, species,
                fixed, estar, gstar, beta_n, mu, mu_roll, clamp, tspring, rspring, update, dt,
                force, torque):
    """Accumulate Hertz-Mindlin forces and torques of every pair into both rows.

    Pairs that do not overlap get their history reset to zero. Returns the
    number of touching pairs.
    """
    touching = 0
    for k in range(pair_i.size):
        i = pair_i[k]
        j = pair_j[k]
        dx = position[i, 0] - position[j, 0]
        dy = position[i, 1] - position[j, 1]
        dz = position[i, 2] - position[j, 2]
        ri = radius[i]
        rj = radius[j]
        rsum = ri + rj
        rsq = dx * dx + dy * dy + dz * dz
        if rsq >= rsum * rsum:
            for a in range(3):
                tspring[k, a] = 0.0
                rspring[k, a] = 0.0
            continue
        touching += 1
        r = math.sqrt(rsq)
        nx = dx / r
        ny = dy / r
        nz = dz / r
        delta = rsum - r
        ai = ri - 0.5 * delta
        aj = rj - 0.5 * delta
        # relative velocity of the contact points: v_i - v_j - (a_i w_i + a_j w_j) x n
        cx = ai * angular_velocity[i, 0] + aj * angular_velocity[j, 0]
        cy = ai * angular_velocity[i, 1] + aj * angular_velocity[j, 1]
        cz = ai * angular_velocity[i, 2] + aj * angular_velocity[j, 2]
        vx = velocity[i, 0] - velocity[j, 0] - (cy * nz - cz * ny)
        vy = velocity[i, 1] - velocity[j, 1] - (cz * nx - cx * nz)
        vz = velocity[i, 2] - velocity[j, 2] - (cx * ny - cy * nx)
        mi = mass[i]
        mj = mass[j]
        if fixed[i]:
            mstar = mj
        elif fixed[j]:
            mstar = mi
        else:
            mstar = mi * mj / (mi + mj)
        si = species[i]
        sj = species[j]
        fn, ftx, fty, ftz, trx, try_, trz = hertz_mindlin(
            nx, ny, nz, delta, vx, vy, vz,
            angular_velocity[i, 0] - angular_velocity[j, 0],
            angular_velocity[i, 1] - angular_velocity[j, 1],
            angular_velocity[i, 2] - angular_velocity[j, 2],
            ri * rj / rsum, mstar, estar[si, sj], gstar[si, sj], beta_n[si, sj],
            mu[si, sj], mu_roll[si, sj], clamp, tspring[k], rspring[k], update, dt)
        fx = fn * nx + ftx
        fy = fn * ny + fty
        fz = fn * nz + ftz
        force[i, 0] += fx
        force[i, 1] += fy
        force[i, 2] += fz
        force[j, 0] -= fx
        force[j, 1] -= fy
        force[j, 2] -= fz
        # n x F_t, lever -a_i n for i and +a_j n for j
        tx = ny * ftz - nz * fty
        ty = nz * ftx - nx * ftz
        tz = nx * fty - ny * ftx
        torque[i, 0] += -ai * tx + trx
        torque[i, 1] += -ai * ty + try_
        torque[i, 2] += -ai * tz + trz
        torque[j, 0] += -aj * tx - trx
        torque[j, 1] += -aj * ty - try_
        torque[j, 2] += -aj * tz - trz
    return touching


@kernel
def wall_forces(n_owned, position, velocity, angular_velocity, radius, mass, species,
                wall_point, wall_normal, wall_velocity, estar, gstar, beta_n, mu, mu_roll,
                clamp, tspring, rspring, update, dt, force, torque, wall_force):
    """Hertz-Mindlin contacts of owned particles with planar walls.

    estar etc. are indexed [wall, species]. tspring/rspring are per particle
    and wall, (n, n_walls, 3). wall_force (n_walls, 3) receives the force of
    the particles on each wall. Returns the number of touching contacts.
    """
    touching = 0
    n_walls = wall_point.shape[0]
    for i in range(n_owned):
        ri = radius[i]
        s = species[i]
        for w in range(n_walls):
            nx = wall_normal[w, 0]
            ny = wall_normal[w, 1]
            nz = wall_normal[w, 2]
            h = ((position[i, 0] - wall_point[w, 0]) * nx
                 + (position[i, 1] - wall_point[w, 1]) * ny
                 + (position[i, 2] - wall_point[w, 2]) * nz)
            delta = ri - h
            if delta <= 0.0:
                for a in range(3):
                    tspring[i, w, a] = 0.0
                    rspring[i, w, a] = 0.0
                continue
            touching += 1
            ai = ri - 0.5 * delta
            cx = ai * angular_velocity[i, 0]
            cy = ai * angular_velocity[i, 1]
            cz = ai * angular_velocity[i, 2]
            vx = velocity[i, 0] - wall_velocity[w, 0] - (cy * nz - cz * ny)
            vy = velocity[i, 1] - wall_velocity[w, 1] - (cz * nx - cx * nz)
            vz = velocity[i, 2] - wall_velocity[w, 2] - (cx * ny - cy * nx)
            fn, ftx, fty, ftz, trx, try_, trz = hertz_mindlin(
                nx, ny, nz, delta, vx, vy, vz,
                angular_velocity[i, 0], angular_velocity[i, 1], angular_velocity[i, 2],
                ri, mass[i], estar[w, s], gstar[w, s], beta_n[w, s], mu[w, s], mu_roll[w, s],
                clamp, tspring[i, w], rspring[i, w], update, dt)
            fx = fn * nx + ftx
            fy = fn * ny + fty
            fz = fn * nz + ftz
            force[i, 0] += fx
            force[i, 1] += fy
            force[i, 2] += fz
            wall_force[w, 0] -= fx
            wall_force[w, 1] -= fy
            wall_force[w, 2] -= fz
            torque[i, 0] += -ai * (ny * ftz - nz * fty) + trx
            torque[i, 1] += -ai * (nz * ftx - nx * ftz) + try_
            torque[i, 2] += -ai * (nx * fty - ny * ftx) + trz
    return touching


def _moduli(E, nu):
    """(1 - nu^2)/E and (2 - nu)/G per species: the compliance terms of E* and G*."""
    G = E / (2.0 * (1.0 + nu))
    return (1.0 - nu * nu) / E, (2.0 - nu) / G


class HertzMindlinLaw:
    """Per-species-pair parameters of the Hertz-Mindlin law and its kernels.

    Mixing for two species: E*, G* from the Hertz compliance sums; restitution,
    friction and rolling friction are the arithmetic means (a wall with a
    species mixes the same way; a rigid wall takes the particle's values).
    """

    name = "hertz_mindlin"
    history_fields = ("tangential_spring", "rolling_spring")

    def __init__(self, clamp: bool = False):
        self.clamp = bool(clamp)
        self._pair_params = None
        self._wall_params = None

    def apply_pairs(self, world, update: bool) -> int:
        """Accumulate the forces of every pair in ``world.pairs``; returns the touching count."""
        pairs = world.pairs
        if self._pair_params is None:
            self.check_species(world.tables.get("species"))
            self._pair_params = self.pair_params(world.species)
        q = self._pair_params
        g = world.particles.with_ghosts
        return pair_forces(pairs.i, pairs.j, g("position"), g("velocity"), g("angular_velocity"),
                           g("radius"), g("mass"), g("species"), g("fixed"), q["estar"],
                           q["gstar"], q["beta_n"], q["mu"], q["mu_roll"], self.clamp,
                           pairs.tangential_spring, pairs.rolling_spring, update, world.dt,
                           g("force"), g("torque"))

    def apply_walls(self, world, update: bool, wall_force) -> int:
        """Accumulate wall contact forces on owned particles; wall_force gets the reactions."""
        p = world.particles
        w = world.walls
        if self._wall_params is None:
            self._wall_params = self.wall_params(world.species, w.species)
        q = self._wall_params
        return wall_forces(p.n_owned, p.position, p.velocity, p.angular_velocity, p.radius,
                           p.mass, p.species, w.point, w.normal, w.velocity, q["estar"],
                           q["gstar"], q["beta_n"], q["mu"], q["mu_roll"], self.clamp,
                           p.wall_tangential_spring, p.wall_rolling_spring, update, world.dt,
                           p.force, p.torque, wall_force)

    def time_step_limit(self, world) -> tuple[float, str]:
        p = world.particles
        self.check_species(world.tables.get("species"))
        return self.stable_time_step(world.species, p.radius, p.species)

    def pair_params(self, species_table):
        sp = species_table
        cE, cG = _moduli(sp.youngs_modulus, sp.poisson_ratio)
        estar = 1.0 / (cE[:, None] + cE[None, :])
        gstar = 1.0 / (cG[:, None] + cG[None, :])
        mean = lambda a: 0.5 * (a[:, None] + a[None, :])  # noqa: E731
        beta = beta_from_restitution(mean(sp.restitution))
        return dict(estar=estar, gstar=gstar, beta_n=beta, mu=mean(sp.friction),
                    mu_roll=mean(sp.rolling_friction))

    def wall_params(self, species_table, wall_species):
        sp = species_table
        cE, cG = _moduli(sp.youngs_modulus, sp.poisson_ratio)
        nw, ns = wall_species.size, sp.n_owned
        out = {k: np.empty((nw, ns)) for k in ("estar", "gstar", "beta_n", "mu", "mu_roll")}
        for w, ws in enumerate(wall_species):
            if ws < 0:
                out["estar"][w] = 1.0 / cE
                out["gstar"][w] = 1.0 / cG
                eps, mu, mur = sp.restitution, sp.friction, sp.rolling_friction
            else:
                out["estar"][w] = 1.0 / (cE + cE[ws])
                out["gstar"][w] = 1.0 / (cG + cG[ws])
                eps = 0.5 * (sp.restitution + sp.restitution[ws])
                mu = 0.5 * (sp.friction + sp.friction[ws])
                mur = 0.5 * (sp.rolling_friction + sp.rolling_friction[ws])
            out["beta_n"][w] = beta_from_restitution(eps)
            out["mu"][w] = mu
            out["mu_roll"][w] = mur
        return out

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

