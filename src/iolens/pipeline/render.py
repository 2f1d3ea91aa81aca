"""Rendering: the explorer page (with the diagnosis computed here), the tables, and the comparison of runs."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from ..analysis.compare import NOISE_RATIO, NOISE_SECONDS
from ..analysis.compare import compare as compare_runs
from ..model import TraceLog
from ..views.export import export as export_tables
from ..views.html import DEFAULT_MAX_OPS, PAGE_TABLES, Filters, page_payload, write_page
from ..views.html.compare import write_compare
from .judge import page_insights
from .read import open as open_log

__all__ = ["compare", "compare_page", "export", "report"]


def report(log: TraceLog, out, *, filters: Filters | None = None, max_ops: int | None = None, insights=None,
           thresholds=None, static: bool = False) -> dict:
    """Write the offline explorer page of `log` to `out`; the diagnosis (`page_insights`, unless `insights` are
    given) runs on a second thread while the page's data is built (both spend most of their time in
    polars/numpy, which release the GIL). `static`: a page that draws every panel as it loads (its data
    uncompressed), for screenshots and PDF. Returns {path, bytes, ops, total_ops, cut_at}."""
    t0 = time.perf_counter()
    for table in PAGE_TABLES:
        getattr(log, table)  # built once, before the two threads share the log
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(page_insights, log, thresholds) if insights is None else None
        meta, blob = page_payload(log, log.segments, filters or Filters(), max_ops or DEFAULT_MAX_OPS)
        meta["insights"] = pending.result() if pending is not None else list(insights)
    meta["timing"] = {"payload_s": time.perf_counter() - t0}
    return write_page(meta, blob, out, static=static)


def export(log: TraceLog, out_dir, fmt: str = "parquet", filters: Filters | None = None, on_table=None) -> list:
    """Write `job.json` and every table with rows (the source's own tables too) as Parquet or CSV files."""
    return export_tables(log, out_dir, fmt, on_table=on_table, filters=filters or Filters())


def compare(*runs, labels=None, baseline_runs: int = 1, noise_ratio: float = NOISE_RATIO,
            noise_seconds: float = NOISE_SECONDS, output=None) -> dict:
    """Compare runs (paths, opened as `open` does, or logs), the first `baseline_runs` being the baseline:
    what `iolens compare --json` prints. `output`: also write the comparison page there."""
    logs = [open_log(r, what="compare") if isinstance(r, (str, os.PathLike)) else r for r in runs]
    result = compare_runs(*logs, labels=labels, baseline_runs=baseline_runs, noise_ratio=noise_ratio,
                          noise_seconds=noise_seconds)
    if output is not None:
        compare_page(result, logs, output)
    return result


def compare_page(result: dict, logs: list, output) -> dict:
    """The offline comparison page of `compare`'s result and its runs' logs."""
    return write_compare(result, logs, output)
