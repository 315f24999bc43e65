"""The contact network of a snapshot written collectively: each contact once, on any rank count."""
import h5py
import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from contact_network import force_balance
from mpi_scenarios import dense_bed

pytestmark = pytest.mark.mpi(min_size=2)
FIELDS = ("gid", "position", "velocity", "radius", "mass", "force")


def _pairs(path, step):
    with h5py.File(path, "r") as f:
        c = f[f"snapshots/{step:09d}/contacts"]
        i, j, force = c["i"][:], c["j"][:], c["force"][:]
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    force = np.where((i == lo)[:, None], force, -force)  # the force on the lower gid
    order = np.lexsort((hi, lo))
    return lo[order], hi[order], force[order]


@pytest.mark.parametrize("newton", [False, True])
def test_contact_network_on_several_ranks_matches_one_rank(tmp_path, newton):
    comm = default_comm()
    folder = comm.broadcast_object(str(tmp_path))
    paths = {}
    for name, c in (("par", comm), ("one", SerialComm())):
        world = dense_bed(c, n_side=8, layers=4, newton=newton)
        paths[name] = f"{folder}/{name}{comm.rank if name == 'one' else ''}.h5"
        out = Hdf5Output(paths[name], None, c)
        world.add_system(SnapshotWriter(out, 25, fields=FIELDS, contacts=True))
        world.run(50)
        out.close()
    comm.barrier()
    for step in (0, 25, 50):
        error, pairs, walls = force_balance(paths["par"], step)
        assert error < 1e-12 and pairs > 200 and walls > 10
        a, b = _pairs(paths["par"], step), _pairs(paths["one"], step)
        np.testing.assert_array_equal(a[0], b[0])  # every pair once, none missing
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_allclose(a[2], b[2], rtol=0, atol=1e-9 * np.abs(b[2]).max())
