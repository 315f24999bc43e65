"""Table: growable structure-of-arrays storage with gids (ecs_dem/table.py)."""
import numpy as np
import pytest

from ecs_dem.errors import InputError, StateError
from ecs_dem.table import Field, Halo, Table

FIELDS = (
    Field("position", np.float64, (3,), Halo.FORWARD),
    Field("mass", np.float64, (), Halo.FORWARD, 2.5),
    Field("force", np.float64, (3,), Halo.REVERSE),
    Field("flag", np.int8, (), Halo.LOCAL, 7),
)


def make_table(capacity=4):
    return Table("things", FIELDS, capacity=capacity)


def test_growth_keeps_data_and_fills_defaults(rng):
    t = make_table(capacity=3)
    pos = rng.normal(size=(5, 3))
    t.append(5, position=pos, mass=np.arange(5.0))
    assert t.capacity >= 5 and t.n_owned == 5
    cap0 = t.capacity
    # grow several times: earlier rows must survive every reallocation
    for _ in range(6):
        t.append(cap0)
    assert t.capacity > cap0
    assert t.n_owned == 5 + 6 * cap0
    np.testing.assert_array_equal(t.position[:5], pos)
    np.testing.assert_array_equal(t.mass[:5], np.arange(5.0))
    # unspecified fields get their declared defaults, also in rows added after growth
    assert np.all(t.mass[5:] == 2.5)
    assert np.all(t.flag == 7)
    assert np.all(t.position[5:] == 0.0)
    # free space beyond n also carries the default (append relies on it only through assignment,
    # but a grown column must not leak uninitialised memory)
    assert np.all(t.column("mass")[t.n:] == 2.5)


def test_gids_unique_and_preserved_by_permute_and_remove(rng):
    t = make_table()
    t.append(10, mass=np.arange(10.0))
    t.append(7, mass=10.0 + np.arange(7.0))
    gids = t.gid.copy()
    assert np.unique(gids).size == 17
    np.testing.assert_array_equal(gids, np.arange(17))
    # each row's data travels with its gid under a permutation
    order = rng.permutation(17)
    t.permute(order)
    np.testing.assert_array_equal(t.gid, gids[order])
    np.testing.assert_array_equal(t.mass, t.gid.astype(float))
    # removal keeps the order of the rest and their gids
    remove_rows = np.array([0, 3, 16])
    removed_gids = t.gid[remove_rows].copy()
    before = t.gid.copy()
    t.remove(remove_rows)
    assert t.n_owned == 14
    np.testing.assert_array_equal(t.gid, np.delete(before, remove_rows))
    assert not np.isin(removed_gids, t.gid).any()
    np.testing.assert_array_equal(t.mass, t.gid.astype(float))
    # gids are never reused after removal
    t.append(3)
    new = t.gid[-3:]
    assert new.min() >= 17
    assert np.unique(t.gid).size == t.n_owned


def test_remove_with_boolean_mask():
    t = make_table()
    t.append(6, mass=np.arange(6.0))
    mask = np.array([True, False, True, False, False, True])
    t.remove(mask)
    np.testing.assert_array_equal(t.gid, [1, 3, 4])


def test_rows_of_and_owned_lookup(rng):
    t = make_table()
    t.append(12)
    t.permute(rng.permutation(12))
    t.remove(np.array([2, 5]))
    np.testing.assert_array_equal(t.rows_of(t.gid), np.arange(t.n_owned))
    missing = sorted(set(range(12)) - set(t.gid.tolist()))
    assert len(missing) == 2
    np.testing.assert_array_equal(t.lookup().rows(missing, owned_only=True), [-1, -1])
    gids = t.gid[[4, 0, 7]]
    np.testing.assert_array_equal(t.rows_of(gids), [4, 0, 7])
    with pytest.raises(InputError, match=str(missing[0])):
        t.rows_of([missing[0]])
    with pytest.raises(InputError):
        t.rows_of([-1])
    with pytest.raises(InputError):
        t.rows_of([10_000])
    # the map follows structural changes (it is cached per epoch)
    t.permute(np.arange(t.n_owned)[::-1])
    np.testing.assert_array_equal(t.rows_of(t.gid), np.arange(t.n_owned))


def test_rows_of_gives_owned_rows_not_ghost_copies():
    t = make_table()
    t.append(4)
    t.resize_ghosts(2)
    t.column("gid")[4:6] = [1, 2]  # ghost copies of owned gids
    np.testing.assert_array_equal(t.rows_of([1, 2]), [1, 2])
    t.column("gid")[4:6] = [7, 8]  # ghosts of gids owned elsewhere
    t.resize_ghosts(2)  # a structural change: the lookup is rebuilt
    with pytest.raises(InputError, match="7"):
        t.rows_of([7])
    np.testing.assert_array_equal(t.lookup().rows([7, 8, 3], owned_only=True), [-1, -1, 3])
    np.testing.assert_array_equal(t.lookup().rows([7, 8]), [4, 5])


def test_add_field_on_populated_table_gets_defaults():
    t = make_table(capacity=2)
    t.append(5, mass=np.arange(5.0))
    t.add_field(Field("temperature", np.float64, (2,), Halo.FORWARD, 300.0))
    assert t.temperature.shape == (5, 2)
    assert np.all(t.temperature == 300.0)
    # later growth keeps the default for new rows and the values of old ones
    t.temperature[0] = (1.0, 2.0)
    t.append(20)
    np.testing.assert_array_equal(t.temperature[0], (1.0, 2.0))
    assert np.all(t.temperature[1:] == 300.0)
    # redeclaring the same field is a no-op; a different definition is an error
    t.add_field(Field("temperature", np.float64, (2,), Halo.FORWARD, 300.0))
    with pytest.raises(InputError, match="temperature"):
        t.add_field(Field("temperature", np.float64, (3,), Halo.FORWARD, 300.0))
    with pytest.raises(InputError, match="_hidden"):
        t.add_field(Field("_hidden"))


def test_columns_are_staggered_within_a_page():
    extra = tuple(Field(f"f{k}", np.float64, (3,)) for k in range(8))
    t = Table("big", FIELDS + extra, capacity=100_000)

    def offsets():
        return [t.column(name).ctypes.data % 4096 for name in t.fields]

    off = offsets()
    assert len(off) == 13
    assert len(set(off)) == len(off), off
    # still staggered after the columns were reallocated by growth
    t.append(150_000)
    off = offsets()
    assert len(set(off)) == len(off), off


def test_unknown_field_errors():
    t = make_table()
    t.append(2)
    with pytest.raises(AttributeError, match="velocity"):
        t.column("velocity")
    with pytest.raises(AttributeError, match="velocity"):
        t.velocity  # noqa: B018
    with pytest.raises(InputError, match="velocity"):
        t.append(1, velocity=np.zeros((1, 3)))
    assert t.n_owned == 2  # the failed append changed nothing


def test_ghost_rows_follow_owned_rows():
    t = make_table()
    t.append(5, mass=np.arange(5.0))
    epoch = t.epoch
    t.resize_ghosts(3)
    assert t.epoch > epoch
    assert (t.n_owned, t.n_ghost, t.n) == (5, 3, 8)
    assert len(t) == 5
    assert t.owned("mass").shape == (5,)
    assert t.with_ghosts("mass").shape == (8,)
    t.with_ghosts("mass")[5:] = [10.0, 11.0, 12.0]
    # owned views never see ghosts; ghost rows sit directly after the owned ones
    np.testing.assert_array_equal(t.mass, np.arange(5.0))
    np.testing.assert_array_equal(t.column("mass")[5:8], [10.0, 11.0, 12.0])
    # appending owned rows drops the ghosts (they are rebuilt by the domain)
    t.append(1)
    assert t.n_ghost == 0 and t.n_owned == 6
    assert t.mass[5] == 2.5


def test_ghost_resize_beyond_capacity_keeps_owned_rows(rng):
    t = make_table(capacity=4)
    pos = rng.normal(size=(4, 3))
    t.append(4, position=pos)
    t.resize_ghosts(50)
    assert t.capacity >= 54
    np.testing.assert_array_equal(t.position, pos)


def test_attribute_views_follow_every_structural_change(rng):
    """table.position is kept between accesses: each change of rows must give a fresh view
    of the current rows and storage."""
    t = Table("p", [Field("position", np.float64, (3,), Halo.FORWARD)], capacity=2)
    t.append(2, position=rng.random((2, 3)))
    first = t.position
    assert t.position is first  # kept: the second access is an attribute
    t.append(5, position=rng.random((5, 3)))  # beyond capacity: new storage
    assert t.position.shape == (7, 3)
    t.position[6] = 42.0
    assert t.column("position")[6, 0] == 42.0  # the view is of the live column
    order = np.arange(7)[::-1]
    before = t.position.copy()
    t.permute(order)
    np.testing.assert_array_equal(t.position, before[order])
    t.remove(np.array([0, 1]))
    assert t.position.shape == (5, 3)
    assert t.with_ghosts("position").shape == (5, 3)
    t.resize_ghosts(3)
    assert t.position.shape == (5, 3)  # owned rows only
    assert t.with_ghosts("position").shape == (8, 3)
    t.add_field(Field("radius", np.float64, (), Halo.FORWARD, 1.0))
    np.testing.assert_array_equal(t.radius, np.ones(5))


def test_structure_version_counts_every_change_of_shape_or_storage(rng):
    """Caches over several tables compare Table.structure_version: every append, removal,
    permutation, ghost resize, capacity growth and new field of any table must change it,
    and writing values must not (else every cached argument tuple would be rebuilt)."""
    a = Table("a", [Field("position", np.float64, (3,), Halo.FORWARD)], capacity=2)
    b = Table("b", [Field("mass", np.float64, (), Halo.FORWARD)], capacity=8)
    changes = [
        lambda: a.append(2, position=rng.random((2, 3))),
        lambda: a.append(3),  # beyond capacity: new storage
        lambda: b.append(1),
        lambda: a.permute(np.arange(5)[::-1]),
        lambda: a.remove(np.array([0])),
        lambda: a.remove(np.array([0]), keep_order=False),
        lambda: b.resize_ghosts(2),
        lambda: b.clear_ghosts(),
        lambda: b.add_field(Field("radius", np.float64, (), Halo.FORWARD)),
        lambda: a.resize_ghosts(20),  # ghosts beyond capacity
    ]
    seen = {Table.structure_version}
    for change in changes:
        change()
        assert Table.structure_version not in seen
        seen.add(Table.structure_version)
    version = Table.structure_version
    a.position[...] = 1.0
    b.with_ghosts("mass")[...] = 2.0
    a.views(("position",), ghosts=True)
    assert Table.structure_version == version


def holes_filled_from_the_end(n, gone):
    """The order `remove(keep_order=False)` promises, by hand: each removed row below
    n - k takes, in increasing order, the next of the last k rows that stay."""
    rows = list(range(n))
    gone = sorted(set(g % n for g in gone))
    new_n = n - len(gone)
    fillers = iter(r for r in range(new_n, n) if r not in gone)
    for hole in (g for g in gone if g < new_n):
        rows[hole] = next(fillers)
    return rows[:new_n]


@pytest.mark.parametrize("gone", [
    [], [0], [39], [0, 1, 2], [37, 38, 39], [3, 17, 20, 38],        # increasing: the fast path
    [20, 3, 38, 17], [3, 3, 17], [-1, 0], list(range(40))])         # the general path
def test_remove_without_order_fills_holes_with_the_last_rows(gone):
    t = make_table()
    t.append(40, mass=np.arange(40.0))
    t.remove(np.array(gone, dtype=np.int64), keep_order=False)
    expected = holes_filled_from_the_end(40, gone)
    np.testing.assert_array_equal(t.gid, expected)
    np.testing.assert_array_equal(t.mass, np.array(expected, dtype=float))


def test_remove_rejects_rows_out_of_range():
    t = make_table()
    t.append(5)
    with pytest.raises(IndexError):
        t.remove(np.array([2, 5]), keep_order=False)
    assert t.n_owned == 5


def test_append_packed_writes_every_field_and_keeps_gids_fresh(rng):
    from ecs_dem.row_packing import pack_rows

    src = make_table()
    src.append(6, position=rng.normal(size=(6, 3)), mass=rng.random(6),
               flag=np.arange(6, dtype=np.int8))
    src.append(4)
    dst = make_table()
    dst.append(2)
    rows = np.array([9, 1, 4])
    new = dst.append_packed(pack_rows(src, tuple(src.fields), rows))
    assert new == slice(2, 5) and dst.n_owned == 5
    for name in src.fields:
        np.testing.assert_array_equal(dst.owned(name)[2:], src.owned(name)[rows])
    assert dst.append(1).start == 5 and dst.gid[-1] == 10  # past the largest gid that arrived


def test_anchor_reference_names_the_row_field_of_the_anchor_gid():
    fields = (Field("gid_a", np.int64, (), Halo.FORWARD, -1), Field("gid_b", np.int64, (), Halo.FORWARD, -1),
              Field("a", np.int32, (), Halo.LOCAL, -1), Field("b", np.int32, (), Halo.LOCAL, -1))
    by_b = Table("links", fields, anchor=("things", "gid_b"), references={"a": "gid_a", "b": "gid_b"})
    assert by_b.anchor_reference == "b"
    assert Table("plain", fields, anchor=("things", "gid_a")).anchor_reference is None
    assert make_table().anchor_reference is None


def test_a_rewrite_in_place_makes_the_written_rows_the_owned_rows(rng):
    t = make_table(capacity=2)
    t.append(4, position=rng.normal(size=(4, 3)), mass=np.arange(4.0))
    t.resize_ghosts(1)
    epoch = t.epoch
    t.reserve_rewrite(5)  # more rows than the capacity: grows, drops the ghosts
    assert t.capacity >= 5 and t.n_ghost == 0 and t.n_owned == 4
    kept = t.mass[1:3].copy()  # what a builder keeps of the old rows, read before writing
    pos = rng.normal(size=(5, 3))
    for name, values in (("position", pos), ("mass", np.r_[kept, 0.0, 0.0, 1.0]),
                         ("flag", np.full(5, 3)), ("gid", np.array([10, 11, 12, 13, 20]))):
        t.column(name)[:5] = values
    t.commit_rewrite(5)
    assert t.n_owned == 5 and t.epoch > epoch and t.next_gid == 21
    np.testing.assert_array_equal(t.position, pos)
    assert t.mass.tolist() == [1.0, 2.0, 0.0, 0.0, 1.0] and t.gid.tolist() == [10, 11, 12, 13, 20]
    t.reserve_rewrite(0)
    t.commit_rewrite(0)
    assert t.n_owned == 0 and t.position.shape == (0, 3)
    version = Table.structure_version
    t.reserve_rewrite(0)
    t.commit_rewrite(0)  # empty before and after: no structural change
    assert Table.structure_version == version
    t.resize_ghosts(1)
    with pytest.raises(StateError, match="reserve_rewrite"):  # ghosts still there
        t.commit_rewrite(0)
    with pytest.raises(StateError, match="reserve_rewrite"):
        t.commit_rewrite(t.capacity + 1)


def test_replace_puts_new_rows_in_place_of_all_owned_rows(rng):
    t = make_table()
    t.append(6, position=rng.normal(size=(6, 3)), mass=np.arange(6.0))
    t.resize_ghosts(2)
    epoch = t.epoch
    pos = rng.normal(size=(3, 3))
    t.replace(3, position=pos, gid=np.array([40, 41, 45]))
    assert t.n_owned == 3 and t.n_ghost == 0 and t.epoch > epoch
    np.testing.assert_array_equal(t.position, pos)
    assert np.all(t.mass == 2.5) and np.all(t.flag == 7)  # the old rows' values are gone
    assert t.gid.tolist() == [40, 41, 45] and t.next_gid == 46
    assert t.replace(0) is None and t.n_owned == 0 and t.position.shape == (0, 3)
    with pytest.raises(InputError, match="no field"):
        t.replace(1, speed=np.zeros(1))
