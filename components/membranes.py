"""Elastic membranes (Goetz & Poeschel 2023, Sect. 2): tables and the builder.

A membrane is a triangulated surface whose vertices are particles
(``kind`` = membrane vertex, ``membrane`` = its id): velocity Verlet moves them
like grains, only their forces differ. Its elements are rows of bonded tables
that refer to vertex gids, each anchored to its first vertex (it migrates
with it and is evaluated by its owner; ``ecs_dem.references`` keeps the
``rows`` fields at the vertices' local rows on every rank), and each carries
its membrane id:

``springs``             every edge: Eq. (6) with k = sqrt(3)/2 E d (Eq. 7) and
                        damping 2 gamma sqrt(k m_eff) (systems.membrane.springs)
``membrane_hinges``     every interior edge: (x1, x2, x3, x4) labelled as in
                        docs/physics.md (Membrane bending), rest angle
                        theta0 measured on the initial mesh (systems.membrane.bending)
``membrane_triangles``  every triangle, wound counter-clockwise seen from outside,
                        with the triangle gids across its three edges (v0v1, v1v2,
                        v2v0; -1 on a boundary) and its rest area; the confining
                        stress acts on it (systems.membrane.pressure) and grains
                        touch it (the patch contacts). Vertex -> triangles: the
                        engine's incidence list (``World.incident_rows``).
``membrane_boundaries`` every boundary edge of an open membrane, oriented as in its
                        triangle, with its loop number (volumes of open membranes
                        are closed by these loops)

and one row in ``membranes`` (replicated): material, bending constants and
convention, confining-stress schedule, contact model, vertex gids.

Vertex masses (``vertex_mass``): lumped by default, each triangle giving a
third of A d rho to each of its vertices, so they add up to the membrane's
mass exactly; "uniform", that mass shared equally; or given directly (kg,
one value for every vertex or one per vertex, as MercuryDPM's membrane gives
every vertex 5/3 of the mean triangle's mass). The springs' damping is a
ratio (``damping_ratio``, c = 2 gamma sqrt(k m_eff) with the vertex masses)
or a coefficient (``spring_damping``, c in N s/m for every edge). Units: SI.

Build membranes before the first step, identically on every rank (like
particles); select vertex groups (``membrane_vertices``) and clamp them, move
them, or attach them to walls with ``components.particles``.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.config import in_range, range_text
from ecs_dem.errors import InputError
from ecs_dem.table import Field, Halo, Table

from ecs_dem.components.mesh.topology import dihedral_angles, edge_map, hinges
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.validation import boundary_loops, triangle_neighbors, validate_mesh
from .particles import KIND_MEMBRANE_VERTEX, add_particles
from .species import add_species

BENDING_CONVENTIONS = {"paper": 0, "mercurydpm": 1}
CONTACT_MODELS = {"patch": 0, "particle": 1}
#: (low, high, brackets) of each constant add_membrane accepts
MEMBRANE_RANGES = {
    "youngs_modulus": (0.0, math.inf, "()"),     # Pa
    "thickness": (0.0, math.inf, "()"),          # m
    "density": (0.0, math.inf, "()"),            # kg/m^3
    "damping_ratio": (0.0, math.inf, "[]"),
    "bending_stiffness": (0.0, math.inf, "[]"),  # N m
    "bending_damping": (0.0, math.inf, "[]"),    # N s
}


def membrane_ranges(**keys) -> tuple:
    """``check_ranges`` rows for a driver's keys that become add_membrane's constants
    (``membrane_ranges(membrane_thickness="thickness")``; components.species_ranges)."""
    return tuple((key, *MEMBRANE_RANGES[constant]) for key, constant in keys.items())

MEMBRANE_FIELDS = (
    Field("youngs_modulus", np.float64, (), Halo.LOCAL, 0.0, "Pa", "E of the sheet"),
    Field("poisson_ratio", np.float64, (), Halo.LOCAL, 1.0 / 3.0, "1",
          "nu (an equilateral spring lattice has 1/3)"),
    Field("thickness", np.float64, (), Halo.LOCAL, 0.0, "m", "sheet thickness d"),
    Field("density", np.float64, (), Halo.LOCAL, 0.0, "kg/m^3", "sheet density rho"),
    Field("damping_ratio", np.float64, (), Halo.LOCAL, 0.0, "1", "gamma of the springs, Eq. (6)"),
    Field("bending_stiffness", np.float64, (), Halo.LOCAL, 0.0, "N m", "k_el, Eq. (11)"),
    Field("bending_damping", np.float64, (), Halo.LOCAL, 0.0, "N s", "k_diss, Eq. (12)"),
    Field("bending_convention", np.int8, (), Halo.LOCAL, 0, "",
          "0 paper (Eqs. 11-16 as printed), 1 mercurydpm (areas for |n|: 4 x the force)"),
    Field("stress_start", np.float64, (), Halo.LOCAL, 0.0, "Pa", "confining stress before the ramp"),
    Field("stress_end", np.float64, (), Halo.LOCAL, 0.0, "Pa", "confining stress after the ramp"),
    Field("ramp_start", np.float64, (), Halo.LOCAL, 0.0, "s", "time the ramp starts"),
    Field("ramp_end", np.float64, (), Halo.LOCAL, 0.0, "s", "time the ramp ends"),
    Field("contact_model", np.int8, (), Halo.LOCAL, 0, "", "0 patch (triangles), 1 particle"),
    Field("vertex_radius", np.float64, (), Halo.LOCAL, 0.0, "m", "radius of the vertex particles"),
    Field("species", np.int32, (), Halo.LOCAL, -1, "", "material of the membrane in contacts"),
    Field("first_vertex", np.int64, (), Halo.LOCAL, -1, "", "gid of mesh vertex 0"),
    Field("vertex_count", np.int64, (), Halo.LOCAL, 0, "", "vertices: gids first_vertex + index"),
    Field("mass", np.float64, (), Halo.LOCAL, 0.0, "kg", "total mass of its vertices"),
    Field("rest_area", np.float64, (), Halo.LOCAL, 0.0, "m^2", "area of the initial mesh"),
)
#: particle field: the membrane a vertex belongs to (-1: a grain)
MEMBRANE_OF_PARTICLE = Field("membrane", np.int32, (), Halo.FORWARD, -1, "",
                             "membrane of a vertex particle (-1: grain)")

HINGE_FIELDS = (
    Field("vertices", np.int64, (4,), Halo.LOCAL, -1, "", "gids x1, x2 (wings), x3, x4 (edge)"),
    Field("rows", np.int32, (4,), Halo.LOCAL, -1, "", "local rows of the vertices"),
    Field("rest_angle", np.float64, (), Halo.LOCAL, 0.0, "rad", "theta0 on the initial mesh"),
    Field("membrane", np.int32, (), Halo.LOCAL, -1, "", "membrane id"),
)
TRIANGLE_FIELDS = (
    Field("vertices", np.int64, (3,), Halo.FORWARD, -1, "", "vertex gids, outward winding"),
    Field("rows", np.int32, (3,), Halo.LOCAL, -1, "", "local rows of the vertices"),
    Field("neighbours", np.int64, (3,), Halo.FORWARD, -1, "",
          "triangle gids across edges v0v1, v1v2, v2v0 (-1: boundary)"),
    Field("rest_area", np.float64, (), Halo.FORWARD, 0.0, "m^2", "area on the initial mesh"),
    Field("membrane", np.int32, (), Halo.FORWARD, -1, "", "membrane id"),
    Field("stress_work", np.float64, (), Halo.LOCAL, 0.0, "J",
          "work of the confining stress on this triangle's vertices so far"),
)
BOUNDARY_FIELDS = (
    Field("vertices", np.int64, (2,), Halo.LOCAL, -1, "", "edge gids, as in its triangle's winding"),
    Field("rows", np.int32, (2,), Halo.LOCAL, -1, "", "local rows of the vertices"),
    Field("loop", np.int32, (), Halo.LOCAL, -1, "", "boundary loop number within the membrane"),
    Field("membrane", np.int32, (), Halo.LOCAL, -1, "", "membrane id"),
)


def _element_table(name, fields):
    return Table(name, fields, capacity=256, anchor=("particles", "vertices"),
                 references={"rows": "vertices"})


def create_membrane_tables(world) -> None:
    """Add the membrane tables to the world (idempotent; needs the particles table)."""
    if "membranes" in world.tables:
        return
    world.particles.add_field(MEMBRANE_OF_PARTICLE)
    world.add_table(Table("membranes", MEMBRANE_FIELDS, capacity=4))
    world.add_table(_element_table("membrane_hinges", HINGE_FIELDS))
    world.add_table(_element_table("membrane_triangles", TRIANGLE_FIELDS))
    world.add_table(_element_table("membrane_boundaries", BOUNDARY_FIELDS))


def add_membrane(world, mesh: Mesh, *, youngs_modulus: float, thickness: float, density: float,
                 poisson_ratio: float = 1.0 / 3.0, damping_ratio: float = 0.0,
                 bending_stiffness: float = 0.0, bending_damping: float = 0.0,
                 bending: str = "paper", stress: float = 0.0, contact: str = "patch",
                 vertex_radius: float | None = None, species: int | None = None,
                 merge_tolerance: float | None = None, vertex_mass=None,
                 spring_damping: float | None = None) -> int:
    """Build a membrane from a mesh and return its id (its row in ``membranes``).

    The vertices are material points of the sheet, not balls: they get zero
    rotational inertia, which the integrator reads as no rotational freedom.
    Free-spinning vertex spheres would roll under a sliding grain like ball
    bearings and hide the membrane's friction from MSS_particle grains (the
    torque r_v x F_t of a grain's friction on a vertex sphere is dropped, as
    on a wall: the sheet's bending, which would carry it, is not resolved at
    that scale).

    Parameters
    ----------
    mesh : components.mesh.surface.Mesh
        Validated first (``components.mesh.validation``): duplicate vertices
        merged, winding made consistent (closed meshes outward); defects are
        errors naming the triangles and vertices.
    youngs_modulus, thickness, density : float
        E [Pa], d [m], rho [kg/m^3] of the sheet.
    poisson_ratio : float
        nu of the sheet (an equilateral spring lattice has 1/3); also the
        default species' nu in contacts.
    damping_ratio : float
        gamma of the edge springs (Eq. 6; 0: undamped).
    bending_stiffness, bending_damping : float
        k_el [N m], k_diss [N s] (Eqs. 11-12).
    bending : str
        "paper" (the printed formula) or "mercurydpm" (areas in place of
        |n|: 4 times the force at equal constants; the convention of the
        paper's triaxial parameters; docs/physics.md).
    stress : float
        Confining stress [Pa], > 0 compresses (acts inward), < 0 inflates;
        ``set_stress`` gives it a ramp.
    contact : str
        "patch" (grains touch the triangles) or "particle" (grains touch
        the vertices as spheres of ``vertex_radius``: MSS_particle).
    vertex_radius : float, optional
        Radius of the vertex particles [m]; default d / 2 (patch: unused);
        required for "particle".
    species : int, optional
        Material of the membrane in contacts; default a new species with the
        membrane's E, nu and density, no friction, restitution 1.
    merge_tolerance : float, optional
        Vertices closer than this [m] are merged; default 1e-9 of the mesh's
        bounding-box diagonal (``components.mesh.validation.validate_mesh``).
    vertex_mass : None, "lumped", "uniform", float or array, optional
        Mass of the vertices [kg]: None or "lumped" (a third of each
        triangle's A d rho to each of its vertices), "uniform" (the sheet's
        mass A d rho shared equally), a value for every vertex, or one per
        vertex of the validated mesh (module docstring).
    spring_damping : float, optional
        Damping coefficient c of every edge spring [N s/m], in place of
        ``damping_ratio`` (give one of the two).
    """
    constants = {"youngs_modulus": youngs_modulus, "thickness": thickness, "density": density,
                 "damping_ratio": damping_ratio, "bending_stiffness": bending_stiffness,
                 "bending_damping": bending_damping}
    for name, value in constants.items():
        if not in_range(value, *MEMBRANE_RANGES[name]):
            raise InputError(f"membrane: {name} must lie in "
                             f"{range_text(*MEMBRANE_RANGES[name])} (got {value})")
    if spring_damping is not None:
        if not in_range(spring_damping, 0.0, math.inf, "[)"):
            raise InputError(f"membrane: spring_damping must be finite and >= 0 N s/m "
                             f"(got {spring_damping})")
        if damping_ratio != 0:
            raise InputError("membrane: give the springs' damping as damping_ratio or as "
                             "spring_damping (a coefficient in N s/m), not both")
    if bending not in BENDING_CONVENTIONS:
        raise InputError(f"membrane: bending convention '{bending}' is not one of "
                         f"{sorted(BENDING_CONVENTIONS)}")
    if contact not in CONTACT_MODELS:
        raise InputError(f"membrane: contact model '{contact}' is not one of {sorted(CONTACT_MODELS)}")
    if contact == "particle" and vertex_radius is None:
        raise InputError("membrane: the 'particle' contact model needs vertex_radius (m)")
    radius = 0.5 * thickness if vertex_radius is None else float(vertex_radius)
    if not radius > 0:
        raise InputError(f"membrane: vertex_radius must be > 0 m (got {vertex_radius})")
    if "particles" not in world.tables:
        from .particles import create_particle_table
        create_particle_table(world)
    if world.is_setup:
        raise InputError("membrane: add membranes before the first step")
    mesh = validate_mesh(mesh, merge_tolerance)
    create_membrane_tables(world)
    if species is None:
        species = add_species(world, youngs_modulus=youngs_modulus, poisson_ratio=poisson_ratio,
                              density=density)
    membranes = world.membranes
    mid = membranes.n_owned
    tri = mesh.triangles
    x = mesh.vertices
    area = mesh.areas
    mass = np.zeros(x.shape[0])
    np.add.at(mass, tri.ravel(), np.repeat(area * thickness * density / 3.0, 3))
    if np.any(mass <= 0):
        raise InputError(f"membrane: vertices {np.flatnonzero(mass <= 0)[:5].tolist()} belong to "
                         "no triangle; remove unused vertices")
    mass = vertex_masses(mass, vertex_mass)
    first = world.particles.next_gid
    rows = add_particles(world, x, radius, species, mass=mass, kind=KIND_MEMBRANE_VERTEX)
    world.particles.inertia[rows] = 0.0
    world.particles.membrane[rows] = mid
    # MSS_particle: vertex spheres touch grains, never each other; MSS_patch: grains touch the
    # triangles, not the vertices
    world.particles.contact_group[rows] = mid if contact == "particle" else -2
    gid = world.particles.gid[rows]
    emap = edge_map(tri)
    _add_edge_springs(world, gid, emap.edges, x, mass, youngs_modulus, thickness, damping_ratio,
                      spring_damping, mid)
    quads = hinges(tri, emap)
    world.membrane_hinges.append(quads.shape[0], vertices=gid[quads],
                                 rest_angle=dihedral_angles(x, quads), membrane=mid)
    tset = world.membrane_triangles
    trows = tset.append(tri.shape[0], vertices=gid[tri], rest_area=area, membrane=mid)
    tgid = tset.gid[trows]
    nb = triangle_neighbors(tri)
    tset.neighbours[trows] = np.where(nb >= 0, tgid[np.maximum(nb, 0)], -1)
    for k, loop in enumerate(boundary_loops(tri)):
        edges = np.stack([loop, np.roll(loop, -1)], axis=1)
        world.membrane_boundaries.append(edges.shape[0], vertices=gid[edges], loop=k, membrane=mid)
    membranes.append(1, youngs_modulus=youngs_modulus, poisson_ratio=poisson_ratio,
                     thickness=thickness, density=density, damping_ratio=damping_ratio,
                     bending_stiffness=bending_stiffness, bending_damping=bending_damping,
                     bending_convention=BENDING_CONVENTIONS[bending], stress_start=stress,
                     stress_end=stress, contact_model=CONTACT_MODELS[contact],
                     vertex_radius=radius, species=species, first_vertex=first,
                     vertex_count=x.shape[0], mass=float(mass.sum()), rest_area=float(area.sum()))
    return mid


def vertex_masses(lumped: np.ndarray, vertex_mass) -> np.ndarray:
    """The vertices' masses [kg] from the lumped ones and the ``vertex_mass`` option of
    ``add_membrane``."""
    if vertex_mass is None or (isinstance(vertex_mass, str) and vertex_mass == "lumped"):
        return lumped
    if isinstance(vertex_mass, str):
        if vertex_mass == "uniform":
            return np.full(lumped.size, lumped.sum() / lumped.size)
        raise InputError(f"membrane: vertex_mass {vertex_mass!r} is not 'lumped', 'uniform', "
                         "a mass in kg or one mass per vertex")
    try:
        given = np.array(vertex_mass, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"membrane: vertex_mass must be 'lumped', 'uniform', a mass in kg or "
                         f"one mass per vertex (got {vertex_mass!r})") from None
    if given.ndim == 0:
        given = np.full(lumped.size, float(given))
    if given.shape != lumped.shape:
        raise InputError(f"membrane: vertex_mass has {given.size} values for {lumped.size} "
                         "vertices (after merging duplicates): give one per vertex, or one value")
    if not np.all(np.isfinite(given) & (given > 0)):
        bad = np.flatnonzero(~(np.isfinite(given) & (given > 0)))[:5].tolist()
        raise InputError(f"membrane: vertex_mass must be finite and > 0 kg (vertices {bad})")
    return given


def _add_edge_springs(world, gid, edges, x, mass, E, d, gamma, coefficient, mid) -> None:
    """Springs on the edges: Eq. (6) with k = sqrt(3)/2 E d (Eq. 7), c = 2 gamma sqrt(k m_eff)
    or the given coefficient."""
    from .springs import add_springs  # the bonded-spring table

    k = np.sqrt(3.0) / 2.0 * E * d
    ma, mb = mass[edges[:, 0]], mass[edges[:, 1]]
    if coefficient is None:
        damping = 2.0 * gamma * np.sqrt(k * ma * mb / (ma + mb))
    else:
        damping = np.full(edges.shape[0], float(coefficient))
    rest = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
    add_springs(world, gid[edges[:, 0]], gid[edges[:, 1]], stiffness=k, damping=damping,
                rest_length=rest, membrane=mid)


def set_stress(world, membrane: int, stress: float, ramp: tuple[float, float] | None = None,
               start: float | None = None) -> None:
    """Confining stress schedule of a membrane [Pa, s]: `start` (default: the current value)
    until ramp[0], linear to `stress` at ramp[1], then held. Without `ramp`: at once."""
    m = world.membranes
    if not 0 <= membrane < m.n_owned:
        raise InputError(f"set_stress: membrane {membrane} does not exist")
    now = stress_at(m, world.time)[membrane] if start is None else float(start)
    t0, t1 = (world.time, world.time) if ramp is None else (float(ramp[0]), float(ramp[1]))
    if t1 < t0:
        raise InputError(f"set_stress: the ramp must end after it starts (got {ramp})")
    m.stress_start[membrane] = now
    m.stress_end[membrane] = float(stress)
    m.ramp_start[membrane] = t0
    m.ramp_end[membrane] = t1


SCHEDULE = ("stress_start", "stress_end", "ramp_start", "ramp_end")


def stress_at(membranes, time: float) -> np.ndarray:
    """Confining stress of every membrane at `time` (the schedule of ``set_stress``) [Pa]."""
    return np.array(stresses_at(membranes, time), dtype=np.float64)


def stresses_at(membranes, time: float) -> list[float]:
    """``stress_at`` as a list of floats. Row by row in Python: the pressure system asks
    every step, and on a membrane or two this takes 2 us where array operations take 11
    (and a numpy test of the result 10-15 us inside a step, its code evicted by the
    contact kernels)."""
    out = []
    for start, end, r0, r1 in zip(*(c.tolist() for c in membranes.views(SCHEDULE))):
        span = r1 - r0
        f = (time - r0) / span if span > 0 else float(time >= r0)
        out.append(start + (end - start) * min(max(f, 0.0), 1.0))
    return out


def element_span(world, table: str) -> float:
    """The largest distance (m) from an element's anchor (its first vertex) to its other
    vertices, over the owned rows of a membrane element table (``membrane_triangles``,
    ``membrane_hinges``); 0 without rows. Systems scale it by how far elements may stretch
    to declare their interaction range (the ghost width)."""
    t = world.tables[table]
    if t.n_owned == 0:
        return 0.0
    p = world.particles
    corners = t.vertices.shape[1]
    x = p.position[p.rows_of(t.vertices.ravel())].reshape(-1, corners, 3)
    return float(np.linalg.norm(x[:, 1:] - x[:, :1], axis=2).max())


def membrane_vertices(world, membrane: int, where=None, indices=None) -> np.ndarray:
    """Gids of a membrane's vertices: all, those with the given mesh `indices`, or those whose
    current position satisfies `where` (a function of an (n, 3) array returning a bool mask,
    e.g. ``lambda x: x[:, 2] < 1e-3``). Call it before the run (every rank holds every vertex)."""
    m = world.membranes
    if not 0 <= membrane < m.n_owned:
        raise InputError(f"membrane {membrane} does not exist")
    first, count = int(m.first_vertex[membrane]), int(m.vertex_count[membrane])
    gids = np.arange(first, first + count, dtype=np.int64)
    if indices is not None:
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= count):
            raise InputError(f"membrane {membrane}: vertex indices must lie in [0, {count})")
        gids = gids[idx]
    if where is not None:
        x = world.particles.position[world.particles.rows_of(gids)]
        mask = np.asarray(where(x), dtype=bool)
        if mask.shape != (gids.size,):
            raise InputError("membrane_vertices: `where` must return one bool per vertex")
        gids = gids[mask]
    return gids


__all__ = ["add_membrane", "membrane_ranges", "vertex_masses", "MEMBRANE_RANGES", "set_stress", "stress_at",
           "stresses_at", "membrane_vertices",
           "create_membrane_tables", "BENDING_CONVENTIONS", "CONTACT_MODELS"]
