"""Per-element data and row references across ranks (ecs_dem/references.py, neighbour carry-over).

* per-pair data of several dtypes (tests/mpi_scenarios.ContactAge) follows its pairs through
  migration and load balancing: the same values as on one rank;
* ghost pair rows carry correct local rows, and the incidence list of an owned particle holds
  each of its pairs once, wherever the pair is evaluated;
* triangles whose vertices live on different ranks resolve their rows, and a snapshot writes
  their connectivity as file rows that point at the right gids.
"""
import h5py
import numpy as np
import pytest

from ecs_dem import Field, Halo, Stage, System, Table
from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from mpi_scenarios import gather_pair_data, pour, spring_net, with_contact_age

pytestmark = pytest.mark.mpi(min_size=2)


def test_per_pair_data_follows_migration_as_on_one_rank():
    par = with_contact_age(pour(default_comm(), balance_every=100))
    ser = with_contact_age(pour(SerialComm(), balance_every=100))
    par.run(1200)
    ser.run(1200)
    a, b = gather_pair_data(par), gather_pair_data(ser)
    touching = {k for k, v in b.items() if v[0] > 0}
    assert len(touching) > 100 and max(int(b[k][0]) for k in touching) > 50
    assert {k for k, v in a.items() if v[0] > 0} == touching
    for k in touching:
        assert int(a[k][0]) == int(b[k][0]) and np.array_equal(a[k][2], b[k][2])
        np.testing.assert_allclose(a[k][1], b[k][1], rtol=0, atol=1e-12)
    assert par.domain.decomposition.balance_count > 0
    moved = par.comm.sum(par.domain.rebuild_count)
    assert moved > 20


class ReadsPairGhosts(System):
    stage = Stage.FORCES
    reads_ghosts = {"pairs": ("gid_i", "gid_j")}

    def run(self, world):
        pass


def test_ghost_pair_rows_and_incidence_on_several_ranks():
    par = pour(default_comm(), balance_every=0)
    par.add_system(ReadsPairGhosts())
    par.run(300)
    p, q = par.particles, par.pairs
    assert par.comm.sum(q.n_ghost) > 0
    gid = p.with_ghosts("gid")
    i, j = q.with_ghosts("i"), q.with_ghosts("j")
    np.testing.assert_array_equal(gid[i], q.with_ghosts("gid_i"))
    present = j >= 0
    np.testing.assert_array_equal(gid[j[present]], q.with_ghosts("gid_j")[present])
    # each owned particle's list holds its pairs once: count them against a gather of all pairs
    start, items = par.incident_rows("pairs")
    counts = {int(g): int(start[r + 1] - start[r]) for r, g in enumerate(p.gid)}
    everywhere = {}
    for part in par.comm.world.allgather(list(zip(q.gid_i.tolist(), q.gid_j.tolist()))):
        for a, b in part:
            everywhere[a] = everywhere.get(a, 0) + 1
            everywhere[b] = everywhere.get(b, 0) + 1
    for g, c in counts.items():
        assert c == everywhere.get(g, 0), g


def _net_with_triangles(comm, n=16):
    """spring_net's periodic triangular lattice with its triangles as a table of gids."""
    world = spring_net(comm, n)
    gid = np.arange(n * n)
    i, j = gid % n, gid // n
    right = (i + 1) % n + j * n
    up = (i + (j % 2)) % n + ((j + 1) % n) * n
    table = Table("triangles", [Field("vertices", np.int64, (3,), Halo.FORWARD, -1),
                                Field("rows", np.int32, (3,), Halo.LOCAL, -1)],
                  anchor=("particles", "vertices"), references={"rows": "vertices"})
    world.add_table(table).append(n * n, vertices=np.stack([gid, right, up], axis=1))
    return world


def test_triangles_across_ranks_resolve_rows_and_snapshot_connectivity(tmp_path_factory):
    comm = default_comm()
    base = comm.world.bcast(str(tmp_path_factory.mktemp("conn")) if comm.rank == 0 else None)
    world = _net_with_triangles(comm)
    out = Hdf5Output(f"{base}/net.h5", comm=comm)
    world.add_system(SnapshotWriter(out, 5, fields=("gid", "position"),
                                    connectivity={"triangles": ("triangles", "vertices")}))
    world.run(10)
    out.close()
    t, p = world.triangles, world.particles
    np.testing.assert_array_equal(p.with_ghosts("gid")[t.rows], t.vertices)
    owners = np.array(comm.world.allgather(p.gid.tolist()), dtype=object)
    rank_of = {g: r for r, gs in enumerate(owners) for g in gs}
    split = comm.sum(sum(len({rank_of[int(g)] for g in tri}) > 1 for tri in t.vertices))
    assert split > 0, "no triangle spans two ranks: the test exercised nothing"
    everything = np.concatenate(comm.world.allgather(t.vertices))
    with h5py.File(f"{base}/net.h5", "r") as f:
        g = f["snapshots/000000010"]
        tri_gids = g["gid"][:][g["triangles"][:]]
    assert sorted(map(tuple, tri_gids)) == sorted(map(tuple, everything))
