"""The comparison page (`iolens compare -o page.html`): one offline file, same conventions as the report.

Each run's operations are packed exactly as the report packs them (its own blob parts, prefixed `r<i>-`),
and drawn by the report's own Timeline, one per run, on one shared time scale (a DFTracer trace's spans, in its
`r<i>-trace` part, above its operations).
"""
from __future__ import annotations

import datetime as dt
import math

from ...version import __version__
from ...analysis.diagnosis.insight import HEALTHY
from ...model.darshan import LAYER_NAMES, SIZE_BIN_LABELS
from ...output import write_text
from .encode import script_json
from .filters import Filters
from .jinja import render
from .page import DEFAULT_MAX_OPS, page_payload

SCRIPTS = ("util.js", "decode.js", "axis.js", "evidence.js", "keys.js", "rows.js", "spans.js", "timeline.js", "app.js",
           "compare.js")
STYLES = ("report.css", "compare.css")
RUN_COLOURS = ("#3b5bdb", "#e8590c", "#2b8a3e", "#ae3ec9", "#1098ad", "#c92a2a", "#5c940d", "#495057")


def run_payloads(logs: list, labels: list, max_ops: int) -> tuple:
    """(per-run page data, blob chunks): every run's trace packed as the report packs it."""
    metas, chunks = [], []
    for i, (log, label) in enumerate(zip(logs, labels)):
        meta, blob = page_payload(log, log.segments, Filters(), max_ops)
        packed = blob.encode()
        meta["blob"] = {f"r{i}-{part}": {"columns": p["columns"], "raw_bytes": p["raw_bytes"]}
                        for part, p in packed.items()}
        chunks += [(f"r{i}-{part}", c) for part, p in packed.items() for c in p["chunks"]]
        meta.update(label=label, index=i, colour=RUN_COLOURS[i % len(RUN_COLOURS)], insights=[])
        metas.append(meta)
    return metas, chunks


def _layer_bars(result: dict) -> list:
    """[(layer, [(label, seconds, width %, colour)])]: the slowest rank's I/O time per layer, side by side."""
    runs = result["runs"]
    top = max((lay["slowest_rank_io_time"] for r in runs for lay in r["layers"].values()), default=0) or 1
    out = []
    for name in LAYER_NAMES:
        if any(name in r["layers"] for r in runs):
            out.append((name, [(r["label"], r["layers"].get(name, {}).get("slowest_rank_io_time", 0),
                                100 * r["layers"].get(name, {}).get("slowest_rank_io_time", 0) / top,
                                RUN_COLOURS[i % len(RUN_COLOURS)]) for i, r in enumerate(runs)]))
    return out


def _size_lines(result: dict, width=520, height=160, pad=30) -> dict:
    """The request-size distributions overlaid: one polyline per run over Darshan's size bins (log scale)."""
    bins = [k for k in SIZE_BIN_LABELS if any(r["request_sizes"].get(k) for r in result["runs"])]
    if not bins:
        return {"bins": [], "lines": []}
    top = max(r["request_sizes"][k] for r in result["runs"] for k in bins) or 1
    margin = 3 * pad  # room for the bin labels, centred under the points
    step = (width - 2 * margin) / max(len(bins) - 1, 1)
    xs = [margin + k * step for k in range(len(bins))] if len(bins) > 1 else [width / 2]
    lines = []
    for i, r in enumerate(result["runs"]):
        # log scale: 30 large requests must not vanish beside 45,000 small ones
        xy = [(x, height - pad - (height - 2 * pad) * math.log1p(r["request_sizes"][b]) / math.log1p(top))
              for x, b in zip(xs, bins)]
        lines.append({"label": r["label"], "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in xy), "xy": xy,
                      "counts": [r["request_sizes"][b] for b in bins],
                      "colour": RUN_COLOURS[i % len(RUN_COLOURS)]})
    return {"bins": [(x, SIZE_BIN_LABELS[b]) for x, b in zip(xs, bins)], "lines": lines, "width": width,
            "height": height, "top": top}


def _sweep(result: dict) -> list:
    """Time and bandwidth per run, as bar widths (%), for the scaling/sweep chart."""
    runs = result["runs"]
    t_top = max(r["io_time"] for r in runs) or 1
    b_top = max((r["bandwidth"] or 0) for r in runs) or 1
    return [{"label": r["label"], "io_time": r["io_time"], "t_pct": 100 * r["io_time"] / t_top,
             "bandwidth": r["bandwidth"], "b_pct": 100 * (r["bandwidth"] or 0) / b_top,
             "colour": RUN_COLOURS[i % len(RUN_COLOURS)]} for i, r in enumerate(runs)]


def render_compare_page(result: dict, metas: list, chunks: list) -> str:
    page_meta = {"tool": {"name": "iolens", "version": __version__,
                          "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")},
                 "runs": metas}
    labels = [r["label"] for r in result["runs"]]
    return render(
        "compare.html.j2", scripts=SCRIPTS, styles=STYLES, title="iolens compare: " + " vs ".join(labels), result=result, labels=labels,
        colours=[RUN_COLOURS[i % len(RUN_COLOURS)] for i in range(len(labels))],
        layer_bars=_layer_bars(result), sizes=_size_lines(result), sweep=_sweep(result), zip=zip,
        size_labels=SIZE_BIN_LABELS, meta_json=script_json(page_meta), chunks=chunks, healthy=HEALTHY)


def write_compare(result: dict, logs: list, path, max_ops: int | None = None) -> dict:
    """Write the comparison page; every run embeds up to `max_ops` operations (default: the report's
    limit shared among the runs)."""
    max_ops = max_ops or max(1000, DEFAULT_MAX_OPS // len(logs))
    metas, chunks = run_payloads(logs, [r["label"] for r in result["runs"]], max_ops)
    html = render_compare_page(result, metas, chunks)
    write_text(path, html)
    return {"path": str(path), "bytes": len(html.encode("utf-8"))}
