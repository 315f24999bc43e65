"""Grids: where coarse-grained fields are evaluated.

A grid is a set of *sample points* in 3D (``points``, shape (S, 3)), the directions its
kernel resolves (``resolved``, 3 bools; the kernel acts in ``dim`` = their number of
dimensions), the extent of the directions it averages (``extent``: the kernel's norm is
divided by it), and a linear map from values at the sample points to the output cells
(``reduce``), whose array shape is ``shape``.

* :class:`CartesianGrid` ``(lower, upper, cells, average=())``: cell-centred points of a
  box, ``cells[a]`` per direction; the directions named in ``average`` (any of "x", "y",
  "z" or 0, 1, 2) are homogeneous: the field is the average over the box's extent in them,
  computed with the kernel of the remaining dimension (the D-dimensional kernel divided
  by the averaged length or area; for the Gaussian without cutoff this equals averaging
  the 3D field). A grid averaging all three gives the box's mean (one cell). The sample
  points are the output cells (``reduce`` is the identity).
* :class:`CylindricalGrid` ``(axis_point, radius, z_range, cells)``: rings about an axis
  parallel to z through ``axis_point`` (x, y), ``cells = (n_r, n_z)`` cell-centred in
  r in [0, radius] and z in ``z_range``; the field is averaged over the angle theta. Each
  ring is sampled at ``n_theta`` equally spaced angles (arc spacing at most the kernel's
  width / ``per_width``, at least 8 per ring) with the 3D kernel; ``reduce`` turns vectors
  and tensors into their (r, theta, z) components at each angle and averages. The
  trapezoidal rule over a full period converges fast for a smooth kernel: Lucy's to about
  1e-6 of the field with the default 4 samples per width; the cut Gaussian less fast
  (its cut is a step of exp(-c^2/2) of its peak).

* :class:`PointGrid` ``(points, average=(), extent=1.0)``: fields at given points (probes,
  quadrature nodes), the directions in ``average`` ignored by the kernel and their
  ``extent`` (m, m^2) dividing it; ``shape`` is (number of points,).

``grid.check(kernel)`` refuses a kernel narrower than the grid resolves (a spacing above
twice the kernel's width): fields would then alias between the points.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError

_AXES = {"x": 0, "y": 1, "z": 2, 0: 0, 1: 1, 2: 2}


def _axes(average) -> tuple[int, ...]:
    if isinstance(average, str):
        average = tuple(average)
    out = []
    for a in average:
        if a not in _AXES:
            raise InputError(f"coarse-graining grid: unknown direction {a!r} to average; "
                             "use x, y, z (or 0, 1, 2)")
        out.append(_AXES[a])
    return tuple(sorted(set(out)))


class CartesianGrid:
    """Cell-centred points of a box, with some directions averaged (module docstring)."""

    kind = "cartesian"

    def __init__(self, lower, upper, cells, average=()):
        lower = np.asarray(lower, dtype=np.float64).reshape(3)
        upper = np.asarray(upper, dtype=np.float64).reshape(3)
        cells = np.asarray(cells).reshape(3)
        if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
            raise InputError("coarse-graining grid: the box corners must be finite numbers")
        if np.any(upper <= lower):
            raise InputError(f"coarse-graining grid: empty box, upper {upper.tolist()} must "
                             f"exceed lower {lower.tolist()} in every direction (an averaged "
                             "direction too: its extent divides the fields)")
        averaged = _axes(average)
        resolved = np.ones(3, dtype=bool)
        resolved[list(averaged)] = False
        n = np.where(resolved, cells, 1).astype(np.int64)
        if np.any(n[resolved] < 1) or np.any(cells[resolved] != np.floor(cells[resolved])):
            raise InputError(f"coarse-graining grid: cells {cells.tolist()} must be whole "
                             "numbers >= 1 in every resolved direction")
        self.lower, self.upper = lower, upper
        self.resolved = resolved
        self.dim = int(resolved.sum())
        self.extent = float(np.prod((upper - lower)[~resolved])) if self.dim < 3 else 1.0
        self.spacing = (upper - lower) / n
        self.shape = tuple(int(c) for c in n)
        axes = [lower[a] + (np.arange(n[a]) + 0.5) * self.spacing[a] if resolved[a]
                else np.array([0.5 * (lower[a] + upper[a])]) for a in range(3)]
        self.axes = axes
        X, Y, Z = np.meshgrid(*axes, indexing="ij")
        self.points = np.ascontiguousarray(np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1))

    @property
    def components(self) -> tuple[str, str, str]:
        return ("x", "y", "z")

    def reduce(self, values: np.ndarray, rank: int) -> np.ndarray:
        """Values at the sample points, shape ``(S,) + (3,) * rank``, as output cells
        (``shape + (3,) * rank``)."""
        return values.reshape(self.shape + values.shape[1:])

    def check(self, kernel) -> None:
        """Refuse a kernel narrower than the grid resolves (module docstring)."""
        coarse = self.spacing[self.resolved]
        if coarse.size and float(coarse.max()) > 2.0 * kernel.width:
            raise InputError(
                f"coarse-graining: the grid spacing {float(coarse.max()):.4g} m exceeds twice "
                f"the kernel's width {kernel.width:.4g} m, so the fields alias between grid "
                "points: use more cells or a wider kernel")

    def describe(self) -> dict:
        return {"grid": self.kind, "lower": self.lower, "upper": self.upper,
                "cells": np.array(self.shape), "averaged": np.array(~self.resolved)}


class CylindricalGrid:
    """Rings about an axis parallel to z, averaged over the angle (module docstring)."""

    kind = "cylindrical"

    def __init__(self, axis_point, radius, z_range, cells, per_width: float = 4.0):
        axis_point = np.asarray(axis_point, dtype=np.float64).reshape(2)
        z0, z1 = (float(v) for v in z_range)
        if not (math.isfinite(radius) and radius > 0):
            raise InputError(f"coarse-graining grid: the cylinder's radius must be > 0 m "
                             f"(got {radius})")
        if not z1 > z0:
            raise InputError(f"coarse-graining grid: empty z range [{z0}, {z1}]: the upper "
                             "end must exceed the lower")
        cells = np.asarray(cells).reshape(2)
        if np.any(cells < 1) or np.any(cells != np.floor(cells)):
            raise InputError(f"coarse-graining grid: cells {cells.tolist()} (n_r, n_z) must be "
                             "whole numbers >= 1")
        self.axis_point = axis_point
        self.radius = float(radius)
        self.z_range = (z0, z1)
        self.shape = (int(cells[0]), int(cells[1]))
        self.spacing = np.array([self.radius / cells[0], (z1 - z0) / cells[1]])
        self.r = (np.arange(self.shape[0]) + 0.5) * self.spacing[0]
        self.z = z0 + (np.arange(self.shape[1]) + 0.5) * self.spacing[1]
        self.axes = [self.r, self.z]
        self.resolved = np.ones(3, dtype=bool)
        self.dim = 3
        self.extent = 1.0
        self.per_width = float(per_width)
        self._samples = None

    @property
    def components(self) -> tuple[str, str, str]:
        return ("r", "theta", "z")

    def check(self, kernel) -> None:
        if float(self.spacing.max()) > 2.0 * kernel.width:
            raise InputError(
                f"coarse-graining: the grid spacing {float(self.spacing.max()):.4g} m exceeds "
                f"twice the kernel's width {kernel.width:.4g} m, so the fields alias between "
                "grid points: use more cells or a wider kernel")
        self.sample(kernel)

    def sample(self, kernel) -> None:
        """Place the sample points for `kernel`'s width (module docstring)."""
        arc = kernel.width / self.per_width
        counts = np.maximum(8, np.ceil(2.0 * math.pi * self.r / arc)).astype(np.int64)
        theta = np.concatenate([(np.arange(n) + 0.5) * 2.0 * math.pi / n for n in counts])
        ring = np.repeat(np.arange(self.shape[0]), counts)
        self.cos, self.sin = np.cos(theta), np.sin(theta)
        self.ring = ring
        self.counts = counts
        nz = self.shape[1]
        pts = np.empty((ring.size, nz, 3))
        pts[:, :, 0] = (self.axis_point[0] + self.r[ring] * self.cos)[:, None]
        pts[:, :, 1] = (self.axis_point[1] + self.r[ring] * self.sin)[:, None]
        pts[:, :, 2] = self.z[None, :]
        self.points = np.ascontiguousarray(pts.reshape(-1, 3))
        self._samples = kernel.width

    def reduce(self, values: np.ndarray, rank: int) -> np.ndarray:
        """Values at the sample points into (r, theta, z) components, averaged per ring."""
        nz = self.shape[1]
        v = values.reshape((self.ring.size, nz) + values.shape[1:])
        if rank >= 1:
            basis = np.zeros((self.ring.size, 3, 3))  # rows: e_r, e_theta, e_z
            basis[:, 0, 0], basis[:, 0, 1] = self.cos, self.sin
            basis[:, 1, 0], basis[:, 1, 1] = -self.sin, self.cos
            basis[:, 2, 2] = 1.0
            if rank == 1:
                v = np.einsum("sab,szb->sza", basis, v)
            else:
                v = np.einsum("sab,szbc,sdc->szad", basis, v, basis)
        out = np.zeros((self.shape[0],) + v.shape[1:])
        np.add.at(out, self.ring, v)
        return out / self.counts.reshape((-1,) + (1,) * (out.ndim - 1))

    def describe(self) -> dict:
        return {"grid": self.kind, "axis_point": self.axis_point, "radius": self.radius,
                "z_range": np.array(self.z_range), "cells": np.array(self.shape)}


class PointGrid:
    """Fields at given points, some directions averaged over `extent` (module docstring)."""

    kind = "points"

    def __init__(self, points, average=(), extent: float = 1.0):
        points = np.ascontiguousarray(points, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 3 or points.shape[0] == 0:
            raise InputError(f"coarse-graining grid: points must have shape (n >= 1, 3), "
                             f"got {points.shape}")
        averaged = _axes(average)
        self.resolved = np.ones(3, dtype=bool)
        self.resolved[list(averaged)] = False
        self.dim = int(self.resolved.sum())
        if averaged and not (math.isfinite(extent) and extent > 0):
            raise InputError(f"coarse-graining grid: the averaged extent must be > 0 "
                             f"(got {extent})")
        self.extent = float(extent) if averaged else 1.0
        self.points = points
        self.shape = (points.shape[0],)

    @property
    def components(self) -> tuple[str, str, str]:
        return ("x", "y", "z")

    def reduce(self, values: np.ndarray, rank: int) -> np.ndarray:
        return values

    def check(self, kernel) -> None:
        """Points are not a grid: any kernel is accepted."""

    def describe(self) -> dict:
        return {"grid": self.kind, "points": self.points, "averaged": np.array(~self.resolved)}


__all__ = ["CartesianGrid", "CylindricalGrid", "PointGrid"]
