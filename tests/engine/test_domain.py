"""Domain: periodic ghost images, forward/reverse halo verbs, wrapping, input checks (ecs_dem/domain.py)."""
import itertools

import numpy as np
import pytest

from ecs_dem import Box, Domain, Field, Halo, InputError, Table
from ecs_dem import halo_kernels as hk
from ecs_dem.migration import anchors_leaving

LO = np.array([-1.0, 0.0, 2.0])
HI = np.array([1.0, 3.0, 4.5])
L = HI - LO
WIDTH = 0.4

FIELDS = (
    Field("position", np.float64, (3,), Halo.FORWARD),
    Field("velocity", np.float64, (3,), Halo.FORWARD),
    Field("charge", np.float64, (), Halo.FORWARD),
    Field("force", np.float64, (3,), Halo.REVERSE),
    Field("energy", np.float64, (), Halo.REVERSE),
    Field("note", np.float64, (), Halo.LOCAL, 5.0),
)


def build(rng, periodic, n=300, sort=False):
    box = Box(LO, HI, periodic)
    dom = Domain(box, skin=0.05, sort=sort)
    dom.ghost_width = WIDTH
    t = Table("grains", FIELDS)
    t.append(n, position=rng.uniform(LO, HI, (n, 3)), velocity=rng.normal(size=(n, 3)),
             charge=rng.normal(size=n))
    dom.rebuild(t)
    return dom, t


def expected_images(t, periodic):
    """{(gid, shift)}: every owned row near periodic faces, shifted by each combination of faces."""
    out = set()
    for g, x in zip(t.gid, t.position):
        options = []
        for a in range(3):
            opts = [0]
            if periodic[a]:
                if x[a] < LO[a] + WIDTH:
                    opts.append(1)
                if x[a] >= HI[a] - WIDTH:
                    opts.append(-1)
            options.append(opts)
        for s in itertools.product(*options):
            if s != (0, 0, 0):
                out.add((int(g), s))
    return out


def ghost_images(t):
    """{(gid, shift)} of the ghost rows, with exact check of the shifted position."""
    own = t.rows_of(t.with_ghosts("gid")[t.n_owned:])
    xg = t.with_ghosts("position")[t.n_owned:]
    found = []
    for k, row in enumerate(own):
        s = np.rint((xg[k] - t.position[row]) / L).astype(int)
        # each coordinate had L added or subtracted once: exact in floating point
        np.testing.assert_array_equal(xg[k], t.position[row] + s * L)
        found.append((int(t.gid[row]), tuple(s.tolist())))
    return found


@pytest.mark.parametrize("periodic", [(True, True, True), (True, False, True), (False, True, False)])
def test_every_row_near_a_periodic_face_has_its_shifted_images(rng, periodic):
    dom, t = build(rng, periodic)
    found = ghost_images(t)
    assert len(found) == len(set(found)), "duplicate ghost images"
    expected = expected_images(t, periodic)
    assert set(found) == expected
    assert len(expected) > 50
    # no image along a non-periodic axis
    for _, s in found:
        for a in range(3):
            if not periodic[a]:
                assert s[a] == 0
    # FORWARD fields are copied, REVERSE fields start at zero on ghosts
    own = t.rows_of(t.with_ghosts("gid")[t.n_owned:])
    g = slice(t.n_owned, t.n)
    np.testing.assert_array_equal(t.with_ghosts("velocity")[g], t.velocity[own])
    np.testing.assert_array_equal(t.with_ghosts("charge")[g], t.charge[own])
    assert np.all(t.with_ghosts("force")[g] == 0)


def test_non_periodic_box_has_no_ghosts(rng):
    dom, t = build(rng, (False, False, False))
    assert t.n_ghost == 0


def test_forward_copies_updated_values(rng):
    dom, t = build(rng, (True, True, True))
    assert t.n_ghost > 0
    own = t.rows_of(t.with_ghosts("gid")[t.n_owned:])
    t.velocity[:] = rng.normal(size=t.velocity.shape)
    t.charge[:] = rng.normal(size=t.n_owned)
    t.position[:] += rng.uniform(-0.01, 0.01, t.position.shape)
    g = slice(t.n_owned, t.n)
    assert not np.array_equal(t.with_ghosts("velocity")[g], t.velocity[own])  # stale before
    dom.forward(t, ("velocity", "charge", "position"))
    np.testing.assert_array_equal(t.with_ghosts("velocity")[g], t.velocity[own])
    np.testing.assert_array_equal(t.with_ghosts("charge")[g], t.charge[own])
    shift = np.rint((t.with_ghosts("position")[g] - t.position[own]) / L)
    np.testing.assert_array_equal(t.with_ghosts("position")[g], t.position[own] + shift * L)
    assert np.all(np.abs(shift).sum(axis=1) >= 1)


def test_forward_only_touches_named_fields(rng):
    dom, t = build(rng, (True, True, True))
    g = slice(t.n_owned, t.n)
    before = t.with_ghosts("charge")[g].copy()
    t.charge[:] += 1.0
    dom.forward(t, ("velocity",))
    np.testing.assert_array_equal(t.with_ghosts("charge")[g], before)


def test_reverse_sums_ghost_contributions_into_owners_exactly(rng):
    dom, t = build(rng, (True, True, True))
    n, m = t.n_owned, t.n
    # integer-valued floats: every summation order gives the same exact result
    f = rng.integers(-1000, 1000, (m, 3)).astype(float)
    e = rng.integers(-1000, 1000, m).astype(float)
    t.with_ghosts("force")[:] = f
    t.with_ghosts("energy")[:] = e
    gid = t.with_ghosts("gid")
    # numpy reference: owner total = its own value + all ghost values with its gid
    rows = t.rows_of(gid)
    ref_f = np.zeros((n, 3))
    ref_e = np.zeros(n)
    np.add.at(ref_f, rows, f)
    np.add.at(ref_e, rows, e)
    dom.reverse(t, ("force", "energy"))
    np.testing.assert_array_equal(t.force, ref_f)
    np.testing.assert_array_equal(t.energy, ref_e)
    assert np.all(t.with_ghosts("force")[n:] == 0)
    assert np.all(t.with_ghosts("energy")[n:] == 0)
    # corners: some owner received three or more images' contributions
    assert np.bincount(rows[n:]).max() >= 3


@pytest.mark.parametrize("periodic", [(True, True, True), (True, False, True)])
def test_home_rows_name_the_owned_row_of_every_periodic_image(rng, periodic):
    dom, t = build(rng, periodic)
    home = dom.home_rows(t)
    assert home.dtype == np.int32 and home.shape == (t.n,)
    np.testing.assert_array_equal(home[:t.n_owned], np.arange(t.n_owned))
    # one rank: every ghost is an image of an own row, whose gid it carries
    gid = t.with_ghosts("gid")
    np.testing.assert_array_equal(home[t.n_owned:], t.rows_of(gid[t.n_owned:]))
    # images of images (corners) find their owner too, not the image they were copied from
    assert np.bincount(home[t.n_owned:]).max() >= (3 if all(periodic) else 2)
    assert dom.home_rows(t) is home  # kept until the rows change
    dom.rebuild(t)
    assert dom.home_rows(t) is not home


def test_zero_clears_owned_and_ghost_rows_of_the_named_fields_only(rng):
    dom, t = build(rng, (True, True, True))

    def fill_and_zero():
        for name in ("force", "energy", "velocity"):
            t.column(name)[:] = 7.0  # capacity rows beyond n too
        dom.zero(t, ("force", "energy"))
        assert not t.with_ghosts("force").any() and not t.with_ghosts("energy").any()
        assert np.all(t.column("force")[t.n:] == 7.0) and np.all(t.column("energy")[t.n:] == 7.0)
        assert np.all(t.with_ghosts("velocity") == 7.0)

    assert t.capacity > t.n
    fill_and_zero()
    # new rows (a new epoch, a larger capacity): the next zero reaches them as well
    n_before = t.n
    t.append(t.capacity, position=rng.uniform(LO, HI, (t.capacity, 3)))
    dom.rebuild(t)
    assert t.n > n_before
    fill_and_zero()


def test_reverse_of_random_floats_matches_reference_to_round_off(rng):
    dom, t = build(rng, (True, True, False))
    f = rng.normal(size=(t.n, 3))
    t.with_ghosts("force")[:] = f
    rows = t.rows_of(t.with_ghosts("gid"))
    ref = np.zeros((t.n_owned, 3))
    np.add.at(ref, rows, f)
    dom.reverse(t, ("force",))
    np.testing.assert_allclose(t.force, ref, rtol=0, atol=1e-13)


def test_wrap_periodic_maps_into_the_box(rng):
    periodic = (True, False, True)
    box = Box(LO, HI, periodic)
    dom = Domain(box, skin=0.0)
    dom.ghost_width = WIDTH
    t = Table("grains", FIELDS)
    x = rng.uniform(LO, HI, (200, 3))
    x[:, 0] += rng.integers(-3, 4, 200) * L[0]
    x[:, 2] += rng.integers(-3, 4, 200) * L[2] + rng.choice([0.0, 1e-12], 200)
    x[0] = (HI[0], 1.0, LO[2])                 # the upper face belongs to the next image
    x[1] = (np.nextafter(LO[0], -np.inf), 1.0, HI[2] + 1e-15)
    t.append(200, position=x, gid=np.arange(200))
    dom.rebuild(t)
    y = t.position[t.rows_of(np.arange(200))]
    for a in (0, 2):
        assert np.all(y[:, a] >= LO[a]) and np.all(y[:, a] < HI[a])
        k = (x[:, a] - y[:, a]) / L[a]
        np.testing.assert_allclose(k, np.rint(k), atol=1e-9)
    np.testing.assert_array_equal(y[:, 1], x[:, 1])  # the non-periodic axis is untouched
    assert y[0, 0] == LO[0]


def test_wrap_periodic_kernel_directly():
    pos = np.array([[2.5, -0.5, 7.0], [-1.0, 1.0, 2.0]])
    hk.wrap_periodic(pos, np.zeros(3), np.array([2.0, 2.0, 2.0]), np.array([True, True, False]))
    np.testing.assert_allclose(pos, [[0.5, 1.5, 7.0], [1.0, 1.0, 2.0]])
    # just below lo: x + L rounds to lo + L, which must map to lo, not to the excluded face
    pos = np.array([[-1e-17, 0.5, 0.5]])
    hk.wrap_periodic(pos, np.zeros(3), np.ones(3), np.array([True, True, True]))
    assert pos[0, 0] == 0.0


def test_particle_outside_non_periodic_box_at_setup_names_its_gid():
    from ecs_dem import World
    from ecs_dem.components.particles import add_particles, create_particle_table
    from ecs_dem.components.species import add_species

    world = World(Box((0, 0, 0), (1, 1, 1), (True, False, False)), dt=1e-6, skin=1e-3)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    create_particle_table(world)
    # outside on the periodic axis x is fine (it is wrapped); outside on z is not
    add_particles(world, [[0.5, 0.5, 0.5], [1.7, 0.5, 0.5], [0.5, 0.5, 1.2]], 0.01,
                  gid=[3, 8, 42])
    with pytest.raises(InputError, match=r"gid 42.*axis z"):
        world.setup()


def test_ghost_width_above_half_the_periodic_length_is_refused():
    dom = Domain(Box(LO, HI, (False, True, False)), skin=0.0)
    dom.ghost_width = 0.49 * L[1]
    dom.check_ghost_width()
    dom.ghost_width = 0.51 * L[1]
    with pytest.raises(InputError, match="half the periodic box"):
        dom.check_ghost_width()
    # only periodic axes limit the width
    dom = Domain(Box(LO, HI, (False, False, False)), skin=0.0)
    dom.ghost_width = 10 * L.max()
    dom.check_ghost_width()


def test_rebuild_after_motion_keeps_images_complete(rng):
    dom, t = build(rng, (True, True, True), sort=True)
    for _ in range(3):
        t.position[:] += rng.normal(scale=0.3, size=t.position.shape)
        dom.rebuild(t)
        found = ghost_images(t)
        assert len(found) == len(set(found))
        assert set(found) == expected_images(t, (True, True, True))


def _cell_keys(dom, t):
    lo, hi = dom.box.lo, dom.box.hi
    dims = np.maximum(np.floor((hi - lo) / WIDTH), 1).astype(np.int64)
    return hk.spatial_sort_keys(t.position, lo, float(np.max((hi - lo) / dims)), dims)


def test_sort_orders_rows_by_cell_and_waits_until_five_percent_are_out_of_order(rng):
    dom, t = build(rng, (False, False, False), n=400, sort=True)
    keys = _cell_keys(dom, t)
    assert np.all(np.diff(keys) >= 0)  # random insertion order, sorted at the rebuild
    # move 2 % of the rows far away: each breaks the order at most twice (<= 4 %)
    gids_before = t.gid.copy()
    moved = rng.choice(t.n_owned, size=8, replace=False)
    t.position[moved] = rng.uniform(LO, HI, (8, 3))
    dom.rebuild(t)
    assert np.array_equal(t.gid, gids_before)
    disorder = hk.count_descents(_cell_keys(dom, t)) / t.n_owned
    assert 0 < disorder <= 0.05
    # 20 % more: sorted again
    moved = rng.choice(t.n_owned, size=80, replace=False)
    t.position[moved] = rng.uniform(LO, HI, (80, 3))
    dom.rebuild(t)
    assert np.all(np.diff(_cell_keys(dom, t)) >= 0)
    assert not np.array_equal(t.gid, gids_before)


def test_owner_ranks_kernel_counts_cut_planes_at_or_below_each_position():
    rank_of = np.arange(2 * 3 * 1).reshape(2, 3, 1)
    x_cuts, y_cuts, z_cuts = np.array([0.0]), np.array([1.0, 2.0]), np.zeros(0)
    pos = np.array([[-0.5, 0.5, 9.0], [0.0, 1.0, 0.0], [3.0, 2.5, -9.0], [-1e-12, 1.999, 0.0]])
    got = hk.owner_ranks(pos, x_cuts, y_cuts, z_cuts, rank_of)
    # a position on a cut plane belongs to the upper cell (searchsorted side="right")
    cells = [(0, 0), (1, 1), (1, 2), (0, 1)]
    assert got.tolist() == [int(rank_of[cx, cy, 0]) for cx, cy in cells]


def test_anchored_rows_leave_with_their_anchors_found_by_reference_or_by_gid(rng):
    """Migration finds each anchored row's anchor through the table's anchor reference
    column when every entry still points at a row of that gid, else by gid look-up; a row
    leaves when its anchor's rank is another, and goes to that rank."""
    grains = Table("grains", FIELDS)
    grains.append(50, position=rng.uniform(LO, HI, (50, 3)))
    links = Table("links", (Field("gid_a", np.int64, (), Halo.FORWARD, -1),
                            Field("a", np.int32, (), Halo.LOCAL, -1)),
                  anchor=("grains", "gid_a"), references={"a": "gid_a"})
    anchors = rng.integers(0, 50, 80)
    links.append(80, gid_a=grains.gid[anchors], a=anchors.astype(np.int32))
    here = 1
    owners = np.where(rng.random(50) < 0.2, rng.integers(0, 4, 50), here)

    def expected():
        owner_of_gid = dict(zip(grains.gid.tolist(), owners.tolist()))
        dest = np.array([owner_of_gid[g] for g in links.gid_a.tolist()])
        k = np.flatnonzero(dest != here)
        return k, dest[k]

    for stale in ("current", "permuted", "unresolved"):
        if stale == "permuted":  # the references now point at rows of other gids
            order = rng.permutation(50)
            grains.permute(order)
            owners = owners[order]
        if stale == "unresolved":
            links.a[:] = -1
        gone, dest = anchors_leaving(grains, links, owners, here)
        k, d = expected()
        assert 0 < k.size < 80
        assert gone.tolist() == k.tolist() and dest.tolist() == d.tolist(), stale


@pytest.mark.parametrize("skin", [-1e-3, float("nan"), float("inf")])
def test_a_negative_or_non_finite_skin_is_refused(skin):
    # a NaN skin would pass `skin < 0` and then never trigger a rebuild (moved > nan is false)
    with pytest.raises(InputError, match="skin must be finite and >= 0"):
        Domain(Box(LO, HI), skin=skin)
    Domain(Box(LO, HI), skin=0.0)
