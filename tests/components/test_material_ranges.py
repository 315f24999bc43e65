"""A driver's range check and the component agree on every material constant
(components.species.species_ranges, components.membranes.membrane_ranges): a value the driver's
check_ranges passes is accepted by add_species / add_membrane, and one it refuses is refused."""
import math

import pytest

from ecs_dem import Box, World
from ecs_dem.components.membranes import MEMBRANE_RANGES, add_membrane, membrane_ranges
from ecs_dem.components.mesh.generators import flat_sheet
from ecs_dem.components.species import SPECIES_RANGES, add_species, species_ranges
from ecs_dem.config import check_ranges
from ecs_dem.errors import InputError

GOOD_SPECIES = dict(youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0, restitution=0.5,
                    friction=0.5, rolling_friction=0.0)
GOOD_MEMBRANE = dict(youngs_modulus=1e6, thickness=1e-3, density=1000.0, damping_ratio=0.1,
                     bending_stiffness=1e-4, bending_damping=0.0)


def probes(low, high, brackets):
    """Values at and just beyond each bound, and non-finite ones, with whether they lie inside."""
    out = [(math.nan, False), (math.inf, False), (-math.inf, False)]
    for bound, bracket, step in ((low, brackets[0], -1.0), (high, brackets[1], 1.0)):
        if math.isfinite(bound):
            out += [(bound, bracket in "[]"), (bound + step * 1e-3, False)]
    return out


def agrees(ranges, component, good, name):
    (key, low, high, brackets), = ranges(**{f"driver_{name}": name})
    for value, inside in probes(low, high, brackets):
        try:
            check_ranges({key: value}, ((key, low, high, brackets),))
            driver_ok = True
        except InputError:
            driver_ok = False
        try:
            component(dict(good, **{name: value}))
            component_ok = True
        except InputError:
            component_ok = False
        assert driver_ok == component_ok == inside, (name, value)


@pytest.mark.parametrize("name", sorted(SPECIES_RANGES))
def test_species_ranges_are_what_add_species_accepts(name):
    def component(constants):
        add_species(World(Box((0, 0, 0), (1, 1, 1)), dt=1e-5), **constants)
    agrees(species_ranges, component, GOOD_SPECIES, name)


@pytest.mark.parametrize("name", sorted(MEMBRANE_RANGES))
def test_membrane_ranges_are_what_add_membrane_accepts(name):
    def component(constants):
        add_membrane(World(Box((-1, -1, -1), (1, 1, 1)), dt=1e-6), flat_sheet(0.1, radius=0.25),
                     **constants)
    agrees(membrane_ranges, component, GOOD_MEMBRANE, name)
