"""Rigid clumps: grains made of overlapping or touching spheres (pebbles) that move as one
rigid body.

``template`` (pebbles in the body frame, ``clump_template``), ``mass_properties`` (volume,
centre and inertia by summation, voxels or a closed surface), ``filling`` (a closed mesh
filled with pebbles), ``library`` (ready shapes) and ``bodies`` (the ``bodies`` table and
``add_clumps``), ``shapes`` (a template as an insertion shape: clumps drawn from a
size distribution, ``clump_shape``). The systems that move bodies are ``ecs_dem.systems.rigid_body``;
docs/user-guide/clumps.md describes the conventions.
"""
from .template import ClumpTemplate, clump_template

__all__ = ["ClumpTemplate", "clump_template"]
