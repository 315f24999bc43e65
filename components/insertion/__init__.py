"""Insertion of grains with true particle sizes: size distributions (``psd``), regions (a box, a
cylinder, a closed mesh: ``regions``), random sequential insertion without overlaps
(``insert``) and the check of an inserted sample against the requested distribution
(``check``, also ``python -m ecs_dem.components.insertion.check``)."""
from .psd import PSD, Component, Mixture, Shape, SPHERE, lognormal, normal, read_psd, uniform
from .regions import BoxRegion, CylinderRegion, MeshRegion
from .insert import Insertion, InsertionError, add_to_world, insert, place_spheres

__all__ = ["PSD", "Component", "Mixture", "Shape", "SPHERE", "lognormal", "normal", "read_psd",
           "uniform", "BoxRegion", "CylinderRegion", "MeshRegion", "Insertion", "InsertionError",
           "add_to_world", "insert", "place_spheres"]
