"""The diagnosis' formatters: `iolens.analysis.units`, the one formatter (under the name the findings import)."""
from __future__ import annotations

from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_ranks, fmt_size, fmt_time, plural, short_name

__all__ = ["fmt_bytes", "fmt_count", "fmt_pct", "fmt_ranks", "fmt_size", "fmt_time", "plural", "short_name"]
