"""A small library of clump shapes, each scaled by its pebble radius r [m].

=============  ==========================================================  ============
name           pebbles                                                     mass props
=============  ==========================================================  ============
dimer          2 of radius r, touching (centres 2r apart)                  spheres
trimer         3 of radius r in a line, centres r apart (overlapping)      voxels
tetrahedron    4 of radius r at the corners of a regular tetrahedron of     spheres
               edge 2r (each touches the other three)
flat           7 of radius r: a hexagon around a centre, edge 1.5 r, in     voxels
               one plane (a flake: lies on a face, does not roll)
elongated      5 of radius r in a line, centres 1.2 r apart, the ends of    voxels
               radius 0.8 r (a rod with rounded ends)
ellipsoid_stl  an ellipsoid of semi-axes (2, 1.4, 1) r, written by the      surface
               package as an STL file, read back and filled with pebbles
=============  ==========================================================  ============

``shape(name, r)`` returns any of them; ``SHAPES`` lists the names.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ecs_dem.errors import InputError

from ..mesh.generators import icosphere
from ..mesh.io import read_mesh, write_mesh
from .template import ClumpTemplate, clump_template


def _radius(r) -> float:
    r = float(r)
    if not (np.isfinite(r) and r > 0):
        raise InputError(f"clump: the pebble radius must be a positive length in metres (got {r})")
    return r


def dimer(r: float) -> ClumpTemplate:
    r = _radius(r)
    return clump_template([[-r, 0, 0], [r, 0, 0]], r, name="dimer")


def trimer(r: float, voxel: float | None = None) -> ClumpTemplate:
    r = _radius(r)
    return clump_template([[-r, 0, 0], [0, 0, 0], [r, 0, 0]], r, mass_properties="voxels",
                          voxel=voxel, name="trimer")


def tetrahedron(r: float) -> ClumpTemplate:
    """Four pebbles at the corners of a regular tetrahedron of edge 2r."""
    r = _radius(r)
    corners = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], dtype=np.float64)
    corners *= 2 * r / np.linalg.norm(corners[0] - corners[1])
    return clump_template(corners, r, name="tetrahedron")


def flat(r: float, voxel: float | None = None) -> ClumpTemplate:
    r = _radius(r)
    a = np.arange(6) * np.pi / 3
    ring = 1.5 * r * np.column_stack([np.cos(a), np.sin(a), np.zeros(6)])
    return clump_template(np.vstack([[0, 0, 0], ring]), r, mass_properties="voxels", voxel=voxel,
                          name="flat")


def elongated(r: float, voxel: float | None = None) -> ClumpTemplate:
    r = _radius(r)
    x = 1.2 * r * np.arange(-2, 3)
    radii = np.array([0.8, 1, 1, 1, 0.8]) * r
    return clump_template(np.column_stack([x, np.zeros(5), np.zeros(5)]), radii,
                          mass_properties="voxels", voxel=voxel, name="elongated")


def ellipsoid_mesh(r: float, level: int = 2):
    """The ellipsoid of semi-axes (2, 1.4, 1) r as a closed triangle mesh."""
    unit = icosphere(1.0, level)
    return type(unit)(unit.vertices * (np.array([2.0, 1.4, 1.0]) * _radius(r)), unit.triangles)


def ellipsoid_stl(r: float, pebbles: int = 12, path=None, voxel: float | None = None) -> ClumpTemplate:
    """The ellipsoid written to an STL file (`path`, default a temporary file), read back
    and filled with `pebbles` pebbles; mass properties exact for the STL's surface."""
    mesh = ellipsoid_mesh(r)
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "ellipsoid.stl" if path is None else Path(path)
        write_mesh(file, mesh)
        surface = read_mesh(file)
    return clump_template(surface=surface, pebbles=pebbles, voxel=voxel, name="ellipsoid_stl")


SHAPES = {"dimer": dimer, "trimer": trimer, "tetrahedron": tetrahedron, "flat": flat,
          "elongated": elongated, "ellipsoid_stl": ellipsoid_stl}


def shape(name: str, r: float) -> ClumpTemplate:
    """The library shape `name` with pebble radius `r` [m]."""
    if name not in SHAPES:
        raise InputError(f"clump: no shape '{name}' in the library; shapes: {sorted(SHAPES)}")
    return SHAPES[name](r)


__all__ = ["SHAPES", "shape", "dimer", "trimer", "tetrahedron", "flat", "elongated",
           "ellipsoid_stl", "ellipsoid_mesh"]
