"""A snapshot's contact network (``SnapshotWriter(contacts=True)``) accounts for every force."""
import h5py
import numpy as np
import pytest

from ecs_dem.comm import SerialComm
from ecs_dem.errors import InputError
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from contact_network import force_balance, geometry_errors
from mpi_scenarios import dense_bed

FIELDS = ("gid", "position", "velocity", "radius", "mass", "force")


@pytest.mark.parametrize("newton", [False, True])
def test_written_contacts_sum_to_each_particles_force(tmp_path, newton):
    world = dense_bed(SerialComm(), n_side=6, layers=4, newton=newton)
    out = Hdf5Output(tmp_path / "run.h5", None)
    world.add_system(SnapshotWriter(out, 20, fields=FIELDS, contacts=True))
    world.run(40)
    out.close()
    for step in (0, 20, 40):
        error, pairs, walls = force_balance(tmp_path / "run.h5", step)
        assert error < 1e-12 and pairs > 100 and walls > 10
    b_err, perp = geometry_errors(tmp_path / "run.h5", 40)
    assert b_err == 0.0 and perp < 1e-12
    with h5py.File(tmp_path / "run.h5", "r") as f:
        b = f["snapshots/000000040/boundary_contacts"]
        assert list(b.attrs["sources"]) == ["WallContacts(hertz_mindlin)"]
        assert np.all(b["partner"][:] == 0) and np.all(b["source"][:] == 0)
        # the floor's contact points lie on the floor, within the overlap
        assert np.abs(b["contact_point"][:, 2]).max() < 0.02 * 1e-3


def test_contacts_off_leaves_the_run_and_the_file_as_they_were(tmp_path):
    runs = []
    for contacts in (False, True):
        world = dense_bed(SerialComm(), n_side=6, layers=4)
        out = Hdf5Output(tmp_path / f"run{contacts}.h5", None)
        world.add_system(SnapshotWriter(out, 7, fields=FIELDS, contacts=contacts))
        world.run(30)
        out.close()
        runs.append(world.particles.owned("position").copy())
        with h5py.File(tmp_path / f"run{contacts}.h5", "r") as f:
            assert ("contacts" in f["snapshots/000000028"]) == contacts
    np.testing.assert_array_equal(runs[0], runs[1])


def test_contacts_without_a_contact_system_is_refused(tmp_path):
    from ecs_dem import Box, World
    from ecs_dem.components.particles import add_particles
    from ecs_dem.components.species import add_species

    world = World(Box((0, 0, 0), (1, 1, 1)), dt=1e-6)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    add_particles(world, np.full((1, 3), 0.5), np.array([0.01]), 0)
    out = Hdf5Output(tmp_path / "run.h5", None)
    world.add_system(SnapshotWriter(out, 5, contacts=True))
    with pytest.raises(InputError, match="no contact system"):
        world.run(1)
    out.close(failed=True)


def test_a_contact_system_without_objects_writes_an_empty_group(tmp_path):
    from mpi_scenarios import periodic_gas
    from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
    from ecs_dem.systems.walls.contacts import WallContacts

    world = periodic_gas(SerialComm(), n=64)
    world.add_system(WallContacts(HertzMindlinLaw(), optional=True))  # the world has no walls
    out = Hdf5Output(tmp_path / "gas.h5", None)
    world.add_system(SnapshotWriter(out, 10, fields=FIELDS, contacts=True))
    world.run(10)
    out.close()
    with h5py.File(tmp_path / "gas.h5", "r") as f:
        b = f["snapshots/000000010/boundary_contacts"]
        assert b["i"].shape == (0,) and b["force"].shape == (0, 3)
        assert f["snapshots/000000010/contacts/branch"].shape[1] == 3
