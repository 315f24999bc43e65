"""Records of mesh walls: their force and torque as time series, and the surface with its
per-triangle contacts, work and wear in the HDF5 snapshots, referenced by the XDMF sidecar.

Expected values are derived here: a grain resting on a flat wall pushes it with its weight,
at the grain's foot (torque about the reference point = lever x force); the file's per-
triangle data and vertices equal the tables' rows, matched by gid."""
import math

import h5py
import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.mesh_walls import add_mesh_wall
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.diagnostics import Diagnostics
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts
from ecs_dem.systems.mesh_wall.records import MeshWallSnapshotWriter
from ecs_dem.systems.mesh_wall.wear import MeshWear

R, G = 2e-3, 9.81


def resting_grain(output):
    world = World(Box((-0.02, -0.02, -0.01), (0.02, 0.02, 0.01)), dt=2e-6, skin=2e-4)
    grain = add_species(world, youngs_modulus=5e6, poisson_ratio=0.3, density=2500.0,
                        restitution=0.1, friction=0.5)
    add_mesh_wall(world, flat_sheet(2e-3, width=0.03, height=0.03), reference=(0.0, 0.0, 0.0))
    add_particles(world, np.array([[0.0043, -0.0021, R]]), R, grain,
                  velocity=np.array([[0.05, 0.0, 0.0]]))   # slides: frictional work
    first, second = velocity_verlet()
    for s in (first, Gravity((0.0, 0.0, -G)), MeshWallContacts(HertzMindlinLaw()), second,
              MeshWear(1e-9, factor=1.0, every=500),
              SnapshotWriter(output, every=2000), MeshWallSnapshotWriter(output, every=2000),
              Diagnostics(every=500, output=output)):
        world.add_system(s)
    return world


def test_force_torque_series_and_surface_records(tmp_path):
    path = tmp_path / "run.h5"
    with Hdf5Output(path) as output:
        world = resting_grain(output)
        world.run(8000)
    p = world.particles
    weight = float(p.mass[0]) * G
    with h5py.File(path, "r") as f:
        ts = f["timeseries"]
        force, torque = ts["mesh_wall_force"][:], ts["mesh_wall_torque"][:]
        assert force.shape == (17, 1, 3) and torque.shape == (17, 1, 3)  # steps 0, 500, ..., 8000
        # at rest at the end: the wall carries the weight, at the grain's foot
        assert force[-1, 0] == pytest.approx([0.0, 0.0, -weight], abs=1e-3 * weight)
        foot = p.position[0] - np.array([0.0, 0.0, R])
        assert torque[-1, 0] == pytest.approx(np.cross(foot, force[-1, 0]), abs=1e-3 * weight * R)
        snap = f["snapshots/000008000"]
        assert "position" in snap and "gid" in snap                   # the particles ...
        mesh = snap["mesh_walls"]                                     # ... and the walls beside
        verts, tri = world.mesh_vertices, world.mesh_triangles
        vorder = np.argsort(mesh["gid"][:])
        assert np.array_equal(mesh["gid"][:][vorder], np.sort(verts.owned("gid")))
        by_gid = np.argsort(verts.owned("gid"))
        assert np.array_equal(mesh["position"][:][vorder], verts.owned("position")[by_gid])
        assert np.array_equal(mesh["wear_depth"][:][vorder], verts.owned("wear_depth")[by_gid])
        # triangles are rows of the subgroup's position: the same vertex gids as the table
        torder = np.argsort(mesh["triangle_gid"][:])
        tby = np.argsort(tri.owned("gid"))
        assert np.array_equal(mesh["gid"][:][mesh["triangles"][:][torder]],
                              tri.owned("vertices")[tby])
        for name in ("contacts", "normal_work", "friction_work", "wear_volume"):
            assert np.array_equal(mesh[f"triangle_{name}"][:][torder], tri.owned(name)[tby])
        work = mesh["triangle_friction_work"][:]
        assert work.sum() > 0 and np.count_nonzero(work) < work.size  # a track, not all
        area = 2e-3 ** 2 / 2
        depth = mesh["triangle_wear_depth"][:]
        assert depth == pytest.approx(mesh["triangle_wear_volume"][:] / area, rel=1e-9)
        assert depth.max() > 0
    xdmf = path.with_suffix(".xdmf").read_text()
    assert '<Grid Name="mesh_walls" GridType="Collection" CollectionType="Temporal">' in xdmf
    for name in ("contacts", "normal_work", "friction_work", "wear_volume", "wear_depth"):
        assert (f'<Attribute Name="{name}" AttributeType="Scalar" Center="Cell">'
                f'<DataItem Dimensions="{work.size}"') in xdmf
        assert f"run.h5:/snapshots/000008000/mesh_walls/triangle_{name}</DataItem>" in xdmf
    assert 'Name="wear_depth" AttributeType="Scalar" Center="Node"' in xdmf
    assert "run.h5:/snapshots/000008000/mesh_walls/triangles</DataItem>" in xdmf
    # the particles' collection does not take the walls' datasets as its own
    particles = xdmf.split('<Grid Name="mesh_walls"')[0]
    assert "mesh_walls/" not in particles.split('<Grid Name="particles"')[1]


def test_a_continued_file_keeps_the_walls_surface_in_the_sidecar(tmp_path):
    path = tmp_path / "run.h5"
    with Hdf5Output(path) as output:
        resting_grain(output).run(4000)
    with Hdf5Output(path, resume_step=2000) as output:   # as a restart from step 2000 does
        assert [s[0] for s in output.snapshots] == [0, 2000]
        assert "mesh_walls/triangle_friction_work" in output.snapshots[-1][3]
