"""A drum: a circular membrane clamped at its rim under uniform pressure, against Hencky's solution.

A flat circular sheet (radius a, 2D modulus E d, Poisson ratio 1/3 as an
equilateral spring lattice has it; bending off) is clamped at its rim and
loaded by a pressure q that ramps up and is held. The centre deflection at
rest is compared with the membrane (Foeppl-Hencky) solution

    w0 = C(nu) a (q a / (E d))^(1/3),     C(1/3) = 0.6448,

which this driver computes itself (``hencky_coefficient``: the radial stress
equation rho^2 n'' + 3 rho n' + rho^2 / (8 n^2) = 0 with n'(0) = 0 and
n'(1) = -(1 - nu) n(1), solved by shooting). The load is a confining stress
sigma = -q (negative: it pushes along the outward normal, +z). A light
viscous drag on the vertices (dynamic relaxation) lets the sheet settle;
it does no work at rest.

    python run/drum.py                        # defaults: about 10 s here
    python run/drum.py --set edge=2.5e-3      # finer mesh
    mpiexec.mpich -n 2 .venv/bin/python run/drum.py

Writes ``output/drum.h5`` (+ ``.xdmf``: the membrane surface in ParaView).
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ecs_dem import Box, Stage, System, World, observe
from ecs_dem.components.membranes import (add_membrane, membrane_ranges, membrane_vertices,
                                          set_stress)
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.particles import create_particle_table, fix_particles
from ecs_dem.driver import run_driver
from ecs_dem.errors import ConfigValueError
from ecs_dem.jit import kernel
from ecs_dem.runner import RUN_DEFAULTS
from ecs_dem.systems.membrane.diagnostics import MembraneDiagnostics
from ecs_dem.systems.membrane.systems import membrane_snapshot_writer, membrane_systems
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

DEFAULTS = {
    "radius": 0.05,            # m, drum radius a
    "edge": 5e-3,              # m, mesh edge length
    "youngs_modulus": 1.25e6,  # Pa (rubber, as the triaxial membrane)
    "thickness": 3e-4,         # m
    "density": 1000.0,         # kg/m^3
    "pressure": 90.0,          # Pa, q (centre deflection about 15 % of a, strains about 2 %)
    "ramp_time": 0.1,          # s, the pressure ramps from 0 to q
    "duration": 0.6,           # s of simulated time (settled: the deflection changes < 1e-4)
    "damping_ratio": 0.5,      # of the edge springs (Eq. 6)
    "drag": 20.0,              # 1/s, viscous relaxation rate of the vertices
    "dt_fraction": 0.1,        # dt as a fraction of the shortest spring period
    "output": "output/drum.h5",
    "snapshot_every": 5000,    # steps; 0 = none
    "diagnostics_every": 1000,
    **RUN_DEFAULTS,
    "progress": False,
}

#: (key, low, high, bounds included): the values a run can use (ecs_dem.config.check_ranges)
RANGES = (
    ("radius", 0.0, math.inf, False),
    ("edge", 0.0, math.inf, False),
    *membrane_ranges(youngs_modulus="youngs_modulus", thickness="thickness", density="density",
                     damping_ratio="damping_ratio"),
    ("pressure", 0.0, math.inf, False),  # Hencky's deflection is compared by ratio
    ("ramp_time", 0.0, math.inf, True),
    ("duration", 0.0, math.inf, False),
    ("drag", 0.0, math.inf, True),
    ("dt_fraction", 0.0, 1.0, False),
    ("snapshot_every", 0, math.inf, True),
    ("diagnostics_every", 1, math.inf, True),
    ("checkpoint_every", 0, math.inf, True),
)
#: what a restart must share with its checkpoint (ecs_dem.runner.check_restart)
IDENTITY = ("radius", "edge", "youngs_modulus", "thickness", "density", "pressure", "ramp_time",
            "damping_ratio", "drag")


def hencky_coefficient(nu: float, steps: int = 2000) -> tuple[float, float]:
    """(C, n0): w0 = C a (q a / Y)^(1/3) and the centre stress N_r(0) = n0 Y (q a / Y)^(2/3).

    Foeppl-Hencky membrane: N_r w' = -q r / 2, (r N_r)' = N_theta, and compatibility
    r^2 N_r'' + 3 r N_r' + Y w'^2 / 2 = 0; with N_r = Y s^2 n(rho), s = (q a / Y)^(1/3),
    rho = r / a: rho^2 n'' + 3 rho n' + rho^2 / (8 n^2) = 0, n'(0) = 0, and a clamped rim
    (u(a) = 0, so N_theta = nu N_r): n'(1) = -(1 - nu) n(1). Then
    w0 / a = s int_0^1 rho / (2 n) d rho. Shooting on n(0) by bisection, RK4 in rho.
    """
    def integrate(n0, with_deflection=False):
        rho = 1e-6
        c = -1.0 / (64.0 * n0 * n0)  # series n = n0 + c rho^2 near the centre
        n, dn = n0 + c * rho * rho, 2.0 * c * rho
        h = (1.0 - rho) / steps

        def f(r, n, dn):  # (n', n'')
            return dn, -(3.0 * r * dn + r * r / (8.0 * n * n)) / (r * r)

        total, g0 = 0.0, rho / (2.0 * n)
        for _ in range(steps):
            k1 = f(rho, n, dn)
            k2 = f(rho + h / 2, n + h / 2 * k1[0], dn + h / 2 * k1[1])
            k3 = f(rho + h / 2, n + h / 2 * k2[0], dn + h / 2 * k2[1])
            k4 = f(rho + h, n + h * k3[0], dn + h * k3[1])
            n += h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
            dn += h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
            rho += h
            if with_deflection:
                g1 = rho / (2.0 * n)
                total += 0.5 * h * (g0 + g1)
                g0 = g1
        return (n, dn), total

    def residual(n0):
        y, _ = integrate(n0)
        return y[1] + (1.0 - nu) * y[0]

    lo, hi = 0.05, 2.0
    for _ in range(45):
        mid = 0.5 * (lo + hi)
        if residual(lo) * residual(mid) <= 0:
            hi = mid
        else:
            lo = mid
    n0 = 0.5 * (lo + hi)
    return integrate(n0, with_deflection=True)[1], n0


@kernel
def drag_forces(velocity, mass, fixed, rate, force):
    """F = -rate m v on every free row (dynamic relaxation; no force at rest)."""
    for i in range(mass.size):
        if not fixed[i]:
            for a in range(3):
                force[i, a] -= rate * mass[i] * velocity[i, a]


class Relaxation(System):
    """Viscous drag at `rate` (1/s) on the membrane vertices, to let the drum settle."""

    stage = Stage.FORCES
    reads = {"particles": ("velocity", "mass", "fixed")}
    accumulates = {"particles": ("force",)}

    def __init__(self, rate: float):
        self.rate = float(rate)

    def run(self, world) -> None:
        p = world.particles
        drag_forces(p.velocity, p.mass, p.fixed, self.rate, p.force)


def build_world(cfg: dict, output=None, comm=None) -> World:
    a = cfg["radius"]
    if not 0 < cfg["edge"] < a / 3:
        raise ConfigValueError(f"edge {cfg['edge']} m must lie in (0, radius/3): refine the mesh")
    mesh = flat_sheet(cfg["edge"], radius=a)
    E, d, rho = cfg["youngs_modulus"], cfg["thickness"], cfg["density"]
    k = math.sqrt(3.0) / 2.0 * E * d
    m_min = rho * d * math.sqrt(3.0) / 4.0 * cfg["edge"] ** 2 / 3.0  # a boundary vertex, roughly
    dt = cfg["dt_fraction"] * 2.0 * math.pi * math.sqrt(m_min / (6.0 * k))
    box = Box((-1.5 * a, -1.5 * a, -1.5 * a), (1.5 * a, 1.5 * a, 1.5 * a))
    world = World(box, dt=dt, skin=0.1 * cfg["edge"], comm=comm)
    create_particle_table(world)
    add_membrane(world, mesh, youngs_modulus=E, thickness=d, density=rho,
                 damping_ratio=cfg["damping_ratio"])
    rim = membrane_vertices(world, 0, where=lambda x: np.hypot(x[:, 0], x[:, 1]) > a * (1 - 1e-9))
    fix_particles(world, rim)
    set_stress(world, 0, -cfg["pressure"], ramp=(0.0, cfg["ramp_time"]), start=0.0)
    first, second = velocity_verlet()
    world.add_system(first)
    for s in (*membrane_systems(), Relaxation(cfg["drag"])):
        world.add_system(s)
    world.add_system(second)
    world.add_system(MembraneDiagnostics(cfg["diagnostics_every"], output))
    if output is not None and cfg["snapshot_every"] > 0:
        world.add_system(membrane_snapshot_writer(output, cfg["snapshot_every"]))
    return world


def centre_deflection(world) -> float:
    """z of the vertex nearest the axis, over all ranks (m; collective)."""
    p = world.particles
    return observe.at_smallest(world, np.hypot(p.position[:, 0], p.position[:, 1]),
                               p.position[:, 2])


def hencky_deflection(cfg: dict) -> tuple[float, float]:
    """(Hencky's centre deflection w0 = C a (q a / E h)^(1/3) for nu = 1/3, the spring
    lattice's Poisson ratio, in m; its coefficient C)."""
    a, q = cfg["radius"], cfg["pressure"]
    C, _ = hencky_coefficient(1.0 / 3.0)
    return C * a * (q * a / (cfg["youngs_modulus"] * cfg["thickness"])) ** (1.0 / 3.0), C


def run(job) -> int:
    cfg = job.cfg
    with job.open_output(cfg["output"]) as output:
        world = build_world(cfg, output, job.comm)
        steps = int(round(cfg["duration"] / world.dt))
        job.print(f"drum: {world.particles.n_owned} vertices, dt = {world.dt:.3g} s, "
                  f"{steps} steps ({cfg['duration']} s)")
        status = job.run_world(world, steps, identity=IDENTITY)
        if world.stop_requested:
            return status
        w0 = centre_deflection(world)
    expected, C = hencky_deflection(cfg)
    job.print(f"done in {job.elapsed:.1f} s; centre deflection {w0 * 1e3:.4f} mm, Hencky "
              f"{expected * 1e3:.4f} mm (C = {C:.4f}): {100 * (w0 / expected - 1):+.2f} %")
    job.print(f"surface: {cfg['output']} (open the .xdmf in ParaView)")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, run=run,
                      description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
