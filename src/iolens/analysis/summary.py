"""Job summary: per-layer bytes, operations, time and bandwidth; DXT coverage and truncation."""
from __future__ import annotations

import numpy as np
import polars as pl

from ..model import Log
from .layers import DXT_LAYER, LAYERS, Layer, recorded


def _sum(df: pl.DataFrame, cols) -> int | float:
    """Sum of counters, ignoring the -1 that darshan-util writes for 'not recorded'."""
    cols = [c for c in ([cols] if isinstance(cols, str) else cols) if c in df.columns]
    if not cols or df.is_empty():
        return 0
    return df.select(pl.sum_horizontal([recorded(c) for c in cols]).sum()).item()


def layer_summary(log: Log, layer: Layer) -> dict | None:
    df = log.counters.get(layer.module)
    if df is None:
        return None
    read_time, write_time, meta_time = (_sum(df, c) for c in (layer.read_time, layer.write_time, layer.meta_time))
    total_bytes = _sum(df, [layer.bytes_read, layer.bytes_written])
    slowest = _slowest_rank_time(df, layer)
    return {
        "layer": layer.name,
        "module": layer.module,
        "partial": log.is_partial(layer.module),
        "files": df["file_id"].n_unique(),
        "bytes_read": _sum(df, layer.bytes_read),
        "bytes_written": _sum(df, layer.bytes_written),
        "reads": _sum(df, layer.reads),
        "writes": _sum(df, layer.writes),
        "meta_ops": _sum(df, layer.meta_ops),
        "read_time": read_time,
        "write_time": write_time,
        "meta_time": meta_time,
        "io_time": read_time + write_time + meta_time,
        "slowest_rank_io_time": slowest,
        "bandwidth": total_bytes / slowest if slowest > 0 else None,
    }


def _slowest_rank_time(df: pl.DataFrame, layer: Layer) -> float:
    """I/O time of the slowest rank: its own files plus the slowest rank's share of shared files.

    This is darshan-parser's 'agg_perf_by_slowest' estimate.
    """
    rank = df["rank"].to_numpy()
    own_max = shared_t = 0
    # each half only when the log has such records: on a log of a few dozen records a query's fixed cost is
    # what counts
    if (rank >= 0).any():
        t = None
        if all(c in df.columns for c in (layer.read_time, layer.write_time, layer.meta_time)):
            t = sum(np.maximum(df[c].to_numpy(), 0) for c in (layer.read_time, layer.write_time, layer.meta_time))
        own_max = max_rank_sum(rank, t) if t is not None else None
        if own_max is None:
            t = pl.sum_horizontal([recorded(c) for c in (layer.read_time, layer.write_time, layer.meta_time)])
            own = df.filter(pl.col("rank") >= 0).group_by("rank").agg(t.sum().alias("t"))
            own_max = own["t"].max()
    if (rank < 0).any():  # the same sum as a query's (polars' Series sum)
        shared_t = pl.Series(np.maximum(df[layer.slowest_time].to_numpy()[rank < 0], 0)).sum()
    return float((own_max or 0.0) + (shared_t or 0))


def max_rank_sum(rank: np.ndarray, values: np.ndarray):
    """The largest per-rank sum of `values` over the records of ranks >= 0 (None if there are none), in numpy
    when no rank has more than two records: a sum of one or two floats is the same in any order, hence the
    same as polars' group-by sum. None when a rank has more (the summation order matters: ask polars)."""
    own = rank >= 0
    if not own.any():
        return None
    _, inv, counts = np.unique(rank[own], return_inverse=True, return_counts=True)
    if counts.max() > 2:
        return None
    sums = np.zeros(len(counts))
    np.add.at(sums, inv, values[own])
    return float(sums.max())


def dxt_summary(log: Log) -> list:
    """Per DXT module: what was traced, and whether the trace holds fewer operations than the counters."""
    out = []
    if log.dxt_records.is_empty() and not any(m.name.startswith("DXT") for m in log.modules):
        return out
    recs = log.dxt_records
    for module, layer in DXT_LAYER.items():
        info = log.module(module)
        if info is None:
            continue
        # integer counts in numpy: the same totals as polars queries, without their fixed cost per query
        mine = (recs["module"] == module).to_numpy()
        traced_w = int(recs["write_count"].to_numpy()[mine].sum())
        traced_r = int(recs["read_count"].to_numpy()[mine].sum())
        counters = log.counters.get(layer.module)
        counted_w = counted_r = None
        if counters is not None:
            on_traced = np.isin(counters["file_id"].to_numpy(), recs["file_id"].to_numpy()[mine])
            counted_w, counted_r = (sum(int(np.maximum(counters[c].to_numpy()[on_traced], 0).sum())
                                        for c in cols if c in counters.columns)
                                    for cols in (layer.writes, layer.reads))
        reasons = []
        if info.partial:
            reasons.append(f"Darshan ran out of {module} memory during the run (module flagged partial)")
        if counted_r is not None and traced_r < counted_r:
            reasons.append(f"the trace holds {traced_r:,} reads but the {layer.module} counters record "
                           f"{counted_r:,} on the same files")
        if counted_w is not None and traced_w < counted_w:
            reasons.append(f"the trace holds {traced_w:,} writes but the {layer.module} counters record "
                           f"{counted_w:,} on the same files")
        out.append({
            "module": module,
            "records": int(mine.sum()),
            "segments": traced_w + traced_r,
            "writes": traced_w,
            "reads": traced_r,
            "counter_writes": counted_w,
            "counter_reads": counted_r,
            "partial": info.partial,
            "truncated": bool(reasons),
            "truncation_reasons": reasons,
        })
    return out


def job_summary(log: Log) -> dict:
    """Everything `iolens info` shows, as plain data (also the `--json` output)."""
    job = log.job
    layers = [s for s in (layer_summary(log, layer) for layer in LAYERS) if s is not None]
    out = {
        "path": log.path,
        "job": job,
        "layers": layers,
        "dxt": dxt_summary(log),
        "files": log.files.height,
        "has_dxt": log.has_dxt,
    }
    if getattr(log, "calls", None) is not None:  # a Recorder trace: every call is known
        from .calls import call_summary

        out["recorder"] = call_summary(log.calls, int(job["nprocs"]))
    return out
