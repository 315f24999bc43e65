"""Spray droplets: flight under gravity, absorption into particle films, loss at walls.

The nozzles and droplets are ``components.droplets``. Three systems,
``spray(gravity)`` returns them in order:

1. ``DropletMotion`` (INTEGRATE_FIRST): removes the droplets that ended in
   the previous step, moves the airborne ones under gravity alone (no drag,
   no contact between droplets), exactly for a constant acceleration:
   x += v dt + g dt^2 / 2, v += g dt, and emits the droplets each nozzle owes
   by the end of the step (at the nozzle, on rank 0: the rebuild this
   structural change triggers sends them to the rank that owns their
   position). A droplet thus follows the closed-form ballistic path
   x0 + v0 t + g t^2 / 2 to round-off.
2. ``DropletAbsorption`` (FORCES, add it before the contact systems and
   the liquid migration): each owned airborne droplet of radius r_d at x
   touches particle p (owned or ghost) when |x - x_p| < r_p + r_d. Of the
   particles it touches, the one with the smallest surface gap
   |x - x_p| - r_p absorbs it, ties to the lower gid (the same particle on
   any number of ranks: the droplet's owner holds every particle within the
   reach max r_p + r_d, which the system's interaction range adds to the
   ghost width). The volume goes to the particle's ``liquid_absorbed``
   (REVERSE: a ghost's share is summed onto its owner). A droplet that
   touches no particle but a planar wall (distance to the plane < r_d), a
   mesh-wall triangle (distance < r_d) or lies beyond the domain on a
   non-periodic axis is lost: its volume is added to its nozzle's ``lost``
   (summed over ranks every step, so the same on every rank). Either way it
   leaves the air (``state``).
3. ``DropletFilm`` (FORCES): adds the owners' ``liquid_absorbed`` to their
   ``liquid_film``.

The liquid balance (``systems.wet.balance``) then counts airborne droplets and
the nozzles' ``sprayed`` and ``lost``: films + bridges + airborne + lost at
walls (particles' and droplets') = inserted (``add_liquid`` and sprayed).
Nothing moves in the set-up force pass, so a restart continues bit for bit.

A droplet flying faster than 2 r_d per step can cross a thin wall or a
particle's edge between two checks: keep |v| dt below the droplet radius.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem import observe
from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System
from ecs_dem.systems.membrane.patch_geometry import closest_point

from ecs_dem.components.droplets import (AIRBORNE, ABSORBED, LOST, droplet_tables,
                                         spray_directions)
from ecs_dem.components.wet import liquid_fields
from ecs_dem.table import Field, Halo

ABSORBED_FIELD = Field("liquid_absorbed", np.float64, (), Halo.REVERSE, 0.0, "m^3",
                       "droplet liquid absorbed this step (summed onto the owner)",
                       scratch=True)


@kernel
def fly(position, velocity, state, g, dt):
    """Constant-acceleration step of the airborne droplets."""
    h = 0.5 * dt * dt
    for k in range(state.size):
        if state[k] != 0:
            continue
        for a in range(3):
            position[k, a] += velocity[k, a] * dt + g[a] * h
            velocity[k, a] += g[a] * dt


@kernel
def nearest_particles(dpos, drad, state, ppos, prad, pgid, lo, cell, dims, chosen):
    """chosen[k]: the particle row that absorbs droplet k (module docstring), or -1."""
    nx, ny, nz = dims[0], dims[1], dims[2]
    head = np.full(nx * ny * nz, -1, dtype=np.int64)
    nxt = np.full(prad.size, -1, dtype=np.int64)
    for i in range(prad.size):
        cx = min(max(int((ppos[i, 0] - lo[0]) / cell[0]), 0), nx - 1)
        cy = min(max(int((ppos[i, 1] - lo[1]) / cell[1]), 0), ny - 1)
        cz = min(max(int((ppos[i, 2] - lo[2]) / cell[2]), 0), nz - 1)
        c = (cx * ny + cy) * nz + cz
        nxt[i] = head[c]
        head[c] = i
    for k in range(state.size):
        chosen[k] = -1
        if state[k] != 0:
            continue
        cx = int(math.floor((dpos[k, 0] - lo[0]) / cell[0]))
        cy = int(math.floor((dpos[k, 1] - lo[1]) / cell[1]))
        cz = int(math.floor((dpos[k, 2] - lo[2]) / cell[2]))
        best = np.inf
        best_gid = -1
        for ax in range(max(cx - 1, 0), min(cx + 2, nx)):
            for ay in range(max(cy - 1, 0), min(cy + 2, ny)):
                for az in range(max(cz - 1, 0), min(cz + 2, nz)):
                    i = head[(ax * ny + ay) * nz + az]
                    while i >= 0:
                        dx = dpos[k, 0] - ppos[i, 0]
                        dy = dpos[k, 1] - ppos[i, 1]
                        dz = dpos[k, 2] - ppos[i, 2]
                        dist = math.sqrt(dx * dx + dy * dy + dz * dz)
                        if dist < prad[i] + drad[k]:
                            gap = dist - prad[i]
                            if gap < best or (gap == best and pgid[i] < best_gid):
                                best = gap
                                best_gid = pgid[i]
                                chosen[k] = i
                        i = nxt[i]


@kernel
def touching_walls(dpos, drad, state, point, normal, lost):
    """lost[k] = True for airborne droplets closer than their radius to a planar wall."""
    for k in range(state.size):
        if state[k] != 0 or lost[k]:
            continue
        for w in range(point.shape[0]):
            h = ((dpos[k, 0] - point[w, 0]) * normal[w, 0]
                 + (dpos[k, 1] - point[w, 1]) * normal[w, 1]
                 + (dpos[k, 2] - point[w, 2]) * normal[w, 2])
            if h < drad[k]:
                lost[k] = True
                break


@kernel
def touching_triangles(dpos, drad, state, vertex, rows, lost):
    """lost[k] = True for airborne droplets closer than their radius to a triangle (rows:
    the triangles' vertex rows; a triangle with a vertex beyond the halo is skipped)."""
    for t in range(rows.shape[0]):
        a, b, c = rows[t, 0], rows[t, 1], rows[t, 2]
        if a < 0 or b < 0 or c < 0:
            continue
        rmax = 0.0
        for k in range(state.size):
            rmax = max(rmax, drad[k])
        lo0 = min(vertex[a, 0], vertex[b, 0], vertex[c, 0]) - rmax
        lo1 = min(vertex[a, 1], vertex[b, 1], vertex[c, 1]) - rmax
        lo2 = min(vertex[a, 2], vertex[b, 2], vertex[c, 2]) - rmax
        hi0 = max(vertex[a, 0], vertex[b, 0], vertex[c, 0]) + rmax
        hi1 = max(vertex[a, 1], vertex[b, 1], vertex[c, 1]) + rmax
        hi2 = max(vertex[a, 2], vertex[b, 2], vertex[c, 2]) + rmax
        for k in range(state.size):
            if state[k] != 0 or lost[k]:
                continue
            px, py, pz = dpos[k, 0], dpos[k, 1], dpos[k, 2]
            if px < lo0 or px > hi0 or py < lo1 or py > hi1 or pz < lo2 or pz > hi2:
                continue
            qx, qy, qz, wa, wb, wc = closest_point(
                px, py, pz, vertex[a, 0], vertex[a, 1], vertex[a, 2], vertex[b, 0],
                vertex[b, 1], vertex[b, 2], vertex[c, 0], vertex[c, 1], vertex[c, 2])
            dx, dy, dz = px - qx, py - qy, pz - qz
            if dx * dx + dy * dy + dz * dz < drad[k] * drad[k]:
                lost[k] = True


class DropletMotion(System):
    """Removes ended droplets, moves the airborne ones, emits new ones (module docstring)."""

    stage = Stage.INTEGRATE_FIRST
    reads = {"nozzles": ("location", "direction", "fan_axis", "shape", "angle",
                         "thickness_angle", "rate", "droplet_radius", "speed", "start", "stop",
                         "seed")}
    writes = {"droplets": ("position", "velocity", "state"), "nozzles": ("emitted", "sprayed")}
    builds = ("droplets",)

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = np.asarray(gravity, dtype=np.float64).reshape(-1)
        if self.gravity.shape != (3,) or not np.all(np.isfinite(self.gravity)):
            raise InputError(f"droplets: gravity must be a finite 3-vector in m/s^2 "
                             f"(got {gravity})")

    def setup(self, world) -> None:
        droplet_tables(world)

    def run(self, world) -> None:
        nozzles, drops = world.tables["nozzles"], world.tables["droplets"]
        state = drops.owned("state")
        if np.any(state != AIRBORNE):
            drops.remove(np.flatnonzero(state != AIRBORNE))
        if drops.n_owned:
            fly(drops.owned("position"), drops.owned("velocity"), drops.owned("state"),
                self.gravity, world.dt)
        self.emit(world, nozzles, drops)

    @staticmethod
    def emit(world, nozzles, drops) -> None:
        """The droplets each nozzle owes by the end of this step (module docstring)."""
        t_end = world.time + world.dt
        total = int(np.sum(nozzles.owned("emitted")))
        for n in range(nozzles.n_owned):
            start, stop = float(nozzles.start[n]), float(nozzles.stop[n])
            if t_end <= start:
                continue
            due = int(math.floor(nozzles.rate[n] * (min(t_end, stop) - start)))
            new = due - int(nozzles.emitted[n])
            if new <= 0:
                continue
            first = int(nozzles.emitted[n])
            r = float(nozzles.droplet_radius[n])
            volume = 4.0 / 3.0 * math.pi * r**3
            if world.comm.rank == 0:
                rng = np.random.default_rng([int(nozzles.seed[n]), n, first])
                d = spray_directions(nozzles.direction[n], nozzles.fan_axis[n],
                                     int(nozzles.shape[n]), float(nozzles.angle[n]),
                                     float(nozzles.thickness_angle[n]), rng.random((new, 2)))
                drops.append(new, gid=np.arange(total, total + new, dtype=np.int64),
                             position=np.broadcast_to(nozzles.location[n], (new, 3)),
                             velocity=float(nozzles.speed[n]) * d, radius=r, volume=volume,
                             nozzle=n, state=AIRBORNE)
            total += new
            nozzles.emitted[n] = due
            nozzles.sprayed[n] += new * volume


class DropletAbsorption(System):
    """Absorption into the nearest touching particle, loss at walls and out of the domain
    (module docstring)."""

    stage = Stage.FORCES
    reads_ghosts = {"particles": ("position", "radius")}
    reads = {"droplets": ("position", "radius", "volume", "nozzle")}
    writes = {"droplets": ("state",), "nozzles": ("lost",)}
    accumulates = {"particles": ("liquid_absorbed",)}

    def __init__(self):
        self._chosen = np.zeros(0, dtype=np.int64)

    def setup(self, world) -> None:
        droplet_tables(world)
        liquid_fields(world)
        world.particles.add_field(ABSORBED_FIELD)

    def declare(self, world) -> None:
        if "walls" in world.tables:
            self.reads = {**self.reads, "walls": ("point", "normal")}
        if "mesh_triangles" in world.tables:
            self.reads_ghosts = {**self.reads_ghosts, "mesh_vertices": ("position",),
                                 "mesh_triangles": ("vertices",)}  # and their rows

    def reach(self, world, radius=None) -> float:
        """Largest droplet-particle centre distance at which they touch (m)."""
        nozzles = world.tables["nozzles"]
        rd = float(np.max(nozzles.owned("droplet_radius"))) if nozzles.n_owned else 0.0
        r = world.particles.with_ghosts("radius") if radius is None else radius
        return (float(np.max(r)) if r.size else 0.0) + rd

    def interaction_range(self, world) -> float:
        return self.reach(world)

    def run(self, world) -> None:
        if world.setup_phase:
            return
        drops, nozzles, p = world.tables["droplets"], world.tables["nozzles"], world.particles
        n = drops.n_owned
        lost_volume = np.zeros(nozzles.n_owned)
        if n:
            state = drops.owned("state")
            dpos, drad = drops.owned("position"), drops.owned("radius")
            chosen = self.absorbing_rows(world, dpos, drad, state)
            hit = chosen >= 0
            if np.any(hit):
                np.add.at(p.with_ghosts("liquid_absorbed"), chosen[hit],
                          drops.owned("volume")[hit])
                state[hit] = ABSORBED
            lost = self.lost_rows(world, dpos, drad, state)
            if np.any(lost):
                state[lost] = LOST
                lost_volume += np.bincount(drops.owned("nozzle")[lost],
                                           drops.owned("volume")[lost],
                                           minlength=nozzles.n_owned)
        if nozzles.n_owned:
            nozzles.lost[:] += np.atleast_1d(world.comm.sum(lost_volume))

    def absorbing_rows(self, world, dpos, drad, state) -> np.ndarray:
        """Per owned droplet the particle row (owned or ghost) that absorbs it, or -1."""
        p = world.particles
        ppos, prad = p.with_ghosts("position"), p.with_ghosts("radius")
        if self._chosen.size < state.size:
            self._chosen = np.zeros(int(state.size * 1.5) + 16, dtype=np.int64)
        chosen = self._chosen[:state.size]
        chosen[:] = -1
        if prad.size == 0:
            return chosen
        reach = float(np.max(prad)) + float(np.max(drad))
        covered = world.domain.ghost_width - world.skin
        if reach > covered * (1.0 + 1e-12):
            raise InputError(
                f"droplets: their reach (largest particle radius + droplet radius = {reach:g} m) "
                f"exceeds what the ghost layer covers ({covered:g} m): a particle grew or came "
                "after set-up; add the particles before the first step")
        lo = ppos.min(axis=0) - reach
        extent = ppos.max(axis=0) + reach - lo
        dims = np.clip(np.floor(extent / reach), 1, 64).astype(np.int64)
        cell = extent / dims
        nearest_particles(dpos, drad, state, ppos, prad, p.with_ghosts("gid"), lo, cell, dims,
                          chosen)
        return chosen

    def lost_rows(self, world, dpos, drad, state) -> np.ndarray:
        """Mask of the owned airborne droplets that touch a wall or left the domain."""
        lost = np.zeros(state.size, dtype=np.bool_)
        walls = world.tables.get("walls")
        if walls is not None and walls.n_owned:
            touching_walls(dpos, drad, state, walls.owned("point"), walls.owned("normal"), lost)
        tris = world.tables.get("mesh_triangles")
        if tris is not None and tris.n:
            touching_triangles(dpos, drad, state, world.mesh_vertices.with_ghosts("position"),
                               tris.with_ghosts("rows"), lost)
        box = world.domain.box
        for a in range(3):
            if not box.periodic[a]:
                lost |= (dpos[:, a] < box.lo[a]) | (dpos[:, a] > box.hi[a])
        lost &= state == AIRBORNE
        return lost


class DropletFilm(System):
    """Adds the absorbed droplets' liquid to the owners' films (module docstring)."""

    stage = Stage.FORCES
    reads = {"particles": ("liquid_absorbed",)}
    writes = {"particles": ("liquid_film",)}

    def setup(self, world) -> None:
        liquid_fields(world)
        world.particles.add_field(ABSORBED_FIELD)

    def run(self, world) -> None:
        if world.setup_phase:
            return
        p = world.particles
        p.owned("liquid_film")[:] += p.owned("liquid_absorbed")


def spray(gravity=(0.0, 0.0, -9.81)) -> tuple:
    """The droplet systems in order (module docstring): add them with the others, the
    absorption and film systems before the contact and liquid-migration systems."""
    return DropletMotion(gravity), DropletAbsorption(), DropletFilm()


def airborne_volume(world) -> float:
    """This rank's airborne droplet liquid (m^3; not collective)."""
    drops = world.tables.get("droplets")
    if drops is None or drops.n_owned == 0:
        return 0.0
    return float(np.sum(drops.owned("volume")[drops.owned("state") == AIRBORNE]))


def droplet_count(world) -> int:
    """Airborne droplets over all ranks (collective)."""
    drops = world.tables.get("droplets")
    n = int(np.count_nonzero(drops.owned("state") == AIRBORNE)) if drops is not None else 0
    return observe.sum_of(world, n)


__all__ = ["DropletMotion", "DropletAbsorption", "DropletFilm", "spray", "airborne_volume",
           "droplet_count", "fly", "nearest_particles", "touching_walls",
           "touching_triangles"]
