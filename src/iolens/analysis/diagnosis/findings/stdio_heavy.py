"""STDIO_HEAVY: a large share of the I/O goes through buffered C stdio (fopen/fprintf/fread).

The rule: stdio carries at least `stdio_min_share` of the bytes (and at least `stdio_min_bytes`), or of the I/O
time with the busiest rank spending at least 1 s in it and that mattering for the run. The features are job
totals against POSIX's, so any threshold is answered from them.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ...segments import float_sum
from ..common import MiB, matters
from ..context import clip
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..savings import upper_bound
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time, plural

CODE = "STDIO_HEAVY"
THRESHOLDS = (
    Threshold("stdio_min_share", 0.10, "share",
              "STDIO_HEAVY: stdio carries at least this share of the bytes or of the I/O time ..."),
    Threshold("stdio_min_bytes", 16 * MiB, "bytes", "... and at least this many bytes (or 1 s of I/O time)."),
)
P = "stdio_heavy_"
NAMES = ("bytes", "time", "posix_bytes", "posix_time", "max_rank_time")


def stdio(ctx) -> tuple:
    """(features, STDIO time per record, per rank) of a log with STDIO counters; (features of nulls, None,
    None) without. Once per log."""
    return ctx.memo("stdio_heavy", lambda: _stdio(ctx))


def _stdio(ctx) -> tuple:
    if not ctx.has("STDIO"):
        return {P + n: None for n in NAMES}, None, None
    n = ctx.nprocs
    sb = ctx.total("STDIO", "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN")
    t = ctx.column("STDIO", "STDIO_F_READ_TIME") + ctx.column("STDIO", "STDIO_F_WRITE_TIME") \
        + ctx.column("STDIO", "STDIO_F_META_TIME")
    pb = pt = 0.0
    if ctx.has("POSIX"):
        pb = float(ctx.total("POSIX", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"))
        pt = float(float_sum(ctx.column("POSIX", "POSIX_F_READ_TIME") + ctx.column("POSIX", "POSIX_F_WRITE_TIME")
                             + ctx.column("POSIX", "POSIX_F_META_TIME")) or 0)
    per_rank = np.zeros(n)
    ctx.add_per_rank(per_rank, "STDIO", t)
    shared = ctx.column("STDIO", "rank") < 0
    if shared.any():  # (adding 0.0 to sums from 0.0 would change no bit)
        per_rank += float(float_sum(t[shared])) / n
    row = {P + "bytes": sb, P + "time": float(float_sum(t)), P + "posix_bytes": pb, P + "posix_time": pt,
           P + "max_rank_time": float(per_rank.max())}
    return row, t, per_rank


def features(ctx) -> dict:
    return stdio(ctx)[0]


def measure(ctx) -> dict | None:
    """One log's features; None without STDIO, or when neither of the rule's tests can pass (bytes, or a
    busiest rank's second): no query."""
    row, t, _ = stdio(ctx)
    if t is None or (row[P + "bytes"] < ctx.th.stdio_min_bytes and row[P + "max_rank_time"] < 1.0):
        return None
    return row


def dtypes() -> dict:
    return {P + n: (pl.Int64 if n == "bytes" else pl.Float64) for n in NAMES}


def rule(th) -> dict:
    sb, stime, worst = pl.col(P + "bytes"), pl.col(P + "time"), pl.col(P + "max_rank_time")
    b_all, t_all = sb + pl.col(P + "posix_bytes"), stime + pl.col(P + "posix_time")
    bshare = pl.when(b_all != 0).then(sb / b_all).otherwise(pl.lit(0.0))
    tshare = pl.when(t_all != 0).then(stime / t_all).otherwise(pl.lit(0.0))
    by_bytes = (bshare >= th.stdio_min_share) & (sb >= th.stdio_min_bytes)
    by_time = (tshare >= th.stdio_min_share) & (worst >= 1.0) & matters(worst, th)
    found = (by_bytes | by_time).fill_null(False)
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": pl.max_horizontal(bshare, tshare), "bytes_share": bshare,
            "time_share": tshare, "bytes": sb, "time": stime, "max_rank_time": worst}


def title(v: dict, th) -> str:
    return (f"STDIO carries {fmt_pct(v['bytes_share'])} of the bytes and {fmt_pct(v['time_share'])} of the I/O "
            f"time ({fmt_bytes(v['bytes'])}, {fmt_time(v['time'])})")


def report(ctx, judged) -> list:
    _, _, per_rank = stdio(ctx)
    s = ctx.counters("STDIO")
    own = ctx.own_records("STDIO")
    sb, stime, worst = judged["bytes"], judged["time"], judged["max_rank_time"]
    bshare, tshare = judged["bytes_share"], judged["time_share"]
    files = (s.group_by("file_id").agg((clip("STDIO_BYTES_READ") + clip("STDIO_BYTES_WRITTEN")).sum().alias("b"))
             .sort(["b", "file_id"], descending=[True, False])["file_id"].to_list())
    flushes = ctx.total("STDIO", "STDIO_FLUSHES")
    metrics = {"stdio_bytes": sb, "stdio_bytes_share": bshare, "stdio_time_s": stime, "stdio_time_share": tshare,
               "max_rank_stdio_time_s": worst, "flushes": flushes,
               "stdio_operations": ctx.total("STDIO", "STDIO_READS", "STDIO_WRITES")}
    summary = (f"{fmt_bytes(sb)} go through buffered C stdio (fopen/fread/fwrite/fprintf) on "
               f"{plural(len(files), 'file')}, "
               f"taking {fmt_time(stime)} summed over ranks ({fmt_time(worst)} on the busiest rank)"
               + (f", with {fmt_count(flushes)} explicit flushes" if flushes else "") + ".")
    return [Insight(CODE, judged["severity"], title(judged, ctx.th), summary,
                    Evidence(ranks=[int(per_rank.argmax())] if own.any() else [], files=ctx.names_of(files),
                             time_window=ctx.counter_window("STDIO", files), metrics=metrics),
                    stdio_buffering(ctx.has_layer("mpiio")), source="counters", partial=False, score=judged["score"])]


def stdio_buffering(mpiio: bool = True) -> list:
    """`mpiio`: the program calls MPI-IO (named beside POSIX for bulk data)."""
    return [
        Recommendation(
            "Give stdio a large buffer, or use POSIX" + ("/MPI-IO" if mpiio else "") + " for bulk data",
            "fread/fwrite/fprintf go through a small libc buffer (4-8 KiB); with a larger buffer each system "
            "call moves more data. For bulk or parallel output prefer pwrite" + ("/MPI-IO." if mpiio else "."),
            "FILE *f = fopen(path, \"w\");\n"
            "setvbuf(f, NULL, _IOFBF, 8 << 20);   /* 8 MiB buffer, before the first I/O */", "c"),
        Recommendation(
            "Avoid explicit flushes in loops",
            "fflush() after every record forces a small write each time; flush at the end (or use a log level "
            "that prints less).", "", "text"),
    ]


FINDING = Finding(
    code=CODE,
    meaning="A large share of the I/O goes through buffered C stdio (fopen/fprintf/fread).",
    key_metrics=("stdio_bytes_share", "stdio_time_share"),
    thresholds=THRESHOLDS,
    trigger="stdio carries at least `stdio_min_share` of the bytes (and at least `stdio_min_bytes`) or of the "
            "I/O time (and at least 1 s on the busiest rank).",
    source="counters",
    report=report,
    saving=upper_bound("max_rank_stdio_time_s"),
    saving_rule=lambda th: {None: pl.col(P + "max_rank_time")},  # an upper bound
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title,
)
