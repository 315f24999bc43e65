"""Multi-contact DEM (Brodu, Dijksman & Behringer 2015): the correction of each contact's
overlap by the surface displacements of the grain's other contacts (``systems``), on the
contact pipeline of every geometry (``kernels``). Everything of ``systems`` is importable
from this package: ``from ecs_dem.systems.multicontact import multicontact``."""
from .systems import *  # noqa: F401,F403
from .systems import __all__  # noqa: F401
