"""The input check of the initial state: particles that overlap too much are refused."""
from __future__ import annotations

import math

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel


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
