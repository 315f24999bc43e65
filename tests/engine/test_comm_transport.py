"""The MPI transport defaults: set before MPI_Init in a launched rank, never over the user's."""
import os
import shutil
import subprocess

import pytest

from ecs_dem.comm import TRANSPORT_DEFAULTS, apply_transport_defaults
from helpers import PYTHON


def test_defaults_fill_only_what_the_user_left_unset():
    environ = {"UCX_RNDV_THRESH": "4k", "OTHER": "x"}
    assert apply_transport_defaults(environ) == {}
    assert environ == {"UCX_RNDV_THRESH": "4k", "OTHER": "x"}
    environ = {"OTHER": "x"}
    assert apply_transport_defaults(environ) == TRANSPORT_DEFAULTS
    assert environ == dict(TRANSPORT_DEFAULTS, OTHER="x")


SCRIPT = """
import os, sys
from ecs_dem.comm import default_comm
comm = default_comm()
assert comm.size == 2, comm.size
print(comm.rank, os.environ.get("UCX_RNDV_THRESH"), flush=True)
"""


@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="needs Debian's MPICH")
@pytest.mark.parametrize("user", [None, "4k"])
def test_a_launched_rank_starts_mpi_with_the_defaults_or_the_users_setting(user):
    env = {k: v for k, v in os.environ.items() if k not in TRANSPORT_DEFAULTS}
    if user is not None:
        env["UCX_RNDV_THRESH"] = user
    res = subprocess.run(["mpiexec.mpich", "-n", "2", PYTHON, "-c", SCRIPT], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    expected = user or TRANSPORT_DEFAULTS["UCX_RNDV_THRESH"]
    assert sorted(res.stdout.split("\n")[:2]) == [f"0 {expected}", f"1 {expected}"], res.stdout
