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


@pytest.mark.parametrize("driver, key", [("pour", "particles"), ("compression", "particles"),
                                         ("membrane_drop", "grains"), ("triaxial", "grains")])
def test_a_count_no_machine_can_hold_is_refused_before_anything_is_built(
        driver, key, tmp_path, capsys, monkeypatch):
    """Linux lets numpy allocate more than the machine has and kills the process as the pages
    are touched, without a word: the drivers check their counts first (ecs_dem.memory)."""
    monkeypatch.chdir(tmp_path)
    count = 2 * 10**12  # 1 PB at the floor of 500 bytes a particle
    code = load_driver(driver).main(["--set", f"{key}={count}", "--set",
                                     f"output_dir={tmp_path}" if driver == "triaxial"
                                     else f"output={tmp_path / 'out.h5'}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{key} = 2e+12" in err and f"ask for fewer {key}" in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written


#: (driver, --set values, what the message says): relations between keys and values of the
#: configuration that the drivers check themselves
VALUE_ERRORS = [
    ("pour", ["radius_min=2e-3", "radius_max=1e-3"], "need 0 < radius_min <= radius_max"),
    ("pour", ["box_width=1e-3"], "is smaller than one lattice spacing"),
    ("membrane_drop", ["radii=1e-3,abc"], "config key 'radii'"),
    ("drum", ["edge=0.02"], "must lie in (0, radius/3)"),
    ("compression", ["gammas=0.1,-1"], "gammas must be one or more numbers >= 0"),
    ("friction", ["models=patch,sheet"], "unknown case sheet/"),
    ("friction", ["models=patch", "variants=kinematic", "paths=edge", "length=1e-12"],
     "is dragged in less than one time step"),
]


@pytest.mark.parametrize("driver, values, message", VALUE_ERRORS)
@pytest.mark.parametrize("rank", [0, 1])
def test_a_bad_value_is_an_input_error_printed_by_rank_0_alone(
        driver, values, message, rank, tmp_path, capsys, monkeypatch):
    """Every rank reads the same configuration and raises the same error: on many ranks
    it is printed once (ecs_dem.errors.ConfigValueError), and every rank exits with 2."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("ecs_dem.runner.launch_rank", lambda: rank)
    output = (f"output={tmp_path / 'out'}" if driver in ("compression", "friction")
              else f"output={tmp_path / 'out.h5'}")
    argv = [a for v in values + [output] for a in ("--set", v)]
    code = load_driver(driver).main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    if rank == 0:
        assert err.count("error: ") == 1 and message in err, err
    else:
        assert err == ""
    assert list(tmp_path.iterdir()) == []  # nothing written
