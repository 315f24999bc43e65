"""Contact loops of particle pairs and particle-wall contacts, for any contact law.

This is a template module (``ecs_dem.generated_kernels``): its ``@template``
functions are compiled once per law function by
``systems.contact.law.law_kernels``, which supplies ``evaluate_law`` (the
law, reading its parameters and history from the scratch buffer) and the
column constants. Call the kernels of ``law_kernels(contact_kernels, f)``,
never these functions directly.

Both loops use the blocked and chunked layout of ``systems.contact.chunks``:
an overlap test and selection of touching contacts per block, then, per
chunk of CHUNK selected contacts, gather (scalar), evaluate (vectorised: the
law on contiguous columns at constant offsets) and scatter (scalar, in
contact order, so every sum is accumulated as in a plain loop over the
contacts). The geometry each passes to the law is documented in
``systems.contact.law`` (d from the partner to i, delta = (ri + rj) - |d|).

Walls: d = h n with h the distance of i's centre from the plane along the
wall's unit normal n, and delta = r_i - h. A centre on or behind the plane
(h <= 0, a particle pushed through) would make d vanish or point the wrong
way, and every law would then pull it further through (LAMMPS's
``fix wall/gran`` does): |d| is kept at least ``MIN_WALL_DISTANCE`` r_i along
+n, while delta keeps its true value, so such a particle is pushed back out
along +n by a force of its full overlap. For h above that (every physical
contact) the arithmetic is LAMMPS's.

History: ``history`` is a tuple of 2-D float64 arrays, one per history field
the law function uses, rows = contacts (for walls: particle * n_walls + wall),
columns = the field's components. A contact that separated has its history
reset to zero; ``flags`` (one byte per contact, 1 where the history may be
non-zero) keeps the kernels from reading the history of the others.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.generated_kernels import template

from ecs_dem.systems.contact.chunks import BLOCK, CHUNK, pair_touches, row

# scratch columns of the gathered geometry (pairs use all, walls a subset), then the outputs
_DX, _DY, _DZ, _RI, _RJ, _V0, _V1, _V2 = 0, 1, 2, 3, 4, 5, 6, 7
_WI0, _WI1, _WI2, _WJ0, _WJ1, _WJ2, _MI, _MJ, _FI, _FJ = 8, 9, 10, 11, 12, 13, 14, 15, 16, 17
_HH, _WDELTA = 18, 19  # walls: |d|^2 and the overlap
_FX, _FY, _FZ, _TI0, _TI1, _TI2, _TJ0, _TJ1, _TJ2 = 20, 21, 22, 23, 24, 25, 26, 27, 28
#: first column of the law's parameters, then its history (``contact_law.law_kernels``)
LAW_COLUMN = 29
#: a wall contact's |d| is at least this fraction of the radius (module docstring)
MIN_WALL_DISTANCE = 1e-6


@template("inline")
def gather_law_columns(buf, t, params, a, b, history, k):
    """Parameters of material pair (a, b) and the history of contact k into column t."""
    C = CHUNK
    for q in range(N_PARAMS):  # noqa: F821 (generated)
        buf[(PAR + q) * C + t] = params[a, b, q]  # noqa: F821
    gather_history(buf, t, history, k)  # noqa: F821


@template("inline")
def store_law_outputs(buf, t, out):
    """The force on i and the torques of one evaluated contact into column t."""
    C = CHUNK
    buf[_FX * C + t] = out[0]
    buf[_FY * C + t] = out[1]
    buf[_FZ * C + t] = out[2]
    buf[_TI0 * C + t] = out[3]
    buf[_TI1 * C + t] = out[4]
    buf[_TI2 * C + t] = out[5]
    buf[_TJ0 * C + t] = out[6]
    buf[_TJ1 * C + t] = out[7]
    buf[_TJ2 * C + t] = out[8]


@template("inline")
def add_to_particle(force, torque, i, buf, t):
    """Add the force and torque on i of column t to row i; returns the force (for the partner)."""
    C = CHUNK
    fx = buf[_FX * C + t]
    fy = buf[_FY * C + t]
    fz = buf[_FZ * C + t]
    force[i, 0] += fx
    force[i, 1] += fy
    force[i, 2] += fz
    torque[i, 0] += buf[_TI0 * C + t]
    torque[i, 1] += buf[_TI1 * C + t]
    torque[i, 2] += buf[_TI2 * C + t]
    return fx, fy, fz


@template("inline")
def pair_chunk(c0, count, sel, pair_i, pair_j, position, velocity, angular_velocity, radius, mass,
               material, fixed, params, k, history, home, update, dt, force, torque, buf):
    """Gather, evaluate (vectorised) and scatter the selected pairs sel[c0:c0 + count]."""
    C = CHUNK
    for t in range(count):
        p = row(sel[c0 + t])
        i = row(pair_i[p])
        j = row(pair_j[p])
        buf[_DX * C + t] = position[i, 0] - position[j, 0]
        buf[_DY * C + t] = position[i, 1] - position[j, 1]
        buf[_DZ * C + t] = position[i, 2] - position[j, 2]
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
        gather_law_columns(buf, t, params, material[i], material[j], history, p)
    for t in range(C):
        dx = buf[_DX * C + t]
        dy = buf[_DY * C + t]
        dz = buf[_DZ * C + t]
        ri = buf[_RI * C + t]
        rj = buf[_RJ * C + t]
        rsq = dx * dx + dy * dy + dz * dz
        rsum = ri + rj
        delta = rsum - math.sqrt(rsq)
        mi = buf[_MI * C + t]
        mj = buf[_MJ * C + t]
        mstar = mi * mj / (mi + mj)
        if buf[_FJ * C + t] != 0.0:
            mstar = mi
        if buf[_FI * C + t] != 0.0:
            mstar = mj
        g = (dx, dy, dz, rsq, delta, ri, rj, ri * rj / rsum, mstar,
             buf[_V0 * C + t], buf[_V1 * C + t], buf[_V2 * C + t],
             buf[_WI0 * C + t], buf[_WI1 * C + t], buf[_WI2 * C + t],
             buf[_WJ0 * C + t], buf[_WJ1 * C + t], buf[_WJ2 * C + t])
        store_law_outputs(buf, t, evaluate_law(buf, t, k, g, update, dt))  # noqa: F821
    for t in range(count):
        p = row(sel[c0 + t])
        i = row(pair_i[p])
        j = row(pair_j[p])
        hi = home[i]
        if hi >= 0:
            add_to_particle(force, torque, row(hi), buf, t)
        hj = home[j]
        if hj >= 0:
            h = row(hj)
            force[h, 0] -= buf[_FX * C + t]
            force[h, 1] -= buf[_FY * C + t]
            force[h, 2] -= buf[_FZ * C + t]
            torque[h, 0] += buf[_TJ0 * C + t]
            torque[h, 1] += buf[_TJ1 * C + t]
            torque[h, 2] += buf[_TJ2 * C + t]
        scatter_history(buf, t, history, p)  # noqa: F821


@template("kernel")
def pair_contacts(pair_i, pair_j, position, velocity, angular_velocity, radius, mass, material,
                  fixed, params, consts, history, flags, home, update, dt, force, torque, buf,
                  sel, zero_force, zero_torque):
    """Accumulate the law's forces and torques of every touching pair into rows home[i] and
    home[j] (``home``: one int32 per particle row, -1 for a row that takes no share;
    ``Domain.home_rows``). Rows below ``zero_force`` (``zero_torque``) of ``force``
    (``torque``) are set to zero first: a system that sets the field
    (``System.assigns_owned``) gives its owned row count, saving the scheduler's zeroing
    pass and its call; 0 adds to what is there.

    Rows i, j of ``pair_i``, ``pair_j`` index the particle arrays (owned and
    ghost rows); ``material`` (species per row) indexes ``params``. Pairs
    that do not overlap get their history reset. ``buf``, ``sel``: the
    scratch of a ``PairScratch(COLUMNS)``. Returns the number of touching
    pairs.
    """
    C = CHUNK
    k = load_constants(consts)  # noqa: F821
    force[:zero_force] = 0.0
    torque[:zero_torque] = 0.0
    n_pairs = pair_i.size
    touched = buf[COLUMNS * C:]  # noqa: F821
    touching = 0
    m = 0
    for k0 in range(0, n_pairs, BLOCK):
        k1 = min(k0 + BLOCK, n_pairs)
        for p in range(k0, k1):  # no dependence between pairs: their loads overlap
            touched[p - k0] = pair_touches(pair_i, pair_j, position, radius, p)
        for p in range(k0, k1):
            touch = np.uint8(touched[p - k0])
            if flags[p] != touch:  # few: a contact began or ended
                if touch == 0:
                    reset_history(history, p)  # noqa: F821
                flags[p] = touch
            sel[m] = p
            m += np.int64(touch)
        c0 = 0
        while m - c0 >= C or (k1 == n_pairs and m > c0):
            count = min(C, m - c0)
            pair_chunk(c0, count, sel, pair_i, pair_j, position, velocity, angular_velocity,
                       radius, mass, material, fixed, params, k, history, home, update, dt,
                       force, torque, buf)
            c0 += count
            touching += count
        for t in range(m - c0):
            sel[t] = sel[c0 + t]
        m -= c0
    return touching


@template("inline")
def wall_chunk(c0, count, sel, n_walls, position, velocity, angular_velocity, radius, mass,
               material, wall_point, wall_normal, wall_velocity, wall_material, params, k,
               history, update, dt, force, torque, wall_force, buf):
    """Gather, evaluate (vectorised) and scatter the selected wall contacts sel[c0:c0 + count]."""
    C = CHUNK
    walls = row(n_walls)
    for t in range(count):
        c = row(sel[c0 + t])
        i = c // walls
        w = c - i * walls
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
        buf[_WDELTA * C + t] = ri - h
        buf[_RI * C + t] = ri
        buf[_V0 * C + t] = velocity[i, 0] - wall_velocity[w, 0]
        buf[_V1 * C + t] = velocity[i, 1] - wall_velocity[w, 1]
        buf[_V2 * C + t] = velocity[i, 2] - wall_velocity[w, 2]
        buf[_WI0 * C + t] = angular_velocity[i, 0]
        buf[_WI1 * C + t] = angular_velocity[i, 1]
        buf[_WI2 * C + t] = angular_velocity[i, 2]
        buf[_MI * C + t] = mass[i]
        gather_law_columns(buf, t, params, wall_material[w], material[i], history, c)
    for t in range(C):
        ri = buf[_RI * C + t]
        g = (buf[_DX * C + t], buf[_DY * C + t], buf[_DZ * C + t], buf[_HH * C + t],
             buf[_WDELTA * C + t], ri, 0.0, ri, buf[_MI * C + t], buf[_V0 * C + t], buf[_V1 * C + t], buf[_V2 * C + t],
             buf[_WI0 * C + t], buf[_WI1 * C + t], buf[_WI2 * C + t], 0.0, 0.0, 0.0)
        store_law_outputs(buf, t, evaluate_law(buf, t, k, g, update, dt))  # noqa: F821
    for t in range(count):
        c = row(sel[c0 + t])
        i = c // walls
        w = c - i * walls
        fx, fy, fz = add_to_particle(force, torque, i, buf, t)
        wall_force[w, 0] -= fx
        wall_force[w, 1] -= fy
        wall_force[w, 2] -= fz
        scatter_history(buf, t, history, c)  # noqa: F821


@template("kernel")
def wall_contacts(n_owned, position, velocity, angular_velocity, radius, mass, material, attached,
                  wall_point, wall_normal, wall_velocity, wall_material, params, consts, history,
                  flags, update, dt, force, torque, wall_force, buf, sel, near_margin, near_start,
                  near_rows, build):
    """The law's contacts of owned particles with planar walls.

    The wall is the partner: d = h n from the plane to the centre (h the
    signed distance along the wall's unit normal, at least MIN_WALL_DISTANCE
    ri), delta = ri - h, rj = 0, R* = ri, M* = mi.
    ``wall_material`` (per wall: species, or the rigid material) and
    ``material`` (species per particle) index ``params``. ``attached`` (per
    particle, the wall it moves with or -1): a particle never touches the wall
    it is attached to (a membrane's end ring on its platen). Contact c =
    particle * n_walls + wall; ``flags`` (n * n_walls bytes); ``wall_force``
    (n_walls, 3) receives the force of the particles on each wall. Walls are
    swept one at a time (each particle still meets its walls in wall order
    and each wall its particles in row order). Returns the touching count.

    Near list (``systems.walls.contacts`` keeps it valid): with ``build``
    every owned row is swept and ``near_rows[near_start[w]:near_start[w + 1]]``
    receives, in row order, the rows whose gap ri - h to wall w exceeds
    ``-near_margin`` (capacity n_owned * n_walls; ``near_start`` n_walls + 1);
    without, only those rows are swept. A row left out has no contact and a
    cleared flag after the build's sweep, so both sweeps select the same
    contacts in the same order: the same forces and history, bit for bit.
    """
    C = CHUNK
    k = load_constants(consts)  # noqa: F821
    touching = 0
    n_walls = wall_point.shape[0]
    gap = buf[COLUMNS * C:]  # noqa: F821
    m = 0
    listed = 0
    for w in range(n_walls):
        nx = wall_normal[w, 0]
        ny = wall_normal[w, 1]
        nz = wall_normal[w, 2]
        px = wall_point[w, 0]
        py = wall_point[w, 1]
        pz = wall_point[w, 2]
        if build:
            near_start[w] = listed
        first = near_start[w]
        candidates = n_owned if build else near_start[w + 1] - first
        for k0 in range(0, candidates, BLOCK):
            k1 = min(k0 + BLOCK, candidates)
            if build:
                for i in range(k0, k1):  # overlap radius - h, vectorised
                    gap[i - k0] = radius[i] - ((position[i, 0] - px) * nx
                                               + (position[i, 1] - py) * ny
                                               + (position[i, 2] - pz) * nz)
                for i in range(k0, k1):  # branch-free append
                    near_rows[listed] = i
                    listed += np.int64(gap[i - k0] > -near_margin)
            else:
                for q in range(k0, k1):
                    i = row(near_rows[first + q])
                    gap[q - k0] = radius[i] - ((position[i, 0] - px) * nx
                                               + (position[i, 1] - py) * ny
                                               + (position[i, 2] - pz) * nz)
            for q in range(k0, k1):
                i = q if build else near_rows[first + q]
                if attached[i] == w:
                    gap[q - k0] = -1.0
                c = i * n_walls + w
                touch = gap[q - k0] > 0.0
                if touch or flags[c]:  # few: most particles are far from each wall
                    if not touch:
                        reset_history(history, c)  # noqa: F821
                    flags[c] = np.uint8(touch)
                    sel[m] = c
                    m += np.int64(touch)
            c0 = 0
            while m - c0 >= C:
                wall_chunk(c0, C, sel, n_walls, position, velocity, angular_velocity, radius,
                           mass, material, wall_point, wall_normal, wall_velocity, wall_material,
                           params, k, history, update, dt, force, torque, wall_force, buf)
                c0 += C
            for t in range(m - c0):
                sel[t] = sel[c0 + t]
            m -= c0
            touching += c0
    if build:
        near_start[n_walls] = listed
    if m > 0:
        wall_chunk(0, m, sel, n_walls, position, velocity, angular_velocity, radius, mass,
                   material, wall_point, wall_normal, wall_velocity, wall_material, params, k,
                   history, update, dt, force, torque, wall_force, buf)
        touching += m
    return touching
