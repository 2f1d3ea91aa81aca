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


def aggregated_summary(aggregated: pl.DataFrame) -> list:
    """[{cat, name, count, time, bytes, ranks}] per function or span of DFTracer's aggregated records (its
    aggregation mode): the events summed, their time (seconds), the bytes reads and writes moved (None where the
    records cannot say), in how many processes; most events first."""
    if aggregated.is_empty():
        return []
    per = (aggregated.group_by("cat", "name")
           .agg(pl.col("count").sum(), pl.col("time").sum(),
                pl.when(pl.col("bytes").is_not_null().any()).then(pl.col("bytes").sum()).alias("bytes"),
                pl.col("rank").n_unique().alias("ranks"))
           .sort(["count", "cat", "name"], descending=[True, False, False]))
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


def enclosing_spans(ops: pl.DataFrame, spans: pl.DataFrame, thread: str | None = "tid") -> pl.Series:
    """The span_id of the innermost span that encloses each row of `ops` (rank, start, end, and `thread`:
    the thread id column, e.g. `tid` of calls or `pthread_id` of segments) in the same process and thread;
    null where none does. In the order of `ops`. thread=None matches the process only (then the latest span
    to start that still encloses the operation, of any thread)."""
    keys = ["rank"] + ([thread] if thread else [])
    if ops.is_empty() or spans.is_empty():
        return pl.Series("span_id", [None] * ops.height, dtype=pl.Int64)
    table = spans.select("span_id", "parent", pl.col("start").alias("_s"), pl.col("end").alias("_e"),
                         "rank", *([pl.col("tid").cast(ops.schema[thread]).alias(thread)] if thread else []))
    if thread is None:
        table = table.drop("parent").with_columns(parent=pl.lit(None, dtype=pl.Int64))
    found = (ops.select(*keys, "start", "end").with_row_index("_op").sort("start")
             .join_asof(table.sort("_s"), left_on="start", right_on="_s", by=keys, strategy="backward",
                        check_sortedness=False))  # (both sorted by time above)
    lookup = table.select("span_id", pl.col("parent").alias("_up"), pl.col("_s").alias("_us"),
                          pl.col("_e").alias("_ue"))
    for _ in range(int(spans["depth"].max() or 0) + 1):  # climb to the parent while the span ended too soon
        outside = pl.col("span_id").is_not_null() & (pl.col("_e") < pl.col("end"))
        if not found.select(outside.any()).item():
            break
        found = (found.join(lookup, on="span_id", how="left")
                 .with_columns(pl.when(outside).then(pl.col("_up")).otherwise(pl.col("span_id")).alias("span_id"))
                 .drop("_up", "_us", "_ue")
                 .join(lookup.rename({"span_id": "_id"}), left_on="span_id", right_on="_id", how="left")
                 .with_columns(pl.col("_us").alias("_s"), pl.col("_ue").alias("_e"), pl.col("_up").alias("parent"))
                 .drop("_up", "_us", "_ue"))
    if thread is None:  # no parent chain across threads: keep only spans that enclose
        found = found.with_columns(pl.when(pl.col("_e") >= pl.col("end")).then(pl.col("span_id")).alias("span_id"))
    return found.sort("_op")["span_id"]
