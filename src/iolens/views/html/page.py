"""Assemble the page: payload (JSON + packed columns) into the Jinja2 template with inlined JS/CSS."""
from __future__ import annotations

import datetime as dt
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from ...version import __version__
from ...analysis.timeline import timeline_analysis
from .calls import call_marks
from .encode import Blob, script_json
from .filters import Filters, apply_filters
from .jinja import render
from .overview import heatmap_columns, overview_columns
from .summary import summary_payload
from .trace import cap_segments, rank_hosts, trace_columns

DEFAULT_MAX_OPS = 5_000_000  # 4.8 M ops: load 1.5 s, zoom < 250 ms (bench); beyond, the overview only
SCRIPTS = ("util.js", "decode.js", "axis.js", "evidence.js", "keys.js", "timeline.js", "hover.js", "scatter.js",
           "summary.js", "insights.js", "testapi.js", "app.js")
STYLES = ("report.css",)


def diagnosis_insights(log):
    """The diagnosis' insights as plain dicts."""
    from ...analysis.diagnosis import diagnose

    try:
        return [i.to_dict() if hasattr(i, "to_dict") else dict(i) for i in diagnose(log)]
    except Exception as exc:  # noqa: BLE001 - a failing diagnosis must not cost the user the page
        return [{"code": "diagnosis-error", "severity": "info", "title": f"Diagnosis failed: {exc}",
                 "evidence": {}, "recommendations": []}]


def _lustre_layouts(log, file_index: dict, traced_ids) -> dict:
    """file index -> Lustre components [[ext_start, ext_end, stripe_size, [osts]]], for OSTs on hover."""
    if log.lustre.is_empty():
        return {}
    layout = log.lustre.filter((pl.col("stripe_size") > 0) & pl.col("file_id").is_in(traced_ids.implode()))
    layout = layout.unique(["file_id", "component"], keep="first", maintain_order=True)
    out = {}
    for row in layout.iter_rows(named=True):
        out.setdefault(str(file_index[row["file_id"]]), []).append(
            [row["ext_start"], row["ext_end"], row["stripe_size"], row["osts"] or []])
    return out


def build_payload(log, *, filters: Filters = Filters(), max_ops: int = DEFAULT_MAX_OPS,
                  insights=None) -> tuple:
    """(meta, blob): everything the page shows; `blob` holds the packed numeric columns.

    The diagnosis runs on a second thread meanwhile (both spend most of their time in polars/numpy,
    which release the GIL)."""
    t0 = time.perf_counter()
    for table in ("files", "counters", "dxt_records", "lustre", "heatmap"):
        getattr(log, table)  # built once, before the two threads share the log
    all_segments = log.segments
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(diagnosis_insights, log) if insights is None else None
        meta, blob = page_payload(log, all_segments, filters, max_ops)
        meta["insights"] = pending.result() if pending is not None else insights
    meta["timing"] = {"payload_s": time.perf_counter() - t0}
    return meta, blob


def page_payload(log, all_segments, filters: Filters, max_ops: int) -> tuple:
    files = log.files
    file_index = {fid: k for k, fid in enumerate(files["file_id"].to_list())}
    segments = apply_filters(all_segments, files, filters)
    nranks = max(int(log.job["nprocs"] or 0),
                 int(all_segments["rank"].max()) + 1 if all_segments.height else 0, 1)
    segments = segments.filter((pl.col("rank") >= 0) & (pl.col("rank") < nranks))
    embedded, cut = cap_segments(segments, max_ops)
    blob = Blob()
    trace = trace_columns(embedded, file_index, nranks, blob)
    trace.update(total_ops=segments.height, cut_at=cut, max_ops=max_ops)
    t_max = float(all_segments["end"].max()) if all_segments.height else 0.0
    trace["t_max"] = max(trace["t_max"], t_max, float(log.job["run_time"] or 0))
    hosts = rank_hosts(all_segments, nranks, blob)
    overview = overview_columns(segments, nranks, trace["t_max"], blob) if segments.height else None
    heatmaps = heatmap_columns(log.heatmap, nranks, float(log.job["run_time"] or 0), blob)
    traced_ops = (segments.group_by("file_id").agg(pl.len().alias("n"))
                  if segments.height else pl.DataFrame(schema={"file_id": pl.UInt64, "n": pl.UInt32}))
    ops_of = dict(zip(traced_ops["file_id"].to_list(), traced_ops["n"].to_list()))
    meta = {
        "tool": {"name": "iolens", "version": __version__,
                 "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")},
        "log": {"name": Path(log.path).name, "path": str(log.path)},
        "filters": filters.describe(),
        "nranks": nranks,
        "hosts": hosts,
        "files": [{"name": n, "ops": ops_of.get(fid, 0)} for fid, n in zip(files["file_id"].to_list(),
                                                                         files["name"].to_list())],
        "lustre": _lustre_layouts(log, file_index, traced_ops["file_id"]),
        "trace": trace,
        "overview": overview,
        "heatmaps": heatmaps,
        "analysis": timeline_analysis(segments),
        "summary": summary_payload(log, all_segments, file_index, nranks, blob),
        "call_marks": call_marks(log, nranks),  # Recorder traces only
        "processes": _processes(log),  # a job of many logs: which row is which process (jobs/merged.py)
    }
    return meta, blob


def _processes(log):
    """[{rank, ranks, step, exe, pid, role, log, recovered, offset, step_rank}] for a merged job's log, else None."""
    procs = getattr(log, "processes", None)
    if not isinstance(procs, list) or not procs:  # (a DFTracer trace's is a table of its own)
        return None
    return [{**{k: p[k] for k in ("rank", "ranks", "step", "exe", "pid", "role", "recovered", "offset", "step_rank")},
             "log": Path(p["log"]).name} for p in procs]


def render_page(meta: dict, blob: Blob) -> str:
    packed = blob.encode()
    meta["blob"] = {part: {"columns": p["columns"], "raw_bytes": p["raw_bytes"]} for part, p in packed.items()}
    return render("report.html.j2", scripts=SCRIPTS, styles=STYLES,
                  title=f"iolens: {meta['log']['name']}",
                  meta_json=script_json(meta),
                  chunks=[(part, c) for part, p in packed.items() for c in p["chunks"]])


def write_report(log, path, **kwargs) -> dict:
    """Write the page for `log` to `path`; returns sizes and counts for the CLI to print."""
    meta, blob = build_payload(log, **kwargs)
    html = render_page(meta, blob)
    Path(path).write_text(html, encoding="utf-8")
    return {"path": str(path), "bytes": len(html.encode("utf-8")), "ops": meta["trace"]["ops"],
            "total_ops": meta["trace"]["total_ops"], "cut_at": meta["trace"]["cut_at"]}
