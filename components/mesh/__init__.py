"""Triangle-mesh tools for membranes and mesh walls: the ``Mesh`` container (``surface``),
files in and out (``io``, through meshio), generators of standard shapes (``generators``),
validation (``validation``) and the topology of springs and hinges (``topology``).
``from ecs_dem.components.mesh import Mesh`` keeps working."""
from .surface import Mesh

__all__ = ["Mesh"]
