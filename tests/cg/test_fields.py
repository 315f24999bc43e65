"""Fields: exact integrals (virial, mass), the static momentum balance of a loaded lattice,
the sign convention, derived fields, and time averaging."""
import math

import numpy as np
import pytest

from ecs_dem.cg.fields import TimeAverage, coarse_grain, derive
from ecs_dem.cg.grid import CartesianGrid, CylindricalGrid, PointGrid
from ecs_dem.cg.kernels import Kernel
from ecs_dem.errors import InputError

KERNELS = [Kernel.gaussian(0.05, 3.0), Kernel.lucy(0.12)]


def nodes_between(breaks, order):
    """Gauss-Legendre nodes and weights on each interval between the sorted breakpoints: exact
    for the piecewise polynomial fields of Lucy's kernel, and to round-off for the Gaussian's
    (analytic between its cut points)."""
    breaks = np.unique(np.asarray(breaks))
    x, w = np.polynomial.legendre.leggauss(order)
    lo, hi = breaks[:-1], breaks[1:]
    keep = hi - lo > 1e-14
    lo, hi = lo[keep], hi[keep]
    z = (0.5 * (hi - lo)[:, None] * x + 0.5 * (hi + lo)[:, None]).ravel()
    wt = (0.5 * (hi - lo)[:, None] * w).ravel()
    return z, wt


def column(z, x=0.3, y=0.4):
    return np.stack([np.full_like(z, x), np.full_like(z, y), z], axis=1)


def random_contacts(rng, n=40, pairs=30, walls=6):
    x = rng.uniform(0.2, 0.8, (n, 3))
    v = rng.normal(size=(n, 3))
    m = rng.uniform(1.0, 2.0, n)
    r = rng.uniform(0.01, 0.03, n)
    i = rng.integers(0, n, pairs)
    j = (i + rng.integers(1, n, pairs)) % n
    f = rng.normal(size=(pairs, 3))
    b = x[i] - x[j]
    bi = rng.integers(0, n, walls)
    bc = x[bi] + rng.normal(size=(walls, 3)) * 0.02
    bf = rng.normal(size=(walls, 3))
    return x, v, m, r, (i, j, f, b), (bi, bf, bc)


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_volume_integral_of_contact_stress_is_the_virial(k, rng):
    """A profile along z averaged over x and y (extent A): A int sigma_c dz equals
    sum f (x) b over pairs plus the boundary segments, every component, to round-off; and
    A int rho dz is the mass."""
    x, v, m, r, pairs, boundary = random_contacts(rng)
    i, j, f, b = pairs
    bi, bf, bc = boundary
    rc = k.support
    ends = np.concatenate([x[:, 2], bc[:, 2]])
    breaks = np.concatenate([ends - rc, ends, ends + rc])
    z, w = nodes_between(breaks, 12)
    area = 2.5
    grid = PointGrid(column(z), average="xy", extent=area)
    sums = coarse_grain(grid, k, x, v, m, r, pairs=pairs, boundary=boundary)
    virial = np.einsum("pa,pb->ab", f, b) + np.einsum("pa,pb->ab", bf, x[bi] - bc)
    got = area * np.einsum("s,sab->ab", w, sums["contact_stress"])
    assert np.allclose(got, virial, rtol=0, atol=1e-12 * np.abs(virial).max())
    assert area * w @ sums["density"] == pytest.approx(m.sum(), rel=1e-13)
    assert area * w @ sums["boundary_force"] == pytest.approx(bf.sum(axis=0), abs=1e-12)


def loaded_lattice(nx=4, ny=3, nz=8, R=0.01, mass=1e-2, g=9.81, side=0.3):
    """A simple cubic stack of touching spheres on a floor (z = 0) between side walls at
    x = 0 and x = 2 R nx: each vertical contact carries the weight above it, each row along
    x is squeezed by `side` N between the walls. Returns the particles, contacts and box."""
    ix, iy, iz = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    ix, iy, iz = ix.ravel(), iy.ravel(), iz.ravel()
    x = np.stack([(2 * ix + 1) * R, (2 * iy + 1) * R, (2 * iz + 1) * R], axis=1)
    n = x.shape[0]
    row = {(a, c, e): q for q, (a, c, e) in enumerate(zip(ix, iy, iz))}
    pi, pj, f = [], [], []
    for (a, c, e), q in row.items():
        if e + 1 < nz:  # the particle above q pushes... q pushes up on it: force on upper
            upper = row[(a, c, e + 1)]
            pi.append(upper), pj.append(q), f.append((0, 0, mass * g * (nz - e - 1)))
        if a + 1 < nx:
            right = row[(a + 1, c, e)]
            pi.append(right), pj.append(q), f.append((side, 0, 0))
    pi, pj, f = np.array(pi), np.array(pj), np.array(f, dtype=float)
    b = x[pi] - x[pj]
    floor = np.flatnonzero(iz == 0)
    left = np.flatnonzero(ix == 0)
    right = np.flatnonzero(ix == nx - 1)
    bi = np.concatenate([floor, left, right])
    bf = np.concatenate([np.tile([0, 0, mass * g * nz], (floor.size, 1)),
                         np.tile([side, 0, 0], (left.size, 1)),
                         np.tile([-side, 0, 0], (right.size, 1))]).astype(float)
    bc = x[bi].copy()
    bc[:floor.size, 2] -= R
    bc[floor.size:floor.size + left.size, 0] -= R
    bc[floor.size + left.size:, 0] += R
    # check the lattice is in equilibrium: contact + wall + gravity = 0 on every particle
    total = np.zeros((n, 3))
    np.add.at(total, pi, f)
    np.add.at(total, pj, -f)
    np.add.at(total, bi, bf)
    total[:, 2] -= mass * g
    assert np.abs(total).max() < 1e-15
    box = (2 * R * nx, 2 * R * ny, 2 * R * nz)
    return x, np.zeros((n, 3)), np.full(n, mass), np.full(n, R), (pi, pj, f, b), (bi, bf, bc), box


@pytest.mark.parametrize("k", [Kernel.gaussian(0.008), Kernel.lucy(0.03)], ids=lambda k: k.name)
def test_static_lattice_vertical_stress_is_the_weight_above(k):
    """sigma_zz(z) (compressive positive) equals g times the mass above z per area, from the
    density field, away from the floor; and the integral momentum balance
    sigma_zz(z1) - sigma_zz(z0) = int (t_z - rho g) dz closes to round-off across the floor."""
    g = 9.81
    x, v, m, r, pairs, boundary, box = loaded_lattice(g=g)
    area = box[0] * box[1]
    rc = k.support
    bc = boundary[2]
    ends = np.concatenate([x[:, 2], bc[:, 2]])
    z, w = nodes_between(np.concatenate([ends - rc, ends, ends + rc]), 12)
    grid = PointGrid(column(z), average="xy", extent=area)
    fields = derive(coarse_grain(grid, k, x, v, m, r, pairs=pairs, boundary=boundary))
    rho, szz = fields["density"], fields["stress"][:, 2, 2]
    tz = fields["boundary_force"][:, 2]
    # mass above each node: the density's integral from the node up (exact on the nodes'
    # intervals: integrate the density field over [z_k, top] with nodes of its own)
    top = ends.max() + rc
    floor_zone = rc  # the floor's force density acts within rc of z = 0
    checked = 0
    for zk, s in zip(z, szz):
        if zk < floor_zone or zk > box[2] - rc:
            continue
        zz, ww = nodes_between(np.concatenate([[zk, top], [e for e in np.concatenate(
            [ends - rc, ends, ends + rc]) if zk < e < top]]), 12)
        above = derive(coarse_grain(PointGrid(column(zz), "xy", area), k, x, v, m, r))
        weight = g * ww @ above["density"]
        assert s == pytest.approx(weight, rel=1e-10)
        checked += 1
        if checked > 6:
            break
    assert checked > 3
    # the floor's load: everything rests on it, so int t_z dz = total weight / area
    assert w @ tz == pytest.approx(g * m.sum() / area, rel=1e-12)
    # sigma_zz at a node is the integral of (t_z - rho g) below it (sigma = 0 below the floor)
    k_mid = np.searchsorted(z, 0.5 * box[2])
    breaks = np.concatenate([ends - rc, ends, ends + rc])
    zz, ww = nodes_between(np.concatenate([[z.min() - rc, z[k_mid]],
                                           breaks[breaks < z[k_mid]]]), 12)
    sub = derive(coarse_grain(PointGrid(column(zz), "xy", area), k, x, v, m, r,
                              pairs=pairs, boundary=boundary))
    balance = ww @ (sub["boundary_force"][:, 2] - g * sub["density"])
    assert szz[k_mid] == pytest.approx(balance, abs=1e-12 * g * m.sum() / area)
    # the lateral squeeze: away from all walls sigma_xx is side / (row cross-section) on
    # average over the box (A int sigma_xx dz = the x-virial)
    assert area * w @ fields["stress"][:, 0, 0] == pytest.approx(
        np.einsum("p,p->", pairs[2][:, 0], pairs[3][:, 0])
        + np.einsum("p,p->", boundary[1][:, 0], x[boundary[0], 0] - bc[:, 0]), rel=1e-12)


def test_compressive_stress_is_positive():
    """Two spheres pushed apart (repulsive contact): positive contact stress along the line."""
    x = np.array([[0.0, 0, 0], [0.02, 0, 0]])
    f = np.array([[-1.0, 0, 0]])  # force on particle 0 from 1: away from 1
    grid = CartesianGrid((-0.1, -0.1, -0.1), (0.12, 0.1, 0.1), (11, 10, 10))
    s = coarse_grain(grid, Kernel.gaussian(0.02), x, np.zeros((2, 3)), np.ones(2),
                     np.full(2, 0.01), pairs=([0], [1], f, x[[0]] - x[[1]]))
    sxx = s["contact_stress"][..., 0, 0]
    assert sxx.min() >= 0 and sxx.max() > 0
    assert np.abs(s["contact_stress"][..., 1, 1]).max() == 0.0


def test_kinetic_stress_and_temperature_of_a_gas():
    """Particles moving with mean flow U and fluctuations +-c along x at one point: the kinetic
    stress is rho c^2 along x only, the velocity U, the temperature c^2 / 3."""
    U, c = np.array([1.0, 2.0, 3.0]), 0.5
    x = np.zeros((2, 3))
    vel = np.array([U + [c, 0, 0], U - [c, 0, 0]])
    grid = PointGrid(np.zeros((1, 3)))
    f = derive(coarse_grain(grid, Kernel.lucy(0.1), x, vel, np.ones(2), np.full(2, 0.01)))
    rho = f["density"][0]
    assert np.allclose(f["velocity"][0], U, rtol=1e-14)
    expected = np.zeros((3, 3))
    expected[0, 0] = rho * c * c
    assert np.allclose(f["kinetic_stress"][0], expected, atol=1e-12 * rho)
    assert f["temperature"][0] == pytest.approx(c * c / 3.0, rel=1e-12)
    assert f["pressure"][0] == pytest.approx(rho * c * c / 3.0, rel=1e-12)
    # q = sqrt(3/2 s:s) with s = diag(2, -1, -1) P: q = 3 P, ratio 3
    assert f["stress_ratio"][0] == pytest.approx(3.0, rel=1e-12)


def test_fabric_and_coordination_of_a_lattice():
    """Inside a simple cubic lattice every particle has 2 contacts along each axis: its
    n n sum is 2 I, so the fabric is 2 nu I and the coordination number 6."""
    x, v, m, r, pairs, boundary, box = loaded_lattice(nx=6, ny=6, nz=6)
    # add the y contacts the lattice builder leaves out (zero force: they still count)
    idx = {tuple(np.round(p / 0.02 - 0.5).astype(int)): q for q, p in enumerate(x)}
    extra_i, extra_j = [], []
    for (a, c, e), q in idx.items():
        if (a, c + 1, e) in idx:
            extra_i.append(idx[(a, c + 1, e)]), extra_j.append(q)
    i = np.concatenate([pairs[0], extra_i])
    j = np.concatenate([pairs[1], extra_j])
    f = np.concatenate([pairs[2], np.zeros((len(extra_i), 3))])
    b = x[i] - x[j]
    grid = PointGrid(np.array([[0.06, 0.06, 0.06]]))
    # the point lies between 8 interior particles (distance sqrt(3) R); the kernel's support
    # 2 R reaches them and no other (the next lie sqrt(11) R away)
    out = derive(coarse_grain(grid, Kernel.lucy(0.02), x, v, m, r, pairs=(i, j, f, b)))
    assert out["volume_fraction"][0] > 0
    assert out["coordination"][0] == pytest.approx(6.0, rel=1e-12)
    assert np.allclose(out["fabric"][0], 2.0 * out["volume_fraction"][0] * np.eye(3),
                       rtol=1e-12)


def test_time_average_and_cylindrical_components(rng):
    """The mean of two snapshots' sums; a rigid rotation about the axis has only a theta
    velocity on a cylindrical grid, equal to omega r averaged over the kernel."""
    n = 4000
    rad = np.sqrt(rng.uniform(0, 1, n)) * 0.5
    th = rng.uniform(0, 2 * np.pi, n)
    x = np.stack([rad * np.cos(th), rad * np.sin(th), rng.uniform(0, 1, n)], axis=1)
    omega = 2.0
    v = np.stack([-omega * x[:, 1], omega * x[:, 0], np.zeros(n)], axis=1)
    grid = CylindricalGrid((0, 0), 0.5, (0.2, 0.8), (10, 6))
    k = Kernel.lucy(0.2)
    s1 = coarse_grain(grid, k, x, v, np.ones(n), np.full(n, 0.005))
    s2 = coarse_grain(grid, k, x, 2 * v, np.ones(n), np.full(n, 0.005))
    avg = TimeAverage(grid)
    avg.add(s1)
    avg.add(s2)
    mean = avg.mean()
    assert np.allclose(mean["momentum"], 1.5 * s1["momentum"], rtol=1e-14, atol=0)
    f = derive(s1)
    u = f["velocity"]
    # no radial velocity, up to the angular quadrature's error (cg.grid: about 1e-6 for Lucy)
    assert np.abs(u[..., 0]).max() < 1e-5 * np.abs(u[..., 1]).max()
    assert np.abs(u[..., 2]).max() == 0.0
    assert np.all(u[..., 1] > 0)


def test_bad_input():
    with pytest.raises(InputError, match="exceeds twice the kernel's width"):
        coarse_grain(CartesianGrid((0, 0, 0), (1, 1, 1), (2, 2, 2)), Kernel.gaussian(0.1),
                     np.zeros((1, 3)), np.zeros((1, 3)), np.ones(1), np.ones(1))
    with pytest.raises(InputError, match="empty box"):
        CartesianGrid((0, 0, 0), (1, 0, 1), (2, 2, 2))
    with pytest.raises(InputError, match="whole numbers"):
        CartesianGrid((0, 0, 0), (1, 1, 1), (0, 2, 2))
    with pytest.raises(InputError, match="unknown direction"):
        CartesianGrid((0, 0, 0), (1, 1, 1), (2, 2, 2), average="w")
    with pytest.raises(InputError, match="outside the particle rows"):
        coarse_grain(PointGrid(np.zeros((1, 3))), Kernel.lucy(1.0), np.zeros((1, 3)),
                     np.zeros((1, 3)), np.ones(1), np.ones(1),
                     pairs=([0], [3], np.zeros((1, 3)), np.ones((1, 3))))
