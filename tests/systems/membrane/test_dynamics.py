"""Whole membranes: energy conservation, and a sphere inflated by internal pressure.

* An undamped membrane (gamma = 0, no bending, no stress) released from a perturbed shape
  conserves kinetic plus stretching energy (velocity Verlet, conservative springs) and its
  momentum.
* A closed spherical membrane under internal pressure p settles where the pressure balances
  the tension. The spring lattice under an equibiaxial stretch lambda carries the tension
  T = sqrt(3) k (lambda - 1) / lambda = (3/2) E d (1 - 1/lambda) (k = sqrt(3)/2 E d, Eq. 7:
  a sheet of 2D modulus E d and Poisson ratio 1/3), and Laplace's law p = 2 T / R with
  R = lambda R0 gives p R0 lambda^2 = 3 E d (lambda - 1).
"""
import math

import numpy as np
import pytest

from ecs_dem import Box, Stage, System, World
from ecs_dem.components.membranes import add_membrane, set_stress
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.generators import icosphere
from ecs_dem.components.particles import create_particle_table
from ecs_dem.systems.membrane.diagnostics import membrane_measures
from ecs_dem.systems.membrane.systems import membrane_systems
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

E, D, RHO = 1e6, 5e-4, 1000.0  # Pa, m, kg/m^3
R0 = 0.02  # m


def sphere_world(level, dt, damping=0.0, perturb=0.0, seed=3, debug=None):
    mesh = icosphere(R0, level)
    if perturb:
        rng = np.random.default_rng(seed)
        mesh = Mesh(mesh.vertices * (1 + perturb * rng.uniform(-1, 1, (len(mesh.vertices), 1))),
                    mesh.triangles)
    world = World(Box((-0.1,) * 3, (0.1,) * 3), dt=dt, debug=debug)
    create_particle_table(world)
    add_membrane(world, icosphere(R0, level), youngs_modulus=E, thickness=D, density=RHO,
                 damping_ratio=damping)
    if perturb:  # rest shape: the sphere; start: the perturbed shape
        p = world.particles
        p.position[:] = mesh.vertices[p.gid - world.membranes.first_vertex[0]]
    first, second = velocity_verlet()
    world.add_system(first)
    for s in membrane_systems():
        world.add_system(s)
    world.add_system(second)
    return world


def period(level):
    """Shortest spring period of the mesh, with the lightest vertex (s)."""
    mesh = icosphere(R0, level)
    edge = np.min(np.linalg.norm(mesh.vertices[mesh.triangles[:, 1]]
                                 - mesh.vertices[mesh.triangles[:, 0]], axis=1))
    m = RHO * D * math.sqrt(3) / 4 * edge**2 * 5 / 3  # five small triangles at a pentagon vertex
    return 2 * math.pi * math.sqrt(m / (6 * math.sqrt(3) / 2 * E * D))


def test_undamped_membrane_conserves_energy_and_momentum():
    # 10^4 steps at 1/150 of the fastest spring period (Verlet's energy error ~ (omega dt)^2);
    # long, so without the debug guard (the membrane systems are checked by the other tests)
    world = sphere_world(level=2, dt=period(2) / 150, perturb=0.05, debug=False)
    world.setup()
    p = world.particles

    def energy():
        m = membrane_measures(world)
        return m["membrane_kinetic_energy"][0] + m["membrane_stretching_energy"][0]

    e0 = energy()
    assert membrane_measures(world)["membrane_stretching_energy"][0] > 0.9 * e0  # all potential
    momentum_scale = float(np.sum(p.mass * np.sqrt(np.sum(p.velocity**2, axis=1)))) or 1.0
    worst = 0.0
    kinetic_max = 0.0
    for _ in range(100):
        world.run(100)
        worst = max(worst, abs(energy() / e0 - 1.0))
        kinetic_max = max(kinetic_max, membrane_measures(world)["membrane_kinetic_energy"][0])
        momentum = (p.mass[:, None] * p.velocity).sum(axis=0)
        scale = float(np.sum(p.mass * np.sqrt(np.sum(p.velocity**2, axis=1))))
        assert np.abs(momentum).max() < 1e-13 * max(scale, momentum_scale)
    assert world.step == 10_000
    assert kinetic_max > 0.3 * e0  # it really oscillated
    assert worst < 1e-4, f"relative energy error {worst:.3g}"


class Drag(System):
    """Viscous drag on every vertex (dynamic relaxation towards the static state)."""

    stage = Stage.FORCES
    reads = {"particles": ("velocity", "mass")}
    accumulates = {"particles": ("force",)}

    def run(self, world):
        p = world.particles
        p.force[...] -= 200.0 * p.mass[:, None] * p.velocity


def inflated_sphere(level=3, p_in=2000.0):
    """(world, radius change, the membrane theory's change) of the sphere of `level` inflated
    by `p_in` (Pa, ramped over 20 ms) and run to rest (80 ms, drag and damping)."""
    lam = (3 * E * D - math.sqrt((3 * E * D) ** 2 - 12 * p_in * R0 * E * D)) / (2 * p_in * R0)
    world = sphere_world(level, dt=period(level) / 10, damping=0.5, debug=False)
    world.systems.insert(-1, Drag())
    set_stress(world, 0, -p_in, ramp=(0.0, 0.02), start=0.0)
    world.run(int(0.08 / world.dt))
    x = world.particles.position
    radius = float(np.mean(np.linalg.norm(x - x.mean(axis=0), axis=1)))
    return world, radius - R0, (lam - 1) * R0


def test_sphere_under_internal_pressure_settles_at_the_membrane_radius(level=3):
    # measured (radius change against the theory): level 2 -1.2 %, level 3 +0.19 %,
    # level 4 +0.56 %: the mesh's curvature matters at level 2, and the lattice of a
    # triangulated sphere is never quite equilateral (12 five-fold vertices; edge lengths
    # spread 4 %), which leaves it a few tenths of a per cent softer than the sheet
    world, change, expected = inflated_sphere(level)
    assert expected > 0.01 * R0  # a visible change (strains of a few per cent)
    print(f"level {level}: radius change {change:.5e} m, membrane theory {expected:.5e} m "
          f"({100 * (change / expected - 1):+.3f} %)")
    assert abs(change / expected - 1) < 5e-3, f"radius change {change:.4e} m, membrane {expected:.4e} m"
    assert np.abs(world.particles.velocity).max() < 1e-3 * expected / 0.02  # at rest
