"""Contact loops of the multi-contact geometry (Brodu et al. 2015, Eq. (1)), for any contact law.

A template module (``ecs_dem.generated_kernels``), compiled once per law
function by ``systems.contact.law.law_kernels``; call the kernels of
``law_kernels(multicontact_kernels, f)``, never these functions directly.
``systems.multicontact.systems`` computes, per contact side, the surface
displacement W (m, outward along the centre line, positive toward the
partner) that the other contacts of the same grain induce (Eq. (1)); these
loops turn it into the law's geometry (PHYSICS-NOTES, Multi-contact
correction):

* corrected overlap Delta = delta + W_i + W_j, delta = (r_i + r_j) - |d| the
  overlap of the undeformed spheres (walls: Delta = (r_i - h) + W_i); a
  contact touches while Delta > 0, so a pair whose deformed surfaces meet
  touches before the spheres do, and starts at zero force;
* r_i + W_i and r_j + W_j as the radii the law sees: its lever arms
  r + W - Delta/2 put the contact point at the mean of the two deformed
  surfaces (mid-overlap);
* R* of the undeformed spheres (Hertz's law of the corrected overlap).

With W = 0 everywhere every value, and the order in which forces are added
into each row, are those of ``systems.contact.kernels`` (pairs in list order,
then walls swept one at a time): gamma = 0 gives the independent-contact
forces bit for bit.

Both loops record, per contact, the law's normal force ``fn`` (N, 0 when not
touching) and the W used (``offset``): the next step's Eq. (1) uses them
(the scheme lags the forces by one step). Blocked and chunked as in
``systems.contact.chunks`` (selection, then gather / vectorised law /
scatter per chunk).
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.generated_kernels import template
from ecs_dem.jit import inline

from ecs_dem.systems.contact import kernels as plain
from ecs_dem.systems.contact.chunks import BLOCK, CHUNK
from ecs_dem.systems.contact.kernels import (MIN_WALL_DISTANCE, _DX, _DY, _DZ, _FI, _FJ, _HH, _MI, _MJ, _RI,
                              _RJ, _TJ0, _TJ1, _TJ2, _V0, _V1, _V2, _WDELTA, _WI0, _WI1, _WI2,
                              _WJ0, _WJ1, _WJ2)

# the plain geometry's scratch columns (``systems.contact.kernels``), then three of ours:
# the surface displacements W_i, W_j and the normal force
_SI, _SJ, _FN = plain.LAW_COLUMN, plain.LAW_COLUMN + 1, plain.LAW_COLUMN + 2
#: first column of the law's parameters, then its history (``contact_law.law_kernels``)
LAW_COLUMN = plain.LAW_COLUMN + 3
#: the plain geometry's output helpers, compiled against its own (our) column numbers
store_law_outputs = inline(plain.store_law_outputs)
add_to_particle = inline(plain.add_to_particle)
_DELTA = _WDELTA  # walls: the corrected overlap


@template("inline")
def gather_law_inputs(buf, t, params, a, b, history, c):
    """Parameters of material pair (a, b) and the history of contact c into column t."""
    C = CHUNK
    for q in range(N_PARAMS):  # noqa: F821 (generated)
        buf[(PAR + q) * C + t] = params[a, b, q]  # noqa: F821
    gather_history(buf, t, history, c)  # noqa: F821


@template("inline")
def store_outputs(buf, t, out):
    """The force on i, both torques (the plain columns) and the normal force into column t."""
    store_law_outputs(buf, t, out)
    buf[_FN * CHUNK + t] = out[9]


@template("inline")
def gather_motion(buf, t, velocity, angular_velocity, mass, i, vx, vy, vz):
    """Relative velocity (vx, vy, vz), i's angular velocity and mass into column t."""
    C = CHUNK
    buf[_V0 * C + t] = vx
    buf[_V1 * C + t] = vy
    buf[_V2 * C + t] = vz
    buf[_WI0 * C + t] = angular_velocity[i, 0]
    buf[_WI1 * C + t] = angular_velocity[i, 1]
    buf[_WI2 * C + t] = angular_velocity[i, 2]
    buf[_MI * C + t] = mass[i]


@template("inline")
def pair_chunk(c0, count, sel, pair_i, pair_j, surface, position, velocity, angular_velocity,
               radius, mass, material, fixed, params, k, history, home, update, dt, force, torque,
               normal_force, buf):
    """Gather, evaluate (vectorised) and scatter the selected pairs sel[c0:c0 + count] (a row's
    share into row home[row])."""
    C = CHUNK
    for t in range(count):
        p = sel[c0 + t]
        i = pair_i[p]
        j = pair_j[p]
        buf[_DX * C + t] = position[i, 0] - position[j, 0]
        buf[_DY * C + t] = position[i, 1] - position[j, 1]
        buf[_DZ * C + t] = position[i, 2] - position[j, 2]
        buf[_RI * C + t] = radius[i]
        buf[_RJ * C + t] = radius[j]
        buf[_SI * C + t] = surface[p, 0]
        buf[_SJ * C + t] = surface[p, 1]
        gather_motion(buf, t, velocity, angular_velocity, mass, i, velocity[i, 0] - velocity[j, 0],
                      velocity[i, 1] - velocity[j, 1], velocity[i, 2] - velocity[j, 2])
        buf[_WJ0 * C + t] = angular_velocity[j, 0]
        buf[_WJ1 * C + t] = angular_velocity[j, 1]
        buf[_WJ2 * C + t] = angular_velocity[j, 2]
        buf[_MJ * C + t] = mass[j]
        buf[_FI * C + t] = 1.0 if fixed[i] else 0.0
        buf[_FJ * C + t] = 1.0 if fixed[j] else 0.0
        gather_law_inputs(buf, t, params, material[i], material[j], history, p)
    for t in range(C):
        dx = buf[_DX * C + t]
        dy = buf[_DY * C + t]
        dz = buf[_DZ * C + t]
        ri = buf[_RI * C + t]
        rj = buf[_RJ * C + t]
        si = buf[_SI * C + t]
        sj = buf[_SJ * C + t]
        rsq = dx * dx + dy * dy + dz * dz
        rsum = ri + rj
        delta = rsum - math.sqrt(rsq) + si + sj  # corrected overlap (module docstring)
        mi = buf[_MI * C + t]
        mj = buf[_MJ * C + t]
        mstar = mi * mj / (mi + mj)
        if buf[_FJ * C + t] != 0.0:
            mstar = mi
        if buf[_FI * C + t] != 0.0:
            mstar = mj
        g = (dx, dy, dz, rsq, delta, ri + si, rj + sj, ri * rj / rsum, mstar,
             buf[_V0 * C + t], buf[_V1 * C + t], buf[_V2 * C + t],
             buf[_WI0 * C + t], buf[_WI1 * C + t], buf[_WI2 * C + t],
             buf[_WJ0 * C + t], buf[_WJ1 * C + t], buf[_WJ2 * C + t])
        store_outputs(buf, t, evaluate_law(buf, t, k, g, update, dt))  # noqa: F821
    for t in range(count):
        p = sel[c0 + t]
        j = home[pair_j[p]]
        fx, fy, fz = add_to_particle(force, torque, home[pair_i[p]], buf, t)
        force[j, 0] -= fx
        force[j, 1] -= fy
        force[j, 2] -= fz
        torque[j, 0] += buf[_TJ0 * C + t]
        torque[j, 1] += buf[_TJ1 * C + t]
        torque[j, 2] += buf[_TJ2 * C + t]
        normal_force[p] = buf[_FN * C + t]
        scatter_history(buf, t, history, p)  # noqa: F821


@template("kernel")
def pair_contacts(pair_i, pair_j, surface, position, velocity, angular_velocity, radius, mass,
                  material, fixed, params, consts, history, flags, listed, home, update, dt,
                  force, torque, normal_force, offset, buf, sel):
    """Forces and torques of every pair whose deformed surfaces overlap, into both rows (a
    row's share into row home[row]: ``MultiContactForces._home_rows``).

    ``surface`` (pairs, 2): W_i, W_j of this step [m]. Writes ``normal_force``
    (the law's F_n, 0 apart) and ``offset`` (= surface) of every pair; resets
    the history of pairs that separated (``flags`` as ``contact_kernels``).
    ``listed`` (uint8 per pair, 0 for pairs new to the list): a pair new to
    the list whose deformed surfaces already overlap while the spheres do not
    is a contact the list missed ("late"). Returns (touching, late).
    """
    C = CHUNK
    k = load_constants(consts)  # noqa: F821
    n_pairs = pair_i.size
    touching = 0
    late = 0
    m = 0
    for k0 in range(0, n_pairs, BLOCK):
        k1 = min(k0 + BLOCK, n_pairs)
        for p in range(k0, k1):
            i = pair_i[p]
            j = pair_j[p]
            dx = position[i, 0] - position[j, 0]
            dy = position[i, 1] - position[j, 1]
            dz = position[i, 2] - position[j, 2]
            d2 = dx * dx + dy * dy + dz * dz
            rsum = radius[i] + radius[j]
            reach = rsum + (surface[p, 0] + surface[p, 1])
            touch = np.uint8(reach > 0.0 and reach * reach > d2)
            normal_force[p] = 0.0
            offset[p, 0] = surface[p, 0]
            offset[p, 1] = surface[p, 1]
            if flags[p] != touch:  # few: a contact began or ended
                if touch == 0:
                    reset_history(history, p)  # noqa: F821
                elif listed[p] == 0 and rsum * rsum <= d2:
                    late += 1
                flags[p] = touch
            listed[p] = 1
            sel[m] = p
            m += np.int64(touch)
        c0 = 0
        while m - c0 >= C or (k1 == n_pairs and m > c0):
            count = min(C, m - c0)
            pair_chunk(c0, count, sel, pair_i, pair_j, surface, position, velocity,
                       angular_velocity, radius, mass, material, fixed, params, k, history, home,
                       update, dt, force, torque, normal_force, buf)
            c0 += count
            touching += count
        for t in range(m - c0):
            sel[t] = sel[c0 + t]
        m -= c0
    return touching, late


@template("inline")
def wall_chunk(c0, count, sel, n_walls, surface, position, velocity, angular_velocity, radius,
               mass, material, wall_point, wall_normal, wall_velocity, wall_material, params, k,
               history, update, dt, force, torque, wall_force, normal_force, buf):
    """Gather, evaluate (vectorised) and scatter the selected wall contacts sel[c0:c0 + count]."""
    C = CHUNK
    for t in range(count):
        c = sel[c0 + t]
        i = c // n_walls
        w = c - i * n_walls
        nx = wall_normal[w, 0]
        ny = wall_normal[w, 1]
        nz = wall_normal[w, 2]
        h = ((position[i, 0] - wall_point[w, 0]) * nx
             + (position[i, 1] - wall_point[w, 1]) * ny
             + (position[i, 2] - wall_point[w, 2]) * nz)
        ri = radius[i]
        hd = max(h, MIN_WALL_DISTANCE * ri)
        buf[_DX * C + t] = hd * nx
        buf[_DY * C + t] = hd * ny
        buf[_DZ * C + t] = hd * nz
        buf[_HH * C + t] = hd * hd
        buf[_DELTA * C + t] = ri - h + surface[c]
        buf[_RI * C + t] = ri
        buf[_SI * C + t] = surface[c]
        gather_motion(buf, t, velocity, angular_velocity, mass, i, velocity[i, 0] - wall_velocity[w, 0],
                      velocity[i, 1] - wall_velocity[w, 1], velocity[i, 2] - wall_velocity[w, 2])
        gather_law_inputs(buf, t, params, wall_material[w], material[i], history, c)
    for t in range(C):
        ri = buf[_RI * C + t]
        g = (buf[_DX * C + t], buf[_DY * C + t], buf[_DZ * C + t], buf[_HH * C + t],
             buf[_DELTA * C + t], ri + buf[_SI * C + t], 0.0, ri, buf[_MI * C + t],
             buf[_V0 * C + t], buf[_V1 * C + t], buf[_V2 * C + t],
             buf[_WI0 * C + t], buf[_WI1 * C + t], buf[_WI2 * C + t], 0.0, 0.0, 0.0)
        store_outputs(buf, t, evaluate_law(buf, t, k, g, update, dt))  # noqa: F821
    for t in range(count):
        c = sel[c0 + t]
        i = c // n_walls
        w = c - i * n_walls
        fx, fy, fz = add_to_particle(force, torque, i, buf, t)
        wall_force[w, 0] -= fx
        wall_force[w, 1] -= fy
        wall_force[w, 2] -= fz
        normal_force[c] = buf[_FN * C + t]
        scatter_history(buf, t, history, c)  # noqa: F821


@template("kernel")
def wall_contacts(n_owned, surface, position, velocity, angular_velocity, radius, mass, material,
                  attached, wall_point, wall_normal, wall_velocity, wall_material, params, consts,
                  history, flags, update, dt, force, torque, wall_force, normal_force, offset, buf, sel):
    """Contacts of owned particles with planar walls, with the corrected overlap.

    Contact c = particle * n_walls + wall; ``surface`` (c): W of the grain
    toward the wall [m]; the wall is rigid and flat (no displacement of its
    own). Geometry as ``contact_kernels.wall_contacts`` (d = h n with |d| at
    least MIN_WALL_DISTANCE r_i, R* = r_i, M* = m_i) but Delta = (r_i - h) + W
    and radius r_i + W; ``attached`` (per particle, the wall it moves with or
    -1): a particle never touches the wall it is attached to. Writes
    ``normal_force`` and ``offset`` (= surface) of every contact; ``wall_force``
    (n_walls, 3) receives the particles' force on each wall. Walls are swept one
    at a time, as the plain kernel. Returns the touching count.
    """
    C = CHUNK
    k = load_constants(consts)  # noqa: F821
    touching = 0
    n_walls = wall_point.shape[0]
    gap = buf[COLUMNS * C:]  # noqa: F821
    m = 0
    for w in range(n_walls):
        nx = wall_normal[w, 0]
        ny = wall_normal[w, 1]
        nz = wall_normal[w, 2]
        px = wall_point[w, 0]
        py = wall_point[w, 1]
        pz = wall_point[w, 2]
        for i0 in range(0, n_owned, BLOCK):
            i1 = min(i0 + BLOCK, n_owned)
            for i in range(i0, i1):  # corrected overlap, vectorised
                c = i * n_walls + w
                gap[i - i0] = radius[i] - ((position[i, 0] - px) * nx + (position[i, 1] - py) * ny
                                           + (position[i, 2] - pz) * nz) + surface[c]
                normal_force[c] = 0.0
                offset[c] = surface[c]
            for i in range(i0, i1):
                if attached[i] == w:
                    gap[i - i0] = -1.0
            for i in range(i0, i1):
                c = i * n_walls + w
                touch = gap[i - i0] > 0.0
                if touch or flags[c]:  # few: most particles are far from each wall
                    if not touch:
                        reset_history(history, c)  # noqa: F821
                    flags[c] = np.uint8(touch)
                    sel[m] = c
                    m += np.int64(touch)
            last = w == n_walls - 1 and i1 == n_owned
            c0 = 0
            while m - c0 >= C or (last and m > c0):
                count = min(C, m - c0)
                wall_chunk(c0, count, sel, n_walls, surface, position, velocity, angular_velocity,
                           radius, mass, material, wall_point, wall_normal, wall_velocity,
                           wall_material, params, k, history, update, dt, force, torque,
                           wall_force, normal_force, buf)
                c0 += count
                touching += count
            for t in range(m - c0):
                sel[t] = sel[c0 + t]
            m -= c0
    return touching
