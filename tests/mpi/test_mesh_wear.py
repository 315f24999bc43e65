"""Wear of a mesh wall that crosses rank boundaries: the same worn mesh on 1, 2 and 4 ranks,
and a restart with a worn mesh that continues bit for bit.

The wall is a tilted sheet spanning the box (periodic along x), so every rank holds part of
it and the wear track crosses the rank boundaries. With a prescribed work map (each owned
triangle gains its own work per step, whatever rank owns it) every rank count gives the same
worn vertices to 1e-12 of the depth; with grains sliding on a translating wall (the work from
the contact system) to the agreement of the forces themselves, 1e-9.
"""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.components.mesh import Mesh
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.mesh_walls import add_mesh_wall
from ecs_dem.components.particles import create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.io.checkpoint import restart, write_checkpoint
from ecs_dem.system import Stage, System
from ecs_dem.systems.mesh_wall.wear import MeshWear
from mpi_scenarios import gather

pytestmark = pytest.mark.mpi(min_size=2)


def _test_module(relative: str):
    """A test module beside this one's folder, imported for its helpers (no test runs)."""
    path = Path(__file__).parents[1] / relative
    spec = importlib.util.spec_from_file_location(f"wear_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
L = 0.03      # m, half the box
TILT = 0.15   # rad, about x
K = 1e-9      # m^3/J
VERTEX_FIELDS = ("position", "x0", "wear_depth")


class Rubbing(System):
    """Each owned triangle gains `rate[gid - first]` J of frictional work per step."""

    stage = Stage.FORCES
    writes = {"mesh_triangles": ("friction_work",)}

    def __init__(self, rate, first):
        self.rate, self.first = rate, first

    def run(self, world):
        if world.setup_phase:
            return
        tri = world.mesh_triangles
        tri.owned("friction_work")[:] += self.rate[tri.owned("gid") - self.first]


def rubbed_sheet(comm):
    """A fixed tilted sheet; a band 1 cm wide along x carries 50 J/m^2 per step."""
    world = World(Box((-L, -L, -0.02), (L, L, 0.02), periodic=(True, False, False)), dt=1e-6,
                  skin=2e-4, comm=comm)
    add_species(world, youngs_modulus=5e6, poisson_ratio=0.3, density=2500.0, restitution=0.5,
                friction=0.5)
    create_particle_table(world)
    sheet = flat_sheet(3e-3, width=2 * L - 1e-3, height=2 * L - 4e-3)
    wall = add_mesh_wall(world, sheet, rotate=((1.0, 0.0, 0.0), TILT))
    centroid_y = sheet.vertices[sheet.triangles].mean(axis=1)[:, 1]
    rate = np.where(np.abs(centroid_y - 2e-3) < 5e-3, 50.0, 0.0) * Mesh(
        sheet.vertices, sheet.triangles).areas
    world.add_system(Rubbing(rate, int(world.mesh_walls.first_triangle[wall])))
    wear = world.add_system(MeshWear(K, factor=2.0, every=100))
    return world, wear, rate


def test_prescribed_wear_across_ranks_matches_one_rank():
    (par, wear, rate), (ser, _, _) = rubbed_sheet(default_comm()), rubbed_sheet(SerialComm())
    par.run(300)
    ser.run(300)
    a = gather(par, "mesh_vertices", VERTEX_FIELDS)
    b = gather(ser, "mesh_vertices", VERTEX_FIELDS)
    assert a.keys() == b.keys()
    depth = max(float(v[2]) for v in b.values())
    # three updates of 100 steps: the depth inside the track is f k w t, 2 K 50 J/m^2 300
    assert depth == pytest.approx(2.0 * K * 50.0 * 300, rel=1e-3)
    for gid, values in b.items():
        for name, x, y in zip(VERTEX_FIELDS, a[gid], values):
            assert np.max(np.abs(x - y)) <= 1e-12 * depth, (gid, name)
    verts = par.mesh_vertices
    assert par.comm.max(verts.n_owned) < len(b), "a rank owns the whole mesh"
    worn = par.comm.sum(float(par.mesh_triangles.owned("wear_volume").sum()))
    assert worn == pytest.approx(2.0 * K * rate.sum() * 300, rel=1e-12)
    # the track crosses the ranks: vertices of more than one rank wore
    assert par.comm.sum(int(np.any(verts.owned("wear_depth") > 0))) > 1


def sliding_grains(comm, every=50):
    """The grains of test_mesh_walls dropped on its tilted sheet, which translates along x
    under them, worn every 50 steps (the friction work from the contact system)."""
    world = _test_module("mpi/test_mesh_walls.py").grains_on_a_mesh_wall(comm)
    world.add_system(MeshWear(1e-7, factor=10.0, every=every))
    return world


def test_wear_by_sliding_grains_across_ranks_matches_one_rank():
    par, ser = sliding_grains(default_comm()), sliding_grains(SerialComm())
    par.run(400)
    ser.run(400)
    a = gather(par, "mesh_vertices", VERTEX_FIELDS)
    b = gather(ser, "mesh_vertices", VERTEX_FIELDS)
    depth = max(float(v[2]) for v in b.values())
    assert depth > 0, "nothing wore: the test exercised little"
    for gid, values in b.items():
        for name, x, y in zip(VERTEX_FIELDS, a[gid], values):
            assert np.max(np.abs(x - y)) <= 1e-9 * depth, (gid, name)
    # the removed volume is f k W over the work worn so far, summed over the ranks
    tri = par.mesh_triangles
    worn = par.comm.sum(float(tri.owned("wear_volume").sum()))
    work = par.comm.sum(float(tri.owned("worn_work").sum()))
    assert work > 0 and worn == pytest.approx(10.0 * 1e-7 * work, rel=1e-12)


@pytest.mark.two_ranks
@pytest.mark.parametrize("ranks", ["1", "all"])
def test_restart_with_a_worn_mesh_is_bit_for_bit(tmp_path_factory, ranks):
    """200 steps (4 wear updates), a checkpoint, 200 more == the checkpoint restarted, then 200
    steps: grains, worn vertices and the triangles' records, on one rank and on all."""
    comm = default_comm() if ranks == "all" else SerialComm()
    world_comm = default_comm()
    folder = world_comm.world.bcast(str(tmp_path_factory.mktemp("wear"))
                                    if world_comm.rank == 0 else None)
    path = f"{folder}/worn.h5" if ranks == "all" else f"{folder}/worn_{world_comm.rank}.h5"
    runs = [sliding_grains(comm), sliding_grains(comm)]
    runs[0].run(200)
    write_checkpoint(runs[0], path)
    restart(runs[1], path)
    for world in runs:
        world.run(200)
    assert max(float(v[0]) for v in gather(runs[0], "mesh_vertices", ("wear_depth",)).values()) > 0
    for table, fields in (("particles", ("position", "velocity", "angular_velocity")),
                          ("mesh_vertices", VERTEX_FIELDS),
                          ("mesh_triangles", ("friction_work", "worn_work", "wear_volume"))):
        first, second = (gather(world, table, fields) for world in runs)
        assert first.keys() == second.keys()
        for gid, values in first.items():
            for name, x, y in zip(fields, values, second[gid]):
                assert np.array_equal(x, y), (table, gid, name)


@pytest.mark.two_ranks
def test_a_grain_sliding_over_a_mesh_wall_removes_k_f_s_on_several_ranks():
    """The acceptance of wear (tests/systems/mesh_wall/test_wear.py) with the grain crossing
    the ranks' boundaries, and the same worn mesh as on one rank."""
    import wear_scenarios

    checks = _test_module("systems/mesh_wall/test_wear.py")
    par = wear_scenarios.sliding_grain(default_comm())
    checks.check_sliding_grain(par)
    ser = wear_scenarios.sliding_grain(SerialComm())
    assert np.array_equal(par["vertex_gid"], ser["vertex_gid"])
    scale = ser["vertex_depth"].max()
    assert np.max(np.abs(par["vertex_depth"] - ser["vertex_depth"])) <= 1e-9 * scale
