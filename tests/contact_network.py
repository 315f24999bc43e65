"""Checks of a snapshot's contact network (``SnapshotWriter(contacts=True)``), shared by the
serial and the MPI tests."""
from __future__ import annotations

import h5py
import numpy as np

GRAVITY = np.array([0.0, 0.0, -9.81])


def force_balance(path, step: int, gravity=GRAVITY) -> tuple[float, int, int]:
    """(largest |sum of the written contact forces + m g - written total force| over the
    particles, relative to the largest total contact force; pair rows; boundary rows) of the
    snapshot at `step`: the network must account for every particle's force."""
    with h5py.File(path, "r") as f:
        g = f[f"snapshots/{step:09d}"]
        gid, mass, total = g["gid"][:], g["mass"][:], g["force"][:]
        c, b = g["contacts"], g["boundary_contacts"]
        i, j, force = c["i"][:], c["j"][:], c["force"][:]
        bi, bforce = b["i"][:], b["force"][:]
    row = np.full(int(gid.max()) + 1, -1)
    row[gid] = np.arange(gid.size)
    assert np.all(row[i] >= 0) and np.all(row[j] >= 0) and np.all(row[bi] >= 0)
    summed = mass[:, None] * gravity
    np.add.at(summed, row[i], force)
    np.add.at(summed, row[j], -force)
    np.add.at(summed, row[bi], bforce)
    scale = np.abs(total - mass[:, None] * gravity).max()
    return float(np.abs(summed - total).max() / scale), int(i.size), int(bi.size)


def geometry_errors(path, step: int) -> tuple[float, float]:
    """(largest |branch - (x_i - x_j)| / radius with the minimum image left out, largest
    distance of a pair's contact point from the segment between the centres / radius) at
    `step`, for the pairs that do not cross a periodic boundary."""
    with h5py.File(path, "r") as f:
        g = f[f"snapshots/{step:09d}"]
        gid, x, r = g["gid"][:], g["position"][:], g["radius"][:]
        c = g["contacts"]
        i, j, branch, point = c["i"][:], c["j"][:], c["branch"][:], c["contact_point"][:]
    row = np.full(int(gid.max()) + 1, -1)
    row[gid] = np.arange(gid.size)
    xi, xj, rmax = x[row[i]], x[row[j]], r.max()
    inside = np.linalg.norm(xj - xi, axis=1) < 4 * rmax  # not across a periodic boundary
    b_err = np.abs(branch[inside] - (xi - xj)[inside]).max() / rmax
    u = branch / np.linalg.norm(branch, axis=1)[:, None]
    off = point - xi
    along = -np.einsum("ij,ij->i", off, u)  # the contact point lies towards j
    perp = np.linalg.norm(off + along[:, None] * u, axis=1)
    assert np.all(along > 0)
    return float(b_err), float(perp.max() / rmax)
