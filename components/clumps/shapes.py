"""Clump templates as insertion shapes: clumps drawn from a size distribution.

``clump_shape(template)`` is a :class:`~ecs_dem.components.insertion.psd.Shape`
for :func:`~ecs_dem.components.insertion.insert.insert` and ``Mixture``: a grain
of drawn size d is the template scaled so that d is its *volume-equivalent
diameter* (the diameter of the sphere of the same solid volume,
d_v = (6 V / pi)^(1/3); ``size="bounding"``: the diameter of the smallest sphere
about the centre of mass that holds every pebble). With the volume-equivalent
size a PSD by volume means the same solid volume for spheres and clumps, and
a mixture's volume fractions are the solid fractions of its components.

The insertion keeps the grains' bounding spheres (radius: the template's
``extent`` scaled) apart and inside the region, so clumps never overlap and
never poke out, whatever their random orientation; ``add`` builds the bodies
(``add_clumps`` with one scale factor per grain, the orientation the insertion
drew) from one species per component.

Each distinct size is one row of ``clump_templates``; the ghost width covers
the largest scaled reach.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError

from ..insertion.psd import Shape
from .bodies import add_clumps
from .template import ClumpTemplate

SIZES = ("volume", "bounding")


def equivalent_diameter(template: ClumpTemplate) -> float:
    """The diameter of the sphere of the template's solid volume [m]."""
    return (6.0 * template.volume / math.pi) ** (1.0 / 3.0)


def clump_shape(template: ClumpTemplate, size: str = "volume") -> Shape:
    """The insertion shape of `template` (module docstring); `size` "volume" (the drawn
    diameter is the volume-equivalent one) or "bounding" (the bounding sphere's)."""
    if not isinstance(template, ClumpTemplate):
        raise InputError(f"clump_shape: expected a ClumpTemplate (components.clumps), got "
                         f"{type(template).__name__}")
    if size not in SIZES:
        raise InputError(f"clump_shape: size {size!r} is not one of {SIZES}")
    unit = equivalent_diameter(template) if size == "volume" else 2.0 * template.extent

    def add(world, position, orientation, diameter, species):
        species = np.asarray(species)
        if species.size and np.any(species != species.flat[0]):
            raise InputError(f"clump_shape '{template.name}': one species per component")
        return add_clumps(world, template, position, orientation,
                          int(species.flat[0]) if species.size else 0,
                          scale=np.asarray(diameter, dtype=np.float64) / unit,
                          check_overlaps=False)

    return Shape(template.name, template.extent / unit, template.volume / unit**3, add)


__all__ = ["clump_shape", "equivalent_diameter", "SIZES"]
