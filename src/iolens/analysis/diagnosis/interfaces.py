"""FSYNC_HEAVY and STDIO_HEAVY: interface choices that cost time."""
from __future__ import annotations

import polars as pl

from . import recommendations as rec
from .context import clip
from .insight import Evidence, Insight
from .rules import interfaces as rules, one_row
from .rules.common import common_features
from .units import fmt_bytes, fmt_count, fmt_time


def check_fsync(ctx) -> list:
    p = ctx.counters("POSIX")
    if p is None:
        return []
    v = one_row(rules.fsync_features(ctx), rules.fsync_rule(ctx.th))  # the rule (rules/interfaces.py) decides
    if v["severity"] is None:
        return []
    syncs, writes = v["fsyncs"], v["writes"]
    per = p.group_by("file_id").agg((clip("POSIX_FSYNCS") + clip("POSIX_FDSYNCS")).sum().alias("syncs"))
    fids = per.filter(pl.col("syncs") > 0).sort(["syncs", "file_id"], descending=[True, False])["file_id"].to_list()
    mpi_syncs = 0
    if ctx.counters("MPI-IO") is not None:
        mpi_syncs = ctx.total("MPI-IO", "MPIIO_SYNCS")
    metrics = {"fsyncs": syncs, "writes": writes, "fsyncs_per_write": syncs / max(writes, 1),
               "mpiio_syncs": mpi_syncs, "files": len(fids)}
    title = rules.fsync_title(v, ctx.th)
    summary = (f"The application forces data to stable storage {fmt_count(syncs)} times for {fmt_count(writes)} "
               f"writes on {len(fids)} file(s); each fsync waits for the storage servers and its time is counted "
               "as write time.")
    return [Insight("FSYNC_HEAVY", v["severity"], title, summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=None, metrics=metrics),
                    [rec.fewer_fsync()], source="counters", partial=False, score=v["score"],
                    demotable=not v["strong"])]


def check_stdio(ctx) -> list:
    s = ctx.counters("STDIO")
    if s is None:
        return []
    f = rules.stdio_features(ctx)
    v = one_row({**common_features(ctx), **f}, rules.stdio_rule(ctx.th))  # the rule (rules/interfaces.py) decides
    if v["severity"] is None:
        return []
    sb, bshare, stime, tshare = v["bytes"], v["bytes_share"], v["time"], v["time_share"]
    worst, busiest = f["stdio_heavy_busiest_rank_time"], f["stdio_heavy_busiest_rank"]
    files = (s.group_by("file_id").agg((clip("STDIO_BYTES_READ") + clip("STDIO_BYTES_WRITTEN")).sum().alias("b"))
             .sort(["b", "file_id"], descending=[True, False])["file_id"].to_list())
    flushes = ctx.total("STDIO", "STDIO_FLUSHES")
    metrics = {"stdio_bytes": sb, "stdio_bytes_share": bshare, "stdio_time_s": stime, "stdio_time_share": tshare,
               "max_rank_stdio_time_s": worst, "flushes": flushes,
               "stdio_operations": ctx.total("STDIO", "STDIO_READS", "STDIO_WRITES")}
    title = rules.stdio_title(v, ctx.th)
    summary = (f"{fmt_bytes(sb)} go through buffered C stdio (fopen/fread/fwrite/fprintf) on {len(files)} file(s), "
               f"taking {fmt_time(stime)} summed over ranks ({fmt_time(worst)} on the busiest rank)"
               + (f", with {fmt_count(flushes)} explicit flushes" if flushes else "") + ".")
    return [Insight("STDIO_HEAVY", v["severity"], title, summary,
                    Evidence(ranks=[busiest] if busiest is not None else [], files=ctx.names_of(files),
                             time_window=ctx.counter_window("STDIO", files), metrics=metrics),
                    rec.stdio_buffering(), source="counters", partial=False, score=v["score"],
                    demotable=not v["strong"])]
