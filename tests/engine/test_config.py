"""Driver configuration: defaults, TOML file, --set overrides (ecs_dem/config.py)."""
import math
import re

import pytest

from ecs_dem.config import check_ranges, load_config, merge_config
from ecs_dem.errors import ConfigError, InputError

DEFAULTS = {
    "steps": 100,
    "dt": 1e-4,
    "sort": True,
    "gravity": (0.0, 0.0, -9.81),
    "periodic": (True, False, True),
    "output": "out.h5",
    "solver.tolerance": 1e-6,
    "solver.iterations": 5,
}


def test_defaults_unchanged_without_input():
    cfg = load_config(DEFAULTS, [])
    assert cfg == DEFAULTS
    assert cfg is not DEFAULTS


def test_unknown_key_names_it_and_suggests_the_close_match():
    with pytest.raises(ConfigError) as err:
        merge_config(DEFAULTS, {"stepz": 3})
    msg = str(err.value)
    assert "'stepz'" in msg
    assert "did you mean steps" in msg
    assert isinstance(err.value, InputError)  # drivers catch one type


def test_unknown_key_without_close_match_lists_valid_keys():
    with pytest.raises(ConfigError) as err:
        merge_config(DEFAULTS, {"zzzzqqq": 1})
    assert "did you mean" not in str(err.value)
    assert "steps" in str(err.value) and "zzzzqqq" in str(err.value)


def test_unknown_nested_key_is_reported_with_its_dotted_name():
    with pytest.raises(ConfigError, match=r"'solver\.tolerence'.*solver\.tolerance"):
        merge_config(DEFAULTS, {"solver": {"tolerence": 1e-3}})


@pytest.mark.parametrize("key, value, expected", [
    ("steps", "250", 250),
    ("steps", 7, 7),
    ("steps", 8.0, 8),
    ("dt", "2.5e-5", 2.5e-5),
    ("dt", 3, 3.0),
    ("sort", "false", False),
    ("sort", "0", False),
    ("sort", "yes", True),
    ("sort", False, False),
    ("gravity", "1, 2, -3", (1.0, 2.0, -3.0)),
    ("gravity", "(0.5,0,0)", (0.5, 0.0, 0.0)),
    ("gravity", [1, 2, 3], (1.0, 2.0, 3.0)),
    ("periodic", "true,true,false", (True, True, False)),
    ("output", 12, "12"),
])
def test_values_are_coerced_to_the_type_of_the_default(key, value, expected):
    cfg = merge_config(DEFAULTS, {key: value})
    assert cfg[key] == expected
    assert type(cfg[key]) is type(DEFAULTS[key])
    if isinstance(expected, tuple):
        assert all(type(v) is type(d) for v, d in zip(cfg[key], DEFAULTS[key]))


@pytest.mark.parametrize("key, value", [
    ("steps", "ten"),
    ("steps", "2.5"),
    ("steps", 2.5),  # a TOML float must not be truncated silently
    ("steps", True),  # nor a TOML true taken as 1
    ("dt", False),
    ("dt", "fast"),
    ("sort", "maybe"),
    ("gravity", "1, 2"),
    ("periodic", "1,2,3"),
])
def test_bad_values_raise_config_error_naming_the_key(key, value):
    with pytest.raises(ConfigError, match=f"'{key}'"):
        merge_config(DEFAULTS, {key: value})


def test_toml_file_is_loaded(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(
        'steps = 42\n'
        'dt = 5e-5\n'
        'sort = false\n'
        'gravity = [0.0, -1.0, 0.0]\n'
        '\n'
        '[solver]\n'
        'tolerance = 1e-9\n')
    cfg = load_config(DEFAULTS, ["--config", str(path)])
    assert cfg["steps"] == 42
    assert cfg["dt"] == 5e-5
    assert cfg["sort"] is False
    assert cfg["gravity"] == (0.0, -1.0, 0.0)
    assert cfg["solver.tolerance"] == 1e-9
    assert cfg["solver.iterations"] == 5
    assert cfg["output"] == "out.h5"


def test_set_overrides_win_over_the_file(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('steps = 42\noutput = "a.h5"\n')
    cfg = load_config(DEFAULTS, ["--config", str(path), "--set", "steps=7",
                                 "--set", "solver.iterations = 9", "--set", "gravity=1,1,1"])
    assert cfg["steps"] == 7
    assert cfg["output"] == "a.h5"
    assert cfg["solver.iterations"] == 9
    assert cfg["gravity"] == (1.0, 1.0, 1.0)


def test_unknown_key_in_file_or_set_is_refused(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text("stepss = 3\n")
    with pytest.raises(ConfigError, match="'stepss'.*did you mean steps"):
        load_config(DEFAULTS, ["--config", str(path)])
    with pytest.raises(ConfigError, match="'grav'"):
        load_config(DEFAULTS, ["--set", "grav=1,2,3"])


def test_malformed_inputs(tmp_path):
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        load_config(DEFAULTS, ["--set", "steps"])
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(DEFAULTS, ["--config", str(tmp_path / "missing.toml")])
    bad = tmp_path / "bad.toml"
    bad.write_text("steps = = 3\n")
    with pytest.raises(ConfigError, match="bad.toml"):
        load_config(DEFAULTS, ["--config", str(bad)])
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(DEFAULTS, ["--config", str(tmp_path)])
    binary = tmp_path / "binary.toml"  # was a UnicodeDecodeError traceback
    binary.write_bytes(b"\xff\xfe steps = 3\n")
    with pytest.raises(ConfigError, match="binary.toml is not UTF-8 text"):
        load_config(DEFAULTS, ["--config", str(binary)])


def test_a_value_of_the_wrong_type_names_the_key_and_the_type():
    with pytest.raises(ConfigError, match=r"config key 'steps' takes an int \(got 'ten'\)"):
        load_config(DEFAULTS, ["--set", "steps=ten"])
    with pytest.raises(ConfigError, match=r"config key 'dt' takes a float \(got 'small'\)"):
        load_config(DEFAULTS, ["--set", "dt=small"])


@pytest.mark.parametrize("closed, inside, outside", [
    (True, (0.0, 0.5, 1.0), (-0.1, 1.1)),
    (False, (0.25, 0.5), (0.0, 1.0)),
    ("(]", (0.5, 1.0), (0.0, 1.5)),
    ("[)", (0.0, 0.5), (1.0, -0.5)),
])
def test_check_ranges_includes_exactly_the_bounds_asked_for(closed, inside, outside):
    ranges = (("dt", 0.0, 1.0, closed),)
    for value in inside:
        check_ranges({"dt": value}, ranges)
    shown = {True: "[0, 1]", False: "(0, 1)", "(]": "(0, 1]", "[)": "[0, 1)"}[closed]
    for value in (*outside, math.nan, math.inf):
        with pytest.raises(ConfigError, match=re.escape(f"'dt' = {value!r} is outside {shown}")):
            check_ranges({"dt": value}, ranges)


def test_check_ranges_refuses_a_range_it_cannot_read():
    with pytest.raises(ValueError, match="two brackets"):
        check_ranges({"dt": 0.5}, (("dt", 0.0, 1.0, "]["),))


def test_show_config_prints_toml_that_config_reads_back(tmp_path, capsys):
    """--show-config printed Python's repr (True, tuples), which --config then refused: a
    configuration saved from it could not be given back."""
    defaults = dict(DEFAULTS, label='say "hi" \\ there', limit=math.inf, on=False)
    changed = ["--set", "sort=false", "--set", "gravity=0,-1,0", "--set", "steps=7",
               "--set", "output=out dir/run's.h5", "--set", "solver.tolerance=1e-12"]
    expected = load_config(defaults, changed)
    with pytest.raises(SystemExit):
        load_config(defaults, changed + ["--show-config"])
    saved = tmp_path / "saved.toml"
    saved.write_text(capsys.readouterr().out)
    assert "sort = false" in saved.read_text() and "gravity = [0.0, -1.0, 0.0]" in saved.read_text()
    assert load_config(defaults, ["--config", str(saved)]) == expected
