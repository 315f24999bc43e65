"""The MPI transport defaults: set before MPI_Init in a rank of a single-node job, never over
the user's setting, never across nodes."""
import os
import shutil
import subprocess

import pytest

from ecs_dem.comm import TRANSPORT_DEFAULTS, apply_transport_defaults, single_node_job
from helpers import PYTHON


ONE_NODE = {"MPI_LOCALNRANKS": "2", "PMI_SIZE": "2"}


def test_defaults_fill_only_what_the_user_left_unset():
    environ = dict(ONE_NODE, UCX_RNDV_THRESH="4k")
    assert apply_transport_defaults(environ) == {}
    assert environ == dict(ONE_NODE, UCX_RNDV_THRESH="4k")
    environ = dict(ONE_NODE)
    assert apply_transport_defaults(environ) == TRANSPORT_DEFAULTS
    assert environ == dict(ONE_NODE, **TRANSPORT_DEFAULTS)


@pytest.mark.parametrize("launcher", [
    {"MPI_LOCALNRANKS": "2", "PMI_SIZE": "4"},                            # Hydra, two nodes
    {"OMPI_COMM_WORLD_LOCAL_SIZE": "8", "OMPI_COMM_WORLD_SIZE": "64"},    # Open MPI, eight
    {},                                                                    # no launcher known
])
def test_a_job_not_known_to_share_one_node_keeps_the_networks_own_setting(launcher):
    environ = dict(launcher)
    assert not single_node_job(environ)
    assert apply_transport_defaults(environ) == {} and environ == launcher


def test_open_mpi_single_node_job_is_recognised():
    assert single_node_job({"OMPI_COMM_WORLD_LOCAL_SIZE": "4", "OMPI_COMM_WORLD_SIZE": "4"})


SCRIPT = """
import os
from ecs_dem.comm import default_comm
comm = default_comm()
assert comm.size == 2, comm.size
seen = comm.allgather_object(os.environ.get("UCX_RNDV_THRESH"))
if comm.rank == 0:  # one line: two ranks' prints can interleave
    print(" ".join(map(str, seen)), flush=True)
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
    assert res.stdout.split() == [expected, expected], res.stdout
