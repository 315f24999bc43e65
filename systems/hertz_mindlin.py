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

from .contact_chunks import BLOCK, CHUNK, PairScratch, checked, pair_touches
from .contact_geometry import rotated_into_plane
from .time_step import rayleigh_time


def beta_from_restitution(eps):
    """beta_n of Eq. (4.4) (negative for eps < 1); eps = 1 gives 0."""
    eps = np.asarray(eps, dtype=np.float64)
    le = np.log(eps)
    return np.sqrt(5.0) * le / np.sqrt(le * le + np.pi * np.pi)


@inline
def hertz_mindlin(nx, ny, nz, delta, vx, vy, vz, wx, wy, wz, rstar, mstar, estar, gstar,
                  beta_n, mu, mu_roll, clamp, ts0, ts1, ts2, rs0, rs1, rs2, update, dt):
    """Forces on particle i of one contact (see the module docstring).

    Parameters: n (unit, from partner to i); delta > 0 overlap [m]; v the
    relative velocity of i's contact point w.r.t. the partner's [m/s]; w the
    relative angular velocity w_i - w_j [rad/s]; R* [m], M* [kg], E*, G* [Pa];
    beta_n (Eq. 4.4); mu, mu_roll; clamp; ts, rs the tangential and rolling
    history before the step [m]; update (advance history); dt [s].

    Returns (fn, ftx, fty, ftz, trx, try, trz, ts0, ts1, ts2, rs0, rs1, rs2):
    normal force magnitude along +n (Eqs. 4.1-4.4), tangential force on i
    (Eqs. 4.5-4.8 with the Coulomb cap), rolling torque on i (Eq. 4.9; the
    partner gets minus), and the updated histories. Kept in scalars so the
    chunked pair kernel can evaluate it in SIMD lanes (systems.contact_chunks).
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
    if mu_roll > 0.0:
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
    return fn, ftx, fty, ftz, trx, try_, trz, ts0, ts1, ts2, rs0, rs1, rs2


# scratch columns of the chunked pair kernel (systems.contact_chunks)
_DX, _DY, _DZ, _RSQ, _RI, _RJ = 0, 1, 2, 3, 4, 5
_V0, _V1, _V2, _WI0, _WI1, _WI2, _WJ0, _WJ1, _WJ2 = 6, 7, 8, 9, 10, 11, 12, 13, 14
_MI, _MJ, _FI, _FJ, _E, _G, _BETA, _MU, _MUR = 15, 16, 17, 18, 19, 20, 21, 22, 23
_TS0, _TS1, _TS2, _RS0, _RS1, _RS2 = 24, 25, 26, 27, 28, 29
_FX, _FY, _FZ, _QI0, _QI1, _QI2, _QJ0, _QJ1, _QJ2 = 30, 31, 32, 33, 34, 35, 36, 37, 38
SCRATCH_COLUMNS = 39


@inline
def _hertz_chunk(c0, count, sel, pair_i, pair_j, position, velocity, angular_velocity, radius,
                 mass, species, fixed, estar, gstar, beta_n, mu, mu_roll, clamp, tspring,
                 rspring, update, dt, force, torque, buf, rolling):
    """Gather, evaluate (vectorised) and scatter the selected pairs sel[c0:c0 + count].

    ``rolling`` is a constant at each call site, so each variant compiles
    without the branches of the other.
    """
    C = CHUNK
    for t in range(count):
        k = sel[c0 + t]
        i = pair_i[k]
        j = pair_j[k]
        dx = position[i, 0] - position[j, 0]
        dy = position[i, 1] - position[j, 1]
        dz = position[i, 2] - position[j, 2]
        buf[_DX * C + t] = dx
        buf[_DY * C + t] = dy
        buf[_DZ * C + t] = dz
        buf[_RSQ * C + t] = dx * dx + dy * dy + dz * dz
        buf[_RI * C + t] = radius[i]
        buf[_RJ * C + t] = radius[j]
        buf[_V0 * C + t] = velocity[i, 0] - velocity[j, 0]
        buf[_V1 * C + t] = velocity[i, 1] - velocity[j, 1]
        buf[_V2 * C + t] = velocity[i, 2] - velocity[j, 2]
        buf[_WI0 * C + t] = angular_velocity[i, 0]
        buf[_WI1 * C + t] = angular_velocity[i, 1]
        buf[_WI2 * C + t] = angular_velocity[i, 2]
        buf[_WJ0 * C + t] = angular_velocity[j, 0]
        buf[_WJ1 * C + t] = angular_velocity[j, 1]
        buf[_WJ2 * C + t] = angular_velocity[j, 2]
        buf[_MI * C + t] = mass[i]
        buf[_MJ * C + t] = mass[j]
        buf[_FI * C + t] = 1.0 if fixed[i] else 0.0
        buf[_FJ * C + t] = 1.0 if fixed[j] else 0.0
        si = species[i]
        sj = species[j]
        buf[_E * C + t] = estar[si, sj]
        buf[_G * C + t] = gstar[si, sj]
        buf[_BETA * C + t] = beta_n[si, sj]
        buf[_MU * C + t] = mu[si, sj]
        buf[_TS0 * C + t] = tspring[k, 0]
        buf[_TS1 * C + t] = tspring[k, 1]
        buf[_TS2 * C + t] = tspring[k, 2]
        if rolling:
            buf[_MUR * C + t] = mu_roll[si, sj]
            buf[_RS0 * C + t] = rspring[k, 0]
            buf[_RS1 * C + t] = rspring[k, 1]
            buf[_RS2 * C + t] = rspring[k, 2]
    for t in range(C):
        dx = buf[_DX * C + t]
        dy = buf[_DY * C + t]
        dz = buf[_DZ * C + t]
        ri = buf[_RI * C + t]
        rj = buf[_RJ * C + t]
        rsum = ri + rj
        r = math.sqrt(buf[_RSQ * C + t])
        nx = dx / r
        ny = dy / r
        nz = dz / r
        delta = rsum - r
        ai = ri - 0.5 * delta
        aj = rj - 0.5 * delta
        wi0 = buf[_WI0 * C + t]
        wi1 = buf[_WI1 * C + t]
        wi2 = buf[_WI2 * C + t]
        wj0 = buf[_WJ0 * C + t]
        wj1 = buf[_WJ1 * C + t]
        wj2 = buf[_WJ2 * C + t]
        # relative velocity of the contact points: v_i - v_j - (a_i w_i + a_j w_j) x n
        cx = ai * wi0 + aj * wj0
        cy = ai * wi1 + aj * wj1
        cz = ai * wi2 + aj * wj2
        vx = buf[_V0 * C + t] - (cy * nz - cz * ny)
        vy = buf[_V1 * C + t] - (cz * nx - cx * nz)
        vz = buf[_V2 * C + t] - (cx * ny - cy * nx)
        mi = buf[_MI * C + t]
        mj = buf[_MJ * C + t]
        mstar = mi * mj / (mi + mj)
        if buf[_FJ * C + t] != 0.0:
            mstar = mi
        if buf[_FI * C + t] != 0.0:
            mstar = mj
        mu_roll = buf[_MUR * C + t] if rolling else 0.0
        fn, ftx, fty, ftz, trx, try_, trz, ts0, ts1, ts2, rs0, rs1, rs2 = hertz_mindlin(
            nx, ny, nz, delta, vx, vy, vz, wi0 - wj0, wi1 - wj1, wi2 - wj2,
            ri * rj / rsum, mstar, buf[_E * C + t], buf[_G * C + t], buf[_BETA * C + t],
            buf[_MU * C + t], mu_roll, clamp,
            buf[_TS0 * C + t], buf[_TS1 * C + t], buf[_TS2 * C + t],
            buf[_RS0 * C + t], buf[_RS1 * C + t], buf[_RS2 * C + t], update, dt)
        buf[_FX * C + t] = fn * nx + ftx
        buf[_FY * C + t] = fn * ny + fty
        buf[_FZ * C + t] = fn * nz + ftz
        # n x F_t, lever -a_i n for i and +a_j n for j
        tx = ny * ftz - nz * fty
        ty = nz * ftx - nx * ftz
        tz = nx * fty - ny * ftx
        buf[_QI0 * C + t] = -ai * tx + trx
        buf[_QI1 * C + t] = -ai * ty + try_
        buf[_QI2 * C + t] = -ai * tz + trz
        buf[_QJ0 * C + t] = -aj * tx - trx
        buf[_QJ1 * C + t] = -aj * ty - try_
        buf[_QJ2 * C + t] = -aj * tz - trz
        buf[_TS0 * C + t] = ts0
        buf[_TS1 * C + t] = ts1
        buf[_TS2 * C + t] = ts2
        buf[_RS0 * C + t] = rs0
        buf[_RS1 * C + t] = rs1
        buf[_RS2 * C + t] = rs2
    for t in range(count):
        k = sel[c0 + t]
        i = pair_i[k]
        j = pair_j[k]
        fx = buf[_FX * C + t]
        fy = buf[_FY * C + t]
        fz = buf[_FZ * C + t]
        force[i, 0] += fx
        force[i, 1] += fy
        force[i, 2] += fz
        force[j, 0] -= fx
        force[j, 1] -= fy
        force[j, 2] -= fz
        torque[i, 0] += buf[_QI0 * C + t]
        torque[i, 1] += buf[_QI1 * C + t]
        torque[i, 2] += buf[_QI2 * C + t]
        torque[j, 0] += buf[_QJ0 * C + t]
        torque[j, 1] += buf[_QJ1 * C + t]
        torque[j, 2] += buf[_QJ2 * C + t]
        tspring[k, 0] = buf[_TS0 * C + t]
        tspring[k, 1] = buf[_TS1 * C + t]
        tspring[k, 2] = buf[_TS2 * C + t]
        if rolling:
            rspring[k, 0] = buf[_RS0 * C + t]
            rspring[k, 1] = buf[_RS1 * C + t]
            rspring[k, 2] = buf[_RS2 * C + t]


@kernel
def pair_forces(pair_i, pair_j, position, velocity, angular_velocity, radius, mass, species,
                fixed, estar, gstar, beta_n, mu, mu_roll, clamp, rolling, tspring, rspring,
                flags, update, dt, force, torque, buf, sel, chunk, block):
    """Accumulate Hertz-Mindlin forces and torques of every pair into both rows.

    Pairs that do not overlap get their history reset to zero. Returns the
    number of touching pairs. Blocked and chunked (systems.contact_chunks):
    BLOCK pairs at a time, overlap test and selection of the touching ones in one pass (``flags``:
    one byte per pair, 1 where the history may be non-zero; updated here),
    then ``hertz_mindlin`` on CHUNK selected pairs at a time in a vectorised
    loop, scattered in pair order. ``buf`` and ``sel`` are the scratch of a
    ``PairScratch(SCRATCH_COLUMNS)``. ``rolling`` is False when every mu_roll
    is 0: the rolling history then stays zero and is neither read nor written.
    """
    if chunk != CHUNK or block != BLOCK:
        return -1  # compiled with other constants: stale cache (contact_chunks.checked)
    C = CHUNK
    n_pairs = pair_i.size
    touching = 0
    m = 0
    for k0 in range(0, n_pairs, BLOCK):
        k1 = min(k0 + BLOCK, n_pairs)
        for k in range(k0, k1):
            touch = pair_touches(pair_i, pair_j, position, radius, k)
            if flags[k] != touch:  # few: a contact began or ended
                if touch == 0:  # separated: reset the history
                    for a in range(3):
                        tspring[k, a] = 0.0
                    if rolling:
                        for a in range(3):
                            rspring[k, a] = 0.0
                flags[k] = touch
            sel[m] = k
            m += np.int64(touch)
        c0 = 0
        while m - c0 >= C or (k1 == n_pairs and m > c0):
            count = min(C, m - c0)
            if rolling:
                _hertz_chunk(c0, count, sel, pair_i, pair_j, position, velocity,
                             angular_velocity, radius, mass, species, fixed, estar, gstar,
                             beta_n, mu, mu_roll, clamp, tspring, rspring, update, dt, force,
                             torque, buf, True)
            else:
                _hertz_chunk(c0, count, sel, pair_i, pair_j, position, velocity,
                             angular_velocity, radius, mass, species, fixed, estar, gstar,
                             beta_n, mu, mu_roll, clamp, tspring, rspring, update, dt, force,
                             torque, buf, False)
            c0 += count
            touching += count
        for t in range(m - c0):
            sel[t] = sel[c0 + t]
        m -= c0
    return touching


# scratch columns of the chunked wall kernel
_WNX, _WNY, _WNZ, _WDELTA, _WRI, _WV0, _WV1, _WV2 = 0, 1, 2, 3, 4, 5, 6, 7
_WW0, _WW1, _WW2, _WM, _WE, _WG, _WBETA, _WMU, _WMUR = 8, 9, 10, 11, 12, 13, 14, 15, 16
_WTS0, _WTS1, _WTS2, _WRS0, _WRS1, _WRS2 = 17, 18, 19, 20, 21, 22
_WFX, _WFY, _WFZ, _WQ0, _WQ1, _WQ2 = 23, 24, 25, 26, 27, 28


@inline
def _wall_chunk(c0, count, sel, n_walls, position, velocity, angular_velocity, radius, mass,
                species, wall_point, wall_normal, wall_velocity, estar, gstar, beta_n, mu,
                mu_roll, clamp, tspring, rspring, update, dt, force, torque, wall_force, buf,
                rolling):
    """Gather, evaluate (vectorised) and scatter the selected wall contacts sel[c0:c0 + count]."""
    C = CHUNK
    for t in range(count):
        i = sel[c0 + t] // n_walls
        w = sel[c0 + t] - i * n_walls
        nx = wall_normal[w, 0]
        ny = wall_normal[w, 1]
        nz = wall_normal[w, 2]
        h = ((position[i, 0] - wall_point[w, 0]) * nx
             + (position[i, 1] - wall_point[w, 1]) * ny
             + (position[i, 2] - wall_point[w, 2]) * nz)
        s = species[i]
        buf[_WNX * C + t] = nx
        buf[_WNY * C + t] = ny
        buf[_WNZ * C + t] = nz
        buf[_WDELTA * C + t] = radius[i] - h
        buf[_WRI * C + t] = radius[i]
        buf[_WV0 * C + t] = velocity[i, 0] - wall_velocity[w, 0]
        buf[_WV1 * C + t] = velocity[i, 1] - wall_velocity[w, 1]
        buf[_WV2 * C + t] = velocity[i, 2] - wall_velocity[w, 2]
        buf[_WW0 * C + t] = angular_velocity[i, 0]
        buf[_WW1 * C + t] = angular_velocity[i, 1]
        buf[_WW2 * C + t] = angular_velocity[i, 2]
        buf[_WM * C + t] = mass[i]
        buf[_WE * C + t] = estar[w, s]
        buf[_WG * C + t] = gstar[w, s]
        buf[_WBETA * C + t] = beta_n[w, s]
        buf[_WMU * C + t] = mu[w, s]
        buf[_WTS0 * C + t] = tspring[i, w, 0]
        buf[_WTS1 * C + t] = tspring[i, w, 1]
        buf[_WTS2 * C + t] = tspring[i, w, 2]
        if rolling:
            buf[_WMUR * C + t] = mu_roll[w, s]
            buf[_WRS0 * C + t] = rspring[i, w, 0]
            buf[_WRS1 * C + t] = rspring[i, w, 1]
            buf[_WRS2 * C + t] = rspring[i, w, 2]
    for t in range(C):
        nx = buf[_WNX * C + t]
        ny = buf[_WNY * C + t]
        nz = buf[_WNZ * C + t]
        delta = buf[_WDELTA * C + t]
        ri = buf[_WRI * C + t]
        w0 = buf[_WW0 * C + t]
        w1 = buf[_WW1 * C + t]
        w2 = buf[_WW2 * C + t]
        ai = ri - 0.5 * delta
        cx = ai * w0
        cy = ai * w1
        cz = ai * w2
        vx = buf[_WV0 * C + t] - (cy * nz - cz * ny)
        vy = buf[_WV1 * C + t] - (cz * nx - cx * nz)
        vz = buf[_WV2 * C + t] - (cx * ny - cy * nx)
        mu_roll_t = buf[_WMUR * C + t] if rolling else 0.0
        fn, ftx, fty, ftz, trx, try_, trz, ts0, ts1, ts2, rs0, rs1, rs2 = hertz_mindlin(
            nx, ny, nz, delta, vx, vy, vz, w0, w1, w2, ri, buf[_WM * C + t],
            buf[_WE * C + t], buf[_WG * C + t], buf[_WBETA * C + t], buf[_WMU * C + t],
            mu_roll_t, clamp, buf[_WTS0 * C + t], buf[_WTS1 * C + t], buf[_WTS2 * C + t],
            buf[_WRS0 * C + t], buf[_WRS1 * C + t], buf[_WRS2 * C + t], update, dt)
        buf[_WFX * C + t] = fn * nx + ftx
        buf[_WFY * C + t] = fn * ny + fty
        buf[_WFZ * C + t] = fn * nz + ftz
        buf[_WQ0 * C + t] = -ai * (ny * ftz - nz * fty) + trx
        buf[_WQ1 * C + t] = -ai * (nz * ftx - nx * ftz) + try_
        buf[_WQ2 * C + t] = -ai * (nx * fty - ny * ftx) + trz
        buf[_WTS0 * C + t] = ts0
        buf[_WTS1 * C + t] = ts1
        buf[_WTS2 * C + t] = ts2
        buf[_WRS0 * C + t] = rs0
        buf[_WRS1 * C + t] = rs1
        buf[_WRS2 * C + t] = rs2
    for t in range(count):
        i = sel[c0 + t] // n_walls
        w = sel[c0 + t] - i * n_walls
        fx = buf[_WFX * C + t]
        fy = buf[_WFY * C + t]
        fz = buf[_WFZ * C + t]
        force[i, 0] += fx
        force[i, 1] += fy
        force[i, 2] += fz
        wall_force[w, 0] -= fx
        wall_force[w, 1] -= fy
        wall_force[w, 2] -= fz
        torque[i, 0] += buf[_WQ0 * C + t]
        torque[i, 1] += buf[_WQ1 * C + t]
        torque[i, 2] += buf[_WQ2 * C + t]
        tspring[i, w, 0] = buf[_WTS0 * C + t]
        tspring[i, w, 1] = buf[_WTS1 * C + t]
        tspring[i, w, 2] = buf[_WTS2 * C + t]
        if rolling:
            rspring[i, w, 0] = buf[_WRS0 * C + t]
            rspring[i, w, 1] = buf[_WRS1 * C + t]
            rspring[i, w, 2] = buf[_WRS2 * C + t]


@kernel
def wall_forces(n_owned, position, velocity, angular_velocity, radius, mass, species,
                wall_point, wall_normal, wall_velocity, estar, gstar, beta_n, mu, mu_roll,
                clamp, rolling, tspring, rspring, flags, update, dt, force, torque, wall_force,
                buf, sel, chunk, block):
    """Hertz-Mindlin contacts of owned particles with planar walls.

    estar etc. are indexed [wall, species]. tspring/rspring are per particle
    and wall, (n, n_walls, 3); ``flags`` (n, n_walls) bytes, 1 where that
    history may be non-zero (systems.contact_chunks; updated here): the
    history of a contact that separated is reset to zero without reading the
    history of the others. wall_force (n_walls, 3) receives the force of the
    particles on each wall. Touching contacts are evaluated CHUNK at a time in
    a vectorised loop (``buf``, ``sel``: a ``PairScratch(SCRATCH_COLUMNS)``),
    in particle-then-wall order. ``rolling`` False: every mu_roll is 0 and the
    rolling history is neither read nor written. Returns the number of
    touching contacts.
    """
    if chunk != CHUNK or block != BLOCK:
        return -1  # compiled with other constants: stale cache (contact_chunks.checked)
    touching = 0
    n_walls = wall_point.shape[0]
    gap = buf[SCRATCH_COLUMNS * CHUNK:]
    m = 0
    # wall by wall: each particle still meets its walls in wall order and each wall its
    # particles in row order, so every sum is accumulated as in a particle-then-wall loop
    for w in range(n_walls):
        nx = wall_normal[w, 0]
        ny = wall_normal[w, 1]
        nz = wall_normal[w, 2]
        px = wall_point[w, 0]
        py = wall_point[w, 1]
        pz = wall_point[w, 2]
        for i0 in range(0, n_owned, BLOCK):
            i1 = min(i0 + BLOCK, n_owned)
            for i in range(i0, i1):  # overlap radius - h, vectorised
                gap[i - i0] = radius[i] - ((position[i, 0] - px) * nx + (position[i, 1] - py) * ny
                                           + (position[i, 2] - pz) * nz)
            for i in range(i0, i1):
                touch = gap[i - i0] > 0.0
                if touch or flags[i, w]:  # few: most particles are far from each wall
                    if not touch:  # separated: reset the history
                        for a in range(3):
                            tspring[i, w, a] = 0.0
                            rspring[i, w, a] = 0.0
                    flags[i, w] = np.uint8(touch)
                    sel[m] = i * n_walls + w
                    m += np.int64(touch)
            last = w == n_walls - 1 and i1 == n_owned
            c0 = 0
            while m - c0 >= CHUNK or (last and m > c0):
                count = min(CHUNK, m - c0)
                if rolling:
                    _wall_chunk(c0, count, sel, n_walls, position, velocity, angular_velocity,
                                radius, mass, species, wall_point, wall_normal, wall_velocity,
                                estar, gstar, beta_n, mu, mu_roll, clamp, tspring, rspring,
                                update, dt, force, torque, wall_force, buf, True)
                else:
                    _wall_chunk(c0, count, sel, n_walls, position, velocity, angular_velocity,
                                radius, mass, species, wall_point, wall_normal, wall_velocity,
                                estar, gstar, beta_n, mu, mu_roll, clamp, tspring, rspring,
                                update, dt, force, torque, wall_force, buf, False)
                c0 += count
                touching += count
            for t in range(m - c0):
                sel[t] = sel[c0 + t]
            m -= c0
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
        self._scratch = None
        self._wall_scratch = None

    def apply_pairs(self, world, update: bool) -> int:
        """Accumulate the forces of every pair in ``world.pairs``; returns the touching count."""
        pairs = world.pairs
        if self._pair_params is None:
            self.check_species(world.tables.get("species"))
            self._pair_params = self.pair_params(world.species)
            self._scratch = PairScratch(SCRATCH_COLUMNS)
        q = self._pair_params
        s = self._scratch
        g = world.particles.with_ghosts
        position = g("position")
        radius = g("radius")
        flags = s.flags(pairs, self.history_fields)
        return checked(pair_forces(
            pairs.i, pairs.j, position, g("velocity"), g("angular_velocity"), radius, g("mass"),
            g("species"), g("fixed"), q["estar"], q["gstar"], q["beta_n"], q["mu"], q["mu_roll"],
            self.clamp, q["rolling"], pairs.tangential_spring, pairs.rolling_spring, flags, update,
            world.dt, g("force"), g("torque"), s.buf, s.sel, CHUNK, BLOCK))

    def apply_walls(self, world, update: bool, wall_force) -> int:
        """Accumulate wall contact forces on owned particles; wall_force gets the reactions."""
        p = world.particles
        w = world.walls
        if self._wall_params is None:
            self._wall_params = self.wall_params(world.species, w.species)
            self._wall_scratch = PairScratch(SCRATCH_COLUMNS)
        q = self._wall_params
        s = self._wall_scratch
        flags = s.flags(p, ("wall_" + f for f in self.history_fields), w.n_owned)
        return checked(wall_forces(
            p.n_owned, p.position, p.velocity, p.angular_velocity, p.radius, p.mass, p.species,
            w.point, w.normal, w.velocity, q["estar"], q["gstar"], q["beta_n"], q["mu"],
            q["mu_roll"], self.clamp, q["rolling"], p.wall_tangential_spring,
            p.wall_rolling_spring, flags, update, world.dt, p.force, p.torque, wall_force, s.buf,
            s.sel, CHUNK, BLOCK))

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
        mu_roll = mean(sp.rolling_friction)
        return dict(estar=estar, gstar=gstar, beta_n=beta, mu=mean(sp.friction),
                    mu_roll=mu_roll, rolling=bool(np.any(mu_roll > 0.0)))

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
        out["rolling"] = bool(np.any(out["mu_roll"] > 0.0))
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

