"""Species (materials): elastic and frictional constants per particle species.

One row per species; the row index is the species id stored in
``particles.species`` and ``walls.species``. The table is small and
replicated on every rank (not spatial, never ghosted).

Its values may change between steps (``world.species.friction[0] = 0.3``, or
a species added): :func:`species_version` tells, and the contact systems
bind their laws again (``systems.contact.law.LawBinding``).
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from ecs_dem.config import in_range, range_text
from ecs_dem.errors import InputError
from ecs_dem.jit import kernel
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


#: (low, high, brackets) of each constant add_species accepts
SPECIES_RANGES = {
    "youngs_modulus": (0.0, math.inf, "()"),   # Pa
    "poisson_ratio": (-1.0, 0.5, "(]"),   # isotropic: -1 < nu <= 0.5 (0.5 incompressible)
    "density": (0.0, math.inf, "()"),          # kg/m^3
    "restitution": (0.0, 1.0, "(]"),
    "friction": (0.0, math.inf, "[]"),
    "rolling_friction": (0.0, math.inf, "[]"),
}


def species_ranges(**keys) -> tuple:
    """``check_ranges`` rows for a driver's keys that become species constants, so that a
    bad one stops the driver before it prepares anything:
    ``species_ranges(grain_modulus="youngs_modulus", grain_friction="friction")``."""
    return tuple((key, *SPECIES_RANGES[constant]) for key, constant in keys.items())


def create_species_table(world) -> Table:
    """Add an empty ``species`` table to the world (idempotent)."""
    if "species" in world.tables:
        return world.tables["species"]
    return world.add_table(Table("species", SPECIES_FIELDS, capacity=8))


def add_species(world, *, youngs_modulus: float, poisson_ratio: float, density: float,
                restitution: float = 1.0, friction: float = 0.0,
                rolling_friction: float = 0.0) -> int:
    """Register a material and return its species id (SI units)."""
    constants = {"youngs_modulus": youngs_modulus, "poisson_ratio": poisson_ratio,
                 "density": density, "restitution": restitution, "friction": friction,
                 "rolling_friction": rolling_friction}
    for name, value in constants.items():
        if not in_range(value, *SPECIES_RANGES[name]):
            raise InputError(f"species: {name} must lie in "
                             f"{range_text(*SPECIES_RANGES[name])} (got {value})")
    table = create_species_table(world)
    rows = table.append(1, youngs_modulus=youngs_modulus, poisson_ratio=poisson_ratio,
                        density=density, restitution=restitution, friction=friction,
                        rolling_friction=rolling_friction)
    return rows.start


#: species table -> [step of the last look, the values then, their version, the columns' views]
_SEEN: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@kernel
def _differs(columns, values) -> bool:
    """Whether some column differs from its row of `values` (same lengths)."""
    for k in range(len(columns)):
        column = columns[k]
        for r in range(column.size):
            if column[r] != values[k, r]:
                return True
    return False


def species_version(world) -> int:
    """A number that changes whenever a value of the species table changes or a species is
    added (0 without species). The values are compared with those of the last look at most
    once per step (``world.step``): every contact system asks each step, one comparison of
    a few numbers (about a microsecond) serves them all."""
    table = world.tables.get("species")
    if table is None:
        return 0
    seen = _SEEN.get(table)
    step = world.step
    if seen is not None and seen[0] == step:
        return seen[2]
    if seen is None or seen[3][0].size != table.n_owned or seen[4] != table.epoch:
        columns = tuple(table.owned(f.name) for f in SPECIES_FIELDS)
        values = np.array(columns)
        if seen is None:
            _SEEN[table] = [step, values, 1, columns, table.epoch]
            return 1
        seen[1:] = [values, seen[2] + 1, columns, table.epoch]
    elif _differs(seen[3], seen[1]):
        seen[1] = np.array(seen[3])
        seen[2] += 1
    seen[0] = step
    return seen[2]
