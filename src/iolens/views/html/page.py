"""Assemble the page: payload (JSON + packed columns) into the Jinja2 template with inlined JS/CSS."""
from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import polars as pl

from ...errors import printable
from ...output import write_text
from ...version import __version__
from ...analysis.summary import is_empty, skipped_io, unseen_sentence
from ...analysis.timeline import timeline_analysis
from ..labels import EVIDENCE_SOURCES, evidence_source
from .calls import call_marks
from .encode import Blob, script_json
from .filters import Filters, apply_filters
from .jinja import render
from .spans import span_columns
from .overview import heatmap_columns, overview_columns
from .summary import summary_payload
from .trace import cap_segments, rank_hosts, trace_columns

DEFAULT_MAX_OPS = 5_000_000  # 4.8 M ops: load 1.5 s, zoom < 250 ms (bench); beyond, the overview only
SCRIPTS = ("util.js", "decode.js", "axis.js", "evidence.js", "keys.js", "rows.js", "spans.js", "timeline.js", "hover.js",
           "scatter.js",
           "summary.js", "insights.js", "testapi.js", "app.js")
STYLES = ("report.css",)
# the tables the page reads, built before two threads share the log (the pipeline diagnoses it meanwhile)
PAGE_TABLES = ("files", "counters", "dxt_records", "lustre", "heatmap", "segments")


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


def build_payload(log, *, filters: Filters = Filters(), max_ops: int = DEFAULT_MAX_OPS, insights=()) -> tuple:
    """(meta, blob): everything the page shows, with the `insights` given (the pipeline's diagnosis: a view
    renders, it does not judge); `blob` holds the packed numeric columns."""
    t0 = time.perf_counter()
    meta, blob = page_payload(log, log.segments, filters, max_ops)
    meta["insights"] = list(insights)
    meta["timing"] = {"payload_s": time.perf_counter() - t0}
    return meta, blob


def unseen_lines(log) -> dict:
    """What the diagnosis could not look at (modules iolens skips, an empty log), as the insights panel says it:
    `alone` in place of "No problems found.", `after` below the problems; both None when nothing was missed."""
    unseen = {"skipped": skipped_io(log.modules), "empty": is_empty(log.modules)}
    return {"alone": unseen_sentence(unseen, False), "after": unseen_sentence(unseen, True)}


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
    trace.update(total_ops=segments.height, cut_at=cut, max_ops=max_ops,
                 layer_ranks=layer_ranks(log, all_segments, trace["layers"]))
    t_max = float(all_segments["end"].max()) if all_segments.height else 0.0
    trace["t_max"] = max(trace["t_max"], t_max, float(log.job["run_time"] or 0))
    spans = span_columns(log, nranks, filters, blob)  # a DFTracer trace's application spans, above its I/O
    if spans is not None:
        trace["t_max"] = max(trace["t_max"], spans["t_max"])
    hosts = rank_hosts(all_segments, nranks, blob)
    overview = overview_columns(segments, nranks, trace["t_max"], blob) if segments.height else None
    heatmaps = heatmap_columns(log.heatmap, nranks, float(log.job["run_time"] or 0), blob)
    traced_ops = (segments.group_by("file_id").agg(pl.len().alias("n"))
                  if segments.height else pl.DataFrame(schema={"file_id": pl.UInt64, "n": pl.UInt32}))
    ops_of = dict(zip(traced_ops["file_id"].to_list(), traced_ops["n"].to_list()))
    meta = {
        "tool": {"name": "iolens", "version": __version__,
                 "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")},
        "log": {"name": printable(Path(log.path).name), "path": printable(str(log.path))},
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
        "spans": spans,  # DFTracer traces only: the application's spans (spans.py)
        "processes": _processes(log),  # a job of many logs: which row is which process (jobs/merged.py)
        "unseen": unseen_lines(log),  # modules iolens skips, an empty log: said in the insights panel
        # a finding's `source` (the --json enum) in words for this log's tracer: `calls of the Recorder trace`
        "evidence_sources": {s: evidence_source(s, log.kind) for s in EVIDENCE_SOURCES},
    }
    return meta, blob


COUNTER_MODULE = {"MPI-IO": "MPI-IO", "POSIX": "POSIX"}  # the timeline's layers, by the counters behind them


def layer_ranks(log, segments: pl.DataFrame, layers: list):
    """{layer: [ranks]} of a job's page: the rows each timeline layer shows, the ranks of the processes that have
    the layer (records in its counters or its trace), so that a non-MPI process gets no empty MPI-IO row. None
    for one trace (its ranks are one program's: a rank without MPI-IO operations is worth its empty row) and
    when every process has every layer."""
    procs = log.provenance.processes
    if not procs:
        return None
    out, every = {}, True
    for layer in layers:
        used = set(segments.filter(pl.col("module").cast(pl.String) == f"DXT_{layer.replace('-', '')}")["rank"]
                   .unique().to_list()) if segments.height else set()
        table = log.counters.get(COUNTER_MODULE.get(layer, layer))
        if table is not None and table.height:
            used |= set(table["rank"].unique().to_list())
        ranks = [r for p in procs if any(p["rank"] <= u < p["rank"] + p["ranks"] for u in used)
                 for r in range(p["rank"], p["rank"] + p["ranks"])]
        every &= len(ranks) == sum(p["ranks"] for p in procs)
        out[layer] = ranks
    return None if every else out


def _processes(log):
    """[{rank, ranks, step, exe, pid, role, log, recovered, offset, step_rank}] for a log assembled from several
    processes' logs (a job), else None: the rows are the trace's own ranks."""
    procs = log.provenance.processes
    if not procs:
        return None
    return [{**{k: p[k] for k in ("rank", "ranks", "step", "exe", "pid", "role", "recovered", "offset", "step_rank")},
             "log": Path(p["log"]).name} for p in procs]


def render_page(meta: dict, blob: Blob, static: bool = False) -> str:
    """The page's HTML. `static`: its columns embedded uncompressed (base64 only), so that the page decodes and
    draws them synchronously while it loads (no DecompressionStream, which is asynchronous): a screenshot or
    a print taken at load shows every panel drawn."""
    packed = blob.encode(compress=not static)
    meta["static"] = static
    meta["blob"] = {part: {"columns": p["columns"], "raw_bytes": p["raw_bytes"], "encoding": p["encoding"]}
                    for part, p in packed.items()}
    return render("report.html.j2", scripts=SCRIPTS, styles=STYLES,
                  title=f"iolens: {meta['log']['name']}",
                  meta_json=script_json(meta),
                  chunks=[(part, c) for part, p in packed.items() for c in p["chunks"]])


def write_report(log, path, static: bool = False, **kwargs) -> dict:
    """Write the page for `log` to `path` with the insights given (`iolens.report` diagnoses the log first);
    returns sizes and counts for the CLI to print."""
    return write_page(*build_payload(log, **kwargs), path, static=static)


def write_page(meta: dict, blob: Blob, path, static: bool = False) -> dict:
    """Render the page of `meta` and `blob` to `path` (through a temporary name: a killed run leaves no half
    page under the final name)."""
    html = render_page(meta, blob, static)
    write_text(path, html)
    return {"path": str(path), "bytes": len(html.encode("utf-8")), "ops": meta["trace"]["ops"],
            "total_ops": meta["trace"]["total_ops"], "cut_at": meta["trace"]["cut_at"]}
