"""What a DFTracer trace holds beside its I/O: the processes (main, workers) and the application's spans."""
from __future__ import annotations

import polars as pl


def span_summary(spans: pl.DataFrame) -> list:
    """[{cat, name, count, time, ranks}] per kind of span: how many, their summed duration (seconds), in how
    many processes; most time first."""
    if spans.is_empty():
        return []
    per = (spans.group_by("cat", "name")
           .agg(pl.len().alias("count"), (pl.col("end") - pl.col("start")).sum().alias("time"),
                pl.col("rank").n_unique().alias("ranks"))
           .sort(["time", "cat", "name"], descending=[True, False, False]))
    return per.to_dicts()


def process_summary(processes: pl.DataFrame, calls: pl.DataFrame, spans: pl.DataFrame) -> list:
    """[{rank, label, role, pid, host, calls, reads, bytes_read, writes, bytes_written, spans, lost_events}]
    in rank order (reads and writes: the POSIX and STDIO ones that returned)."""
    data = pl.col("bytes").is_not_null()
    reads = data & pl.col("func").str.contains("read")
    writes = data & pl.col("func").str.contains("write")
    per = calls.group_by("rank").agg(
        pl.len().alias("calls"), reads.sum().alias("reads"), pl.col("bytes").filter(reads).sum().alias("bytes_read"),
        writes.sum().alias("writes"), pl.col("bytes").filter(writes).sum().alias("bytes_written"))
    nspans = spans.group_by("rank").agg(pl.len().alias("spans"))
    out = (processes.select("rank", "label", pl.col("role").cast(pl.String), "pid", "host", "lost_events")
           .join(per, on="rank", how="left").join(nspans, on="rank", how="left")
           .with_columns(pl.col(c).fill_null(0).cast(pl.Int64)
                         for c in ("calls", "reads", "bytes_read", "writes", "bytes_written", "spans"))
           .sort("rank"))
    return out.select("rank", "label", "role", "pid", "host", "calls", "reads", "bytes_read", "writes",
                      "bytes_written", "spans", "lost_events").to_dicts()
