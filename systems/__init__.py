"""Physics systems: numba kernels plus thin System classes that declare their data use.

Installed as ``ecs_dem.systems``.
"""
