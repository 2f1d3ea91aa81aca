"""The DXT segments as compact columns for the page's timeline, transfer and spatiality views.

Operations are sorted by (layer, rank, start); `rank_ptr` (CSR) tells where each (layer, rank) run
begins, so the page finds a rank's operations in a time window by binary search. Within a run, starts
and offsets are delta-encoded; times are integer ticks (>= 100 ns) from the job start.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ...model.darshan import DXT_VIEW_ORDER
from .encode import Blob, smallest_uint

LAYERS = tuple((name, module) for module, name in DXT_VIEW_ORDER.items())  # (layer name, DXT module)
MIN_TICK = 1e-7
U32_MAX = 2**32 - 1


def traced_layers(segments: pl.DataFrame) -> list:
    present = set(segments["module"].unique().cast(pl.String).to_list()) if segments.height else set()
    return [(name, module) for name, module in LAYERS if module in present]


def cap_segments(segments: pl.DataFrame, max_ops: int) -> tuple:
    """At most `max_ops` operations, the earliest ones; returns (segments, time they are cut at or None)."""
    if segments.height <= max_ops:
        return segments, None
    starts = np.sort(segments["start"].to_numpy())
    cut = float(starts[max_ops])
    return segments.filter(pl.col("start") < cut), cut


def _run_delta(values: np.ndarray, run_start: np.ndarray) -> np.ndarray:
    """values[i] - values[i-1], except values[i] itself where a (layer, rank) run begins."""
    d = np.empty_like(values)
    if len(values):
        d[0] = values[0]
        d[1:] = values[1:] - values[:-1]
        d[run_start] = values[run_start]
    return d


def trace_columns(segments: pl.DataFrame, file_index: dict, nranks: int, blob: Blob) -> dict:
    """Add the trace columns to `blob`; returns what the page needs to read them back."""
    layers = traced_layers(segments)
    layer_code = {module: k for k, (_, module) in enumerate(layers)}
    seg = segments.with_columns(
        layer=pl.col("module").cast(pl.String).replace_strict(layer_code, return_dtype=pl.UInt8)
    ).sort(["layer", "rank", "start"])
    n = seg.height
    start = seg["start"].to_numpy()
    end = seg["end"].to_numpy()
    t_max = float(max(end.max(), start.max())) if n else 0.0
    tick = max(MIN_TICK, t_max / (U32_MAX - 1))
    start_q = np.rint(np.maximum(start, 0) / tick).astype(np.int64)
    dur_q = np.maximum(np.rint(np.maximum(end, 0) / tick).astype(np.int64) - start_q, 0)

    group = seg["layer"].to_numpy().astype(np.int64) * nranks + seg["rank"].to_numpy()
    rank_ptr = np.searchsorted(group, np.arange(len(layers) * nranks + 1), side="left")
    run_start = rank_ptr[:-1][np.diff(rank_ptr) > 0]

    offsets = seg["offset"].to_numpy().astype(np.int64)
    off_delta = _run_delta(offsets, run_start)
    off_dtype = "i32" if n == 0 or (off_delta.min() >= -2**31 and off_delta.max() < 2**31) else "f64"
    lengths = np.maximum(seg["length"].to_numpy(), 0)
    ids = seg["file_id"].to_numpy()
    known = np.array(sorted(file_index), dtype=np.uint64)
    file_col = np.array([file_index[i] for i in known.tolist()], dtype=np.int64)[np.searchsorted(known, ids)] \
        if n else np.zeros(0, dtype=np.int64)

    blob.add("rank_ptr", rank_ptr, "u32", part="trace")
    blob.add("start", _run_delta(start_q, run_start), "u32", part="trace")
    blob.add("dur", dur_q, "u32", part="trace")
    blob.add("op", seg["op"].to_physical().to_numpy(), "u8", part="trace")
    blob.add("file", file_col, smallest_uint(max(len(file_index), 1)), part="trace")
    blob.add("length", lengths, smallest_uint(int(lengths.max()) if n else 0), part="trace")
    blob.add("offset", off_delta, off_dtype, part="trace")
    return {
        "ops": n,
        "tick": tick,
        "t_max": t_max,
        "layers": [name for name, _ in layers],
        "layer_ops": [int(rank_ptr[(k + 1) * nranks] - rank_ptr[k * nranks]) for k in range(len(layers))],
    }


def rank_hosts(segments: pl.DataFrame, nranks: int, blob: Blob) -> list:
    """Hostname of every rank, as an index into the returned list (+1; 0 = unknown)."""
    pairs = segments.select("rank", pl.col("hostname").cast(pl.String)).unique("rank", keep="first")
    hosts = sorted(set(pairs["hostname"].to_list()))
    code = np.zeros(nranks, dtype=np.int64)
    if pairs.height:
        index = {h: k + 1 for k, h in enumerate(hosts)}
        ranks = pairs["rank"].to_numpy()
        ok = (ranks >= 0) & (ranks < nranks)
        code[ranks[ok]] = [index[h] for h, good in zip(pairs["hostname"].to_list(), ok) if good]
    blob.add("rank_host", code, smallest_uint(len(hosts) + 1))
    return hosts
