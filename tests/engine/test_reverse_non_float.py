"""Reverse reduction of REVERSE fields that are not float64, on one rank with periodic images.

The scheduler zeroes a REVERSE field before its first accumulation in a
step, lets systems add into owned *and* ghost rows, and sums the ghost rows
back into their owners before an owner reads the field (or at the end of the
step); then the ghost rows are zero again (ecs_dem/world.py, ecs_dem/domain.py
``reverse``). On one rank in a periodic box the ghost rows are periodic
images of the rank's own rows, so every contact across a periodic face is
accumulated on an image and must come home through the reverse reduction.

A custom system counts contacts (both particles of every touching pair, so
pairs with a ghost partner put half of their counts on the ghost row) into
REVERSE fields of several dtypes: int32, int64 (the sum of the partners'
gids, which shows that each count reaches the right owner), float32 (0.5 per
contact, exact in binary) and an int32 2-vector (1, 2 per contact).

Analytic reference: a simple cubic lattice of spacing a in a fully periodic
box of 4 x 4 x 4 sites, spheres of radius 0.505 a: each sphere overlaps its 6
face neighbours (distance a < 2r = 1.01 a) and no others (next distance
sqrt(2) a), so every count is exactly 6, and the partner gids are those of
the sites +-1 along each axis, modulo 4.
"""
import numpy as np

from ecs_dem.systems.neighbors.search import NeighborSearch
from helpers import add_particles, make_world
from mpi_scenarios import NAMES, CountContacts, ReadCounts

def test_periodic_images_return_non_float_counts_to_their_owners():
    """4 x 4 x 4 periodic lattice: every sphere has exactly 6 contacts, counted in four dtypes.

    Checked over three steps: contacts_i32 = 6, half_contacts = 3.0,
    contact_pair = (6, 12), partner_gid_sum = sum of the six face
    neighbours' gids (lattice arithmetic modulo 4), seen_contacts (copied
    mid-step by ReadCounts) = 6; ghost rows are zero after the reduction; and
    the 3 m^2 = 48 contacts across the periodic faces were accumulated on images.
    """
    m, a = 4, 2e-3
    L = m * a
    world = make_world(box_lo=(0, 0, 0), box_hi=(L, L, L), periodic=(True, True, True), dt=1e-6,
                       skin=1e-4)
    k = np.arange(m**3)
    ijk = np.stack([k % m, (k // m) % m, k // m**2], axis=1)
    add_particles(world, (ijk + 0.5) * a, 0.505 * a)
    counter = CountContacts()
    for s in (NeighborSearch(), counter, ReadCounts()):
        world.add_system(s)
    # expected partner gid sums, from the lattice: the sites +-1 along each axis (periodic)
    expected_sum = np.zeros(k.size, dtype=np.int64)
    for axis in range(3):
        for step in (-1, 1):
            nb = ijk.copy()
            nb[:, axis] = (nb[:, axis] + step) % m
            expected_sum += nb[:, 0] + m * nb[:, 1] + m * m * nb[:, 2]
    for _ in range(3):
        world.step_once()
        p = world.particles
        order = np.argsort(p.gid)
        assert p.gid[order].tolist() == k.tolist()
        np.testing.assert_array_equal(p.contacts_i32, 6)
        np.testing.assert_array_equal(p.seen_contacts, 6)
        np.testing.assert_array_equal(p.half_contacts, np.float32(3.0))
        np.testing.assert_array_equal(p.contact_pair, np.tile([6, 12], (k.size, 1)))
        np.testing.assert_array_equal(p.partner_gid_sum[order], expected_sum)
        assert p.contacts_i32.dtype == np.int32 and p.half_contacts.dtype == np.float32
        assert p.n_ghost > 0 and counter.on_ghosts == 3 * m * m  # pairs across the 3 face pairs
        for name in NAMES:
            assert not np.any(p.with_ghosts(name)[p.n_owned:]), name
