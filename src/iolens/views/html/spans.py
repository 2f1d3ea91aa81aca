"""A trace's application spans (DFTracer: the data loader's fetches, compute steps, checkpoints, epochs) as
compact columns for the page: the timeline draws them per process in rows above the POSIX operations, on the
same time axis.

Spans are sorted by (rank, start); `span_ptr` (CSR) says where each rank's run begins. Times are integer ticks
from the job start; a span's lane is its depth in its thread (the epoch above its steps), at most LANES - 1.
Names and categories go into the page's JSON (escaped there) and are drawn as canvas text or tooltip text,
never as HTML.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ...analysis.loop import KINDS, span_kind
from .encode import Blob, smallest_uint
from .filters import Filters, window_and_ranks

MAX_SPANS = 1_000_000  # beyond, the earliest ones (the page says how many it has)
LANES = 4
MIN_TICK = 1e-7
U32_MAX = 2**32 - 1


def span_columns(log, nranks: int, filters: Filters, blob: Blob):
    """Add the span columns to `blob` (the "trace" part); returns what the page needs to read them, or None for
    a log without spans."""
    spans = log.extra_tables().get("spans")
    if spans is None or spans.is_empty():
        return None
    total = spans.height
    spans = spans.filter(window_and_ranks(filters)).filter((pl.col("rank") >= 0) & (pl.col("rank") < nranks))
    if spans.is_empty():
        return None
    if spans.height > MAX_SPANS:
        cut = float(spans["start"].sort()[MAX_SPANS])
        spans = spans.filter(pl.col("start") < cut)
    roles = log.processes.select("rank", pl.col("role").cast(pl.String))
    spans = (spans.join(roles, on="rank", how="left")
             .with_columns(kind=span_kind(pl.col("role").fill_null("main")).fill_null("other"),
                           label=pl.format("{} · {}", pl.col("cat").fill_null(""), pl.col("name").fill_null("")))
             .sort("rank", "start"))
    names = spans["label"].unique().sort().to_list()
    code = {n: k for k, n in enumerate(names)}
    kinds = [*KINDS, "other"]  # a span's kind says what it is to the loop (a fetch waits in the main process,
    # makes a batch in a worker): per span, not per name
    n = spans.height
    start, end = spans["start"].to_numpy(), spans["end"].to_numpy()
    t_max = float(end.max()) if n else 0.0
    tick = max(MIN_TICK, t_max / (U32_MAX - 1))
    start_q = np.rint(np.maximum(start, 0) / tick).astype(np.int64)
    dur_q = np.maximum(np.rint(np.maximum(end, 0) / tick).astype(np.int64) - start_q, 0)
    ranks = spans["rank"].to_numpy()
    ptr = np.searchsorted(ranks, np.arange(nranks + 1), side="left")
    name_col = spans["label"].replace_strict(code, return_dtype=pl.Int64).to_numpy()
    blob.add("span_ptr", ptr, "u32", part="trace")
    blob.add("span_start", start_q, "u32", part="trace")
    blob.add("span_dur", dur_q, "u32", part="trace")
    blob.add("span_name", name_col, smallest_uint(max(len(code), 1)), part="trace")
    blob.add("span_kind", spans["kind"].replace_strict({k: i for i, k in enumerate(kinds)},
                                                       return_dtype=pl.Int64).to_numpy(), "u8", part="trace")
    blob.add("span_lane", np.minimum(spans["depth"].fill_null(0).to_numpy(), LANES - 1), "u8", part="trace")
    blob.add("span_epoch", spans["epoch"].fill_null(-1).to_numpy(), "i32", part="trace")
    blob.add("span_step", spans["step"].fill_null(-1).to_numpy(), "i32", part="trace")
    lanes = int(min(int(spans["depth"].max() or 0) + 1, LANES)) if n else 1
    return {
        "count": n, "total": total, "tick": tick, "t_max": t_max, "lanes": lanes,
        "names": names, "kinds": kinds, "kinds_present": sorted(set(spans["kind"].to_list()), key=kinds.index),
        "ranks": sorted(set(ranks.tolist())),
    }
