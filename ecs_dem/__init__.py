"""ecs_dem: a discrete element engine built as an entity-component-system.

Layers (imports point downward only)::

    ecs_dem.run         drivers: build a world, run it, report      (folder run/)
    ecs_dem.systems     physics: numba kernels + System classes    (folder systems/)
    ecs_dem.components  schemas: tables, fields, halo policy       (folder components/)
    ecs_dem             engine: tables, world, scheduler, domain, I/O

The engine knows nothing of DEM physics.
"""
from .domain import Box, Domain
from .errors import ConfigError, InputError, OutputError, StateError, UnstableTimeStepError
from .system import Stage, System
from .table import Field, Halo, Table
from .world import World

__all__ = [
    "Box", "Domain", "World", "Table", "Field", "Halo", "System", "Stage",
    "InputError", "ConfigError", "StateError", "OutputError", "UnstableTimeStepError",
]
__version__ = "0.1.0"
