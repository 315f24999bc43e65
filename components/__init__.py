"""Schemas of the entity tables (which tables exist, their fields, dtypes and halo policy),
and the mesh tools that build membranes.

Installed as ``ecs_dem.components`` (the folder ``components/``): the table schemas
(``particles``, ``species``, ``walls``, ``springs``, ``membranes``) at the top, the
triangle-mesh tools (reading and writing files, generators, validation, topology) in the
subpackage ``mesh``. Old module names still import (``MOVED``).
"""
from ecs_dem.module_aliases import alias_modules

#: old module name -> its module in the subpackages (both import the same module)
MOVED = {
    "mesh_generators": "mesh.generators",
    "mesh_io": "mesh.io",
    "mesh_validation": "mesh.validation",
    "membrane_topology": "mesh.topology",
}
alias_modules(__name__, MOVED)
