"""Numbers as people write them: the one parser of sizes, durations, shares and ratios.

Every value a user types goes through here: a threshold (`-t NAME=VALUE`, `--config`, `--fs-profile`), a
knob (`run --set`, `--set-file`, a `best.toml`) and a tune space (`--space`). So `64k`, `64K`, `64kb`, `64KB`
and `64KiB` are the same 65,536 bytes everywhere.

Sizes use binary multiples, as HPC users and their tools do (ROMIO hints, `lfs setstripe -S 64k`, IOR's
`-t 64k`, HDF5's documentation): `k`, `kb`, `KiB` (any case) all mean 1024 bytes, and `M`/`MB`/`MiB`,
`G`/`GB`/`GiB`, `T`/`TB`/`TiB`, `P`/`PB`/`PiB` the next powers of 1024. No spelling means 1000: write
`64000` for 64,000 bytes. Durations: a bare number is seconds; `ns`, `us` (or `µs`), `ms`, `s`, `min`, `h`.
Shares: `0.1` or `10%`. Ratios: `1.5` or `150%`. Counts: plain numbers. Spaces and `_` in a value are
ignored (`4 MiB`, `1_000_000`).

Only the lowest layers of iolens are imported from here (nothing at all), so the knobs at the edge, tune and
the diagnosis read values with the same rules.
"""
from __future__ import annotations

import re

KiB, MiB, GiB, TiB, PiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40, 1 << 50

# a unit, lower-cased -> its multiple; "" is a bare number. k, kb and kib alike: 1024 (so for m, g, t, p)
SIZE_UNITS = {"": 1, "b": 1, **{prefix + tail: 1 << (10 * n) for n, prefix in enumerate("kmgtp", 1)
                                for tail in ("", "b", "ib")}}
TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}
# what each kind of value takes: its units, whether `%` divides by 100, and examples for a message
KINDS = {
    "bytes": (SIZE_UNITS, False, "a size (e.g. 4096, 64k, 64KiB, 1MiB)"),
    "seconds": (TIME_UNITS, False, "a duration (e.g. 2, 500ms, 1min)"),
    "share": ({"": 1.0}, True, "a share (e.g. 0.1 or 10%)"),
    "ratio": ({"": 1.0}, True, "a ratio (e.g. 1.5 or 150%)"),
    "count": ({"": 1}, False, "a count (e.g. 1000)"),
}
_NUMBER = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)([a-zµ%]*)")


class UnitError(ValueError):
    """One line saying why a value cannot be read."""


def parse(value, kind: str) -> float:
    """`value` (a number, or text with a unit) as a number of `kind`'s base unit: bytes, seconds, a share
    (0 to 1), a ratio or a count. Raises UnitError with one line saying why not."""
    units, percent, what = KINDS[kind]
    if isinstance(value, bool):
        raise UnitError(f"expected {what}, got {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = str(value).strip().lower().replace("_", "").replace(" ", "")
        m = _NUMBER.fullmatch(text)
        if not m:
            raise UnitError(f"cannot read {value!r} as {what}")
        number, unit = float(m.group(1)), m.group(2)
        if unit == "%":
            if not percent:
                raise UnitError(f"a percentage only fits a share or a ratio, not {what.split(' (')[0]}")
            number /= 100.0
        elif unit in units:
            number *= units[unit]
        else:
            raise UnitError(f"unknown unit in {value!r}: expected {what}")
    if number != number or number in (float("inf"), float("-inf")):
        raise UnitError(f"expected {what}, got {value!r}")
    if number < 0:
        raise UnitError("must not be negative")
    if kind == "share" and number > 1:
        raise UnitError("a share is between 0 and 1 (or 0% and 100%)")
    return number


def parse_size(value) -> int:
    """A whole number of bytes: 65536, '64k', '64kb', '64KiB', '4 MiB', '1.5M' (binary multiples)."""
    number = parse(value, "bytes")
    if number != int(number):
        raise UnitError(f"not a whole number of bytes: {value!r}")
    return int(number)


def parse_duration(value) -> float:
    """Seconds: 2, '500ms', '2s', '1min', '1h'."""
    return parse(value, "seconds")


def parse_share(value) -> float:
    """A share between 0 and 1: 0.1 or '10%'."""
    return parse(value, "share")


def format_size(value: int) -> str:
    """Bytes as the shortest exact size that `parse_size` reads back: 1048576 -> '1MiB', 3000 -> '3000'."""
    for unit, size in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if value and value % size == 0:
            return f"{value // size}{unit}"
    return str(value)
