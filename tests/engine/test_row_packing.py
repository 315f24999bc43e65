"""Packed rows of mixed dtypes (ecs_dem/row_packing.py) and the Table verbs built on them."""
import numpy as np
import pytest

from ecs_dem import halo_kernels as hk
from ecs_dem.row_packing import (compile_kernels, move_rows, pack_rows, packing, row_bytes,
                                 row_layout, unpack_rows)
from ecs_dem.table import Field, Halo, Table

# a 4-byte field first, so that the packing must move the 8-byte-multiple fields ahead of it
FIELDS = (
    Field("pair", np.int32, (2,), Halo.LOCAL, -1),
    Field("flag", np.uint8, (), Halo.LOCAL, 0),
    Field("position", np.float64, (3,), Halo.FORWARD),
    Field("alive", np.bool_, (), Halo.LOCAL, True),
    Field("tally", np.int64, (), Halo.LOCAL, 0),
    Field("short", np.int16, (3,), Halo.LOCAL, 0),
    Field("mass", np.float64, (), Halo.FORWARD, 1.0),
)
NAMES = ("gid",) + tuple(f.name for f in FIELDS)


def filled_table(rng, n=11, capacity=4):
    t = Table("things", FIELDS, capacity=capacity)
    t.append(n, pair=rng.integers(-5, 5, size=(n, 2)), flag=rng.integers(0, 255, size=n),
             position=rng.normal(size=(n, 3)), alive=rng.random(n) < 0.5,
             tally=rng.integers(-2**40, 2**40, size=n), short=rng.integers(-300, 300, size=(n, 3)),
             mass=rng.random(n))
    return t


def snapshot(t, rows=None):
    rows = np.arange(t.n_owned) if rows is None else rows
    return {name: t.owned(name)[rows].copy() for name in NAMES}


def assert_same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def packed_field(packed, layout, name, dtype):
    """One field of every packed row, read by hand from its (offset, width) in `layout`."""
    offset, width = next((off, w) for field, off, w in layout if field == name)
    return np.ascontiguousarray(packed[:, offset:offset + width]).view(dtype)


def test_layout_puts_whole_words_first_and_pads_to_8_bytes(rng):
    t = filled_table(rng)
    layout = row_layout(t, NAMES)
    # gid, position, tally, mass: 8 + 24 + 8 + 8 bytes; then pair 8 (two int32: a whole word
    # too), then flag 1, alive 1, short 6
    assert [name for name, _, _ in layout] == ["gid", "pair", "position", "tally", "mass",
                                               "flag", "alive", "short"]
    offsets = {name: off for name, off, _ in layout}
    assert offsets["gid"] == 0 and offsets["flag"] == 56
    assert row_bytes(layout) == 64
    assert packing(t, NAMES).width == 64
    assert packing(t, NAMES).word_count == 7


def test_pack_then_unpack_round_trips_every_field_bit_for_bit(rng):
    src = filled_table(rng)
    rows = np.array([7, 0, 3, 3, 10])
    packed = pack_rows(src, NAMES, rows)
    assert packed.shape == (5, 64) and packed.dtype == np.uint8
    np.testing.assert_array_equal(packed_field(packed, row_layout(src, NAMES), "gid", np.int64).ravel(),
                                  src.gid[rows])
    dst = Table("things", FIELDS, capacity=2)
    dst.append(8)
    unpack_rows(dst, NAMES, packed, 2)
    assert_same({k: v[2:7] for k, v in snapshot(dst).items()}, snapshot(src, rows))
    # rows outside the written range keep their defaults
    assert np.all(dst.pair[:2] == -1) and np.all(dst.alive[7:]) and np.all(dst.mass[:2] == 1.0)


def test_unpack_ignores_bytes_after_the_packed_row(rng):
    """Anchored ghosts append an 8-byte row index to each packed row."""
    src = filled_table(rng)
    rows = np.array([1, 4])
    packed = pack_rows(src, NAMES, rows)
    extra = np.concatenate([packed, np.full((2, 8), 0xAB, dtype=np.uint8)], axis=1)
    dst = Table("things", FIELDS)
    dst.append(2)
    unpack_rows(dst, NAMES, extra, 0)
    assert_same(snapshot(dst), snapshot(src, rows))


def test_a_subset_of_fields_leaves_the_others_alone(rng):
    src = filled_table(rng)
    dst = filled_table(rng)
    before = snapshot(dst)
    unpack_rows(dst, ("position", "flag"), pack_rows(src, ("position", "flag"), np.arange(11)), 0)
    after = snapshot(dst)
    np.testing.assert_array_equal(after["position"], src.position)
    np.testing.assert_array_equal(after["flag"], src.flag)
    for name in NAMES:
        if name not in ("position", "flag"):
            np.testing.assert_array_equal(after[name], before[name], err_msg=name)


def test_packing_follows_the_storage_when_the_table_grows(rng):
    t = filled_table(rng, n=3, capacity=3)
    pack_rows(t, NAMES, np.arange(3))  # cached for the old storage
    t.append(40, position=np.ones((40, 3)))
    assert t.capacity >= 43
    packed = pack_rows(t, NAMES, np.array([42]))
    assert packed_field(packed, row_layout(t, NAMES), "position", np.float64).tolist() == [[1, 1, 1]]


def test_move_rows_copies_every_field(rng):
    t = filled_table(rng)
    expected = snapshot(t)
    for name in NAMES:
        expected[name][[0, 2]] = expected[name][[9, 5]]
    move_rows(t, np.array([9, 5]), np.array([0, 2]))
    assert_same(snapshot(t), expected)


@pytest.mark.parametrize("keep_order", [True, False])
def test_table_remove_and_permute_keep_rows_whole(rng, keep_order):
    t = filled_table(rng, n=30)
    full = snapshot(t)
    gone = np.array([0, 4, 5, 29, 17])
    t.remove(gone, keep_order=keep_order)
    left = np.setdiff1d(np.arange(30), gone)
    order = np.argsort(t.gid)  # compare by gid: keep_order=False fills holes from the end
    got = {k: v[order] for k, v in snapshot(t).items()}
    assert_same(got, {k: v[left] for k, v in full.items()})
    perm = rng.permutation(t.n_owned)[:20]
    before = snapshot(t)
    t.permute(perm)
    assert t.n_owned == 20
    assert_same(snapshot(t), {k: v[perm] for k, v in before.items()})


def test_move_rows_of_named_fields_leaves_the_others_alone(rng):
    t = filled_table(rng)
    expected = snapshot(t)
    for name in ("position", "flag"):
        expected[name][[6, 7]] = expected[name][[1, 3]]
    move_rows(t, np.array([1, 3]), np.array([6, 7]), ("position", "flag"))
    assert_same(snapshot(t), expected)


ROW_KERNELS = (hk.gather_rows_packed, hk.scatter_rows_packed, hk.move_rows, hk.permute_columns)


@pytest.mark.parametrize("names", [NAMES, ("gid", "position", "flag", "short")])
def test_compile_kernels_leaves_nothing_for_the_first_real_call_to_compile(rng, names):
    if not hasattr(hk.move_rows, "signatures"):
        pytest.skip("numba's JIT is off: nothing compiles")
    t = filled_table(rng)
    compile_kernels(t, names)
    compiled = [len(k.signatures) for k in ROW_KERNELS]
    rows = np.array([3, 0, 7])
    unpack_rows(t, names, pack_rows(t, names, rows), 1)
    move_rows(t, rows, np.array([8, 9, 10]), names)
    if names == NAMES:  # Table.permute moves every field
        t.permute(np.arange(t.n_owned)[::-1].copy())
    assert [len(k.signatures) for k in ROW_KERNELS] == compiled
