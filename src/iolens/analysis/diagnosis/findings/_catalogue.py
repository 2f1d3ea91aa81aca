"""The docs' tables made from the registry, each between a pair of marker comments: docs/diagnosis.md's codes,
thresholds, headline numbers, expected savings and JSON Schema, docs/fleet.md's rule codes.
`python -m iolens.analysis.diagnosis.findings --docs` writes them; a unit test fails when a file differs from
what this makes."""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..common import JUDGING
from ..fixes import FIX_DOCS
from ..savings import NOT_ESTIMATED_DOC
from . import CHECK_FAILED, DEFINITIONS, FINDINGS, JSON_SCHEMA, RULES, SUPERSEDED

DOCS = Path(__file__).resolve().parents[5] / "docs"  # in a source checkout
COMMAND = "python -m iolens.analysis.diagnosis.findings --docs"
JUDGING_NAMES = {t.name for t in JUDGING}


def codes_table() -> str:
    rows = ["| code | raised when | source | main thresholds |", "|---|---|---|---|"]
    for f in (*FINDINGS.values(), CHECK_FAILED):
        names = [t.name for t in f.thresholds] + [n for n in f.reads if n not in JUDGING_NAMES]
        main = ", ".join(f"`{n}`" for n in names) or "—"
        rows.append(f"| `{f.code}` | {f.trigger} | {f.source or '—'} | {main} |")
    return "\n".join(rows)


def thresholds_table() -> str:
    rows = ["| name | default | kind | meaning |", "|---|---|---|---|"]
    rows += [f"| `{t.name}` | {default_text(t)} | {t.kind} | {t.help} |" for t in DEFINITIONS]
    return "\n".join(rows)


def key_metrics_table() -> str:
    rows = ["| code | key_metric |", "|---|---|"]
    rows += [f"| {f.code} | {', '.join(f'`{m}`' for m in f.key_metrics)} |" for f in FINDINGS.values()]
    return "\n".join(rows)


def json_schema_block() -> str:
    return "```json\n" + json.dumps(JSON_SCHEMA, indent=2) + "\n```"


def savings_table() -> str:
    """The findings grouped by how their fixes save (`Finding.saving`'s doc), in the order first met."""
    groups: dict = {}
    for f in (*FINDINGS.values(), CHECK_FAILED):
        groups.setdefault(f.saving.doc if f.saving is not None else NOT_ESTIMATED_DOC, []).append(f.code)
    rows = ["| insights | `expected_saving` |", "|---|---|"]
    rows += [f"| {', '.join(codes)} | {doc} |" for doc, codes in groups.items()]
    return "\n".join(rows)


def fixes_table() -> str:
    """The kinds of change a recommendation makes (`Recommendation.fix`) and how each is priced (fixes.py)."""
    rows = ["| `fix` | recommendations | removes, per rank and layer | adds |", "|---|---|---|---|"]
    rows += [f"| `{kind}` | {who} | {removes} | {adds} |" for kind, (who, removes, adds) in FIX_DOCS.items()]
    return "\n".join(rows)


def fleet_rules_table() -> str:
    """docs/fleet.md: per rule code, how the fleet judges it and the thresholds `fleet report -t` recomputes."""
    rows = ["| code | how | thresholds `fleet report -t` recomputes |", "|---|---|---|"]
    order = [t.name for t in DEFINITIONS]
    for code, f in RULES.items():
        how = [f"rule (`findings/{f.module}.py`)" + (", one insight per operation kind" if f.parts else "")]
        names = {t.name for t in f.thresholds} | set(f.reads)
        stale = [f.stale] if f.stale is not None else []
        for by, s in SUPERSEDED.get(code, ()):
            how.append(f"{by} supersedes {f'its {s.part}' if s.part else 'it'} where {_sentence(s.when)}")
            names |= set(s.reads)
            stale += [s.stale] if s.stale is not None else []
        how.append("stale: " + "; or ".join(map(_sentence, stale)) if stale else "exact at any threshold")
        shown = [f"`{n}`" for n in sorted(names - JUDGING_NAMES, key=order.index)] + ["and the common ones"]
        rows.append(f"| {code} | {'; '.join(how)} | {', '.join(shown) if len(shown) > 1 else 'the common ones'} |")
    per_log = [*(c for c in FINDINGS if c not in RULES), CHECK_FAILED.code]
    rows.append(f"| every other code ({', '.join(per_log)}) | per log, as built | none: rebuild with `-t` |")
    return "\n".join(rows)


def _sentence(fn) -> str:
    """A function's docstring as one clause: on one line, without its final period, its first letter lower-case
    unless it starts a code (`Jobs whose` -> `jobs whose`, `SMALL_IO is` stays)."""
    doc = " ".join((getattr(fn, "func", fn).__doc__ or "").split()).rstrip(".")
    return doc[:1].lower() + doc[1:] if doc[:2] != doc[:2].upper() else doc


def default_text(t) -> str:
    """A threshold's default as the table shows it: `102400 (100 KiB)`, `0.1 (10%)`, `0.5 ms`, `60 s`."""
    v = t.default
    if t.kind == "bytes":
        return f"{int(v)} ({_size(int(v))})"
    if t.kind == "share":
        return f"{v:g} ({v * 100:g}%)"
    if t.kind == "seconds":
        return f"{v * 1000:g} ms" if v < 0.01 else f"{v:g} s"
    return f"{v:g}"


def _size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


# file in docs/ -> {block name: what makes it}
BLOCKS = {"diagnosis.md": {"codes": codes_table, "thresholds": thresholds_table, "key-metrics": key_metrics_table,
                           "savings": savings_table, "fixes": fixes_table, "json-schema": json_schema_block},
          "fleet.md": {"rule-codes": fleet_rules_table}}


def generated(text: str, blocks: dict) -> str:
    """`text` with every one of `blocks` ({name: what makes it}) made anew from the registry."""
    for name, make in blocks.items():
        begin, end = f"<!-- generated: {name} ({COMMAND}) -->", f"<!-- end of generated: {name} -->"
        pattern = re.compile(re.escape(begin) + r"\n.*?\n" + re.escape(end), re.S)
        if not pattern.search(text):
            raise ValueError(f"no block {begin!r} ... {end!r}")
        block = f"{begin}\n{make()}\n{end}"
        text = pattern.sub(lambda _: block, text)
    return text
