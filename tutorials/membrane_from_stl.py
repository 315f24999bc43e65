"""Tutorial: a membrane from your own STL file, clamped at its rim, with grains dropped on it
(docs/tutorials/membrane-stl.md).

Writes a small STL file (a square sheet in millimetres, as a CAD program
would export it), reads it back, validates it, turns it into an elastic
membrane (MSS_patch: the grains touch its triangles), clamps its boundary,
drops grains on it and lets them come to rest in the dimple they make.

    python tutorials/membrane_from_stl.py             # the full settings: 120 grains, 0.5 s
    python tutorials/membrane_from_stl.py --short     # the short settings (CI): 30 grains, 0.25 s
    python tutorials/membrane_from_stl.py --mesh my_sheet.stl --scale 1e-3   # your file, in mm
    mpiexec.mpich -n 2 .venv/bin/python tutorials/membrane_from_stl.py --short

``ECS_DEM_TUTORIAL_SHORT=1`` in the environment selects the short settings
too. Units are SI (the STL file's coordinates times ``--scale`` are metres).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import meshio
import numpy as np

from ecs_dem import Box, World, observe
from ecs_dem.comm import default_comm
from ecs_dem.components.membranes import add_membrane, membrane_vertices
from ecs_dem.components.mesh.io import read_mesh
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.mesh.validation import MeshError, boundary_edges, validate_mesh
from ecs_dem.components.particles import add_particles, create_particle_table, fix_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.io.hdf5_output import Hdf5Output
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.diagnostics import Diagnostics, kinetic_energy
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.membrane.diagnostics import MembraneDiagnostics
from ecs_dem.systems.membrane.patch_contacts import PatchContacts
from ecs_dem.systems.membrane.patch_search import PatchSearch
from ecs_dem.systems.membrane.systems import membrane_snapshot_writer, membrane_systems
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts

FULL = {"grains": 120, "duration": 0.5, "reports": 5}
SHORT = {"grains": 30, "duration": 0.25, "reports": 5}

GRAIN_RADIUS = 2.5e-3   # m
GRAVITY = 9.81          # m/s^2, along -z


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short settings (CI)")
    parser.add_argument("--mesh", default="", help="an open triangulated sheet (STL, OBJ, PLY, "
                        "...); default: write the tutorial's own STL and use it")
    parser.add_argument("--scale", type=float, default=1e-3,
                        help="the mesh file's unit in metres (default 1e-3: millimetres)")
    parser.add_argument("--output", default="output/tutorials/membrane_from_stl.h5")
    args = parser.parse_args(argv)
    args.short = args.short or os.environ.get("ECS_DEM_TUTORIAL_SHORT") == "1"
    return args


def write_sheet_stl(path: Path, side_mm: float = 60.0, cells: int = 15) -> None:
    """A flat square sheet of side `side_mm` millimetres, split into cells x cells squares of
    two triangles each, written as a binary STL file. An STL file stores each triangle with its
    own three corners: the reader (meshio) merges identical corners again, and the
    validation merges corners closer than 1e-9 of the mesh's size."""
    x = np.linspace(-0.5 * side_mm, 0.5 * side_mm, cells + 1)
    xx, yy = np.meshgrid(x, x, indexing="ij")
    points = np.column_stack([xx.ravel(), yy.ravel(), np.zeros(xx.size)])
    i, j = np.meshgrid(np.arange(cells), np.arange(cells), indexing="ij")
    a = (i * (cells + 1) + j).ravel()           # corner (i, j) of each square
    b, c, d = a + (cells + 1), a + (cells + 1) + 1, a + 1
    triangles = np.concatenate([np.column_stack([a, b, c]), np.column_stack([a, c, d])])
    path.parent.mkdir(parents=True, exist_ok=True)
    meshio.write(path, meshio.Mesh(points, [("triangle", triangles)]), file_format="stl",
                 binary=True)


def show_a_rejected_mesh(say) -> None:
    """What validation says of a defective mesh: three triangles on one edge (a fin)."""
    corners = 1e-2 * np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1.0]])
    fin = Mesh(corners, np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4]]))
    try:
        validate_mesh(fin)
    except MeshError as error:  # an InputError: drivers print it and exit with status 2
        say(f"a mesh with a fin is refused: {error}")


def build_world(args, say, comm, output) -> World:
    # 1. Read the file. read_mesh gives the triangles as the file has them, in the file's
    #    units; scaled() converts them to metres.
    raw = read_mesh(args.mesh).scaled(args.scale)
    say(f"read {args.mesh}: {len(raw.vertices)} vertices, {len(raw.triangles)} triangles")

    # 2. Validate: duplicate corners merged, the winding made consistent, and any defect
    #    (a non-manifold edge, a degenerate triangle) an error that names the triangle.
    sheet = validate_mesh(raw)
    rim = np.unique(boundary_edges(sheet))     # vertices on an edge of one triangle only
    lo, hi = sheet.vertices.min(axis=0), sheet.vertices.max(axis=0)
    edge = np.linalg.norm(sheet.vertices[sheet.triangles[:, 1]]
                          - sheet.vertices[sheet.triangles[:, 0]], axis=1)
    say(f"validated: {len(sheet.vertices)} vertices, {len(sheet.triangles)} triangles, "
        f"{rim.size} on the rim; {(hi[0] - lo[0]) * 1e3:.0f} x {(hi[1] - lo[1]) * 1e3:.0f} mm, "
        f"edges {edge.min() * 1e3:.1f}-{edge.max() * 1e3:.1f} mm")
    if rim.size == 0:
        raise SystemExit(f"{args.mesh} is a closed surface: give an open sheet with a rim")

    # 3. Four walls stand on the sheet and keep the grains on it: a square of side 0.8 times
    #    the sheet's smaller width, around its middle. The grains start on a loose lattice
    #    above the sheet, inside the walls.
    centre = 0.5 * (lo + hi)
    half = 0.4 * min(hi[0] - lo[0], hi[1] - lo[1])
    rng = np.random.default_rng(3)
    n = FULL["grains"] if not args.short else SHORT["grains"]
    spacing = 2.4 * GRAIN_RADIUS
    side = max(int(2 * half / spacing) - 1, 1)
    k = np.arange(n)
    position = np.stack([k % side, (k // side) % side, k // side**2], axis=1) * spacing
    position[:, :2] += centre[:2] - 0.5 * (side - 1) * spacing
    position[:, 2] += hi[2] + 3 * GRAIN_RADIUS
    position += rng.uniform(-0.05, 0.05, position.shape) * spacing

    # 4. The world: its box holds the sheet, the room below it for the dimple and the grains.
    size = max(hi[0] - lo[0], hi[1] - lo[1])
    box = Box((lo[0] - 0.1 * size, lo[1] - 0.1 * size, lo[2] - 0.5 * size),
              (hi[0] + 0.1 * size, hi[1] + 0.1 * size, position[:, 2].max() + 4 * GRAIN_RADIUS))
    E_grain, rho_grain = 5e6, 2500.0  # Pa, kg/m^3: soft grains for a larger time step
    dt = 0.15 * float(rayleigh_time(GRAIN_RADIUS, rho_grain, E_grain, 0.3))
    world = World(box, dt=dt, skin=0.3 * GRAIN_RADIUS, comm=comm)

    # 5. Materials: the grains and the rubber of the sheet. Grain-sheet contacts mix the two.
    grain = add_species(world, youngs_modulus=E_grain, poisson_ratio=0.3, density=rho_grain,
                        restitution=0.3, friction=0.5)
    rubber = add_species(world, youngs_modulus=1.25e6, poisson_ratio=1 / 3, density=1100.0,
                         restitution=0.3, friction=0.5)

    # 6. The membrane: its vertices become rows of the particle table (their mass is the
    #    sheet's, spread over them), its edges springs (stiffness from E and the thickness d),
    #    its pairs of neighbouring triangles hinges that resist bending. The particle table
    #    comes first so that the membrane's vertices take the first rows.
    create_particle_table(world)
    add_membrane(world, sheet, youngs_modulus=1.25e6, thickness=1e-3, density=1100.0,
                 damping_ratio=0.3, bending_stiffness=1e-5, species=rubber)

    # 7. Clamp the rim and the sheet under and outside the walls: those vertices are fixed
    #    (they carry forces but never move). A wall is a half-space: a free vertex behind it
    #    would be pushed out at once.
    outside = membrane_vertices(world, 0, where=lambda x: np.max(
        np.abs(x[:, :2] - centre[:2]), axis=1) >= half - 0.5e-3)
    fix_particles(world, np.union1d(membrane_vertices(world, 0, indices=rim), outside))
    for axis in (0, 1):
        for sign in (1.0, -1.0):
            point, normal = centre.copy(), np.zeros(3)
            point[axis], normal[axis] = centre[axis] - sign * half, sign
            add_wall(world, point, normal)  # a point on the wall and its normal, into the box
    add_particles(world, position, GRAIN_RADIUS, grain)

    # 8. The systems: grain-grain contacts, the search for grain-triangle candidates and their
    #    contacts (the same Hertz-Mindlin law), and the membrane's own forces.
    law = HertzMindlinLaw()
    first_half, second_half = velocity_verlet()
    contacts, patches, walls = ContactForces(law), PatchContacts(law), WallContacts(law)
    for system in (first_half, NeighborSearch(), PatchSearch(), Gravity((0, 0, -GRAVITY)),
                   contacts, patches, walls, *membrane_systems(), second_half):
        world.add_system(system)
    world.add_system(Diagnostics(500, output, (contacts, patches, walls)))
    world.add_system(MembraneDiagnostics(500, output))
    world.add_system(membrane_snapshot_writer(output, 2000))  # grains and the sheet's triangles
    return world


def main(argv=None) -> int:
    args = parse(argv)
    comm = default_comm()
    say = print if comm.rank == 0 else (lambda *a, **k: None)
    settings = SHORT if args.short else FULL
    output_path = Path(args.output)
    if not args.mesh:  # write the tutorial's own STL first (one rank writes, all read)
        args.mesh = str(output_path.with_name("sheet_mm.stl"))
        if comm.rank == 0:
            write_sheet_stl(Path(args.mesh))
        comm.barrier()
    say(f"membrane_from_stl ({'short' if args.short else 'full'} settings)")
    show_a_rejected_mesh(say)
    with Hdf5Output(output_path, config={"mesh": args.mesh, **settings}, comm=comm) as output:
        world = build_world(args, say, comm, output)
        p = world.particles
        sheet = p.membrane >= 0                          # before set-up: every rank holds all
        rest_height = float(p.position[sheet, 2].min())  # the flat sheet's height
        steps = int(round(settings["duration"] / world.dt))
        say(f"{settings['grains']} grains of radius {GRAIN_RADIUS * 1e3} mm, dt = {world.dt:.3g} s, "
            f"{steps} steps")
        say(f"{'time (s)':>8} {'grains KE (J)':>14} {'dimple depth (mm)':>18}")
        done = 0
        for k in range(1, settings["reports"] + 1):
            chunk = steps * k // settings["reports"] - done
            world.run(chunk)
            done += chunk
            grains = p.membrane < 0
            ke = kinetic_energy(world, grains)
            lowest = observe.smallest(world, p.position[:, 2], where=~grains)
            say(f"{world.time:8.3f} {ke:14.3e} {(rest_height - lowest) * 1e3:18.2f}")

    # At rest the clamped vertices and the walls (by friction) carry the weight of what can
    # move: the grains and the free part of the sheet (gravity does not act on fixed rows).
    grains = p.membrane < 0
    weight = observe.total(world, p.mass, where=~p.fixed) * GRAVITY
    clamp = -observe.total(world, p.force[:, 2], where=p.fixed)
    by_walls = -float(world.walls.force[:, 2].sum())
    below = observe.count(world, grains & (p.position[:, 2] < rest_height - 0.05))
    say(f"the clamped vertices carry {clamp:.4f} N and the walls {by_walls:.4f} N: together "
        f"{clamp + by_walls:.4f} N against a weight of {weight:.4f} N")
    say(f"grains fallen through the sheet: {below}")
    say(f"output: {output_path} (open {output_path.with_suffix('.xdmf')} in ParaView)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
