"""run/friction.py on several ranks: the grain is owned by one rank, and every rank must read
its force (a collective), where each rank read its own rows and all but the owner failed.

The grids cut the cube in z first, at the membrane's plane z = 0: on 2 ranks one rank owns
the sheet and the grain and the other only ghosts of them; on 4 (1 x 2 x 2) the y cut also
splits the sheet between two owners. The samples must equal a 1-rank run's (each rank
computes it) to round-off, and the kinematic sheet's analytic forces must hold: F_n = load,
F_t = mu F_n.
"""
import functools

import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from helpers import load_driver

pytestmark = pytest.mark.mpi(min_size=2)

# a short drag: 1,000 steps of settling (the test asserts no settled value), 200 of run-in
# and 1,600 sampled at 1e-6 s (under oversubscription every step waits on its exchanges,
# so the step count sets this test's time)
SHORT = dict(sheet=0.012, settle=0.001, run_in=0.0002, length=0.0004, speed=0.25, samples=20)


@pytest.mark.two_ranks
def test_friction_on_ranks_matches_one_rank(monkeypatch):
    friction = load_driver("friction")
    cfg = dict(friction.DEFAULTS, **SHORT)
    comm = default_comm()
    assert comm.size >= 2
    parallel = friction.run_case(cfg, "patch", "kinematic", "edge")
    monkeypatch.setattr(friction, "World", functools.partial(friction.World, comm=SerialComm()))
    serial = friction.run_case(cfg, "patch", "kinematic", "edge")
    a, b = np.array(parallel["rows"]), np.array(serial["rows"])
    assert a.shape == b.shape and a.shape[0] == SHORT["samples"]
    scale = np.abs(b).max(axis=0)
    assert np.all(np.abs(a - b) <= 1e-9 * scale), np.abs(a - b).max(axis=0) / scale
    # the same samples on every rank
    assert comm.allgather_object(a.tobytes()) == [a.tobytes()] * comm.size
    # physics, not only agreement: the load is carried and the grain slides at mu
    assert parallel["fn_mean"] == pytest.approx(cfg["load"], rel=1e-2)  # not quite settled
    assert parallel["ratio"] == pytest.approx(1.0, abs=1e-2)
    assert a[-1, 0] > 0.9 * cfg["length"]  # it was dragged the whole length
