"""Random sequential insertion of grains into a region, without overlaps.

:func:`place_spheres` is the core: bounding radii in, centres out. Grains are placed largest
first (small grains then fill the gaps the large ones leave); each draws candidate centres
uniformly in the region's bounding box shrunk by its radius until one lies wholly inside the
region (``Region.contains``) and keeps at least ``gap`` from every grain placed before and
every ``existing`` sphere. A cell grid of width at least the largest sum of two radii makes
the overlap test look at 27 cells, so 10^5 spheres insert in about a second.

Random sequential insertion jams: for equal spheres no candidate fits above a solid fraction
of about 0.38 (the random sequential adsorption limit), and in practice the attempts run out
from about 0.3; a wide size distribution reaches a little more. When a grain finds no place
in ``max_attempts`` candidates, :class:`InsertionError` names the count reached, the solid
fraction and the fixes (fewer grains, a larger region, or insertion at a reduced size and
growth, as the triaxial preparation does).

:func:`insert` draws what to insert from a :class:`~ecs_dem.components.insertion.psd.PSD`
or a :class:`~ecs_dem.components.insertion.psd.Mixture` (a count, or a solid fraction of
the region), places the grains by their shapes' bounding spheres and gives every grain a
random orientation, a unit quaternion uniform on the rotations (Shoemake's construction from
three uniform numbers). :func:`add_to_world` hands each component's grains to its shape's
``add`` (spheres: ``add_particles``).

Everything comes from one numpy Generator in a fixed order (sizes, then candidate positions
in blocks of a fixed length, then orientations), and the kernels are deterministic: the same
seed gives the same grains on any machine and on every rank. Drivers call it on every rank
with the same seed before the set-up distributes the particles, as they add particles today.

Clumps: a clump template enters as a :class:`~ecs_dem.components.insertion.psd.Shape` whose
``bounding`` is the radius of the sphere about its centre of mass that holds all its pebbles
(per unit size), whose ``volume`` is its solid volume per unit size cubed, and whose ``add``
creates the body and its pebbles at the given positions, orientations and sizes. Insertion
keeps the bounding spheres apart, so clumps never overlap whatever their orientation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.components.insertion.psd import PSD, SPHERE, Component, Mixture, PSDError
from ecs_dem.components.insertion.regions import MeshRegion, Region, sphere_inside

#: candidate triples drawn per block (a constant: the random stream must not depend on n)
BLOCK = 1 << 16
#: default candidates per grain before giving up
MAX_ATTEMPTS = 5000


class InsertionError(InputError):
    """The grains do not fit: the message gives the count reached and the fixes."""


@dataclass
class Insertion:
    """What :func:`insert` placed: per grain its centre (n, 3), diameter, component index,
    species, bounding radius and orientation (n, 4) unit quaternion (w, x, y, z)."""

    position: np.ndarray
    diameter: np.ndarray
    component: np.ndarray
    species: np.ndarray
    bounding_radius: np.ndarray
    orientation: np.ndarray
    mixture: Mixture

    @property
    def radius(self) -> np.ndarray:
        return 0.5 * self.diameter

    def __len__(self) -> int:
        return self.position.shape[0]

    def solid_volume(self) -> float:
        return float(sum(c.shape.volume * np.sum(self.diameter[self.component == i] ** 3)
                         for i, c in enumerate(self.mixture.components)))


def random_quaternions(n: int, rng) -> np.ndarray:
    """n unit quaternions (w, x, y, z) uniform on the rotation group (Shoemake 1992: from
    u1, u2, u3 uniform, q = (sqrt(1-u1) sin 2pi u2, sqrt(1-u1) cos 2pi u2,
    sqrt(u1) sin 2pi u3, sqrt(u1) cos 2pi u3))."""
    u = rng.random((int(n), 3))
    a, b = np.sqrt(1.0 - u[:, 0]), np.sqrt(u[:, 0])
    t2, t3 = 2 * math.pi * u[:, 1], 2 * math.pi * u[:, 2]
    return np.stack([b * np.cos(t3), a * np.sin(t2), a * np.cos(t2), b * np.sin(t3)], axis=1)


@kernel
def _grid_add(i, x, head, nxt, lo, inv, dims):
    c = 0
    stride = 1
    for a in range(3):
        k = int(math.floor((x[a] - lo[a]) * inv[a]))
        k = min(max(k, 0), dims[a] - 1)
        c += k * stride
        stride *= dims[a]
    nxt[i] = head[c]
    head[c] = i


@kernel
def _free(x, r, gap, pos, rad, head, nxt, lo, inv, dims):
    """No sphere in the grid comes closer than gap to the sphere (x, r)."""
    k0 = np.empty(3, dtype=np.int64)
    for a in range(3):
        k = int(math.floor((x[a] - lo[a]) * inv[a]))
        k0[a] = min(max(k, 0), dims[a] - 1)
    for iz in range(max(k0[2] - 1, 0), min(k0[2] + 2, dims[2])):
        for iy in range(max(k0[1] - 1, 0), min(k0[1] + 2, dims[1])):
            for ix in range(max(k0[0] - 1, 0), min(k0[0] + 2, dims[0])):
                j = head[ix + dims[0] * (iy + dims[1] * iz)]
                while j >= 0:
                    dx, dy, dz = x[0] - pos[j, 0], x[1] - pos[j, 1], x[2] - pos[j, 2]
                    reach = r + rad[j] + gap
                    if dx * dx + dy * dy + dz * dz < reach * reach:
                        return False
                    j = nxt[j]
    return True


@kernel
def _place(order, radius, gap, k, tries, u, pos, rad, count, head, nxt, lo, inv, dims,
           box_lo, box_hi, max_attempts, kind, params, vertices, triangles, vhead, vdims,
           vstates, vstart, vtris, vcentre):
    """Place grains order[k:], drawing candidates from the uniforms u (rows of 3) until they
    run out; returns (k, tries, count): the next grain, the attempts spent on it and the
    spheres in the grid. Stops early when a grain spends max_attempts."""
    x = np.empty(3)
    m = 0
    while k < order.shape[0] and m < u.shape[0]:
        g = order[k]
        r = radius[g]
        for a in range(3):
            x[a] = box_lo[a] + r + u[m, a] * (box_hi[a] - box_lo[a] - 2.0 * r)
        m += 1
        tries += 1
        if (_free(x, r, gap, pos, rad, head, nxt, lo, inv, dims)
                and sphere_inside(x, r + gap, kind, params, vertices, triangles, vhead, vdims,
                                  vstates, vstart, vtris, vcentre)):
            for a in range(3):
                pos[count, a] = x[a]
            rad[count] = r
            _grid_add(count, x, head, nxt, lo, inv, dims)
            count += 1
            k += 1
            tries = 0
        elif tries >= max_attempts:
            break
    return k, tries, count


def place_spheres(region: Region, radius, rng, *, existing=None, gap: float = 0.0,
                  max_attempts: int = MAX_ATTEMPTS) -> np.ndarray:
    """Centres (n, 3) for spheres of the given radii (m) inside ``region``, apart from each
    other and from ``existing`` = (positions (k, 3), radii (k,)) by at least ``gap`` (m), and
    at least ``gap`` from the region's boundary. Row i is the centre of radius[i]."""
    radius = np.ascontiguousarray(radius, dtype=np.float64).reshape(-1)
    n = radius.size
    if n and not np.all(np.isfinite(radius) & (radius > 0)):
        raise InsertionError("insertion: every radius must be a length > 0 in metres")
    gap = float(gap)
    if not (np.isfinite(gap) and gap >= 0):
        raise InsertionError(f"insertion: gap = {gap!r} must be >= 0 (m)")
    if existing is None:
        ex_pos, ex_rad = np.zeros((0, 3)), np.zeros(0)
    else:
        ex_pos = np.ascontiguousarray(existing[0], dtype=np.float64).reshape(-1, 3)
        ex_rad = np.broadcast_to(np.asarray(existing[1], dtype=np.float64),
                                 (ex_pos.shape[0],)).copy()
    if n == 0:
        return np.zeros((0, 3))
    r_max = float(radius.max())
    span = region.hi - region.lo
    if np.any(2 * (r_max + gap) > span):
        raise InsertionError(f"insertion: the largest grain (radius {r_max:.6g} m) is wider than "
                             f"the region {region!r}: enlarge the region or use smaller grains")
    if isinstance(region, MeshRegion):
        region.classify(r_max + gap)
    # the cell grid: cells at least as wide as the largest reach, over the region's box
    # widened by one cell (existing spheres farther out cannot touch a grain inside)
    ex_max = float(ex_rad.max()) if ex_rad.size else 0.0
    cell = max(2 * r_max, r_max + ex_max) + gap
    lo = region.lo - cell
    dims = np.maximum(np.floor((span + 2 * cell) / cell).astype(np.int64), 1)
    while float(np.prod(dims.astype(np.float64))) > 8 * (n + ex_pos.shape[0]) + 64:
        dims = np.maximum(dims // 2, 1)
    inv = dims / (span + 2 * cell)
    capacity = n + ex_pos.shape[0]
    pos = np.zeros((capacity, 3))
    rad = np.zeros(capacity)
    head = np.full(int(np.prod(dims)), -1, dtype=np.int64)
    nxt = np.full(capacity, -1, dtype=np.int64)
    near = np.all((ex_pos > lo) & (ex_pos < region.hi + cell), axis=1)
    count = 0
    for j in np.flatnonzero(near):
        pos[count], rad[count] = ex_pos[j], ex_rad[j]
        _grid_add(count, pos[count], head, nxt, lo, inv, dims)
        count += 1
    first = count
    order = np.argsort(-radius, kind="stable")
    k, tries = 0, 0
    arrays = region.arrays()
    while k < n:
        u = rng.random((BLOCK, 3))
        k, tries, count = _place(order, radius, gap, k, tries, u, pos, rad, count, head, nxt, lo,
                                 inv, dims, region.lo, region.hi, int(max_attempts), *arrays)
        if tries >= max_attempts:
            placed = order[:k]
            solid = 4 / 3 * math.pi * float(np.sum(radius[placed] ** 3))
            wanted = 4 / 3 * math.pi * float(np.sum(radius ** 3))
            raise InsertionError(
                f"insertion: grain {k + 1} of {n} (radius {radius[order[k]]:.4g} m) found no "
                f"place in {max_attempts} random positions in {region!r}; reached {k} grains, "
                f"solid fraction {solid / region.volume:.3f} of the {wanted / region.volume:.3f} "
                "asked. Random sequential insertion jams near 0.3-0.38 (0.38 for equal "
                "spheres): insert fewer grains or into a larger region, or insert them at a "
                "reduced size and grow them (the triaxial preparation does), or raise "
                "max_attempts if the fraction is well below 0.3")
    out = np.empty((n, 3))
    out[order] = pos[first:first + n]
    return out


def _as_mixture(what) -> Mixture:
    if isinstance(what, Mixture):
        return what
    if isinstance(what, PSD):
        return Mixture([Component(what, 1.0)])
    raise PSDError(f"insertion: expected a PSD or a Mixture, got {type(what).__name__}")


def insert(region: Region, what, rng, *, count: int | None = None,
           solid_fraction: float | None = None, existing=None, gap: float = 0.0,
           max_attempts: int = MAX_ATTEMPTS) -> Insertion:
    """Draw grains from ``what`` (a PSD or a Mixture) and place them in ``region`` without
    overlaps (see the module docstring). Give ``count`` grains, or ``solid_fraction`` of the
    region's volume (grains are drawn until their solid volume reaches it)."""
    mixture = _as_mixture(what)
    if (count is None) == (solid_fraction is None):
        raise InsertionError("insertion: give either count or solid_fraction")
    if count is not None:
        if int(count) < 0:
            raise InsertionError(f"insertion: count = {count} must be >= 0")
        which, d = mixture.sample(int(count), rng)
    else:
        phi = float(solid_fraction)
        if not (np.isfinite(phi) and 0 < phi < 1):
            raise InsertionError(f"insertion: solid_fraction = {solid_fraction!r} must lie in "
                                 "(0, 1); random insertion reaches about 0.3")
        target = phi * region.volume
        guess = max(int(math.ceil(target / mixture.mean_volume())), 1)
        which, d = mixture.sample(guess + 16 + guess // 8, rng)
        vol = np.array([mixture.components[c].shape.volume for c in which]) * d**3
        n = int(np.searchsorted(np.cumsum(vol), target)) + 1
        if n > which.size:
            more_w, more_d = mixture.sample(4 * n, rng)
            which, d = np.concatenate((which, more_w)), np.concatenate((d, more_d))
            vol = np.array([mixture.components[c].shape.volume for c in which]) * d**3
            n = int(np.searchsorted(np.cumsum(vol), target)) + 1
        which, d = which[:n], d[:n]
    comps = mixture.components
    bounding = np.array([comps[c].shape.bounding for c in which]) * d
    species = np.array([comps[c].species for c in which], dtype=np.int32)
    position = place_spheres(region, bounding, rng, existing=existing, gap=gap,
                             max_attempts=max_attempts)
    orientation = random_quaternions(d.size, rng)
    return Insertion(position, d, which.astype(np.int64), species, bounding, orientation,
                     mixture)


def add_to_world(world, inserted: Insertion):
    """Put the inserted grains into the world, component by component through their shapes'
    ``add``; returns what each ``add`` returned (spheres: the slice of new particle rows)."""
    out = []
    for i, c in enumerate(inserted.mixture.components):
        rows = np.flatnonzero(inserted.component == i)
        if rows.size == 0:
            continue
        if c.shape.add is None:
            raise InsertionError(f"insertion: shape {c.shape.name!r} has no add function to put "
                                 "its grains into a world")
        out.append(c.shape.add(world, inserted.position[rows], inserted.orientation[rows],
                               inserted.diameter[rows], inserted.species[rows]))
    return out


__all__ = ["insert", "place_spheres", "add_to_world", "Insertion", "InsertionError",
           "random_quaternions", "SPHERE"]
