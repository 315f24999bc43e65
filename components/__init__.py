"""Schemas of the entity tables: which tables exist, their fields, dtypes and halo policy.

Installed as ``ecs_dem.components``.
"""
