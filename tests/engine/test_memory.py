"""Memory checks before large allocations (ecs_dem/memory.py, Table growth): a problem that
cannot fit is an InputError naming it, not a process the kernel kills without a word."""
import numpy as np
import pytest

from ecs_dem import memory
from ecs_dem.errors import InputError
from ecs_dem.table import CHECKED_ALLOCATION, Field, Halo, Table

ROW_BYTES = 3 * 8 + 8 + 8  # the table below: position, mass, and the gid of every table


def small_machine(monkeypatch, nbytes):
    monkeypatch.setattr(memory, "available_bytes", lambda: nbytes)


def make_table():
    return Table("grains", (Field("position", np.float64, (3,), Halo.FORWARD),
                            Field("mass", np.float64, (), Halo.FORWARD, 1.0)), capacity=4)


def test_a_table_growth_beyond_the_available_memory_is_refused_before_allocating(monkeypatch):
    small_machine(monkeypatch, 100 * 2**20)
    t = make_table()
    rows = 10 * 2**20  # 320 MiB of rows against 100 MiB available
    expected = f"{rows * ROW_BYTES / 1e9:.3g}"  # 0.419
    with pytest.raises(InputError, match=rf"table 'grains' with 10,485,760 rows needs about "
                                         rf"{expected} GB of memory on this rank, but 0\.105 GB"):
        t.append(rows)
    assert t.capacity == 4 and t.n_owned == 0  # nothing allocated, the table as it was


def test_a_table_growth_that_fits_is_not_refused(monkeypatch):
    small_machine(monkeypatch, 10 * CHECKED_ALLOCATION)
    t = make_table()
    rows = 2 * CHECKED_ALLOCATION // ROW_BYTES  # checked (above the threshold), and fits
    t.append(rows)
    assert t.n_owned == rows and np.all(t.mass == 1.0)


class FakeComm:
    def __init__(self, size, ranks_on_node):
        self.size, self.ranks_on_node = size, ranks_on_node


@pytest.mark.parametrize("count, size, on_node, spread, refused", [
    (1_000_000, 1, 1, False, False),   # 0.5 GB of 1 GB
    (3_000_000, 1, 1, False, True),    # 1.5 GB
    (1_000_000, 4, 4, False, True),    # every rank holds all: 0.5 GB each of a 0.25 GB share
    (1_000_000, 4, 4, True, False),    # spread: 0.125 GB each of 0.25
    (4_400_000, 8, 4, True, True),     # spread: 0.275 GB each, over a 0.25 GB share
])
def test_a_particle_count_is_refused_when_its_floor_exceeds_this_ranks_share(
        monkeypatch, count, size, on_node, spread, refused):
    small_machine(monkeypatch, 1.0e9 + 1)
    assert memory.BYTES_PER_PARTICLE_FLOOR == 500  # the figures above assume it
    call = lambda: memory.check_particle_count(count, FakeComm(size, on_node), spread=spread)
    if refused:
        with pytest.raises(InputError, match="ask for fewer particles"):
            call()
    else:
        call()


def test_an_unknown_available_memory_checks_nothing(monkeypatch):
    small_machine(monkeypatch, None)
    memory.check_particle_count(10**15)


def test_the_available_memory_is_read_from_this_machine():
    available = memory.available_bytes()
    assert available is not None and 0 < available < 2**50


GiB = 2**30


def fake_cgroups(monkeypatch, tmp_path, proc_lines: str, files: dict[str, str]):
    """A /proc/self/cgroup and a cgroup mount under tmp_path (``files``: path under the
    mount -> content), and a node with 64 GiB available."""
    proc = tmp_path / "proc_cgroup"
    proc.write_text(proc_lines)
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    monkeypatch.setattr(memory, "PROC_CGROUP", proc)
    monkeypatch.setattr(memory, "CGROUP_ROOT", root)
    monkeypatch.setattr(memory, "node_available_bytes", lambda: 64 * GiB)


def test_a_v2_job_limit_above_the_process_group_is_the_tightest(monkeypatch, tmp_path):
    """Slurm's job group (4 GiB, 1 GiB used, of it 0.25 GiB inactive file cache the kernel
    would reclaim) holds the step's group (no limit of its own): 3.25 GiB are left."""
    fake_cgroups(monkeypatch, tmp_path, "0::/slurm/job_7/step_0\n", {
        "cgroup.controllers": "cpu memory\n",
        "slurm/job_7/memory.max": f"{4 * GiB}\n",
        "slurm/job_7/memory.current": f"{GiB}\n",
        "slurm/job_7/memory.stat": f"anon 1\ninactive_file {GiB // 4}\nactive_file 5\n",
        "slurm/job_7/step_0/memory.max": "max\n",
        "slurm/job_7/step_0/memory.current": "12345\n",
        "slurm/memory.max": "max\n",
    })
    assert memory.cgroup_headroom() == 4 * GiB - (GiB - GiB // 4)
    assert memory.available_bytes() == memory.cgroup_headroom()  # below the node's 64 GiB
    with pytest.raises(InputError, match=r"3\.49 GB is available under this job's memory "
                                         r"limit \(its control group\): ask for fewer"):
        memory.check_particle_count(10_000_000)  # 5 GB at the floor


def test_a_v1_memory_hierarchy_is_read_and_no_limit_is_none(monkeypatch, tmp_path):
    unlimited = "9223372036854771712\n"
    fake_cgroups(monkeypatch, tmp_path, "4:memory:/batch/job\n3:cpu:/\n0::/\n", {
        "memory/batch/job/memory.limit_in_bytes": unlimited,
        "memory/batch/job/memory.usage_in_bytes": "100\n",
        "memory/batch/memory.limit_in_bytes": f"{2 * GiB}\n",
        "memory/batch/memory.usage_in_bytes": f"{GiB}\n",
        "memory/batch/memory.stat": f"cache 9\ntotal_inactive_file {GiB // 2}\n",
        "memory/memory.limit_in_bytes": unlimited,
    })
    assert memory.cgroup_headroom() == 2 * GiB - GiB // 2
    (tmp_path / "cgroup/memory/batch/memory.limit_in_bytes").write_text(unlimited)
    assert memory.cgroup_headroom() is None and memory.available_bytes() == 64 * GiB


def test_a_container_whose_group_path_is_not_mounted_reads_the_mount_root(monkeypatch,
                                                                          tmp_path):
    """Inside a container /proc/self/cgroup names the host's path, and the container's own
    group is mounted as the root; a headroom below zero (usage above the limit) is zero."""
    fake_cgroups(monkeypatch, tmp_path, "0::/host/docker/abc\n", {
        "cgroup.controllers": "memory\n",
        "memory.max": f"{GiB}\n",
        "memory.current": f"{2 * GiB}\n",
    })
    assert memory.cgroup_headroom() == 0


def test_without_a_cgroup_file_the_node_memory_stands(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "PROC_CGROUP", tmp_path / "missing")
    monkeypatch.setattr(memory, "node_available_bytes", lambda: 5 * GiB)
    assert memory.cgroup_headroom() is None and memory.available_bytes() == 5 * GiB


def test_a_table_growth_takes_this_ranks_share_of_the_node(monkeypatch):
    """Without a communicator a table checks against the share recorded when MPI started
    (ecs_dem.comm: every rank of a node grows its own tables)."""
    small_machine(monkeypatch, 100 * 2**20)
    t = make_table()
    rows = 2 * 2**20  # 64 MiB of rows: fits in 100 MiB, not in a quarter of it
    monkeypatch.setattr(memory, "_ranks_on_node", 4)
    with pytest.raises(InputError, match="shared by the 4 ranks on this node"):
        t.append(rows)
    memory.share_node(1)
    t.append(rows)
    assert t.n_owned == rows
