"""Human-readable numbers for titles and summaries."""
from __future__ import annotations


def fmt_bytes(n) -> str:
    n = float(n or 0)
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value >= 100 or value.is_integer() else f"{value:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_size(n) -> str:
    """A request or stripe size: exact when it is a whole number of KiB/MiB (for snippets: 4M, 64K)."""
    n = int(n)
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def fmt_time(s) -> str:
    s = float(s or 0)
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 120:
        return f"{s / 60:.1f} min"
    if s >= 10:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.0f} ms"
    return f"{s * 1e6:.0f} µs"


def fmt_pct(x) -> str:
    x = float(x or 0) * 100
    if x >= 99.95 or x == 0:
        return f"{x:.0f}%"
    if x >= 10:
        return f"{x:.0f}%"
    if x >= 1:
        return f"{x:.1f}%"
    return f"{x:.2f}%"


def fmt_count(n) -> str:
    return f"{int(n):,}"


def fmt_ranks(ranks, limit: int = 8) -> str:
    """'rank 0', 'ranks 0, 1', 'ranks 0-7', 'ranks 0, 3, 9, ... (20 ranks)'."""
    ranks = sorted(int(r) for r in ranks)
    if not ranks:
        return "no rank"
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"ranks {ranks[0]}–{ranks[-1]}"
    if len(ranks) <= limit:
        return "ranks " + ", ".join(map(str, ranks))
    return "ranks " + ", ".join(map(str, ranks[:limit])) + f", … ({len(ranks)} ranks)"


def short_name(path: str) -> str:
    return path.rsplit("/", 1)[-1] if "/" in path else path
