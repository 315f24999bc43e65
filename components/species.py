"""Species (materials): elastic and frictional constants per particle species.

One row per species; the row index is the species id stored in
``particles.species`` and ``walls.species``. The table is small and
replicated on every rank (not spatial, never ghosted).
"""
from __future__ import annotations

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.table import Field, Halo, Table

SPECIES_FIELDS = (
    Field("youngs_modulus", np.float64, (), Halo.LOCAL, 0.0, "Pa", "Young's modulus E"),
    Field("poisson_ratio", np.float64, (), Halo.LOCAL, 0.0, "1", "Poisson's ratio nu"),
    Field("density", np.float64, (), Halo.LOCAL, 0.0, "kg/m^3", "material density"),
    Field("restitution", np.float64, (), Halo.LOCAL, 1.0, "1", "normal coefficient of restitution"),
    Field("friction", np.float64, (), Halo.LOCAL, 0.0, "1", "sliding friction coefficient mu"),
    Field("rolling_friction", np.float64, (), Halo.LOCAL, 0.0, "1",
          "rolling friction coefficient mu_r (0: no rolling resistance)"),
)


def create_species_table(world) -> Table:
    """Add an empty ``species`` table to the world (idempotent)."""
    if "species" in world.tables:
        return world.tables["species"]
    return world.add_table(Table("species", SPECIES_FIELDS, capacity=8))


def add_species(world, *, youngs_modulus: float, poisson_ratio: float, density: float,
                restitution: float = 1.0, friction: float = 0.0,
                rolling_friction: float = 0.0) -> int:
    """Register a material and return its species id (SI units)."""
    checks = [
        (youngs_modulus > 0, f"youngs_modulus must be > 0 Pa (got {youngs_modulus})"),
        (-1.0 < poisson_ratio < 0.5, f"poisson_ratio must lie in (-1, 0.5) (got {poisson_ratio})"),
        (density > 0, f"density must be > 0 kg/m^3 (got {density})"),
        (0.0 < restitution <= 1.0, f"restitution must lie in (0, 1] (got {restitution})"),
        (friction >= 0, f"friction must be >= 0 (got {friction})"),
        (rolling_friction >= 0, f"rolling_friction must be >= 0 (got {rolling_friction})"),
    ]
    for ok, msg in checks:
        if not (ok and np.isfinite([youngs_modulus, poisson_ratio, density]).all()):
            raise InputError(f"species: {msg}")
    table = create_species_table(world)
    rows = table.append(1, youngs_modulus=youngs_modulus, poisson_ratio=poisson_ratio,
                        density=density, restitution=restitution, friction=friction,
                        rolling_friction=rolling_friction)
    return rows.start
