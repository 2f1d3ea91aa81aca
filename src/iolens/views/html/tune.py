"""The study page (`tune.html` in the study folder): one offline file in the family of the compare page.

Charts are drawn here as SVG (no data to decode, nothing to fetch): the objective per trial in run order
with the best so far, the objective against each knob, predicted against measured, and the best
configuration against the baseline with compare's verdict.
"""
from __future__ import annotations

import datetime as dt
import math

from ...version import __version__
from ...output import write_text
from ..units import human_bytes, human_seconds
from .encode import script_json
from .jinja import render

STYLES = ("report.css", "compare.css", "tune.css")
ROLE_COLOURS = {"baseline": "#495057", "search": "#3b5bdb", "confirm": "#2b8a3e"}
W, H, PAD = 560, 220, 40


def _scale(lo: float, hi: float, a: float, b: float):
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def run_order(records: list) -> dict:
    """Objective per run in run order: points by role, failed runs as marks on the top edge, best so far."""
    ok = [r for r in records if r["status"] == "ok"]
    top = max((r["objective"] for r in ok), default=1.0) * 1.1 or 1.0
    x = _scale(0, max(len(records) - 1, 1), PAD, W - 10)
    y = _scale(0, top, H - PAD, 15)
    points, best, line = [], math.inf, []
    for i, r in enumerate(records):
        if r["status"] != "ok":
            points.append({"x": x(i), "y": 15, "failed": True, "colour": "#c92a2a", "title": _title(r)})
            continue
        points.append({"x": x(i), "y": y(r["objective"]), "failed": False, "colour": ROLE_COLOURS[r["role"]],
                       "title": _title(r)})
        if r["role"] == "search" or r["role"] == "baseline":
            best = min(best, r["objective"])
        if math.isfinite(best):
            line.append(f"{x(i):.1f},{y(best):.1f}")
    return {"points": points, "best_line": " ".join(line), "ticks": _ticks(top, y), "width": W, "height": H}


def knob_panels(records: list, space: dict) -> list:
    """One small chart per knob: the objective of every successful run against the knob's value."""
    ok = [r for r in records if r["status"] == "ok"]
    top = max((r["objective"] for r in ok), default=1.0) * 1.1 or 1.0
    panels = []
    for knob in (space or {}).get("knobs", []):
        values = ["not set" if knob["default"] is None else str(knob["default"])]
        values += [str(v) for v in knob["values"] if str(v) not in values]
        shown = [_value_label(v) for v in values]
        x = _scale(0, max(len(values) - 1, 1), PAD + 5, 300 - 35)  # room for the last label
        y = _scale(0, top, 160 - 30, 10)
        pts = []
        for r in ok:
            v = r["config"].get(knob["name"])
            label = "not set" if v is None else str(v)
            if label in values:
                pts.append({"x": x(values.index(label)), "y": y(r["objective"]), "title": _title(r),
                            "colour": ROLE_COLOURS[r["role"]]})
        panels.append({"name": knob["name"], "why": knob["why"], "points": pts,
                       "labels": [(x(i), v) for i, v in enumerate(shown)], "ticks": _ticks(top, y, 3)})
    return panels


def _value_label(text: str) -> str:
    """Sizes as people read them (1048576 -> 1 MiB); anything else as it is."""
    if text.isdigit() and int(text) >= 1024 and int(text) % 1024 == 0:
        return human_bytes(int(text)).replace(".0 ", " ")
    return text


def predicted_measured(records: list) -> dict:
    rows = [r for r in records if r["status"] == "ok" and r.get("predicted") is not None]
    if not rows:
        return {"points": []}
    top = max(max(r["objective"], r["predicted"]) for r in rows) * 1.1
    s = _scale(0, top, PAD, 300)
    sy = _scale(0, top, 300 - PAD + 20, 10)
    return {"points": [{"x": s(r["predicted"]), "y": sy(r["objective"]), "title": _title(r)} for r in rows],
            "diag": (s(0), sy(0), s(top), sy(top)), "ticks": _ticks(top, sy, 3), "top": top}


def _ticks(top: float, y, n: int = 4) -> list:
    return [(y(top * k / n), human_seconds(top * k / n)) for k in range(n + 1)]


def _title(r: dict) -> str:
    knobs = ", ".join(f"{k}={v}" for k, v in r["config"].items() if v is not None) or "as given"
    head = f"run {r['trial']} ({r['role']}, {r.get('chosen_by', '')}): "
    if r["status"] != "ok":
        return head + f"failed: {r['reason']}; {knobs}"
    pred = f", predicted {human_seconds(r['predicted'])}" if r.get("predicted") is not None else ""
    return head + f"{human_seconds(r['objective'])}{pred}; {knobs}"


def render_tune_page(result: dict, records: list) -> str:
    meta = {"tool": {"name": "iolens", "version": __version__,
                     "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")},
            "result": {k: result.get(k) for k in ("objective", "runs", "failed", "verdict", "best", "baseline")}}
    return render(
        "tune.html.j2", scripts=(), styles=STYLES, title="iolens tune: " + " ".join(result["command"]), result=result, records=records,
        order=run_order(records), panels=knob_panels(records, result.get("space")),
        pm=predicted_measured(records), colours=ROLE_COLOURS, meta_json=script_json(meta))


def write_tune_page(result: dict, records: list, path) -> dict:
    html = render_tune_page(result, records)
    write_text(path, html)
    return {"path": str(path), "bytes": len(html.encode("utf-8"))}
