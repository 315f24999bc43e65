"""Surface wear of triangulated walls: Reye-Archard-Khrushchov, vertices moved to match volumes.

The model (Archard, J. Appl. Phys. 24 (1953) 981; Thornton et al. 2023, Sect. 10): the volume
of wall material a sliding contact removes is proportional to the work its friction force
dissipates. Per triangle t of a mesh wall, over one wear interval::

    V_t = f k W_t

* W_t (J): the frictional work the grains did on triangle t in the interval (the contact
  system's per-triangle accumulator ``friction_work``);
* k (m^3/J): the wear coefficient, volume removed per joule of frictional work. Archard
  writes V = K F_n s / H with a dimensionless K and the hardness H (Pa); with F_t = mu F_n the
  work is W = F_t s, so k = K / (mu H): the whole ratio is folded into one k;
* f (1, usually >= 1): the acceleration factor. Real wear is far too slow to see in a DEM
  run; multiplying k by f lets one simulated second stand for f seconds of wear, as long as
  the flow does not change with the wear meanwhile (keep the depth per update small against
  the grains).

The seed's three steps: (1) the frictional work per triangle (the contact system), (2) the
volume per triangle (:func:`removed_volumes`), (3) the vertices moved iteratively to match
the volumes (:func:`wear_depths`), as follows.

Sign convention. A triangle's normal N_t = (x1 - x0) x (x2 - x0) (|N_t| = 2 A_t) points out
of the wall material, towards the grains (the mesh's winding: counter-clockwise seen from
the grains, as for membranes). Vertex v moves by u_v = -d_v n_v with depth d_v >= 0, into
the material, along the area-weighted vertex normal n_v = sum_{t at v} N_t / |...| of the
mesh before the update, held during the iteration. Its dual area is
A_v = sum_{t at v} A_t / 3.

Volume a triangle's prism sweeps. Move the vertices along s in [0, 1]: x_i(s) = a_i + s u_i.
The points x(s, l) = sum_i l_i x_i(s) (barycentric l over the reference triangle, of area
1/2) fill the solid between the old and the new triangle. Its side faces are the ruled
surfaces over the edges, which depend on the edge's two vertices only: the solids of
neighbouring triangles share them and tile the worn layer without gap or overlap. With
e1 = a1 - a0, e2 = a2 - a0, f1 = u1 - u0, f2 = u2 - u0, the Jacobian determinant is
u(l) . (e1 + s f1) x (e2 + s f2), whose cross product does not depend on l; integrating
(the integral of each l_i over the reference triangle is 1/6)::

    V_swept = 1/2 u_mean . N_mean,   u_mean = (u0 + u1 + u2) / 3,
    N_mean  = e1 x e2 + (e1 x f2 + f1 x e2) / 2 + (f1 x f2) / 3

exactly, with no small-depth approximation. The removed volume is R_t = -V_swept. A flat
triangle moved along its own normal loses R_t = A_t (d0 + d1 + d2) / 3. On a closed mesh,
sum_t R_t is the enclosed volume before minus after.

What the iteration matches. A mesh has about twice as many triangles as vertices, and each
vertex moves along one direction, so the triangles' volumes cannot all be matched one by
one (on a flat mesh R_t = A_t mean(d) even has a null space: depths alternating with a zero
sum on every triangle). Each triangle's volume goes in thirds to its vertices,
V_v = sum_{t at v} V_t / 3, and each vertex is given the part of its triangles' removed
volume in proportion to its depth, R_v = sum_{t at v} R_t d_v / (d0 + d1 + d2)_t: the parts
add up to the removed volume, and on a flat mesh R_v = A_v d_v. The iteration solves
R_v = V_v at every vertex: it starts from the flat-mesh answer d_v = V_v / A_v and updates
d_v <- d_v V_v / R_v (depths stay >= 0; a vertex with V_v = 0 does not move). On a flat mesh
the start is the solution (one pass); on a curved one each update corrects the change of
area with depth, and the mismatch shrinks by a factor of order depth x curvature per update.
Converged when sum_v |V_v - R_v| <= rtol sum_v V_v: then the total removed volume
sum_t R_t equals f k sum_t W_t to rtol. Where the work per area is uniform (inside a wear
track) every triangle loses its own V_t and the depth is f k W_t / A_t; across the edge of
a track the depth falls off over one triangle.

Open meshes. A boundary vertex moves like any other, along the normal of its one-sided fan,
and takes its volume from its own triangles: the rim of an open wall sinks with the surface
(the layer removed under a boundary edge ends in the ruled surface below that edge), and a
uniformly worn flat sheet sinks as a whole by f k W / A.

Inversion. After each update of the depths the moved triangles are checked: one whose
normal flips on the way (N_t(s) . N_t(0) <= 0 for some s in [0, 1], N_t(s) the normal of
the triangle at a_i + s u_i; a quadratic in s) or whose area ends below
``min_area_fraction`` of its area stops the update with :class:`WearInversionError`. It
names the triangle (its gid when given) and the fix: a smaller acceleration factor or wear
interval (the depth per update must stay small against the triangles' edges), or a finer
mesh. Positions change only by an update that succeeded.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecs_dem.errors import InputError, StateError
from ecs_dem.jit import inline, kernel

#: default convergence tolerance of the iteration: sum_v |V_v - R_v| <= RTOL sum_v V_v
RTOL = 1e-13
#: default iteration limit (a flat mesh needs one update, a curved one a few)
MAX_ITERATIONS = 50
#: default smallest area of a moved triangle, as a fraction of its area before the update
MIN_AREA_FRACTION = 0.01
#: the fix named by the errors of a wear update that deforms the mesh too much
FIX = ("use a smaller acceleration factor or apply wear more often, so that the depth removed "
       "per update stays small against the triangles' edges, or a finer mesh")


class WearInversionError(StateError):
    """A wear update would flip a triangle or shrink it to nothing; the mesh is left as it was."""


@inline
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@kernel
def vertex_normals(x, tri, normal, dual_area):
    """Area-weighted unit vertex normals n_v ~ sum_{t ni v} N_t and dual areas
    A_v = sum_{t ni v} A_t / 3 (module docstring). Vertices of no triangle, or whose
    triangles' normals cancel, get a zero normal."""
    normal[:] = 0.0
    dual_area[:] = 0.0
    for t in range(tri.shape[0]):
        i, j, k = tri[t, 0], tri[t, 1], tri[t, 2]
        nx, ny, nz = _cross(x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2],
                            x[k, 0] - x[i, 0], x[k, 1] - x[i, 1], x[k, 2] - x[i, 2])
        third = np.sqrt(nx * nx + ny * ny + nz * nz) / 6.0
        for v in (i, j, k):
            normal[v, 0] += nx
            normal[v, 1] += ny
            normal[v, 2] += nz
            dual_area[v] += third
    for v in range(normal.shape[0]):
        norm = np.sqrt(normal[v, 0] ** 2 + normal[v, 1] ** 2 + normal[v, 2] ** 2)
        if norm > 0.0:
            for c in range(3):
                normal[v, c] /= norm


@kernel
def prism_volumes(x, tri, normal, depth, removed):
    """removed[t]: the volume between triangle t and the triangle its vertices reach when
    vertex v moves by -depth[v] normal[v] (exact; module docstring, positive into the
    material)."""
    for t in range(tri.shape[0]):
        i, j, k = tri[t, 0], tri[t, 1], tri[t, 2]
        e1 = (x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2])
        e2 = (x[k, 0] - x[i, 0], x[k, 1] - x[i, 1], x[k, 2] - x[i, 2])
        u0 = (-depth[i] * normal[i, 0], -depth[i] * normal[i, 1], -depth[i] * normal[i, 2])
        u1 = (-depth[j] * normal[j, 0], -depth[j] * normal[j, 1], -depth[j] * normal[j, 2])
        u2 = (-depth[k] * normal[k, 0], -depth[k] * normal[k, 1], -depth[k] * normal[k, 2])
        f1 = (u1[0] - u0[0], u1[1] - u0[1], u1[2] - u0[2])
        f2 = (u2[0] - u0[0], u2[1] - u0[1], u2[2] - u0[2])
        a = _cross(e1[0], e1[1], e1[2], e2[0], e2[1], e2[2])
        b = _cross(e1[0], e1[1], e1[2], f2[0], f2[1], f2[2])
        c = _cross(f1[0], f1[1], f1[2], e2[0], e2[1], e2[2])
        d = _cross(f1[0], f1[1], f1[2], f2[0], f2[1], f2[2])
        swept = 0.0
        for m in range(3):
            n_bar = a[m] + 0.5 * (b[m] + c[m]) + d[m] / 3.0
            swept += (u0[m] + u1[m] + u2[m]) / 3.0 * n_bar
        removed[t] = -0.5 * swept


@kernel
def vertex_shares(tri, removed, depth, share):
    """share[v] = sum_{t ni v} removed[t] depth[v] / (sum of t's vertex depths): each vertex's
    part of the removed volume, in proportion to its depth (module docstring)."""
    share[:] = 0.0
    for t in range(tri.shape[0]):
        i, j, k = tri[t, 0], tri[t, 1], tri[t, 2]
        total = depth[i] + depth[j] + depth[k]
        if total > 0.0:
            per_depth = removed[t] / total
            share[i] += per_depth * depth[i]
            share[j] += per_depth * depth[j]
            share[k] += per_depth * depth[k]


@kernel
def first_inverted(x, tri, normal, depth, min_area_fraction):
    """The first triangle that moving vertex v by -depth[v] normal[v] inverts: returns (t, 1)
    if its normal flips on the way (N(s) . N(0) <= 0 for some s in [0, 1], with N(s) the
    normal of the triangle with vertices x_i + s u_i, a quadratic in s), (t, 2) if its area at
    the end falls below min_area_fraction of its area; (-1, 0) if none. A point reflection
    (a sphere worn through its centre) keeps N(1) parallel to N(0); the check along the way
    sees the triangle pass through zero area."""
    for t in range(tri.shape[0]):
        i, j, k = tri[t, 0], tri[t, 1], tri[t, 2]
        e1 = (x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2])
        e2 = (x[k, 0] - x[i, 0], x[k, 1] - x[i, 1], x[k, 2] - x[i, 2])
        f1 = (depth[i] * normal[i, 0] - depth[j] * normal[j, 0],
              depth[i] * normal[i, 1] - depth[j] * normal[j, 1],
              depth[i] * normal[i, 2] - depth[j] * normal[j, 2])
        f2 = (depth[i] * normal[i, 0] - depth[k] * normal[k, 0],
              depth[i] * normal[i, 1] - depth[k] * normal[k, 1],
              depth[i] * normal[i, 2] - depth[k] * normal[k, 2])
        a = _cross(e1[0], e1[1], e1[2], e2[0], e2[1], e2[2])
        b1 = _cross(e1[0], e1[1], e1[2], f2[0], f2[1], f2[2])
        b2 = _cross(f1[0], f1[1], f1[2], e2[0], e2[1], e2[2])
        c = _cross(f1[0], f1[1], f1[2], f2[0], f2[1], f2[2])
        q0 = a[0] * a[0] + a[1] * a[1] + a[2] * a[2]
        qb = a[0] * (b1[0] + b2[0]) + a[1] * (b1[1] + b2[1]) + a[2] * (b1[2] + b2[2])
        qc = a[0] * c[0] + a[1] * c[1] + a[2] * c[2]
        if q0 + qb + qc <= 0.0:
            return t, 1
        if qc > 0.0 and 0.0 < -qb < 2.0 * qc and q0 - qb * qb / (4.0 * qc) <= 0.0:
            return t, 1
        n0 = a[0] + b1[0] + b2[0] + c[0]
        n1 = a[1] + b1[1] + b2[1] + c[1]
        n2 = a[2] + b1[2] + b2[2] + c[2]
        if n0 * n0 + n1 * n1 + n2 * n2 < min_area_fraction * min_area_fraction * q0:
            return t, 2
    return -1, 0


@kernel
def displace(x, normal, depth):
    """x[v] -= depth[v] normal[v] (the wear update; vertices of depth 0 keep their bits)."""
    for v in range(x.shape[0]):
        if depth[v] != 0.0:
            for c in range(3):
                x[v, c] -= depth[v] * normal[v, c]


@dataclass(frozen=True)
class WearStep:
    """One wear update, computed and checked, not yet applied (:func:`apply_wear`).

    depth (n,) m: how far each vertex moves into the material, along ``normal`` (n, 3),
    the unit outward vertex normals of the mesh before the update; target (m,) m^3: the
    volumes V_t asked for; removed (m,) m^3: the volume each triangle's prism sweeps
    (their sum matches the targets' sum to ``residual``); iterations: updates of the
    depths; residual: sum_v |V_v - R_v| / sum_v V_v at the end (0 when nothing wears).
    """

    depth: np.ndarray
    normal: np.ndarray
    target: np.ndarray
    removed: np.ndarray
    iterations: int
    residual: float

    @property
    def displacement(self) -> np.ndarray:
        """(n, 3) m: the vertices' moves, -depth n."""
        return -self.depth[:, None] * self.normal


def _finite_number(name: str, value, *, positive: bool) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InputError(f"wear: {name} must be a number, got {value!r}") from None
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        raise InputError(f"wear: {name} must be finite and {'> 0' if positive else '>= 0'}, "
                         f"got {value}")
    return value


def removed_volumes(work, wear_coefficient, factor: float = 1.0) -> np.ndarray:
    """V_t = factor k W_t (m^3) from the frictional work per triangle (J, >= 0), the wear
    coefficient k (m^3/J, volume per joule of frictional work: Archard's K / (mu H)) and the
    acceleration factor (module docstring)."""
    k = _finite_number("wear_coefficient (m^3/J)", wear_coefficient, positive=False)
    f = _finite_number("factor", factor, positive=True)
    work = np.asarray(work, dtype=np.float64)
    if work.ndim != 1:
        raise InputError(f"wear: the frictional work must be one value per triangle, got shape "
                         f"{work.shape}")
    bad = np.flatnonzero(~(work >= 0) | ~np.isfinite(work))
    if bad.size:
        raise InputError(f"wear: the frictional work of triangle {bad[0]} is {work[bad[0]]} J; "
                         "frictional work is dissipated energy, finite and >= 0")
    return f * k * work


def _mesh_arrays(positions, triangles, n_triangles: int | None = None):
    x = np.asarray(positions)
    if x.ndim != 2 or x.shape[1] != 3 or x.dtype != np.float64:
        raise InputError(f"wear: vertex positions must be float64 of shape (n, 3), got "
                         f"{x.dtype} {x.shape}")
    if not np.all(np.isfinite(x)):
        raise InputError(f"wear: vertex {np.flatnonzero(~np.isfinite(x).all(axis=1))[0]} has a "
                         "non-finite position")
    tri = np.asarray(triangles)
    if tri.ndim != 2 or tri.shape[1] != 3 or tri.dtype.kind not in "iu":
        raise InputError(f"wear: triangles must be integer vertex indices of shape (m, 3), got "
                         f"{tri.dtype} {tri.shape}")
    if tri.size and (tri.min() < 0 or tri.max() >= len(x)):
        raise InputError(f"wear: triangle vertex indices must lie in [0, {len(x)}), got "
                         f"[{tri.min()}, {tri.max()}]")
    if n_triangles is not None and n_triangles != len(tri):
        raise InputError(f"wear: {n_triangles} volumes (or work values) for {len(tri)} triangles: "
                         "give one per triangle, in the triangles' order")
    return x, np.ascontiguousarray(tri, dtype=np.int64)


def _name(t: int, gids) -> str:
    return f"triangle {t}" if gids is None else f"triangle {t} (gid {int(gids[t])})"


def _vertex(v: int, gids) -> str:
    return f"vertex {v}" if gids is None else f"vertex gid {int(gids[v])}"


def _corners(corners, gids) -> str:
    return str(corners.tolist()) if gids is None else f"gids {np.asarray(gids)[corners].tolist()}"


def wear_depths(positions, triangles, volumes, *, gids=None, vertex_gids=None, rtol: float = RTOL,
                max_iterations: int = MAX_ITERATIONS,
                min_area_fraction: float = MIN_AREA_FRACTION) -> WearStep:
    """The vertex depths that remove `volumes` (m^3 per triangle, >= 0) from the mesh
    (`positions` (n, 3) m, `triangles` (m, 3) vertex indices, outward winding): the
    iteration of the module docstring. Nothing is moved (:func:`apply_wear`, or
    :func:`wear_mesh` for both). `gids` (m,) names triangles in errors, `vertex_gids` (n,)
    vertices.

    Raises :class:`WearInversionError` naming the triangle that would flip or collapse, and
    StateError when the iteration does not converge in `max_iterations` or a vertex with
    volume to remove has no normal."""
    volumes = np.ascontiguousarray(volumes, dtype=np.float64)
    x, tri = _mesh_arrays(positions, triangles, len(volumes) if volumes.ndim == 1 else -1)
    if not np.all(np.isfinite(volumes)) or np.any(volumes < 0):
        t = int(np.flatnonzero(~(volumes >= 0) | ~np.isfinite(volumes))[0])
        raise InputError(f"wear: the volume to remove from {_name(t, gids)} is {volumes[t]} "
                         "m^3; it must be finite and >= 0")
    if not 0 < rtol < 1:
        raise InputError(f"wear: rtol must lie in (0, 1), got {rtol}")
    n = len(x)
    normal = np.empty((n, 3))
    dual_area = np.empty(n)
    vertex_normals(x, tri, normal, dual_area)
    target_v = np.zeros(n)
    np.add.at(target_v, tri.ravel(), np.repeat(volumes / 3.0, 3))
    depth = np.zeros(n)
    removed = np.zeros(len(tri))
    total = target_v.sum()
    if total == 0.0:
        return WearStep(depth, normal, volumes, removed, 0, 0.0)
    wearing = target_v > 0
    stuck = np.flatnonzero(wearing & ((dual_area == 0) | ~normal.any(axis=1)))
    if stuck.size:
        raise StateError(f"wear: {_vertex(stuck[0], vertex_gids)} has volume to remove but no normal (its "
                         "triangles' normals cancel or have no area): the mesh folds onto itself "
                         "there; repair it (components.mesh.validation) before wearing it")
    depth[wearing] = target_v[wearing] / dual_area[wearing]
    share = np.empty(n)
    residual = np.inf
    for iteration in range(1, max_iterations + 1):
        bad, kind = first_inverted(x, tri, normal, depth, min_area_fraction)
        if bad >= 0:
            what = ("its normal would flip" if kind == 1 else
                    f"its area would fall below {min_area_fraction:g} of its area")
            deepest = float(depth[tri[bad]].max())
            raise WearInversionError(
                f"wear: {_name(bad, gids)} (vertices {_corners(tri[bad], vertex_gids)}) would invert: {what} "
                f"when its vertices move up to {deepest:.3g} m into the material: {FIX}")
        prism_volumes(x, tri, normal, depth, removed)
        vertex_shares(tri, removed, depth, share)
        residual = float(np.abs(target_v - share).sum() / total)
        if residual <= rtol:
            return WearStep(depth, normal, volumes, removed, iteration, residual)
        lost = np.flatnonzero(wearing & ~(share > 0))
        if lost.size:
            raise StateError(f"wear: the triangles around {_vertex(lost[0], vertex_gids)} remove no volume when "
                             f"it moves {depth[lost[0]]:.3g} m along its normal: {FIX}")
        depth[wearing] *= target_v[wearing] / share[wearing]
    raise StateError(f"wear: the vertex depths did not converge in {max_iterations} iterations "
                     f"(volume mismatch {residual:.3g} of the volume to remove, tolerance {rtol:g}): "
                     f"{FIX}")


def apply_wear(positions, step: WearStep) -> None:
    """Move the vertices of `positions` (n, 3), in place, by the step's depths along its normals."""
    displace(positions, step.normal, step.depth)


def wear_mesh(positions, triangles, work, wear_coefficient, factor: float = 1.0, *, gids=None,
              rtol: float = RTOL, max_iterations: int = MAX_ITERATIONS,
              min_area_fraction: float = MIN_AREA_FRACTION) -> WearStep:
    """One wear update: volumes factor k W_t from the frictional work `work` (J per triangle),
    vertex depths matching them (:func:`wear_depths`), and the vertices of `positions` (n, 3)
    moved in place. On an error the positions are unchanged. Returns the :class:`WearStep`."""
    volumes = removed_volumes(work, wear_coefficient, factor)
    x, _ = _mesh_arrays(positions, triangles, len(volumes))
    if x is not positions or not x.flags.writeable:
        raise InputError("wear: wear_mesh moves the vertices in place: pass their positions as "
                         "a writable float64 numpy array of shape (n, 3)")
    step = wear_depths(x, triangles, volumes, gids=gids, rtol=rtol, max_iterations=max_iterations,
                       min_area_fraction=min_area_fraction)
    apply_wear(x, step)
    return step


# ------------------------------------------------------------------------- the system

from ecs_dem.observe import gather_by_gid  # noqa: E402
from ecs_dem.system import Stage, System  # noqa: E402
from ecs_dem.table import Field, Halo  # noqa: E402

#: per-vertex and per-triangle records the system adds to the mesh-wall tables
WEAR_DEPTH = Field("wear_depth", np.float64, (), Halo.LOCAL, 0.0, "m",
                   "depth worn away at the vertex since the start, along its normals")
WORN_WORK = Field("worn_work", np.float64, (), Halo.LOCAL, 0.0, "J",
                  "friction_work already turned into wear")
WEAR_VOLUME = Field("wear_volume", np.float64, (), Halo.LOCAL, 0.0, "m^3",
                    "volume worn away under the triangle since the start")


class MeshWear(System):
    """Wear the mesh walls every `every` steps (module docstring: the model and the iteration).

    Tables, by name: ``mesh_vertices`` (``position`` (3,) m, and the body-frame copy
    ``x0`` (3,) m if the table has it) and ``mesh_triangles`` (``vertices`` (3,) vertex gids,
    outward winding; ``friction_work`` (J), the frictional work the grains did on the
    triangle, accumulated on its owner by the contact system). Each update turns the work
    done since the previous one (``friction_work - worn_work``; a ``friction_work`` found
    below ``worn_work`` was reset, and counts whole) into the volumes factor k W_t and finds
    the depths that match them. The mesh is worn in the body frame ``x0`` when the table has
    it (a mesh wall: x = origin + T + R x0, never wrapped across a periodic boundary), else in
    ``position``; the owned vertices move by the depths along those normals, ``position`` by
    the same move turned by the wall's rotation R (``mesh_walls.rotation``; the identity
    without the table). It adds and keeps the records ``mesh_vertices.wear_depth`` (m) and
    ``mesh_triangles.worn_work`` (J) and ``wear_volume`` (m^3). One wear coefficient and
    factor apply to every mesh wall.

    Any number of ranks, with the same result on each count. Between updates each rank holds
    only its own rows (its subdomain's vertices and the triangles anchored there, and their
    ghosts); an update is collective. It gathers, onto every rank, the worn region: the gids
    of the vertices of triangles with work to wear (one allgather), the triangles around
    those vertices with their work (a second), and the body-frame positions of these
    triangles' vertices from their owners (a third). Every rank then runs the iteration on
    that region, ordered by gid, so every rank and every rank count computes the same depths
    bit for bit; each applies them to the vertices and triangles it owns, and the engine
    copies the new positions to the ghosts. The cost of an update is that of the worn region
    (messages, memory and the iteration, repeated on every rank), not of the whole mesh: a
    wear track on a large wall stays cheap; a wall worn all over (a drum lining) is gathered
    whole on every rank at each update, which is why updates are infrequent.

    Runs in the OUTPUT stage, after the step's work is complete: a step's forces never see a
    half-worn mesh. The vertices move by the depth of one update at a time; keep it well
    below the neighbour skin (an acceleration factor and interval that wear more per update
    make the run stop with :class:`WearInversionError` long before that matters for the
    geometry of a triangle, but not for the skin).
    """

    stage = Stage.OUTPUT
    VERTICES = "mesh_vertices"
    TRIANGLES = "mesh_triangles"

    def __init__(self, wear_coefficient: float, factor: float = 1.0, every: int = 1000, *,
                 rtol: float = RTOL, max_iterations: int = MAX_ITERATIONS,
                 min_area_fraction: float = MIN_AREA_FRACTION):
        self.wear_coefficient = _finite_number("wear_coefficient (m^3/J)", wear_coefficient,
                                               positive=False)
        self.factor = _finite_number("factor", factor, positive=True)
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise InputError(f"MeshWear: every must be a whole number of steps >= 1, got {every!r}")
        self.every = int(every)
        self.rtol, self.max_iterations = float(rtol), int(max_iterations)
        self.min_area_fraction = float(min_area_fraction)
        self.frames: tuple[str, ...] = ("position",)
        self.last: WearStep | None = None

    def interaction_range(self, world) -> float:
        """The largest distance from a triangle's first vertex (its anchor) to its others, with
        5 % to spare for the wear itself: the engine keeps every vertex of a triangle within
        the ghost width of its anchor (the update itself gathers what it needs)."""
        if self.VERTICES not in world.tables or self.TRIANGLES not in world.tables:
            return 0.0
        walls = world.tables.get("mesh_walls")
        if walls is not None and walls.has_field("longest_edge"):
            return 1.05 * float(walls.longest_edge.max()) if walls.n_owned else 0.0
        vertices, triangles = world.tables[self.VERTICES], world.tables[self.TRIANGLES]
        gids = np.ascontiguousarray(triangles.owned("vertices")).reshape(-1)
        rows = vertices.lookup().rows(gids).reshape(-1, 3)
        rows = rows[(rows >= 0).all(axis=1)]
        if rows.shape[0] == 0:
            return 0.0
        x = vertices.with_ghosts("position")[rows]
        return 1.05 * float(np.linalg.norm(x[:, 1:] - x[:, :1], axis=2).max())

    def setup(self, world) -> None:
        missing = [n for n in (self.VERTICES, self.TRIANGLES) if n not in world.tables]
        if missing:
            raise InputError(f"MeshWear wears mesh walls, and this world has no table "
                             f"{' or '.join(missing)}: add a mesh wall before the wear system")
        vertices, triangles = world.tables[self.VERTICES], world.tables[self.TRIANGLES]
        for table, names in ((vertices, ("position",)), (triangles, ("vertices", "friction_work"))):
            absent = [n for n in names if not table.has_field(n)]
            if absent:
                raise InputError(f"MeshWear: table '{table.name}' has no field "
                                 f"{', '.join(absent)}; it needs {', '.join(names)}")
        self.frames = ("position", "x0") if vertices.has_field("x0") else ("position",)
        vertices.add_field(WEAR_DEPTH)
        triangles.add_field(WORN_WORK)
        triangles.add_field(WEAR_VOLUME)

    def declare(self, world) -> None:
        self.reads = {self.TRIANGLES: ("vertices", "friction_work")}
        # the engine keeps each owned triangle's vertices local (owned or ghost) for the
        # tables a system uses; the update itself gathers what it needs
        self.reads_ghosts = {self.VERTICES: ("position",)}
        if "mesh_walls" in world.tables and "wall" in world.tables[self.VERTICES].fields:
            self.reads = {**self.reads, "mesh_walls": ("rotation",), self.VERTICES: ("wall",)}
        self.writes = {self.VERTICES: self.frames + ("wear_depth",),
                       self.TRIANGLES: ("worn_work", "wear_volume")}

    def run(self, world) -> None:
        if world.step == 0:
            return
        try:
            self._update(world)
        except StateError as exc:
            raise type(exc)(f"step {world.step}: {exc}") from None

    def _update(self, world) -> None:
        vertices, triangles = world.tables[self.VERTICES], world.tables[self.TRIANGLES]
        comm = world.comm
        work, worn = triangles.owned("friction_work"), triangles.owned("worn_work")
        done = np.where(work >= worn, work - worn, work)
        bad = ~(done >= 0) | ~np.isfinite(done)
        if comm.any(bool(bad.any())):  # every rank stops, naming the first such triangle
            gid = int(comm.min(int(triangles.owned("gid")[bad].min()) if bad.any()
                               else np.iinfo(np.int64).max))
            raise InputError(f"wear: the frictional work of triangle gid {gid} is not finite "
                             "and >= 0; frictional work is dissipated energy")
        corners = triangles.owned("vertices")
        # (1) the vertices that wear: those of triangles with work to wear, from every rank
        wearing = np.unique(np.concatenate(comm.allgather_object(
            np.unique(corners[done > 0]) if self.wear_coefficient > 0 else
            np.zeros(0, dtype=np.int64))))
        if wearing.size == 0:
            worn[:] = work
            self.last = WearStep(np.zeros(0), np.zeros((0, 3)), np.zeros(0), np.zeros(0), 0, 0.0)
            return
        # (2) the triangles around them, with their work, ordered by gid
        ring = np.flatnonzero(np.isin(corners, wearing).any(axis=1))
        parts = comm.allgather_object((triangles.owned("gid")[ring], corners[ring], done[ring]))
        tgid, tcorners, twork = (np.concatenate([p[k] for p in parts]) for k in range(3))
        order = np.argsort(tgid, kind="stable")
        tgid, tcorners, twork = tgid[order], tcorners[order], twork[order]
        # (3) their vertices in the wearing frame, from the vertices' owners, ordered by gid
        frame = self.frames[-1]
        needed = np.unique(tcorners)
        vgid, x = gather_by_gid(world, vertices, ("gid", frame),
                                where=np.isin(vertices.owned("gid"), needed), root=None)
        if vgid.size != needed.size or np.any(vgid != needed):
            lost = np.setdiff1d(needed, vgid)[:5].tolist()
            raise StateError(f"MeshWear: the vertices {lost} of worn triangles are on no rank's "
                             f"'{self.VERTICES}' table")
        x = np.ascontiguousarray(x, dtype=np.float64)
        step = wear_depths(x, np.searchsorted(vgid, tcorners),
                           removed_volumes(twork, self.wear_coefficient, self.factor),
                           gids=tgid, vertex_gids=vgid, rtol=self.rtol,
                           max_iterations=self.max_iterations,
                           min_area_fraction=self.min_area_fraction)
        # each rank moves the vertices and records the triangles it owns
        rows = vertices.lookup().rows(vgid, owned_only=True)
        mine = np.flatnonzero((rows >= 0) & (step.depth != 0.0))
        rows = rows[mine]
        move = step.displacement[mine]
        if frame == "x0":
            vertices.owned("x0")[rows] += move
            if self.reads.get("mesh_walls"):
                rotation = world.tables["mesh_walls"].rotation
                move = np.einsum("kij,kj->ki", rotation[vertices.owned("wall")[rows]], move)
        vertices.owned("position")[rows] += move
        vertices.owned("wear_depth")[rows] += step.depth[mine]
        trows = triangles.lookup().rows(tgid, owned_only=True)
        triangles.owned("wear_volume")[trows[trows >= 0]] += step.removed[trows >= 0]
        worn[:] = work
        self.last = step
