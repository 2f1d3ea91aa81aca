"""Knob files (TOML): each dotted key is a knob name, so `romio.cb_nodes = 2` and `[hdf5]` / `alignment = "1MiB"`
say the same. `iolens run --set-file` reads them; tune writes its `best.toml` with `knob_file_text`."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .registry import KnobError, check_settings, knob

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the same parser, from PyPI
    import tomli as tomllib

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _flatten(table: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        elif isinstance(value, (list, dict)):
            raise KnobError(f"{name}: one value expected, not a list")
        else:
            out[name] = value
    return out


def read_knob_file(path) -> dict:
    """{knob name: canonical value}; KnobError says 'FILE: problem' in one line."""
    path = Path(path)
    try:
        table = tomllib.loads(path.read_text())
    except OSError as exc:
        raise KnobError(f"{path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KnobError(f"{path}: not a TOML knob file ({str(exc).splitlines()[0]})") from None
    try:
        return check_settings(_flatten(table))
    except KnobError as exc:
        raise KnobError(f"{path}: {exc}") from None


def _key(word: str) -> str:
    return word if _BARE_KEY.match(word) else json.dumps(word)


def _value(name: str, value) -> str:
    k = knob(name)
    if k.kind == "size":
        return json.dumps(k.show(value)) if k.show(value) != str(value) else str(value)
    return json.dumps(str(value))


def knob_file_text(settings: dict) -> str:
    """A knob file for these settings, one table per layer (what `iolens run --set-file` takes)."""
    settings = check_settings(settings)
    by_layer = {}
    for name, value in settings.items():
        layer, _, rest = name.partition(".")
        by_layer.setdefault(layer, []).append((rest, value, name))
    lines = []
    for layer, items in by_layer.items():
        lines.append(f"[{layer}]")
        lines += [f"{_key(rest)} = {_value(name, value)}" for rest, value, name in items]
        lines.append("")
    return "\n".join(lines)
