"""The one formatter of numbers for people: sizes, times, shares, counts, ranks (titles, tables, pages).

The page's script (views/static/util.js: fmtBytes, fmtSeconds) follows the same rules, so a number reads
the same in the terminal, in an insight and on the page."""
from __future__ import annotations


def _digits(v: float) -> str:
    """Three significant digits, trailing zeros dropped (4, 1.5, 15.2, 150)."""
    text = f"{v:.{2 if v < 10 else 1 if v < 100 else 0}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_bytes(n) -> str:
    """Binary units, three significant digits (100 B, 1.5 KiB, 4 MiB, 15.2 MiB, 150 GiB)."""
    n = float(n or 0)
    v, unit = abs(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if v < 1024 or unit == "PiB":
            break
        v /= 1024
    return ("-" if n < 0 else "") + f"{f'{v:.0f}' if unit == 'B' else _digits(v)} {unit}"


def fmt_size(n) -> str:
    """A request or stripe size: exact when it is a whole number of KiB/MiB (for snippets: 4M, 64K)."""
    n = int(n)
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def fmt_time(s) -> str:
    """Seconds in the unit that reads best, three significant digits (1.5 ms, 767 ms, 2.53 s, 4.5 min)."""
    s = float(s or 0)
    a = abs(s)
    if a == 0:
        return "0 s"
    sign = "-" if s < 0 else ""
    for limit, scale, unit in ((1e-6, 1e9, "ns"), (1e-3, 1e6, "µs"), (1, 1e3, "ms"), (120, 1, "s"),
                               (3600, 1 / 60, "min")):
        if a < limit:
            return f"{sign}{_digits(a * scale)} {unit}"
    hours = a / 3600
    return f"{sign}{_digits(hours) if hours < 999.5 else f'{hours:,.0f}'} h"  # 13,695 h, as counts read


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


def plural(n, word: str, many: str | None = None, shown: str | None = None) -> str:
    """A count and its noun in the right number: '1 file', '3 files', '1,200 files', '2 aggregators'; `many`: an
    irregular plural; `shown`: the number as the text already formats it ('1.5', a mean per rank), whose words
    follow what is printed ('1 call' when it prints as 1)."""
    text = fmt_count(n) if shown is None else shown
    return f"{text} {word if text == '1' else (many or word + 's')}"


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


def fmt_ratio(x) -> str:
    """A ratio against a baseline: 1.00×, 0.45×; tiny and huge ones keep their size (0.0005×, 2,000×)."""
    if x is None:
        return ""
    if x and abs(x) < 0.1:
        return f"{x:.2g}×"
    return f"{x:,.0f}×" if abs(x) >= 100 else f"{x:.2f}×"
