"""Tutorial: rigid clumps and spheres poured onto a floor (docs/tutorials/clumps.md).

Builds clump templates (from the library, from pebbles given by hand, and from a
closed surface written as STL and filled with pebbles), prints their mass
properties, then pours dimers, tetrahedra, elongated grains and spheres onto a
floor in a box periodic in x and y, and checks that at rest the floor carries the
weight of every body and sphere.

    python tutorials/clumps.py               # the full settings: 144 grains, 0.4 s
    python tutorials/clumps.py --short       # the short settings (CI): 36 grains, 0.25 s
    mpiexec.mpich -n 2 .venv/bin/python tutorials/clumps.py --short

``ECS_DEM_TUTORIAL_SHORT=1`` selects the short settings too. SI units throughout.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.clumps import clump_template, library
from ecs_dem.components.clumps.bodies import add_clumps
from ecs_dem.components.mesh.io import read_mesh, write_mesh
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.rigid_body import rigid_bodies
from ecs_dem.systems.walls.contacts import WallContacts

FULL = {"cells": (6, 6, 4), "duration": 0.4, "reports": 4}
SHORT = {"cells": (3, 3, 4), "duration": 0.25, "reports": 5}
R = 1e-3              # m, pebble radius of the library shapes
SPACING = 6 * R       # m, lattice the grains start on
DENSITY = 2500.0      # kg/m^3
GRAVITY = 9.81        # m/s^2


def short_settings(argv=None) -> bool:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short settings (CI)")
    args = parser.parse_args(argv)
    return args.short or os.environ.get("ECS_DEM_TUTORIAL_SHORT") == "1"


def templates(say) -> list:
    """Three ways to make a template, and their mass properties (per 2500 kg/m^3)."""
    by_hand = clump_template([[0, 0, 0], [1.5e-3, 0, 0], [0, 1.2e-3, 0]], [1e-3, 0.7e-3, 0.6e-3],
                             mass_properties="voxels", name="by hand")
    with tempfile.TemporaryDirectory() as tmp:  # a closed surface, as a user's STL file
        path = Path(tmp) / "ellipsoid.stl"
        write_mesh(path, library.ellipsoid_mesh(R))
        stone = clump_template(surface=read_mesh(path), pebbles=10, name="from STL")
    shapes = [library.dimer(R), library.tetrahedron(0.8 * R), library.elongated(0.7 * R),
              by_hand, stone]
    say("template      pebbles  mass (mg)  principal moments (kg m^2)")
    for t in shapes:
        moments = "  ".join(f"{m:.3e}" for m in t.principal_moments(DENSITY))
        say(f"{t.name:13s} {t.count:7d} {1e6 * t.mass(DENSITY):10.3f}  {moments}")
    f = stone.filling
    say(f"from STL: {stone.count} pebbles fill the ellipsoid; surface error {f.surface_error:.3f} "
        f"of the equal-volume radius, pebbles' volume {100 * f.volume_fraction:.0f} % of it")
    return shapes[:3]


def build(comm, cells, shapes) -> World:
    nx, ny, nz = cells
    world = World(Box((0, 0, 0), (nx * SPACING, ny * SPACING, (nz + 1) * SPACING),
                      (True, True, False)), dt=1e-5, skin=0.3 * R, comm=comm)
    add_species(world, youngs_modulus=1e6, poisson_ratio=0.3, density=DENSITY, restitution=0.1,
                friction=0.4)
    rng = np.random.default_rng(5)
    k = np.arange(nx * ny * nz)
    sites = (np.stack([k % nx, (k // nx) % ny, k // (nx * ny)], axis=1) + 0.5) * SPACING
    sites[:, 2] += 0.5 * SPACING
    for s, template in enumerate(shapes):
        at = sites[k % 4 == s]
        q = rng.normal(size=(len(at), 4))
        add_clumps(world, template, at, q / np.linalg.norm(q, axis=1, keepdims=True), 0,
                   velocity=rng.normal(0, 0.1, (len(at), 3)))
    spheres = sites[k % 4 == 3]
    add_particles(world, spheres, R * rng.uniform(0.8, 1.1, len(spheres)), 0,
                  velocity=rng.normal(0, 0.1, (len(spheres), 3)))
    add_wall(world, (0, 0, 0), (0, 0, 1))
    law = HertzMindlinLaw()
    for s in rigid_bodies() + velocity_verlet()[:1]:
        world.add_system(s)
    for s in (NeighborSearch(), Gravity((0, 0, -GRAVITY)), ContactForces(law), WallContacts(law),
              velocity_verlet()[1]):
        world.add_system(s)
    return world


def energy(world) -> float:
    """Kinetic energy of the bodies (translation and rotation) and of the free spheres [J]."""
    b, p = world.bodies, world.particles
    n = b.n_owned
    body = 0.5 * float(np.sum(b.mass[:n] * np.sum(b.velocity[:n] ** 2, axis=1))
                       + np.sum(b.angular_velocity[:n] * b.angular_momentum[:n]))
    free = p.inertia[:p.n_owned] > 0
    sphere = 0.5 * float(np.sum(p.mass[:p.n_owned][free] * np.sum(p.velocity[:p.n_owned][free] ** 2,
                                                                   axis=1))
                         + np.sum(p.inertia[:p.n_owned][free]
                                  * np.sum(p.angular_velocity[:p.n_owned][free] ** 2, axis=1)))
    return observe.sum_of(world, body + sphere)


def main(argv=None) -> int:
    short = short_settings(argv)
    settings = SHORT if short else FULL
    comm = default_comm()
    say = (lambda text: print(text, flush=True)) if comm.rank == 0 else (lambda text: None)
    say(f"clumps ({'short' if short else 'full'} settings)")
    shapes = templates(say)
    world = build(comm, settings["cells"], shapes)
    world.setup()  # each rank keeps its own rows (before it, every rank holds them all)
    steps = int(round(settings["duration"] / world.dt))
    b, p = world.bodies, world.particles
    bodies = observe.sum_of(world, b.n_owned)
    spheres = observe.count(world, p.inertia[:p.n_owned] > 0)
    say(f"{bodies} clumps and {spheres} spheres, dt = {world.dt:.1e} s, {steps} steps")
    say("time (s)  kinetic energy (J)  top of bed (mm)")
    every = steps // settings["reports"]
    for _ in range(settings["reports"]):
        world.run(every)
        top = observe.largest(world, p.position[:p.n_owned, 2] + p.radius[:p.n_owned], empty=0.0)
        e = energy(world)
        say(f"{world.time:8.3f}  {e:18.3e}  {1e3 * top:15.1f}")
    free = p.inertia[:p.n_owned] > 0
    weight = GRAVITY * observe.sum_of(world, float(b.mass[:b.n_owned].sum()
                                                   + p.mass[:p.n_owned][free].sum()))
    floor = -float(world.walls.force[0, 2])
    say(f"weight {weight:.4e} N: bodies M g once each, spheres m g")
    say(f"floor carries {floor:.4e} N ({100 * floor / weight:.1f} % of the weight)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
