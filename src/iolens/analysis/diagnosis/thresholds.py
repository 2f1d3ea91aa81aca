"""Every number a finding compares against: documented defaults, `NAME=VALUE` overrides and a TOML config file.

The thresholds are declared where they are read (`DEFINITIONS`: the shared ones in common.py, each finding's
in its module). Values are read by `iolens.units` (as knobs and tune spaces are): bytes as `4096`, `64k`,
`64KiB`, `1MiB`, `1G` (binary multiples: `64kb` is 65,536 bytes too); shares as `0.1` or `10%`; seconds as `2`,
`500ms`.
"""
from __future__ import annotations

import json

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10 (the core's tomli)
    import tomli as tomllib

from ... import units
from .common import FS_PREFIX
from .finding import Threshold
from .findings import DEFINITIONS

BY_NAME = {t.name: t for t in DEFINITIONS}
DEFAULTS = {t.name: t.default for t in DEFINITIONS}


class Thresholds(dict):
    """name -> value, starting from the documented defaults."""

    def __init__(self, overrides=None):
        super().__init__(DEFAULTS)
        self.explicit = set()  # names given by the user (the cost model's fits never replace these)
        for name, value in (overrides or {}).items():
            self.set(name, value)

    def set(self, name: str, value) -> None:
        name = name.strip().lower().replace("-", "_")
        if name not in BY_NAME:
            raise ValueError(f"unknown threshold {name!r} (known: {', '.join(sorted(BY_NAME))})")
        self[name] = parse_value(BY_NAME[name], value)
        self.explicit.add(name)

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def changed(self) -> dict:
        return {k: v for k, v in self.items() if v != DEFAULTS[k]}


def parse_value(th: Threshold, value) -> float:
    """The value in the threshold's unit (`iolens.units.parse`); ValueError names the threshold."""
    try:
        number = units.parse_size(value) if th.kind == "bytes" else units.parse(value, th.kind)
    except units.UnitError as exc:
        raise ValueError(f"{th.name}: {exc}") from None
    return int(number) if th.kind in ("bytes", "count") else number


def parse_assignment(text: str) -> tuple:
    """'NAME=VALUE' -> (name, value); raises ValueError with a one-line reason."""
    if "=" not in text:
        raise ValueError(f"expected NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    name = name.strip().lower().replace("-", "_")
    if name not in BY_NAME:
        raise ValueError(f"unknown threshold {name!r} (known: {', '.join(sorted(BY_NAME))})")
    return name, parse_value(BY_NAME[name], value.strip())


def load_config(path: str) -> dict:
    """Threshold overrides from a TOML file: a `[thresholds]` table (or top-level keys)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    data = _load_toml(raw.decode("utf-8"))
    table = data.get("thresholds", data)
    if not isinstance(table, dict):
        raise ValueError(f"{path}: [thresholds] must be a table")
    out = {}
    for name, value in table.items():
        if isinstance(value, dict):
            continue  # other sections
        key = name.strip().lower().replace("-", "_")
        if key not in BY_NAME:
            raise ValueError(f"{path}: unknown threshold {name!r}")
        out[key] = parse_value(BY_NAME[key], value)
    return out


def load_fs_profile(path: str) -> dict:
    """Cost-model overrides from a TOML or JSON file: keys with or without the `fs_` prefix (`osts = 16`,
    `request_latency = "1ms"`), at the top level or in an `[fs]` table; `name` labels the profile."""
    with open(path, "rb") as fh:
        text = fh.read().decode("utf-8")
    if path.lower().endswith(".json") or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON: {exc}") from None
    else:
        data = _load_toml(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a table of cost-model values")
    table = data.get("fs", data)
    out = {}
    for name, value in table.items():
        key = name.strip().lower().replace("-", "_")
        if key == "name" or isinstance(value, dict):
            continue
        if not key.startswith(FS_PREFIX):
            key = FS_PREFIX + key
        if key not in BY_NAME:
            known = ", ".join(t.name[len(FS_PREFIX):] for t in DEFINITIONS if t.name.startswith(FS_PREFIX))
            raise ValueError(f"{path}: unknown cost-model value {name!r} (known: {known})")
        out[key] = parse_value(BY_NAME[key], value)
    return out


def _load_toml(text: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML: {exc}") from None
