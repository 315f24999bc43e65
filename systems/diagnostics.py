"""Diagnostics time series: energies, contacts, wall forces and positions.

Every ``every`` steps it records, summed over ranks:
``kinetic_energy`` (1/2 sum m v^2, J), ``rotational_energy`` (1/2 sum I w^2, J),
``max_speed`` (m/s, of any particle, pebbles of clumps included), ``contacts`` (touching pairs), ``particles`` and
``max_particles_per_rank`` (load balance: ideal is particles / ranks) and, with walls,
``wall_force`` (n_walls, 3) N, ``wall_position`` (n_walls, 3) m,
``wall_stress`` (n_walls,) Pa = -F.n / area (compressive positive; 0 for walls
without an area), ``wall_displacement`` (n_walls,) m along the wall normal
since it was added (positive into the sample), and ``strain`` (3,): for each
axis bounded by two opposing walls, (L0 - L) / L0 with L their distance
(compressive positive; 0 where an axis has no such pair); with mesh walls,
``mesh_wall_force`` (n_mesh_walls, 3) N and ``mesh_wall_torque`` (n_mesh_walls, 3)
N m, the grains' force on each wall and its torque about the wall's reference point,
``mesh_wall_reference`` (n_mesh_walls, 3) m (drum torque, power draw). Values
go to the system's ``records`` (a list of dicts), to an Hdf5Output if given, and
optionally to the terminal.

``kinetic_energy(world, where)`` is the translational kinetic energy of a selection of
particles (the grains of a run with membranes, say) over every rank, for drivers.

Clumps (rigid bodies of pebbles, ``components.clumps``): the energies count each body
once, from its own state, and not its pebbles (whose ``mass`` is the body's and whose
``inertia`` is negative): translational 1/2 M v_c^2 with v_c the centre of mass's
velocity, rotational 1/2 w . L with L the body's angular momentum about its centre (space
frame), which is 1/2 w^T R I R^T w for the principal moments I and orientation R.
``kinetic_energy`` counts a body's translational energy where `where` selects its anchor
pebble (the first of its ``pebbles``, owned by the body's rank).
"""
from __future__ import annotations

import sys
import time as _time

import numpy as np

from ecs_dem import observe
from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System


@kernel
def kinetic_energies(velocity, angular_velocity, mass, inertia):
    """(1/2 sum m v^2, 1/2 sum I w^2, max |v|) over the rows [J, J, m/s]."""
    kt = 0.0
    kr = 0.0
    vmax2 = 0.0
    for i in range(mass.size):
        v2 = velocity[i, 0] ** 2 + velocity[i, 1] ** 2 + velocity[i, 2] ** 2
        if v2 > vmax2:
            vmax2 = v2
        if inertia[i] < 0.0:  # a pebble: its body counts (body_energies)
            continue
        w2 = angular_velocity[i, 0] ** 2 + angular_velocity[i, 1] ** 2 + angular_velocity[i, 2] ** 2
        kt += mass[i] * v2
        kr += inertia[i] * w2
    return 0.5 * kt, 0.5 * kr, np.sqrt(vmax2)


@kernel
def body_energies(velocity, angular_velocity, angular_momentum, mass):
    """(1/2 sum M v^2, 1/2 sum w . L) over rigid bodies [J, J]."""
    kt = 0.0
    kr = 0.0
    for k in range(mass.size):
        kt += mass[k] * (velocity[k, 0] ** 2 + velocity[k, 1] ** 2 + velocity[k, 2] ** 2)
        kr += (angular_velocity[k, 0] * angular_momentum[k, 0]
               + angular_velocity[k, 1] * angular_momentum[k, 1]
               + angular_velocity[k, 2] * angular_momentum[k, 2])
    return 0.5 * kt, 0.5 * kr


def kinetic_energy(world, where=None) -> float:
    """1/2 sum m v^2 (J) over the owned particles of every rank that `where` selects (a
    boolean mask or index array over the owned rows; all of them when None). Collective:
    every rank calls it. Each rank's part is numpy's sum over its rows (``Diagnostics``
    sums the time series' energies in a compiled loop, which rounds differently)."""
    p = world.particles
    mass, velocity = p.mass, p.velocity
    bodies = world.tables.get("bodies")
    if bodies is None:
        if where is not None:
            mass, velocity = mass[where], velocity[where]
        return observe.sum_of(world, 0.5 * float(np.sum(mass * np.sum(velocity**2, axis=1))))
    n = p.n_owned
    chosen = np.ones(n, dtype=bool)
    if where is not None:
        chosen = np.zeros(n, dtype=bool)
        chosen[np.arange(n)[where]] = True
    free = chosen & (p.inertia[:n] >= 0.0)
    energy = 0.5 * float(np.sum(mass[:n][free] * np.sum(velocity[:n][free] ** 2, axis=1)))
    m = bodies.n_owned
    mine = chosen[bodies.pebble_rows[:m, 0]] if m else np.zeros(0, dtype=bool)
    energy += 0.5 * float(np.sum(bodies.mass[:m][mine]
                                 * np.sum(bodies.velocity[:m][mine] ** 2, axis=1)))
    return observe.sum_of(world, energy)


def wall_measures(walls) -> dict:
    """Forces, positions, normal stresses, displacements and axial strains of the walls."""
    n = walls.normal
    stress = np.where(walls.area > 0, -np.einsum("ij,ij->i", walls.force, n)
                      / np.where(walls.area > 0, walls.area, 1.0), 0.0)
    displacement = np.einsum("ij,ij->i", walls.point - walls.initial_point, n)
    strain = np.zeros(3)
    for axis in range(3):
        low = np.flatnonzero(np.isclose(n[:, axis], 1.0))
        high = np.flatnonzero(np.isclose(n[:, axis], -1.0))
        if low.size and high.size:
            lo, hi = low[0], high[0]
            length0 = walls.initial_point[hi, axis] - walls.initial_point[lo, axis]
            length = walls.point[hi, axis] - walls.point[lo, axis]
            strain[axis] = (length0 - length) / length0 if length0 else 0.0
    return {"wall_force": walls.force.copy(), "wall_position": walls.point.copy(),
            "wall_stress": stress, "wall_displacement": displacement, "strain": strain}


class Diagnostics(System):
    """Record global diagnostics every `every` steps (module docstring lists them)."""

    stage = Stage.OUTPUT
    reads = {"particles": ("velocity", "angular_velocity", "mass", "inertia")}

    def __init__(self, every: int, output=None, contact_systems=(), echo: bool = False):
        self.every = max(int(every), 1)
        self.output = output
        self.contact_systems = tuple(contact_systems)
        self.echo = echo
        self.records: list[dict] = []
        self._t0 = None

    def declare(self, world) -> None:
        if "bodies" in world.tables:
            self.reads = dict(self.reads, bodies=("velocity", "angular_velocity",
                                                  "angular_momentum", "mass"))
        if "walls" in world.tables:
            self.reads = dict(self.reads, walls=("point", "initial_point", "normal", "force", "area"))
        if "mesh_walls" in world.tables:
            self.reads = dict(self.reads, mesh_walls=("force", "torque", "reference"))

    def run(self, world) -> None:
        p = world.particles
        kt, kr, vmax = kinetic_energies(p.velocity, p.angular_velocity, p.mass, p.inertia)
        if "bodies" in world.tables:
            b = world.tables["bodies"]
            bt, br = body_energies(*b.views(("velocity", "angular_velocity", "angular_momentum",
                                              "mass")))
            kt, kr = kt + bt, kr + br
        rec = {
            "kinetic_energy": float(world.comm.sum(kt)),
            "rotational_energy": float(world.comm.sum(kr)),
            "max_speed": float(world.comm.max(vmax)),
            "contacts": float(world.comm.sum(sum(s.touching for s in self.contact_systems))),
            "particles": float(world.comm.sum(p.n_owned)),
            "max_particles_per_rank": float(world.comm.max(p.n_owned)),
        }
        if "walls" in world.tables and world.walls.n_owned:
            rec.update(wall_measures(world.walls))
        if "mesh_walls" in world.tables and world.mesh_walls.n_owned:
            walls = world.mesh_walls
            rec.update(mesh_wall_force=walls.force.copy(), mesh_wall_torque=walls.torque.copy(),
                       mesh_wall_reference=walls.reference.copy())
        self.records.append({"step": world.step, "time": world.time, **rec})
        if self.output is not None:
            self.output.append(world.step, world.time, rec)  # collective: every rank calls it
        if self.echo and world.comm.rank == 0:
            now = _time.perf_counter()
            rate = ""
            if self._t0 is not None and world.step > self._t0[1]:
                rate = f" {(world.step - self._t0[1]) / (now - self._t0[0]):8.1f} steps/s"
            self._t0 = (now, world.step)
            print(f"step {world.step:8d} t {world.time:.5g} s  KE {rec['kinetic_energy']:.6g} J  "
                  f"rot {rec['rotational_energy']:.6g} J  contacts {int(rec['contacts'])}{rate}",
                  file=sys.stdout, flush=True)
