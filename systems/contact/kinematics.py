"""Geometry shared by the contact laws: tangent-plane rotation and the initial overlap check."""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import inline, kernel


@inline
def rotate_into_plane(spring, nx, ny, nz):
    """Project a history vector onto the plane normal to n, keeping its length.

    The contact frame turns as the particles roll past each other; the
    tangential spring must follow it without changing its stored energy
    (PHYSICS-NOTES, Hertz-Mindlin).
    """
    sn = spring[0] * nx + spring[1] * ny + spring[2] * nz
    if sn == 0.0:
        return
    old2 = spring[0] * spring[0] + spring[1] * spring[1] + spring[2] * spring[2]
    spring[0] -= sn * nx
    spring[1] -= sn * ny
    spring[2] -= sn * nz
    new2 = spring[0] * spring[0] + spring[1] * spring[1] + spring[2] * spring[2]
    if new2 > 0.0:
        s = math.sqrt(old2 / new2)
        spring[0] *= s
        spring[1] *= s
        spring[2] *= s


@inline
def rotated_into_plane(s0, s1, s2, nx, ny, nz):
    """``rotate_into_plane`` on a history vector held in three scalars; returns the new vector.

    The same arithmetic, for kernels that keep history in registers (the
    chunked contact kernels, systems.contact.chunks).
    """
    sn = s0 * nx + s1 * ny + s2 * nz
    if sn != 0.0:
        old2 = s0 * s0 + s1 * s1 + s2 * s2
        s0 -= sn * nx
        s1 -= sn * ny
        s2 -= sn * nz
        new2 = s0 * s0 + s1 * s1 + s2 * s2
        if new2 > 0.0:
            s = math.sqrt(old2 / new2)
            s0 *= s
            s1 *= s
            s2 *= s
    return s0, s1, s2


@kernel
def largest_relative_overlap(pair_i, pair_j, position, radius):
    """Largest overlap / smaller radius over the pairs, and its pair index (-1 if none)."""
    worst = 0.0
    at = -1
    for k in range(pair_i.size):
        i = pair_i[k]
        j = pair_j[k]
        d2 = 0.0
        for a in range(3):
            d = position[i, a] - position[j, a]
            d2 += d * d
        delta = radius[i] + radius[j] - math.sqrt(d2)
        if delta > 0.0:
            rel = delta / min(radius[i], radius[j])
            if rel > worst:
                worst = rel
                at = k
    return worst, at


def check_initial_overlaps(world, tolerance: float) -> None:
    """Input check: refuse initial particles that overlap more than `tolerance` x the smaller radius."""
    pairs = world.pairs
    particles = world.particles
    pos = particles.with_ghosts("position")
    rad = particles.with_ghosts("radius")
    worst, at = largest_relative_overlap(pairs.i, pairs.j, pos, rad)
    if worst > tolerance:
        gi, gj = int(pairs.gid_i[at]), int(pairs.gid_j[at])
        raise InputError(
            f"initial particles gid {gi} and gid {gj} overlap by {100 * worst:.3g} % of the smaller "
            f"radius (tolerance {100 * tolerance:.3g} %): separate them (e.g. insert on a looser "
            "lattice) or raise the contact system's max_initial_overlap")
