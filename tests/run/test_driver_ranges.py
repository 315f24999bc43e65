"""The drivers' range rows for material keys are the components' ranges.

A driver checks its configuration before it prepares anything (``check_ranges``); a row that
differs from the component's own range either refuses a value the component takes or lets
through one the component then refuses after the preparation (pour's restitution was [0, 1]
while ``add_species`` refuses 0).
"""
import math

import pytest

from helpers import load_driver

from ecs_dem.components.membranes import MEMBRANE_RANGES
from ecs_dem.components.species import SPECIES_RANGES
from ecs_dem.config import in_range

#: (driver, its key, the component's table, the component's constant)
MATERIAL_KEYS = [
    ("pour", key, SPECIES_RANGES, key)
    for key in ("youngs_modulus", "poisson_ratio", "density", "restitution", "friction",
                "rolling_friction")
] + [
    ("compression", key, SPECIES_RANGES, key)
    for key in ("youngs_modulus", "poisson_ratio", "density", "restitution", "friction")
] + [
    ("compression", "prepare_restitution", SPECIES_RANGES, "restitution"),
    ("compression", "prepare_friction", SPECIES_RANGES, "friction"),
] + [
    ("drum", key, MEMBRANE_RANGES, key)
    for key in ("youngs_modulus", "thickness", "density", "damping_ratio")
]


@pytest.mark.parametrize("driver, key, table, constant", MATERIAL_KEYS)
def test_a_material_key_takes_what_its_component_takes(driver, key, table, constant):
    rows = {row[0]: row[1:] for row in load_driver(driver).RANGES}
    assert key in rows, f"{driver}: '{key}' has no range row"
    low, high, closed = table[constant]
    probes = [low, high, low - 1.0, 0.5 * (low + high) if math.isfinite(high) else low + 1.0,
              math.nan, math.inf]
    for value in probes:
        assert in_range(value, *rows[key]) == in_range(value, low, high, closed), (key, value)
