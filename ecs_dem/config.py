"""Driver configuration: embedded defaults, a TOML file, and ``--set key=value`` overrides.

Every key must exist in the driver's defaults; an unknown key is an error that
names the closest valid keys (a typo must never be silently ignored). Values
are converted to the type of the default.

    cfg = load_config(DEFAULTS, argv)   # argv: [--config FILE] [--set k=v ...]
    check_ranges(cfg, RANGES)           # RANGES: (key, low, high, bounds included)
"""
from __future__ import annotations

import argparse
import difflib
import json
import math
import tomllib
from pathlib import Path

from .errors import ConfigError, ConfigValueError


def _coerce(key: str, value, default):
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigValueError(f"config key '{key}' takes true/false (got {value!r})")
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        if isinstance(value, bool):  # int(True) would turn a misplaced TOML true into 1
            raise ConfigValueError(f"config key '{key}' takes a number (got {value!r})")
        if isinstance(default, int) and isinstance(value, float) and not value.is_integer():
            # int(2.5) would silently truncate a TOML float
            raise ConfigValueError(f"config key '{key}' takes an int (got {value!r})")
        try:
            number = float(value) if isinstance(default, float) else int(value)
        except (TypeError, ValueError):
            kind = type(default).__name__
            raise ConfigValueError(f"config key '{key}' takes {'an' if kind == 'int' else 'a'} "
                                   f"{kind} (got {value!r})") from None
        return number
    if isinstance(default, (list, tuple)):
        if isinstance(value, str):
            value = [v for v in value.replace("(", "").replace(")", "").replace("[", "")
                     .replace("]", "").split(",") if v.strip()]
        if not isinstance(value, (list, tuple)) or len(value) != len(default):
            raise ConfigValueError(f"config key '{key}' takes {len(default)} values (got {value!r})")
        return type(default)(_coerce(key, v, d) for v, d in zip(value, default))
    if default is None:
        return value
    return str(value)


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, f"{name}."))
        else:
            out[name] = v
    return out


def _check_key(key: str, defaults: dict) -> None:
    if key not in defaults:
        close = difflib.get_close_matches(key, list(defaults), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConfigValueError(f"unknown config key '{key}'{hint} Valid keys: "
                               f"{', '.join(sorted(defaults))}")


def merge_config(defaults: dict, values: dict) -> dict:
    """Defaults updated by `values` (flat or nested); unknown keys raise ConfigValueError."""
    cfg = dict(defaults)
    for key, value in _flatten(values).items():
        _check_key(key, defaults)
        cfg[key] = _coerce(key, value, defaults[key])
    return cfg


def load_config(defaults: dict, argv=None, description: str = "", prog: str | None = None) -> dict:
    """Parse ``--config FILE.toml`` and repeated ``--set key=value`` over `defaults`; `prog`
    names the command in ``--help`` (default: the script's file name)."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description,
        epilog="--show-config lists every key with its value; the head of the driver's file "
               "says what each means")
    parser.add_argument("--config", type=Path, help="TOML file with keys from the defaults")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override one key (repeatable)")
    parser.add_argument("--show-config", action="store_true", help="print the configuration and exit")
    args = parser.parse_args(argv)
    values: dict = {}
    if args.config is not None:
        if not args.config.is_file():
            raise ConfigError(f"config file {args.config} "
                              + ("is a directory" if args.config.is_dir() else "does not exist"))
        with open(args.config, "rb") as fh:
            try:
                values.update(_flatten(tomllib.load(fh)))
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"config file {args.config}: {exc}") from None
            except UnicodeDecodeError:
                raise ConfigError(f"config file {args.config} is not UTF-8 text: give a TOML "
                                  "file (key = value lines)") from None
    for item in args.overrides:
        if "=" not in item:
            raise ConfigValueError(f"--set takes KEY=VALUE (got {item!r})")
        key, value = item.split("=", 1)
        values[key.strip()] = value.strip()
    cfg = merge_config(defaults, values)
    if args.show_config:
        print("# every key with its value, as TOML: save it, edit it, and give it back with "
              "--config FILE")
        for k in sorted(cfg):
            print(f"{k} = {toml_value(cfg[k])}" if cfg[k] is not None
                  else f"# {k}: not set (no TOML value)")
        raise SystemExit(0)
    return cfg


def toml_value(value) -> str:
    """`value` written as TOML reads it back (``--show-config``): true/false, quoted
    strings, arrays; Python's repr wrote True and tuples, which ``--config`` refused."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if value != value
                                                         else "inf" if value > 0 else "-inf")
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string: same escapes


def _brackets(closed) -> str:
    brackets = closed if isinstance(closed, str) else ("[]" if closed else "()")
    if brackets not in ("[]", "()", "(]", "[)"):
        raise ValueError(f"a range is closed (True), open (False) or two brackets such as "
                         f"'(]' (got {closed!r})")
    return brackets


def in_range(value, low, high, closed) -> bool:
    """Whether `value` is finite and lies in the range (`closed` as in check_ranges)."""
    brackets = _brackets(closed)
    above = low <= value if brackets[0] == "[" else low < value
    below = value <= high if brackets[1] == "]" else value < high
    return bool(above and below and math.isfinite(value))


def range_text(low, high, closed) -> str:
    """The range as a reader writes it: '(0, 1]', '[0, infinity]'."""
    brackets = _brackets(closed)
    return f"{brackets[0]}{low:g}, {high:g}{brackets[1]}".replace("inf", "infinity")


def check_ranges(cfg: dict, ranges) -> None:
    """ConfigValueError naming the first key whose value is not finite or lies outside its range.

    `ranges`: (key, low, high, closed) with closed True for [low, high], False for
    (low, high), or the two brackets as text ("(]", "[)") for a half-open range; use
    math.inf for no upper bound. A driver calls it on its configuration before it
    prepares or writes anything; the ranges of the material constants come from the
    components that take them (``species_ranges``, ``membrane_ranges``)."""
    for key, low, high, closed in ranges:
        value = cfg[key]
        if not in_range(value, low, high, closed):
            raise ConfigValueError(f"config key '{key}' = {value!r} is outside "
                                   f"{range_text(low, high, closed)}")
