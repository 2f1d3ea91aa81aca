"""FSYNC_HEAVY and STDIO_HEAVY: interface choices that cost time."""
from __future__ import annotations

import polars as pl

from . import recommendations as rec
from .context import clip
from .insight import Evidence, Insight
from .rules import fsync_heavy, one_row, stdio_heavy
from .rules.common import common_features
from .units import fmt_bytes, fmt_count, fmt_time


def check_fsync(ctx) -> list:
    # the rule decides (rules/fsync_heavy.py, shared with the fleet)
    if not ctx.has("POSIX"):  # nothing to judge
        return []
    row = fsync_heavy.features(ctx)
    if row[fsync_heavy.P + "syncs"] < ctx.th.fsync_min_count:  # the rule's first test fails: no query
        return []
    judged = one_row({**common_features(ctx), **row}, fsync_heavy.rule(ctx.th))
    if judged["severity"] is None:
        return []
    syncs, writes = judged["syncs"], judged["writes"]
    per = ctx.counters("POSIX").group_by("file_id").agg((clip("POSIX_FSYNCS") + clip("POSIX_FDSYNCS")).sum().alias("syncs"))
    fids = per.filter(pl.col("syncs") > 0).sort(["syncs", "file_id"], descending=[True, False])["file_id"].to_list()
    mpi_syncs = 0
    if ctx.has("MPI-IO"):
        mpi_syncs = ctx.total("MPI-IO", "MPIIO_SYNCS")
    metrics = {"fsyncs": syncs, "writes": writes, "fsyncs_per_write": syncs / max(writes, 1),
               "mpiio_syncs": mpi_syncs, "files": len(fids)}
    title = fsync_heavy.title(judged, ctx.th)
    summary = (f"The application forces data to stable storage {fmt_count(syncs)} times for {fmt_count(writes)} "
               f"writes on {len(fids)} file(s); each fsync waits for the storage servers and its time is counted "
               "as write time.")
    return [Insight("FSYNC_HEAVY", judged["severity"], title, summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=None, metrics=metrics),
                    [rec.fewer_fsync()], source="counters", partial=False, score=judged["score"])]


def check_stdio(ctx) -> list:
    # the rule decides (rules/stdio_heavy.py, shared with the fleet)
    row, t, per_rank = stdio_heavy.measure(ctx)
    if t is None:
        return []
    if row[stdio_heavy.P + "bytes"] < ctx.th.stdio_min_bytes and row[stdio_heavy.P + "max_rank_time"] < 1.0:
        return []  # neither of the rule's two tests can pass (bytes, or a busiest rank's second): no query
    judged = one_row({**common_features(ctx), **row}, stdio_heavy.rule(ctx.th))
    if judged["severity"] is None:
        return []
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
    title = stdio_heavy.title(judged, ctx.th)
    summary = (f"{fmt_bytes(sb)} go through buffered C stdio (fopen/fread/fwrite/fprintf) on {len(files)} file(s), "
               f"taking {fmt_time(stime)} summed over ranks ({fmt_time(worst)} on the busiest rank)"
               + (f", with {fmt_count(flushes)} explicit flushes" if flushes else "") + ".")
    return [Insight("STDIO_HEAVY", judged["severity"], title, summary,
                    Evidence(ranks=[int(per_rank.argmax())] if own.any() else [], files=ctx.names_of(files),
                             time_window=ctx.counter_window("STDIO", files), metrics=metrics),
                    rec.stdio_buffering(), source="counters", partial=False, score=judged["score"])]
