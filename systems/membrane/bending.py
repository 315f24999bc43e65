"""Membrane bending: elastic and dissipative hinge forces (Goetz & Poeschel Eqs. (8)-(16)).

For a hinge (x1, x2, x3, x4) (wings x1, x2; shared edge from x3 to x4,
e = x4 - x3; components.mesh.topology), following Bridson et al. (2003)
and docs/physics.md (Membrane bending):

* n1 = (x1 - x3) x (x1 - x4), n2 = (x2 - x4) x (x2 - x3) (Eqs. 8-9; outward,
  |n| = 2 x area); the signed angle
  theta = atan2((n1^ x n2^) . e^, n1^ . n2^) (Eq. 10 with unit normals), and
  theta0 the same on the initial mesh;
* u1 = |e| n1/|n1|^2, u2 = |e| n2/|n2|^2 (Eqs. 13-14),
  u3 = (x1 - x4).e/|e| n1/|n1|^2 + (x2 - x4).e/|e| n2/|n2|^2 (Eq. 15),
  u4 = -(x1 - x3).e/|e| n1/|n1|^2 - (x2 - x3).e/|e| n2/|n2|^2 (Eq. 16 with the
  sign of docs/physics.md: both terms negative, as in Bridson); then
  u_i = -d theta / d x_i, so the four forces sum to zero and carry no torque;
* elastic (Eq. 11): F_i = k_el |e|^2 / (|n1| + |n2|) (sin(theta/2) - sin(theta0/2)) u_i,
  restoring theta towards theta0;
* dissipative (Eq. 12 as docs/physics.md reads it): omega = sum_j u_j . v_j
  (= -d theta/dt), F_i = -k_diss |e| omega u_i, whose power -k_diss |e| omega^2
  is never positive.

Units: k_el in N m, k_diss in N s (the paper writes N/m and Ns/m). Convention
(per membrane): "paper" is the printed formula; "mercurydpm" uses triangle
areas where Bridson uses |n| = 2 A, i.e. 4 times the force at equal
constants (the convention the paper's triaxial values were most likely given
in; docs/physics.md). Current normals and areas are used throughout.

Each hinge is evaluated by the owner of x1 (its anchor); forces on ghost
vertices come home through the reverse reduction. A hinge whose triangle has
(nearly) no area, or that folds more than ``max_fold`` away from its rest
angle (an inverted triangle), stops the run with an error naming the
membrane, the hinge's vertices and the step, before a NaN can reach the
state; this check runs even when both bending constants are zero.

Time step: the dissipative force is linear in the velocities, F = -C v with
C = sum_h c_h u_h u_h^T (c_h = factor k_diss |e|, u_h stacking the hinge's four
u_i), and velocity Verlet (forces from the half-step velocities) maps the
velocities as v <- (1 - dt M^-1 C) v per step: stable only for
dt lambda_max(M^-1 C) < 2. The paper's damper (k_diss = 1e-4 N s) on
MSS_particle's 0.5 mg vertices needs dt < 9.4e-8 s on the undeformed mesh, and
the limit falls as grains squeeze triangles (|u_i| ~ 1 / triangle height): in
the triaxial test to 3.5e-8 s at 3.6 % strain, while the grains allow 5.8e-7 s.
So the damper is limited where the step cannot resolve it, with a bound that
keeps it stable at any dt and on any mesh: with the vertex damping rate
r_i = sum over the hinges at vertex i of c_h |u_hi|^2 / m_i (1/s; 0 for fixed
vertices), each hinge's damping force is scaled by
s_h = min(1, q / (dt max_{i in h} r_i)), q = DAMPING_STEP_BOUND = 0.45.
Then, since (sum_j u_hj . v_j)^2 <= 4 sum_j (u_hj . v_j)^2 (four vertices),
v^T (sum_h s_h C_h) v <= 4 sum_i |v_i|^2 sum_{h at i} s_h c_h |u_hi|^2
<= 4 q / dt v^T M v, i.e. dt lambda_max <= 4 q = 1.8 < 2 whatever the shapes.
Each hinge keeps its force along its u_i (momentum and angular momentum kept,
power never positive), and s_h = 1, the paper's damper unchanged, wherever
dt r_i <= q; as dt -> 0 every s_h -> 1. A hinge with s_h < 1 still relaxes
its bending rate within some steps: faster than anything the step resolves.
On MSS_particle's undeformed case 1 mesh dt r_i = 0.69 at every vertex at
dt = 7.25e-8 s (s_h = 0.65; s_h = 1 from dt = 4.7e-8 s down) and
dt lambda_max = 1.01 (the paper's damper: 1.55); at 3.6 and 5.7 % axial
strain dt r_i reaches 1.8 and 2.1 (s_h down to 0.24 and 0.21, median 0.6)
and dt lambda_max is 1.04 and 1.06 (the paper's: 3.8 and 4.1, unstable). At
the triaxial driver's 5.8e-7 s, s_h = 0.08 on the undeformed mesh.
Squeezed triangles get smaller s_h instead of stopping the run.

The rates need every hinge at a vertex, also those of other ranks:
BendingDampingLoad accumulates c_h |u_hi|^2 (reverse reduction),
BendingDampingRate divides by the mass on the owner, and MembraneBending
reads the rates on ghosts (forward); MembraneBending adds both systems
before itself when some membrane has bending damping. BendingDampingLoad
also keeps each hinge's frame (normals, |e|, the u_i: ``hinge_frame``) in the
hinges' ``frame`` field, and MembraneBending reads it instead of computing it
a second time: the positions do not change between the two, so the forces
are the same to the last bit.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.components.membranes import element_span
from ecs_dem.errors import InputError, StateError
from ecs_dem.jit import inline, kernel, row
from ecs_dem.system import Stage, System
from ecs_dem.table import Field, Halo

#: convention factor on the force: 1 (paper), 4 (mercurydpm)
CONVENTION_FACTOR = np.array([1.0, 4.0])
DEGENERATE = 1
FOLDED = 2
#: q of the damper's limit s_h = min(1, q / (dt max r_i)): dt lambda_max <= 4 q (docstring)
DAMPING_STEP_BOUND = 0.45

NO_RATES = np.zeros(1)
DAMPING_LOAD = Field("bending_damping_load", np.float64, (), Halo.REVERSE, 0.0, "kg/s",
                     "sum over the hinges at a membrane vertex of factor k_diss |e| |u_i|^2",
                     scratch=True)
DAMPING_RATE = Field("bending_damping_rate", np.float64, (), Halo.FORWARD, 0.0, "1/s",
                     "bending_damping_load / mass (0 for fixed rows): the rate r_i of the "
                     "bending damper's limit", scratch=True)
#: values of hinge_frame: n1 . n2, (n1 x n2) . e^, |e|, |n1|, |n2|, u1, u2, u3, u4
FRAME_WIDTH = 17
HINGE_FRAME = Field("frame", np.float64, (FRAME_WIDTH,), Halo.LOCAL, 0.0, "",
                    "the hinge's frame at this step (hinge_frame): written by "
                    "BendingDampingLoad, read by MembraneBending", scratch=True)
NO_FRAMES = np.zeros((0, FRAME_WIDTH))


@inline
def hinge_frame(x, a, b, c, d):
    """The hinge at rows (a, b, c, d) = (x1, x2, x3, x4) without its angle.

    Returns (along, across, elen, n1len, n2len, u1 (3), u2 (3), u3 (3), u4 (3)) as a flat
    tuple: along = n1 . n2 and across = (n1 x n2) . e^ are |n1| |n2| cos(theta) and
    |n1| |n2| sin(theta); n1len or n2len 0 means a degenerate triangle (the u are then
    meaningless, along = 1 and across = 0).
    """
    ex = x[d, 0] - x[c, 0]
    ey = x[d, 1] - x[c, 1]
    ez = x[d, 2] - x[c, 2]
    # n1 = (x1 - x3) x (x1 - x4)
    p0, p1, p2 = x[a, 0] - x[c, 0], x[a, 1] - x[c, 1], x[a, 2] - x[c, 2]
    q0, q1, q2 = x[a, 0] - x[d, 0], x[a, 1] - x[d, 1], x[a, 2] - x[d, 2]
    n10 = p1 * q2 - p2 * q1
    n11 = p2 * q0 - p0 * q2
    n12 = p0 * q1 - p1 * q0
    # n2 = (x2 - x4) x (x2 - x3)
    r0, r1, r2 = x[b, 0] - x[d, 0], x[b, 1] - x[d, 1], x[b, 2] - x[d, 2]
    s0, s1, s2 = x[b, 0] - x[c, 0], x[b, 1] - x[c, 1], x[b, 2] - x[c, 2]
    n20 = r1 * s2 - r2 * s1
    n21 = r2 * s0 - r0 * s2
    n22 = r0 * s1 - r1 * s0
    e2 = ex * ex + ey * ey + ez * ez
    elen = math.sqrt(e2)
    n1sq = n10 * n10 + n11 * n11 + n12 * n12
    n2sq = n20 * n20 + n21 * n21 + n22 * n22
    n1len = math.sqrt(n1sq)
    n2len = math.sqrt(n2sq)
    if not (n1len > 1e-8 * e2 and n2len > 1e-8 * e2 and elen > 0.0):
        z = 0.0
        return (1.0, 0.0, elen, 0.0, 0.0, z, z, z, z, z, z, z, z, z, z, z, z)
    cx = n11 * n22 - n12 * n21
    cy = n12 * n20 - n10 * n22
    cz = n10 * n21 - n11 * n20
    along = n10 * n20 + n11 * n21 + n12 * n22
    across = (cx * ex + cy * ey + cz * ez) / elen
    w1 = elen / n1sq
    w2 = elen / n2sq
    # projections of the wing vertices on the edge, over |e|^2 (times |e| below)
    t14 = ((x[a, 0] - x[d, 0]) * ex + (x[a, 1] - x[d, 1]) * ey + (x[a, 2] - x[d, 2]) * ez) / e2
    t24 = ((x[b, 0] - x[d, 0]) * ex + (x[b, 1] - x[d, 1]) * ey + (x[b, 2] - x[d, 2]) * ez) / e2
    t13 = ((x[a, 0] - x[c, 0]) * ex + (x[a, 1] - x[c, 1]) * ey + (x[a, 2] - x[c, 2]) * ez) / e2
    t23 = ((x[b, 0] - x[c, 0]) * ex + (x[b, 1] - x[c, 1]) * ey + (x[b, 2] - x[c, 2]) * ez) / e2
    # (x1 - x4).e/|e| n1/|n1|^2 = t14 * w1 * n1 (w1 carries |e|)
    return (along, across, elen, n1len, n2len,
            w1 * n10, w1 * n11, w1 * n12,
            w2 * n20, w2 * n21, w2 * n22,
            t14 * w1 * n10 + t24 * w2 * n20, t14 * w1 * n11 + t24 * w2 * n21,
            t14 * w1 * n12 + t24 * w2 * n22,
            -t13 * w1 * n10 - t23 * w2 * n20, -t13 * w1 * n11 - t23 * w2 * n21,
            -t13 * w1 * n12 - t23 * w2 * n22)


@inline
def hinge_geometry(x, a, b, c, d):
    """theta, |e|, and the four u_i of the hinge at rows (a, b, c, d) = (x1, x2, x3, x4).

    Returns (theta, elen, n1len, n2len, u1 (3), u2 (3), u3 (3), u4 (3)) as a flat tuple;
    n1len or n2len 0 means a degenerate triangle (theta 0, the u meaningless).
    """
    f = hinge_frame(x, a, b, c, d)
    # theta = atan2((n1^ x n2^) . e^, n1^ . n2^), with the common positive factors dropped
    return (math.atan2(f[1], f[0]), f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10],
            f[11], f[12], f[13], f[14], f[15], f[16])


def rest_terms(rest_angle: np.ndarray) -> np.ndarray:
    """(sin(theta0 / 2), cos(theta0), sin(theta0)) per hinge, what bending_kernel needs of
    the rest angle."""
    t = np.asarray(rest_angle, dtype=np.float64)
    return np.ascontiguousarray(np.stack([np.sin(0.5 * t), np.cos(t), np.sin(t)], axis=1))


def fold_cosine(max_fold: float) -> float:
    """cos(max_fold), or -2 (no fold is too far) from pi on."""
    return math.cos(max_fold) if max_fold < math.pi else -2.0


def bending_forces(rows, rest_angle, membrane, k_el, k_diss, factor, position, velocity, force,
                   max_fold, rate=None, rate_limit=math.inf, frames=NO_FRAMES):
    """Accumulate Eqs. (11)-(12) of every hinge into the four vertex rows (module docstring).

    k_el, k_diss, factor are per membrane. ``rate`` (1/s, per row) are the vertex damping
    rates r_i and ``rate_limit`` = q / dt: a hinge whose largest r_i exceeds it has its
    damping scaled by rate_limit / max r_i (the default: no limit). Returns (first bad hinge,
    kind): kind 1 a degenerate triangle, 2 a fold beyond max_fold from the rest angle;
    (-1, 0) if none. Bad hinges contribute no force. ``frames``: each hinge's hinge_frame at
    these positions (damping_loads keeps them), or none (computed here). (bending_kernel with
    the rest angles' terms made here; a system keeps them between steps.)
    """
    if rate is None:
        rate = np.zeros(position.shape[0])
    return bending_kernel(rows, rest_terms(rest_angle), membrane, k_el, k_diss, factor,
                          each_own(factor), position, velocity, force, fold_cosine(max_fold),
                          rate, rate_limit, frames)


def each_own(factor) -> np.ndarray:
    """The kernels' ``convention`` argument when ``factor`` is given per membrane."""
    return np.arange(len(factor), dtype=np.int8)


@inline
def store_frame(frames, h, g):
    """frames[h] = the FRAME_WIDTH values of hinge_frame's tuple g."""
    frames[h, 0] = g[0]
    frames[h, 1] = g[1]
    frames[h, 2] = g[2]
    frames[h, 3] = g[3]
    frames[h, 4] = g[4]
    frames[h, 5] = g[5]
    frames[h, 6] = g[6]
    frames[h, 7] = g[7]
    frames[h, 8] = g[8]
    frames[h, 9] = g[9]
    frames[h, 10] = g[10]
    frames[h, 11] = g[11]
    frames[h, 12] = g[12]
    frames[h, 13] = g[13]
    frames[h, 14] = g[14]
    frames[h, 15] = g[15]
    frames[h, 16] = g[16]


@kernel
def bending_kernel(rows, rest, membrane, k_el, k_diss, factor, convention, position, velocity,
                   force, fold_cos, rate, rate_limit, frames):
    """bending_forces with ``rest`` = rest_terms(theta0) and ``fold_cos`` =
    fold_cosine(max_fold); ``frames`` (hinges, FRAME_WIDTH) the hinges' frames at these
    positions, or (0, FRAME_WIDTH): computed here. Membrane m's convention factor is
    ``factor[convention[m]]`` (the systems pass CONVENTION_FACTOR and the membranes'
    ``bending_convention``: no numpy call per step, which cost 6.6 us in the run).

    Without an arc tangent or sine per hinge: with A = n1 . n2 = |n1| |n2| cos(theta) and
    B = (n1 x n2) . e^ = |n1| |n2| sin(theta), sin(theta / 2) = B / sqrt(2 r (r + A)),
    r = |n1| |n2| (exact for theta in (-pi, pi), well conditioned near the flat sheet);
    the fold test |theta - theta0| > max_fold (mod 2 pi) is
    cos(theta - theta0) = (A cos(theta0) + B sin(theta0)) / r < cos(max_fold).
    """
    bad = -1
    kind = 0
    u = np.empty((4, 3))
    kept = frames.shape[0] > 0
    computed = np.empty((1, FRAME_WIDTH))
    f = frames if kept else computed  # the frame of hinge h is f[fh]
    for h in range(rows.shape[0]):
        a = row(rows[h, 0])
        b = row(rows[h, 1])
        c = row(rows[h, 2])
        d = row(rows[h, 3])
        fh = h
        if not kept:
            store_frame(computed, 0, hinge_frame(position, a, b, c, d))
            fh = 0
        along = f[fh, 0]
        across = f[fh, 1]
        elen = f[fh, 2]
        n1len = f[fh, 3]
        n2len = f[fh, 4]
        if n1len == 0.0:
            if bad < 0:
                bad = h
                kind = DEGENERATE
            continue
        r = n1len * n2len
        if along * rest[h, 1] + across * rest[h, 2] < fold_cos * r:
            if bad < 0:
                bad = h
                kind = FOLDED
            continue
        m = membrane[h]
        kel = k_el[m]
        kdiss = k_diss[m]
        if kel == 0.0 and kdiss == 0.0:
            continue
        for k in range(4):
            for c3 in range(3):
                u[k, c3] = f[fh, 5 + 3 * k + c3]
        omega = 0.0
        for c3 in range(3):
            omega += (u[0, c3] * velocity[a, c3] + u[1, c3] * velocity[b, c3]
                      + u[2, c3] * velocity[c, c3] + u[3, c3] * velocity[d, c3])
        elastic = 0.0
        if kel != 0.0:
            sin_half = (across / math.sqrt(2.0 * r * (r + along)) if r + along > 0.0
                        else math.copysign(1.0, across))
            elastic = kel * elen * elen / (n1len + n2len) * (sin_half - rest[h, 0])
        damping = kdiss * elen * omega
        if kdiss != 0.0:
            worst = max(max(rate[a], rate[b]), max(rate[c], rate[d]))
            if worst > rate_limit:
                damping *= rate_limit / worst
        coefficient = factor[convention[m]] * (elastic - damping)
        for c3 in range(3):
            force[a, c3] += coefficient * u[0, c3]
            force[b, c3] += coefficient * u[1, c3]
            force[c, c3] += coefficient * u[2, c3]
            force[d, c3] += coefficient * u[3, c3]
    return bad, kind


@kernel
def bending_energies(rows, rest_angle, membrane, k_el, factor, position, n_membranes):
    """Elastic bending energy per membrane (J): C [2 (cos(theta0/2) - cos(theta/2))
    - (theta - theta0) sin(theta0/2)], the integral of Eq. (11) over theta at the current
    C = factor k_el |e|^2 / (|n1| + |n2|)."""
    out = np.zeros(n_membranes)
    for h in range(rows.shape[0]):
        g = hinge_geometry(position, rows[h, 0], rows[h, 1], rows[h, 2], rows[h, 3])
        if g[2] == 0.0:
            continue
        m = membrane[h]
        theta, theta0 = g[0], rest_angle[h]
        cc = factor[m] * k_el[m] * g[1] * g[1] / (g[2] + g[3])
        out[m] += cc * (2.0 * (math.cos(0.5 * theta0) - math.cos(0.5 * theta))
                        - (theta - theta0) * math.sin(0.5 * theta0))
    return out


@kernel
def damping_loads(rows, membrane, k_diss, factor, convention, position, load, frames):
    """Add factor k_diss |e| |u_i|^2 (kg/s) of every hinge into its four vertex rows of
    ``load``: the numerator of the vertex damping rate r_i (module docstring). ``frames``
    (hinges, FRAME_WIDTH) receives every hinge's hinge_frame, damped or not, for
    bending_kernel; (0, FRAME_WIDTH): none kept. Factor as in bending_kernel."""
    keep = frames.shape[0] > 0
    for h in range(rows.shape[0]):
        kdiss = k_diss[membrane[h]]
        if kdiss == 0.0 and not keep:
            continue
        g = hinge_frame(position, row(rows[h, 0]), row(rows[h, 1]), row(rows[h, 2]),
                        row(rows[h, 3]))
        if keep:
            store_frame(frames, h, g)
        if kdiss == 0.0 or g[3] == 0.0:
            continue
        c = factor[convention[membrane[h]]] * kdiss * g[2]
        for k in range(4):
            load[row(rows[h, k])] += c * (g[5 + 3 * k] ** 2 + g[6 + 3 * k] ** 2 + g[7 + 3 * k] ** 2)


@kernel
def rates_from_loads(load, mass, fixed, rate):
    """rate = load / mass row by row (1/s); 0 for fixed rows (prescribed motion) and rows
    without mass."""
    for i in range(rate.shape[0]):
        rate[i] = load[i] / mass[i] if mass[i] > 0.0 and not fixed[i] else 0.0


def vertex_damping_rates(rows, membrane, k_diss, factor, position, mass, fixed=None):
    """r_i (1/s) of every row from the hinges given (all of them on one rank)."""
    n = position.shape[0]
    load = np.zeros(n)
    damping_loads(rows, membrane, k_diss, factor, each_own(factor), position, load, NO_FRAMES)
    rate = np.empty(n)
    rates_from_loads(load, mass, np.zeros(n, np.bool_) if fixed is None
                     else np.asarray(fixed, np.bool_), rate)
    return rate


def damping_rate(rows, membrane, k_diss, factor, position, mass, iterations: int = 200,
                 seed: int = 0, rate=None, rate_limit: float = math.inf) -> float:
    """The largest eigenvalue lambda_max (1/s) of M^-1 C, C the damping matrix of Eq. (12)
    with each hinge limited by ``rate`` and ``rate_limit`` as in bending_forces (default:
    the paper's damper): velocity Verlet is stable for dt < 2 / lambda_max (module docstring).

    Power iteration in the mass-weighted inner product, where M^-1 C is self-adjoint;
    the Rayleigh quotient approaches lambda_max from below. Rows are all the rows
    `position` and `mass` cover; hinges with no area add nothing.
    """
    n = position.shape[0]
    if rows.shape[0] == 0 or not np.any(k_diss > 0.0):
        return 0.0
    if rate is None:
        rate = np.zeros(n)
    no_stiffness = np.zeros_like(k_diss)
    flat = rest_terms(np.zeros(rows.shape[0]))  # no stiffness: the rest angle plays no part
    v = np.random.default_rng(seed).standard_normal((n, 3))
    result = 0.0
    for _ in range(iterations):
        force = np.zeros((n, 3))
        bending_kernel(rows, flat, membrane, no_stiffness, k_diss, factor, each_own(factor),
                       position, v, force, fold_cosine(math.inf), rate, rate_limit, NO_FRAMES)
        w = -force / mass[:, None]
        norm = math.sqrt(float(np.sum(mass[:, None] * v * v)))
        result = float(np.sum(mass[:, None] * v * w)) / norm**2
        wnorm = math.sqrt(float(np.sum(mass[:, None] * w * w)))
        if wnorm == 0.0:
            return 0.0
        v = w / wnorm
    return result


#: the membranes' columns the bending systems read every step (views cached per structure)
BENDING_COLUMNS = ("bending_stiffness", "bending_damping", "bending_convention")


def membrane_constants(membranes):
    """(k_el, k_diss, convention factor) per membrane, as kernel arrays."""
    return (np.ascontiguousarray(membranes.bending_stiffness),
            np.ascontiguousarray(membranes.bending_damping),
            CONVENTION_FACTOR[membranes.bending_convention])


class BendingDampingLoad(System):
    """Accumulates each hinge's factor k_diss |e| |u_i|^2 into its vertices'
    ``bending_damping_load`` (reverse: every hinge at a vertex counts, on whatever rank),
    and keeps every hinge's frame for MembraneBending (``frame``); MembraneBending adds it
    (module docstring, Time step)."""

    stage = Stage.FORCES
    reads = {"membrane_hinges": ("rows", "membrane"),
             "membranes": ("bending_damping", "bending_convention")}
    reads_ghosts = {"particles": ("position",)}
    writes = {"membrane_hinges": ("frame",)}
    accumulates = {"particles": ("bending_damping_load",)}

    def setup(self, world) -> None:  # the fields it writes (add_field is idempotent)
        world.particles.add_field(DAMPING_LOAD)
        world.membrane_hinges.add_field(HINGE_FRAME)

    def run(self, world) -> None:
        h, p = world.membrane_hinges, world.particles
        _, k_diss, convention = world.membranes.views(BENDING_COLUMNS)
        damping_loads(h.rows, h.membrane, k_diss, CONVENTION_FACTOR, convention,
                      p.with_ghosts("position"), p.with_ghosts("bending_damping_load"), h.frame)


class BendingDampingRate(System):
    """r_i = bending_damping_load / mass on owned rows (0 for fixed ones, whose motion is
    prescribed); the scheduler forwards it to the ghosts MembraneBending reads."""

    stage = Stage.FORCES
    reads = {"particles": ("bending_damping_load", "mass", "fixed")}
    writes = {"particles": ("bending_damping_rate",)}

    def run(self, world) -> None:
        p = world.particles
        rates_from_loads(p.bending_damping_load, p.mass, p.fixed, p.bending_damping_rate)


class MembraneBending(System):
    """Bending forces of every hinge (module docstring), and the fold check.

    ``max_fold`` [rad]: how far a hinge may turn from its rest angle before
    the run stops (default 170 degrees: an inverted triangle). ``max_stretch``:
    longest a hinge may get relative to its initial extent (ghost width).
    With bending damping on some membrane, set-up adds BendingDampingLoad and
    BendingDampingRate before this system: they give the rates that keep the
    damper stable at any dt (module docstring, Time step).
    """

    stage = Stage.FORCES
    reads = {"membrane_hinges": ("rows", "rest_angle", "membrane"),
             "membranes": ("bending_stiffness", "bending_damping", "bending_convention")}
    reads_ghosts = {"particles": ("position", "velocity")}
    accumulates = {"particles": ("force",)}

    def __init__(self, max_fold: float = np.radians(170.0), max_stretch: float = 1.5):
        self.max_fold = float(max_fold)
        self.max_stretch = float(max_stretch)
        self._limited = False  # damping on some membrane: the rate systems run before this
        self._rest_cache = None  # ((epoch, rows), rest_terms of the hinges)

    def setup(self, world) -> None:
        if ("membranes" not in world.tables
                or not np.any(np.asarray(world.membranes.bending_damping) > 0.0)):
            return
        self._limited = True
        for f in (DAMPING_LOAD, DAMPING_RATE):
            world.particles.add_field(f)
        world.membrane_hinges.add_field(HINGE_FRAME)
        for kind in (BendingDampingLoad, BendingDampingRate):
            if not world.has_system(kind):
                world.add_system(kind(), before=self)

    def declare(self, world) -> None:
        if self._limited:
            self.reads_ghosts = {"particles": (*type(self).reads_ghosts["particles"],
                                               "bending_damping_rate")}
            self.reads = dict(type(self).reads, membrane_hinges=(
                *type(self).reads["membrane_hinges"], "frame"))

    def _rest_terms(self, hinges) -> np.ndarray:
        """rest_terms of the hinges' rest angles, made again only when the table's rows
        change (rebuilds, restarts: its epoch); rest angles are fixed at add_membrane."""
        key = (hinges.epoch, hinges.n_owned)
        if self._rest_cache is None or self._rest_cache[0] != key:
            self._rest_cache = (key, rest_terms(hinges.rest_angle))
        return self._rest_cache[1]

    def interaction_range(self, world) -> float:
        """The largest distance from a hinge's anchor x1 to its other vertices, stretched."""
        return self.max_stretch * element_span(world, "membrane_hinges")

    def run(self, world) -> None:
        h = world.membrane_hinges
        p = world.particles
        k_el, k_diss, convention = world.membranes.views(BENDING_COLUMNS)
        if self._limited:  # BendingDampingLoad ran just before, on these positions
            rate, frames = p.with_ghosts("bending_damping_rate"), h.frame
        elif np.any(k_diss > 0.0):
            raise InputError("MembraneBending: bending_damping was set after set-up; give the "
                             "membranes their damping before World.setup (add_membrane)")
        else:
            rate, frames = NO_RATES, NO_FRAMES  # no hinge is damped: rates never read
        bad, kind = bending_kernel(h.rows, self._rest_terms(h), h.membrane, k_el, k_diss,
                                   CONVENTION_FACTOR, convention, p.with_ghosts("position"),
                                   p.with_ghosts("velocity"), p.with_ghosts("force"),
                                   fold_cosine(self.max_fold), rate,
                                   DAMPING_STEP_BOUND / world.dt, frames)
        if bad >= 0:
            what = ("one of its triangles has collapsed to (nearly) zero area" if kind == DEGENERATE
                    else f"it folded more than {np.degrees(self.max_fold):.0f} degrees from its rest "
                         "angle (an inverted triangle)")
            raise StateError(
                f"step {world.step}: membrane {int(h.membrane[bad])}, hinge on vertices "
                f"{h.vertices[bad].tolist()}: {what}. The membrane is crushed or the time step "
                "is too large: lower dt or the load, or refine the mesh; the last output and "
                "checkpoint are intact")
