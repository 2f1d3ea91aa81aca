"""Human-readable numbers: bytes, seconds, rates, counts."""
from __future__ import annotations

import datetime as _dt


def human_bytes(n) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def human_rate(bytes_per_s) -> str:
    return "-" if bytes_per_s is None else human_bytes(bytes_per_s) + "/s"


def human_seconds(s) -> str:
    if s is None:
        return "-"
    s = float(s)
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    if s < 120:
        return f"{s:.2f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def human_ratio(x) -> str:
    """A ratio against a baseline: 1.00×, 0.45×; tiny and huge ones keep their size (0.0005×, 2,000×)."""
    if x is None:
        return ""
    if x and abs(x) < 0.1:
        return f"{x:.2g}×"
    return f"{x:,.0f}×" if abs(x) >= 100 else f"{x:.2f}×"


def human_count(n) -> str:
    return "-" if n is None else f"{int(n):,}"


def timestamp(epoch) -> str:
    try:
        return _dt.datetime.fromtimestamp(float(epoch), _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(epoch)
