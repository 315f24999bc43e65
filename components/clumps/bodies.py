"""Rigid bodies made of pebbles: the ``bodies`` table and ``add_clumps``.

A clump is one row of ``bodies`` and one ordinary ``particles`` row per
pebble. The pebbles take part in every contact system unchanged; the
systems of ``ecs_dem.systems.rigid_body`` sum their forces and torques onto
the body, integrate the body and place the pebbles (docs/user-guide/clumps.md).

``bodies`` is anchored to the particles by its anchor pebble (the pebble
nearest the centre of mass, first in ``pebbles``): a body is owned by the
rank that owns its anchor pebble and migrates with it; ``pebble_rows`` are
the engine's row references of ``pebbles`` (``ecs_dem.references``), so an
owned body whose pebble lies beyond the ghost width of its anchor is an
error on every rank count. Fields: mass, principal moments, centre of mass
``com`` (unwrapped: it follows the body through periodic boundaries),
velocity, orientation quaternion (w, x, y, z; body frame = principal axes,
q maps body-frame vectors to the space frame), angular momentum (space
frame), angular velocity, template id, and the force and torque about the
centre of mass (REVERSE: pebbles on other ranks add their share).

Pebble rows carry ``body`` (the body's gid; -1 for a free particle) and
``body_offset`` (the pebble's centre in the body frame). Their ``mass`` is the
body's mass, so that contact laws damp with the body's mass (as LAMMPS's
granular pair styles with ``fix rigid``); their ``inertia`` is
``PEBBLE_INERTIA`` (< 0), which tells velocity Verlet and gravity to leave
them to their body. Pebbles of one body never touch each other: their
``contact_group`` is ``BODY_GROUP_BASE`` + the body's gid (membranes use
their ids, far below it).

``clump_templates`` (every rank holds it whole) lists the templates in use:
pebble count, volume, principal second moments per unit density and reach
(the largest distance from the anchor pebble's centre to another's).
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.table import Field, Halo, Table

from ..particles import add_particles, create_particle_table
from .template import ClumpTemplate, rotation_matrix

#: contact_group of a pebble: this plus its body's gid (membrane ids stay below it)
BODY_GROUP_BASE = 1 << 30
#: the largest body gid whose group fits in int32
MAX_BODY_GID = np.iinfo(np.int32).max - BODY_GROUP_BASE
#: ``inertia`` of a pebble row: negative, so integrators and gravity leave it to its body
PEBBLE_INERTIA = -1.0
#: default room for pebbles per body (``create_body_tables(world, max_pebbles=)``)
DEFAULT_MAX_PEBBLES = 16

BODY_OF_PARTICLE = Field("body", np.int64, (), Halo.LOCAL, -1, "",
                         "gid of the rigid body this pebble belongs to (-1: a free particle)")
BODY_OFFSET = Field("body_offset", np.float64, (3,), Halo.LOCAL, 0.0, "m",
                    "pebble centre in its body's frame (principal axes, origin at the centre "
                    "of mass)")

TEMPLATE_FIELDS = (
    Field("pebble_count", np.int32, (), Halo.LOCAL, 0, "", "pebbles of the template"),
    Field("volume", np.float64, (), Halo.LOCAL, 0.0, "m^3", "volume of the shape"),
    Field("moments", np.float64, (3,), Halo.LOCAL, 0.0, "m^5",
          "principal second moments per unit density (increasing)"),
    Field("reach", np.float64, (), Halo.LOCAL, 0.0, "m",
          "largest distance from the anchor pebble's centre to another pebble's"),
    Field("extent", np.float64, (), Halo.LOCAL, 0.0, "m",
          "largest distance from the centre of mass to a pebble's surface"),
)


def body_fields(max_pebbles: int) -> tuple:
    k = int(max_pebbles)
    return (
        Field("pebbles", np.int64, (k,), Halo.LOCAL, -1, "",
              "gids of the pebbles, the anchor (nearest the centre of mass) first; -1 unused"),
        Field("pebble_rows", np.int32, (k,), Halo.LOCAL, -1, "", "local rows of the pebbles"),
        Field("template", np.int32, (), Halo.LOCAL, -1, "", "row of clump_templates"),
        Field("mass", np.float64, (), Halo.LOCAL, 0.0, "kg", "mass"),
        Field("moments", np.float64, (3,), Halo.LOCAL, 0.0, "kg m^2",
              "principal moments of inertia (body frame)"),
        Field("com", np.float64, (3,), Halo.LOCAL, 0.0, "m",
              "centre of mass, unwrapped across periodic boundaries"),
        Field("velocity", np.float64, (3,), Halo.FORWARD, 0.0, "m/s", "velocity of the centre"),
        Field("orientation", np.float64, (4,), Halo.FORWARD, 0.0, "",
              "unit quaternion (w, x, y, z): body frame -> space frame"),
        Field("angular_momentum", np.float64, (3,), Halo.LOCAL, 0.0, "kg m^2/s",
              "about the centre of mass, space frame"),
        Field("angular_velocity", np.float64, (3,), Halo.FORWARD, 0.0, "rad/s",
              "space frame"),
        Field("force", np.float64, (3,), Halo.REVERSE, 0.0, "N", "total force, summed each step"),
        Field("torque", np.float64, (3,), Halo.REVERSE, 0.0, "N m",
              "total torque about the centre of mass, space frame"),
        Field("displacement", np.float64, (3,), Halo.FORWARD, 0.0, "m",
              "centre's displacement over the last drift", scratch=True),
        Field("previous_orientation", np.float64, (4,), Halo.FORWARD, 0.0, "",
              "orientation before the last drift", scratch=True),
    )


def create_body_tables(world, max_pebbles: int = DEFAULT_MAX_PEBBLES) -> Table:
    """Add ``bodies`` (room for `max_pebbles` pebbles a body) and ``clump_templates`` and the
    pebble fields of ``particles`` (idempotent; returns ``bodies``)."""
    if "bodies" in world.tables:
        return world.tables["bodies"]
    if not int(max_pebbles) >= 1:
        raise InputError(f"bodies: max_pebbles must be at least 1 (got {max_pebbles})")
    p = create_particle_table(world)
    p.add_field(BODY_OF_PARTICLE)
    p.add_field(BODY_OFFSET)
    world.add_table(Table("clump_templates", TEMPLATE_FIELDS, capacity=4))
    return world.add_table(Table("bodies", body_fields(max_pebbles), capacity=256,
                                 anchor=("particles", "pebbles"),
                                 references={"pebble_rows": "pebbles"}))


def template_id(world, template: ClumpTemplate, scale: float = 1.0) -> int:
    """The row of `template` scaled by `scale` in ``clump_templates``, added if no row holds
    the same values."""
    t = world.tables["clump_templates"]
    s = float(scale)
    values = dict(pebble_count=template.count, volume=template.volume * s**3,
                  moments=template.moments * s**5, reach=template.reach * s,
                  extent=template.extent * s)
    n = t.n_owned
    same = np.flatnonzero((t.pebble_count[:n] == values["pebble_count"])
                          & (t.volume[:n] == values["volume"])
                          & np.all(t.moments[:n] == values["moments"], axis=1)
                          & (t.reach[:n] == values["reach"]))
    if same.size:
        return int(same[0])
    return int(t.append(1, **values).start)


def _rows_of(name: str, value, n: int, width: int, default) -> np.ndarray:
    a = np.asarray(default if value is None else value, dtype=np.float64)
    try:
        a = np.broadcast_to(a, (n, width)).copy()
    except ValueError:
        raise InputError(f"add_clumps: {name} must have shape ({n}, {width}) or ({width},), got "
                         f"{a.shape}") from None
    if not np.all(np.isfinite(a)):
        raise InputError(f"add_clumps: {name} contains non-finite values")
    return a


def add_clumps(world, template: ClumpTemplate, positions, orientations=None, species=0, *,
               velocity=None, angular_velocity=None, scale=None,
               check_overlaps: bool = True) -> slice:
    """Add one clump of `template` at each of `positions`.

    Parameters
    ----------
    positions : (n, 3) float [m]
        The centres of mass.
    orientations : (n, 4) or (4,) float
        Unit quaternions (w, x, y, z), body -> space; default the identity (the body's
        principal axes along x, y, z; ``template.given_orientation`` puts a template back
        as its pebbles were given). Normalised here.
    species : int
        The pebbles' material; its density gives the body's mass and moments.
    velocity, angular_velocity : (n, 3) or (3,) float [m/s], [rad/s]
        Space frame; default 0.
    scale : (n,) or scalar float
        Each clump is the template enlarged by this factor (lengths times s, volume s^3,
        moments s^5); default 1. Each distinct factor is a row of ``clump_templates``.
    check_overlaps : bool
        Refuse clumps whose pebbles overlap a pebble of another new clump or a particle
        already in the world (default). Insertion keeps clumps apart by construction.

    Build clumps before the first step, identically on every rank (like particles).
    Returns the slice of the new rows of ``bodies``.
    """
    if world.is_setup:
        raise InputError("add_clumps: add clumps before the first step")
    if not isinstance(template, ClumpTemplate):
        raise InputError(f"add_clumps: template must be a ClumpTemplate (components.clumps), "
                         f"got {type(template).__name__}")
    bodies = create_body_tables(world, max(DEFAULT_MAX_PEBBLES, template.count))
    k_max = bodies.fields["pebbles"].shape[0]
    if template.count > k_max:
        raise InputError(f"add_clumps: template '{template.name}' has {template.count} pebbles, "
                         f"the bodies table room for {k_max}: call "
                         f"create_body_tables(world, max_pebbles={template.count}) before the "
                         "first add_clumps")
    x = np.atleast_2d(np.asarray(positions, dtype=np.float64))
    n = x.shape[0]
    if x.shape != (n, 3) or n == 0:
        raise InputError(f"add_clumps: positions must have shape (n, 3), got {x.shape}")
    x = _rows_of("positions", x, n, 3, 0.0)
    q = _rows_of("orientations", orientations, n, 4, [1.0, 0.0, 0.0, 0.0])
    norm = np.linalg.norm(q, axis=1)
    if np.any(norm < 1e-12):
        raise InputError(f"add_clumps: orientation {int(np.argmin(norm))} is a zero quaternion")
    q /= norm[:, None]
    v = _rows_of("velocity", velocity, n, 3, 0.0)
    w = _rows_of("angular_velocity", angular_velocity, n, 3, 0.0)
    s = np.asarray(1.0 if scale is None else scale, dtype=np.float64)
    s = _rows_of("scale", s.reshape(-1, 1) if s.ndim == 1 else s, n, 1, 1.0)[:, 0]
    if not np.all(s > 0):
        raise InputError(f"add_clumps: scale {float(s[np.argmin(s)])!r} must be > 0")
    sp = world.tables.get("species")
    species = int(species)
    if sp is None or not 0 <= species < sp.n_owned:
        raise InputError(f"add_clumps: species {species} does not exist "
                         "(components.species.add_species)")
    density = float(sp.density[species])
    mass = template.mass(density) * s**3
    moments = template.principal_moments(density)[None, :] * (s**5)[:, None]
    if not (np.all(mass > 0) and np.all(np.isfinite(mass))):
        raise InputError(f"add_clumps: template '{template.name}' has mass {mass.min()} kg with "
                         f"density {density}: a clump needs a positive mass")
    first_body = bodies.next_gid
    if first_body + n - 1 > MAX_BODY_GID:
        raise InputError(f"add_clumps: more than {MAX_BODY_GID} bodies")
    factors, which = np.unique(s, return_inverse=True)
    tid = np.array([template_id(world, template, f) for f in factors], dtype=np.int32)[which]
    order = np.r_[template.anchor, np.delete(np.arange(template.count), template.anchor)]
    offsets = template.offsets[order][None] * s[:, None, None]   # (n, k, 3)
    radii = template.radii[order][None] * s[:, None]             # (n, k)
    rot = rotation_matrix(q)                       # (n, 3, 3)
    arms = np.einsum("nij,nkj->nki", rot, offsets)  # (n, k, 3)
    k = template.count
    p = world.particles
    centres = (x[:, None] + arms).reshape(-1, 3)
    body_gids = first_body + np.arange(n, dtype=np.int64)
    if check_overlaps:
        refuse_overlaps(world, centres, radii.reshape(-1), np.repeat(body_gids, k))
    rows = add_particles(world, centres, radii.reshape(-1), species,
                         mass=np.repeat(mass, k),
                         velocity=(v[:, None] + np.cross(w[:, None], arms)).reshape(-1, 3),
                         angular_velocity=np.repeat(w, k, axis=0))
    p.inertia[rows] = PEBBLE_INERTIA
    p.body[rows] = np.repeat(body_gids, k)
    p.body_offset[rows] = offsets.reshape(-1, 3)
    p.contact_group[rows] = (BODY_GROUP_BASE + np.repeat(body_gids, k)).astype(np.int32)
    pebbles = np.full((n, k_max), -1, dtype=np.int64)
    pebbles[:, :k] = p.gid[rows].reshape(n, k)
    inverse = 1.0 / moments
    omega_body = np.einsum("nji,nj->ni", rot, w)  # R^T w
    momentum = np.einsum("nij,nj->ni", rot, omega_body * moments)  # R I R^T w
    out = bodies.append(n, pebbles=pebbles, template=tid, mass=mass, moments=moments, com=x,
                        velocity=v, orientation=q, angular_momentum=momentum,
                        angular_velocity=np.einsum("nij,nj->ni", rot,
                                                   np.einsum("nji,nj->ni", rot, momentum) * inverse))
    assert int(bodies.gid[out][0]) == first_body
    return out


@kernel
def _first_overlap(x, r, body, n_new, lo, inv, dims, tolerance):
    """The first pair (i, j), i one of the first `n_new` spheres, of spheres of different
    bodies (body < 0: a free particle, its own body) that overlap by more than `tolerance`
    times their radius sum; (-1, -1) if none. A cell grid of cells at least as wide as the
    largest diameter."""
    n = x.shape[0]
    head = np.full(dims[0] * dims[1] * dims[2], -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    cell = np.empty((n, 3), np.int64)
    for i in range(n):
        for a in range(3):
            c = int(math.floor((x[i, a] - lo[a]) * inv[a]))
            cell[i, a] = min(max(c, 0), dims[a] - 1)
        c = cell[i, 0] + dims[0] * (cell[i, 1] + dims[1] * cell[i, 2])
        nxt[i] = head[c]
        head[c] = i
    for i in range(n_new):
        for iz in range(max(cell[i, 2] - 1, 0), min(cell[i, 2] + 2, dims[2])):
            for iy in range(max(cell[i, 1] - 1, 0), min(cell[i, 1] + 2, dims[1])):
                for ix in range(max(cell[i, 0] - 1, 0), min(cell[i, 0] + 2, dims[0])):
                    j = head[ix + dims[0] * (iy + dims[1] * iz)]
                    while j >= 0:
                        if j > i and (body[i] < 0 or body[i] != body[j]):
                            reach = (r[i] + r[j]) * (1.0 - tolerance)
                            d2 = ((x[i, 0] - x[j, 0]) ** 2 + (x[i, 1] - x[j, 1]) ** 2
                                  + (x[i, 2] - x[j, 2]) ** 2)
                            if d2 < reach * reach:
                                return i, j
                        j = nxt[j]
    return -1, -1


#: pebbles of different bodies may overlap by this fraction of their radius sum (round-off
#: of clumps placed touching)
OVERLAP_TOLERANCE = 1e-9


def refuse_overlaps(world, centres, radii, body) -> None:
    """InputError when a new pebble overlaps a pebble of another new body or a grain already
    in the world (the owned grains; membrane vertices are left to the contact systems)."""
    p = world.tables.get("particles")
    old = np.zeros(0, np.int64) if p is None else np.flatnonzero(p.kind[:p.n_owned] == 0)
    x = np.concatenate([centres, p.position[old]]) if old.size else centres
    r = np.concatenate([radii, p.radius[old]]) if old.size else radii
    old_body = p.body[old] if old.size and "body" in p.fields else np.full(old.size, -1)
    labels = np.concatenate([body, old_body])
    width = max(2.0 * float(r.max()), 1e-300)
    lo = x.min(axis=0) - width
    dims = np.maximum(np.floor((x.max(axis=0) + width - lo) / width).astype(np.int64), 1)
    while float(np.prod(dims.astype(np.float64))) > 8 * x.shape[0] + 64:
        dims = np.maximum(dims // 2, 1)
    inv = dims / (x.max(axis=0) + width - lo)
    i, j = _first_overlap(x, r, labels.astype(np.int64), centres.shape[0], lo, inv, dims,
                          OVERLAP_TOLERANCE)
    if i < 0:
        return
    n = centres.shape[0]
    overlap = float(r[i] + r[j] - np.linalg.norm(x[i] - x[j]))
    what = (f"a pebble of clump {int(body[j]) - int(body[0])} of this call" if j < n
            else f"the grain of row {int(old[j - n])} already in the world")
    raise InputError(f"add_clumps: a pebble of clump {int(body[i]) - int(body[0])} of this call "
                     f"overlaps {what} by {overlap:.3g} m: clumps must start apart; place "
                     "them further apart, or insert them with components.insertion "
                     "(clump_shape), which keeps their bounding spheres apart")


def body_reach(world) -> float:
    """The largest reach of a template in use [m] (0 without clumps): how far a pebble lies
    from its body's anchor pebble, which the ghost width must cover."""
    t = world.tables.get("clump_templates")
    if t is None or t.n_owned == 0:
        return 0.0
    return float(t.reach[:t.n_owned].max())


__all__ = ["add_clumps", "create_body_tables", "body_reach", "BODY_GROUP_BASE", "PEBBLE_INERTIA",
           "BODY_OF_PARTICLE", "BODY_OFFSET"]
