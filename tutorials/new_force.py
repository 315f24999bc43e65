"""Tutorial: a new force as one system, Stokes drag in a viscous fluid (docs/tutorials/new-force.md).

Defines ``StokesDrag``, a system that adds the drag of a slow sphere in a
viscous fluid, F = -6 pi eta r v, to every free particle: a numba kernel that
does the arithmetic on arrays, and a small class that declares which fields
it reads and which it adds into. Then grains of five sizes sink in glycerol
under gravity (reduced by buoyancy) and the script compares the speed they
reach with Stokes' terminal velocity v_t = 2 (rho_p - rho_f) g r^2 / (9 eta).

    python tutorials/new_force.py             # the full settings: 0.05 s, dt = 2e-6 s
    python tutorials/new_force.py --short     # the short settings (CI): 0.02 s, dt = 1e-5 s
    mpiexec.mpich -n 2 .venv/bin/python tutorials/new_force.py --short

``ECS_DEM_TUTORIAL_SHORT=1`` in the environment selects the short settings too.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from ecs_dem import Box, InputError, Stage, System, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.jit import kernel
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet


# --------------------------------------------------------------------------- the new force
@kernel  # numba.njit with the project's options (cache=True: compiled once, kept on disk)
def add_stokes_drag(velocity, radius, fixed, viscosity, force):
    """force[i] += -6 pi eta r_i v_i for every row that is not fixed [N]."""
    for i in range(radius.size):
        if fixed[i]:
            continue
        c = 6.0 * np.pi * viscosity * radius[i]
        for k in range(3):
            force[i, k] -= c * velocity[i, k]


class StokesDrag(System):
    """Drag of a sphere in a fluid at rest at low Reynolds number: F = -6 pi eta r v.

    ``viscosity``: the fluid's dynamic viscosity eta in Pa s.
    """

    stage = Stage.FORCES                                   # runs with the other forces
    reads = {"particles": ("velocity", "radius", "fixed")}  # read on the rows this rank owns
    accumulates_owned = {"particles": ("force",)}           # added into owned rows only

    def __init__(self, viscosity: float):
        if not viscosity > 0:
            raise InputError(f"StokesDrag: viscosity must be > 0 Pa s (got {viscosity})")
        self.viscosity = float(viscosity)

    def run(self, world) -> None:
        p = world.particles  # p.velocity etc. are the owned rows: numpy views, no copies
        add_stokes_drag(p.velocity, p.radius, p.fixed, self.viscosity, p.force)


# --------------------------------------------------------------------------- using it
FULL = {"duration": 0.05, "dt": 2e-6, "reports": 5}
SHORT = {"duration": 0.02, "dt": 1e-5, "reports": 4}

RHO_GRAIN, RHO_FLUID = 2500.0, 1260.0  # kg/m^3: glass beads in glycerol
ETA = 1.4                              # Pa s, glycerol at 20 degrees C
G = 9.81                               # m/s^2
RADII = np.array([0.5e-3, 1.0e-3, 1.5e-3, 2.0e-3, 3.0e-3])  # m


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short settings (CI)")
    args = parser.parse_args(argv)
    short = args.short or os.environ.get("ECS_DEM_TUTORIAL_SHORT") == "1"
    settings = SHORT if short else FULL
    comm = default_comm()
    say = print if comm.rank == 0 else (lambda *a, **k: None)

    # Five grains side by side, 10 mm apart (far enough that they never touch), at rest.
    n = RADII.size
    position = np.column_stack([0.01 * (np.arange(n) + 0.5), np.full(n, 0.005), np.full(n, 0.09)])
    world = World(Box((0, 0, 0), (0.01 * n, 0.01, 0.1)), dt=settings["dt"], comm=comm)
    glass = add_species(world, youngs_modulus=6e10, poisson_ratio=0.2, density=RHO_GRAIN)
    add_particles(world, position, RADII, glass)

    # The schedule: gravity reduced by buoyancy (the fluid carries rho_f / rho_p of the
    # weight), and the new drag. No contacts: the grains stay apart.
    first_half, second_half = velocity_verlet()
    world.add_system(first_half)
    world.add_system(Gravity((0.0, 0.0, -G * (1.0 - RHO_FLUID / RHO_GRAIN))))
    world.add_system(StokesDrag(ETA))
    world.add_system(second_half)
    world.setup()
    say(f"new_force ({'short' if short else 'full'} settings): dt = {world.dt:g} s, "
        f"{settings['duration']} s")
    say(world.describe_schedule())

    steps = int(round(settings["duration"] / world.dt))
    p = world.particles
    tau = 2.0 * RHO_GRAIN * RADII**2 / (9.0 * ETA)  # s, the time the drag takes to act
    v_terminal = 2.0 * (RHO_GRAIN - RHO_FLUID) * G * RADII**2 / (9.0 * ETA)
    say(f"relaxation times m / (6 pi eta r): {', '.join(f'{t * 1e3:.2f}' for t in tau)} ms")
    say(f"{'time (s)':>8}  sinking speed (mm/s) of r = "
        + ", ".join(f"{r * 1e3:g}" for r in RADII) + " mm")
    done = 0
    for k in range(1, settings["reports"] + 1):
        chunk = steps * k // settings["reports"] - done
        world.run(chunk)
        done += chunk
        # every grain's velocity in gid order, gathered from every rank onto rank 0 (None on
        # the other ranks)
        velocity = observe.gather_by_gid(world, p, "velocity")
        if velocity is not None:
            speed = -velocity[:, 2]
            say(f"{world.time:8.4f}  " + "  ".join(f"{v * 1e3:7.3f}" for v in speed))

    if velocity is not None:
        say("terminal velocity 2 (rho_p - rho_f) g r^2 / (9 eta), against the simulation:")
        for r, v, vt in zip(RADII, speed, v_terminal):
            say(f"  r = {r * 1e3:3.1f} mm: Stokes {vt * 1e3:7.3f} mm/s, simulated "
                f"{v * 1e3:7.3f} mm/s, difference {abs(v - vt) / vt:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
