"""Numbers for tables, where a missing value prints as "-": `iolens.analysis.units`' formatters."""
from __future__ import annotations

import datetime as _dt

from ..analysis.units import fmt_bytes, fmt_ratio, fmt_time


def human_bytes(n) -> str:
    return "-" if n is None else fmt_bytes(n)


def human_rate(bytes_per_s) -> str:
    return "-" if bytes_per_s is None else fmt_bytes(bytes_per_s) + "/s"


def human_seconds(s) -> str:
    return "-" if s is None else fmt_time(s)


human_ratio = fmt_ratio


def human_count(n) -> str:
    return "-" if n is None else f"{int(n):,}"


def timestamp(epoch) -> str:
    try:
        return _dt.datetime.fromtimestamp(float(epoch), _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(epoch)
