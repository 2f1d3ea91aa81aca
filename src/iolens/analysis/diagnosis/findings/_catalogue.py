"""docs/diagnosis.md's tables, generated from the registry: the codes, the thresholds, the headline numbers and
the JSON Schema, each between a pair of marker comments. `python -m iolens.analysis.diagnosis.findings --docs`
writes them; a unit test fails when the file differs from what this makes."""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..common import JUDGING
from . import CHECK_FAILED, DEFINITIONS, FINDINGS, JSON_SCHEMA

DOCS = Path(__file__).resolve().parents[5] / "docs" / "diagnosis.md"  # in a source checkout
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


BLOCKS = {"codes": codes_table, "thresholds": thresholds_table, "key-metrics": key_metrics_table,
          "json-schema": json_schema_block}


def generated(text: str) -> str:
    """`text` (docs/diagnosis.md) with every generated block made anew from the registry."""
    for name, make in BLOCKS.items():
        begin, end = f"<!-- generated: {name} ({COMMAND}) -->", f"<!-- end of generated: {name} -->"
        pattern = re.compile(re.escape(begin) + r"\n.*?\n" + re.escape(end), re.S)
        if not pattern.search(text):
            raise ValueError(f"docs/diagnosis.md has no block {begin!r} ... {end!r}")
        block = f"{begin}\n{make()}\n{end}"
        text = pattern.sub(lambda _: block, text)
    return text
