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
