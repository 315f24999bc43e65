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
partner of radius 0 and infinite mass.

Units: any consistent set (SI in ecs_dem; the chute is in LAMMPS's LJ units).
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import inline, kernel

from .contact_chunks import BLOCK, CHUNK, PairScratch, checked, pair_touches
from .time_step import linear_collision_time


@inline
def hooke_history(dx, dy, dz, rsq, radi, radj, vr0, vr1, vr2, wsum0, wsum1, wsum2,
                  meff, kn, kt, gamman, gammat, xmu, s0, s1, s2, update, dt):
    """Force on i, torque factor and new shear of one touching contact (LAMMPS's arithmetic).

    dx.. = x_i - x_j; vr = v_i - v_j; wsum = r_i w_i + r_j w_j; s = shear
    displacement (history) before the step. Returns
    (fx, fy, fz, t0, t1, t2, s0, s1, s2) with torque_i -= r_i t,
    torque_j -= r_j t and s the updated history (module docstring: normal
    force kn overlap - meff gamman v_n; s += v_t,rel dt projected onto the
    tangent plane; F_t = -(kt s + meff gammat v_t,rel), scaled onto the
    Coulomb cone xmu |F_n| with s set consistently).
    """
    r = math.sqrt(rsq)
    rinv = 1.0 / r
    rsqinv = 1.0 / rsq
    vnnr = vr0 * dx + vr1 * dy + vr2 * dz
    vn0 = dx * vnnr * rsqinv
    vn1 = dy * vnnr * rsqinv
    vn2 = dz * vnnr * rsqinv
    vt0 = vr0 - vn0
    vt1 = vr1 - vn1
    vt2 = vr2 - vn2
    wr0 = wsum0 * rinv
    wr1 = wsum1 * rinv
    wr2 = wsum2 * rinv
    damp = meff * gamman * vnnr * rsqinv
    ccel = kn * (radi + radj - r) * rinv - damp
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
    mg = meff * gammat
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
    fx = dx * ccel + fs0
    fy = dy * ccel + fs1
    fz = dz * ccel + fs2
    t0 = rinv * (dy * fs2 - dz * fs1)
    t1 = rinv * (dz * fs0 - dx * fs2)
    t2 = rinv * (dx * fs1 - dy * fs0)
    return fx, fy, fz, t0, t1, t2, s0, s1, s2


# scratch columns of the chunked pair kernel (systems.contact_chunks): inputs, then outputs
_DX, _DY, _DZ, _RSQ, _RI, _RJ = 0, 1, 2, 3, 4, 5
_VR0, _VR1, _VR2, _WS0, _WS1, _WS2 = 6, 7, 8, 9, 10, 11
_MI, _MJ, _FI, _FJ, _S0, _S1, _S2 = 12, 13, 14, 15, 16, 17, 18
_FX, _FY, _FZ, _TI0, _TI1, _TI2, _TJ0, _TJ1, _TJ2 = 19, 20, 21, 22, 23, 24, 25, 26, 27
SCRATCH_COLUMNS = 28


@inline
def _hooke_chunk(c0, count, sel, pair_i, pair_j, position, velocity, angular_velocity, radius,
                 mass, fixed, kn, kt, gamman, gammat, xmu, shear, update, dt, force, torque,
                 buf):
    """Gather, evaluate (vectorised) and scatter the selected pairs sel[c0:c0 + count]."""
    C = CHUNK
    for t in range(count):
        k = sel[c0 + t]
        i = pair_i[k]
        j = pair_j[k]
        dx = position[i, 0] - position[j, 0]
        dy = position[i, 1] - position[j, 1]
        dz = position[i, 2] - position[j, 2]
        radi = radius[i]
        radj = radius[j]
        buf[_DX * C + t] = dx
        buf[_DY * C + t] = dy
        buf[_DZ * C + t] = dz
        buf[_RSQ * C + t] = dx * dx + dy * dy + dz * dz
        buf[_RI * C + t] = radi
        buf[_RJ * C + t] = radj
        buf[_VR0 * C + t] = velocity[i, 0] - velocity[j, 0]
        buf[_VR1 * C + t] = velocity[i, 1] - velocity[j, 1]
        buf[_VR2 * C + t] = velocity[i, 2] - velocity[j, 2]
        buf[_WS0 * C + t] = radi * angular_velocity[i, 0] + radj * angular_velocity[j, 0]
        buf[_WS1 * C + t] = radi * angular_velocity[i, 1] + radj * angular_velocity[j, 1]
        buf[_WS2 * C + t] = radi * angular_velocity[i, 2] + radj * angular_velocity[j, 2]
        buf[_MI * C + t] = mass[i]
        buf[_MJ * C + t] = mass[j]
        buf[_FI * C + t] = 1.0 if fixed[i] else 0.0
        buf[_FJ * C + t] = 1.0 if fixed[j] else 0.0
        buf[_S0 * C + t] = shear[k, 0]
        buf[_S1 * C + t] = shear[k, 1]
        buf[_S2 * C + t] = shear[k, 2]
    for t in range(C):
        mi = buf[_MI * C + t]
        mj = buf[_MJ * C + t]
        meff = mi * mj / (mi + mj)
        if buf[_FI * C + t] != 0.0:
            meff = mj
        if buf[_FJ * C + t] != 0.0:
            meff = mi
        radi = buf[_RI * C + t]
        radj = buf[_RJ * C + t]
        fx, fy, fz, t0, t1, t2, s0, s1, s2 = hooke_history(
            buf[_DX * C + t], buf[_DY * C + t], buf[_DZ * C + t], buf[_RSQ * C + t],
            radi, radj, buf[_VR0 * C + t], buf[_VR1 * C + t], buf[_VR2 * C + t],
            buf[_WS0 * C + t], buf[_WS1 * C + t], buf[_WS2 * C + t],
            meff, kn, kt, gamman, gammat, xmu,
            buf[_S0 * C + t], buf[_S1 * C + t], buf[_S2 * C + t], update, dt)
        buf[_FX * C + t] = fx
        buf[_FY * C + t] = fy
        buf[_FZ * C + t] = fz
        buf[_TI0 * C + t] = radi * t0
        buf[_TI1 * C + t] = radi * t1
        buf[_TI2 * C + t] = radi * t2
        buf[_TJ0 * C + t] = radj * t0
        buf[_TJ1 * C + t] = radj * t1
        buf[_TJ2 * C + t] = radj * t2
        buf[_S0 * C + t] = s0
        buf[_S1 * C + t] = s1
        buf[_S2 * C + t] = s2
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
        torque[i, 0] -= buf[_TI0 * C + t]
        torque[i, 1] -= buf[_TI1 * C + t]
        torque[i, 2] -= buf[_TI2 * C + t]
        torque[j, 0] -= buf[_TJ0 * C + t]
        torque[j, 1] -= buf[_TJ1 * C + t]
        torque[j, 2] -= buf[_TJ2 * C + t]
        shear[k, 0] = buf[_S0 * C + t]
        shear[k, 1] = buf[_S1 * C + t]
        shear[k, 2] = buf[_S2 * C + t]


@kernel
def pair_forces(pair_i, pair_j, position, velocity, angular_velocity, radius, mass, fixed,
                kn, kt, gamman, gammat, xmu, shear, flags, update, dt, force, torque, buf, sel,
                chunk, block):
    """Accumulate gran/hooke/history forces of every pair; resets history of separated pairs.

    Blocked and chunked (systems.contact_chunks): BLOCK pairs at a time, overlap test and
    selection of the touching ones in one pass (``flags``: one byte per pair, 1 where the
    history may be non-zero; updated here), then ``hooke_history`` on CHUNK
    selected pairs at a time in a vectorised loop, forces, torques and
    history scattered in pair order. ``buf`` and ``sel`` are the scratch of a
    ``PairScratch(SCRATCH_COLUMNS)``. Returns the number of touching pairs.
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
                    shear[k, 0] = 0.0
                    shear[k, 1] = 0.0
                    shear[k, 2] = 0.0
                flags[k] = touch
            sel[m] = k
            m += np.int64(touch)
        c0 = 0
        while m - c0 >= C or (k1 == n_pairs and m > c0):
            count = min(C, m - c0)
            _hooke_chunk(c0, count, sel, pair_i, pair_j, position, velocity, angular_velocity,
                         radius, mass, fixed, kn, kt, gamman, gammat, xmu, shear, update, dt,
                         force, torque, buf)
            c0 += count
            touching += count
        for t in range(m - c0):
            sel[t] = sel[c0 + t]
        m -= c0
    return touching


@kernel
def wall_forces(n_owned, position, velocity, angular_velocity, radius, mass,
                wall_point, wall_normal, wall_velocity, kn, kt, gamman, gammat, xmu,
                shear, update, dt, force, torque, wall_force):
    """gran/hooke/history contacts of owned particles with planar walls (wall radius 0).

    shear is (n, n_walls, 3); wall_force (n_walls, 3) receives the particles' force on each wall.
    """
    touching = 0
    n_walls = wall_point.shape[0]
    for i in range(n_owned):
        radi = radius[i]
        for w in range(n_walls):
            nx = wall_normal[w, 0]
            ny = wall_normal[w, 1]
            nz = wall_normal[w, 2]
            h = ((position[i, 0] - wall_point[w, 0]) * nx
                 + (position[i, 1] - wall_point[w, 1]) * ny
                 + (position[i, 2] - wall_point[w, 2]) * nz)
            if h >= radi:
                if shear[i, w, 0] != 0.0 or shear[i, w, 1] != 0.0 or shear[i, w, 2] != 0.0:
                    shear[i, w, 0] = 0.0
                    shear[i, w, 1] = 0.0
                    shear[i, w, 2] = 0.0
                continue
            touching += 1
            dx = h * nx
            dy = h * ny
            dz = h * nz
            fx, fy, fz, t0, t1, t2, s0, s1, s2 = hooke_history(
                dx, dy, dz, h * h, radi, 0.0,
                velocity[i, 0] - wall_velocity[w, 0], velocity[i, 1] - wall_velocity[w, 1],
                velocity[i, 2] - wall_velocity[w, 2],
                radi * angular_velocity[i, 0], radi * angular_velocity[i, 1],
                radi * angular_velocity[i, 2],
                mass[i], kn, kt, gamman, gammat, xmu, shear[i, w, 0], shear[i, w, 1],
                shear[i, w, 2], update, dt)
            shear[i, w, 0] = s0
            shear[i, w, 1] = s1
            shear[i, w, 2] = s2
            force[i, 0] += fx
            force[i, 1] += fy
            force[i, 2] += fz
            wall_force[w, 0] -= fx
            wall_force[w, 1] -= fy
            wall_force[w, 2] -= fz
            torque[i, 0] -= radi * t0
            torque[i, 1] -= radi * t1
            torque[i, 2] -= radi * t2
    return touching


class LinearSpringDashpotLaw:
    """Parameters of gran/hooke/history (LAMMPS defaults: kt = 2/7 kn, gammat = gamman / 2)."""

    name = "linear_spring_dashpot"
    history_fields = ("tangential_spring",)

    def __init__(self, kn: float, gamman: float, friction: float, kt: float | None = None,
                 gammat: float | None = None, dampflag: int = 1):
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
        if not self.kt > 0:
            raise InputError("linear_spring_dashpot: kt must be > 0")
        self._scratch = None

    def collision_time(self, meff: float) -> float:
        """Duration of a head-on collision of effective mass meff (systems.time_step)."""
        return linear_collision_time(self.kn, meff, self.gamman)

    def stable_time_step(self, mass) -> tuple[float, str]:
        """Largest accepted step: a fifth of the collision time of the lightest pair.

        Velocity Verlet is unstable beyond 2/omega = 0.64 t_c; we refuse
        dt > t_c / 5 and recommend t_c / 50 (LAMMPS's chute uses t_c / 50).
        """
        if mass.size == 0:
            return np.inf, "no particles"
        tc = self.collision_time(0.5 * float(mass.min()))
        return tc / 5.0, f"the collision time of the lightest pair is {tc:.4g}; use about t_c/50"

    def time_step_limit(self, world) -> tuple[float, str]:
        return self.stable_time_step(world.particles.mass)

    def apply_pairs(self, world, update: bool) -> int:
        """Accumulate the forces of every pair in ``world.pairs``; returns the touching count."""
        pairs = world.pairs
        g = world.particles.with_ghosts
        if self._scratch is None:
            self._scratch = PairScratch(SCRATCH_COLUMNS)
        s = self._scratch
        position = g("position")
        radius = g("radius")
        flags = s.flags(pairs, self.history_fields)
        return checked(pair_forces(
            pairs.i, pairs.j, position, g("velocity"), g("angular_velocity"), radius, g("mass"),
            g("fixed"), self.kn, self.kt, self.gamman, self.gammat, self.xmu,
            pairs.tangential_spring, flags, update, world.dt, g("force"), g("torque"), s.buf,
            s.sel, CHUNK, BLOCK))

    def apply_walls(self, world, update: bool, wall_force) -> int:
        """Accumulate wall contact forces on owned particles; wall_force gets the reactions."""
        p = world.particles
        w = world.walls
        return wall_forces(p.n_owned, p.position, p.velocity, p.angular_velocity, p.radius,
                           p.mass, w.point, w.normal, w.velocity, self.kn, self.kt, self.gamman,
                           self.gammat, self.xmu, p.wall_tangential_spring, update, world.dt,
                           p.force, p.torque, wall_force)
