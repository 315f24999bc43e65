"""MC-DEM on several ranks: the same forces as on one rank, and restart bit for bit.

A grain's contacts may be evaluated on other ranks (pairs anchored to a
partner with a lower gid) and its partner's contacts may live on a third;
the per-contact normal forces and surface displacements travel by the
engine's halo policies (FORWARD per-pair state, REVERSE per-pair
displacements). The compressed packing of tests/multicontact_scenarios.py is
periodic in x and y, so every rank boundary cuts through it; it is run here
and with SerialComm, and compared by gid and gid pair.
"""
import numpy as np
import pytest

from helpers import straight_and_resumed
from mpi_scenarios import gather, gather_pair_data, owners
from multicontact_scenarios import compressed_packing

from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.systems.contact.hertz_saturated import SaturatedHertzLaw
from ecs_dem.systems.multicontact.systems import GAMMA_MCDEM

pytestmark = pytest.mark.mpi(min_size=2)

STEPS = 50


def build(comm, iterations=0):
    return compressed_packing(comm, SaturatedHertzLaw(), GAMMA_MCDEM, n_side=8, layers=5,
                              top_speed=0.05, iterations=iterations)


@pytest.mark.parametrize("iterations", [0, 2])
def test_forces_do_not_depend_on_the_number_of_ranks(iterations):
    """After 50 steps of compression (four neighbour rebuilds), forces, positions, wall-contact
    forces and every pair's normal force and surface displacements agree with the 1-rank run to
    1e-9 of the largest value; pairs whose two grains live on different ranks carry non-zero
    displacements on both sides (computed on two ranks, summed by the reverse reduction).

    (Round-off differences grow: the friction's direction follows slip velocities near zero.
    Measured here: 6e-13 of the largest net force after 50 steps on 4 ranks, 1e-10 after 60.)
    With 2 in-step iterations (World.add_force_iteration): each extra pass exchanges the
    per-pair state and displacements like the step's own."""
    par, ser = build(default_comm(), iterations), build(SerialComm(), iterations)
    rebuilds = par.domain.rebuild_count
    par.run(STEPS)
    ser.run(STEPS)
    assert par.domain.rebuild_count > rebuilds + 1
    fields = ("position", "force", "torque", "mc_wall_force")
    a, b = gather(par, fields=fields), gather(ser, fields=fields)
    assert a.keys() == b.keys()
    for k, name in enumerate(fields):
        scale = max(float(np.abs(v[k]).max()) for v in b.values())
        worst = max(float(np.abs(a[g][k] - b[g][k]).max()) for g in b)
        assert worst <= 1e-9 * scale, (name, worst, scale)
    pa = gather_pair_data(par, ("mc_force", "mc_offset"))
    pb = gather_pair_data(ser, ("mc_force", "mc_offset"))
    touching = {key for key, v in pb.items() if v[0] != 0.0}
    assert len(touching) > 500
    assert touching == {key for key, v in pa.items() if v[0] != 0.0}
    for k in range(2):
        scale = max(float(np.abs(v[k]).max()) for v in pb.values())
        worst = max(float(np.abs(pa[key][k] - pb[key][k]).max()) for key in touching)
        assert worst <= 1e-9 * scale, (k, worst, scale)
    rank = owners(par)
    across = [key for key in touching if rank[key[0]] != rank[key[1]]
              and np.all(pa[key][1] != 0.0)]
    assert len(across) > 20, "no contact between grains of two ranks: the test exercised nothing"
    assert par.comm.sum(par.pairs.n_ghost) > 0


@pytest.mark.two_ranks
def test_restart_on_the_same_ranks_continues_bit_for_bit(tmp_path):
    """Checkpoint half-way, continue; restart from it and continue: every particle and pair value,
    the lagged MC-DEM state included, equals the uninterrupted run's bit for bit."""
    path = default_comm().broadcast_object(str(tmp_path / "ck.h5"))  # rank 0's directory
    straight, resumed = straight_and_resumed(lambda: build(default_comm()), path, STEPS // 2,
                                             STEPS // 2)
    fields = ("position", "velocity", "force", "torque", "mc_wall_force", "mc_wall_offset")
    a, b = gather(straight, fields=fields), gather(resumed, fields=fields)
    assert a.keys() == b.keys()
    for g in a:
        for x, y in zip(a[g], b[g]):
            np.testing.assert_array_equal(x, y)
    pa = gather_pair_data(straight, ("mc_force", "mc_offset", "mc_listed"))
    pb = gather_pair_data(resumed, ("mc_force", "mc_offset", "mc_listed"))
    assert pa.keys() == pb.keys()
    for key in pa:
        for x, y in zip(pa[key], pb[key]):
            np.testing.assert_array_equal(x, y)
