"""FSYNC_HEAVY and STDIO_HEAVY: interface choices that cost time."""
from __future__ import annotations

import numpy as np
import polars as pl

from . import recommendations as rec
from .context import clip, float_sum
from .insight import Evidence, Insight
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_time


def check_fsync(ctx) -> list:
    th = ctx.th
    p = ctx.counters("POSIX")
    if p is None:
        return []
    syncs, writes = ctx.total("POSIX", "POSIX_FSYNCS", "POSIX_FDSYNCS"), ctx.total("POSIX", "POSIX_WRITES")
    if syncs < th.fsync_min_count or syncs < th.fsync_per_write * max(writes, 1):
        return []
    per = p.group_by("file_id").agg((clip("POSIX_FSYNCS") + clip("POSIX_FDSYNCS")).sum().alias("syncs"))
    fids = per.filter(pl.col("syncs") > 0).sort(["syncs", "file_id"], descending=[True, False])["file_id"].to_list()
    mpi_syncs = 0
    if ctx.counters("MPI-IO") is not None:
        mpi_syncs = ctx.total("MPI-IO", "MPIIO_SYNCS")
    metrics = {"fsyncs": syncs, "writes": writes, "fsyncs_per_write": syncs / max(writes, 1),
               "mpiio_syncs": mpi_syncs, "files": len(fids)}
    title = f"{fmt_count(syncs)} fsync calls: one per {max(writes, 1) / syncs:.1f} writes"
    summary = (f"The application forces data to stable storage {fmt_count(syncs)} times for {fmt_count(writes)} "
               f"writes on {len(fids)} file(s); each fsync waits for the storage servers and its time is counted "
               "as write time.")
    return [Insight("FSYNC_HEAVY", "warning", title, summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=None, metrics=metrics),
                    [rec.fewer_fsync()], source="counters", partial=False, score=syncs / max(writes, 1))]


def check_stdio(ctx) -> list:
    th = ctx.th
    s = ctx.counters("STDIO")
    if s is None:
        return []
    n = ctx.nprocs
    sb = ctx.total("STDIO", "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN")
    t = ctx.column("STDIO", "STDIO_F_READ_TIME") + ctx.column("STDIO", "STDIO_F_WRITE_TIME") \
        + ctx.column("STDIO", "STDIO_F_META_TIME")
    stime = float(float_sum(t))
    pb = pt = 0.0
    if ctx.counters("POSIX") is not None:
        pb = float(ctx.total("POSIX", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"))
        pt = float(float_sum(ctx.column("POSIX", "POSIX_F_READ_TIME") + ctx.column("POSIX", "POSIX_F_WRITE_TIME")
                             + ctx.column("POSIX", "POSIX_F_META_TIME")) or 0)
    bshare = sb / (sb + pb) if sb + pb else 0.0
    tshare = stime / (stime + pt) if stime + pt else 0.0
    per_rank = np.zeros(n)
    own = ctx.own_records("STDIO")
    if own.any():
        np.add.at(per_rank, ctx.column("STDIO", "rank")[own], t[own])
    per_rank += float(float_sum(t[ctx.column("STDIO", "rank") < 0])) / n
    worst = float(per_rank.max())
    by_bytes = bshare >= th.stdio_min_share and sb >= th.stdio_min_bytes
    by_time = tshare >= th.stdio_min_share and worst >= 1.0 and ctx.matters(worst)
    if not (by_bytes or by_time):
        return []
    files = (s.group_by("file_id").agg((clip("STDIO_BYTES_READ") + clip("STDIO_BYTES_WRITTEN")).sum().alias("b"))
             .sort(["b", "file_id"], descending=[True, False])["file_id"].to_list())
    flushes = ctx.total("STDIO", "STDIO_FLUSHES")
    metrics = {"stdio_bytes": sb, "stdio_bytes_share": bshare, "stdio_time_s": stime, "stdio_time_share": tshare,
               "max_rank_stdio_time_s": worst, "flushes": flushes,
               "stdio_operations": ctx.total("STDIO", "STDIO_READS", "STDIO_WRITES")}
    title = (f"STDIO carries {fmt_pct(bshare)} of the bytes and {fmt_pct(tshare)} of the I/O time "
             f"({fmt_bytes(sb)}, {fmt_time(stime)})")
    summary = (f"{fmt_bytes(sb)} go through buffered C stdio (fopen/fread/fwrite/fprintf) on {len(files)} file(s), "
               f"taking {fmt_time(stime)} summed over ranks ({fmt_time(worst)} on the busiest rank)"
               + (f", with {fmt_count(flushes)} explicit flushes" if flushes else "") + ".")
    return [Insight("STDIO_HEAVY", "warning", title, summary,
                    Evidence(ranks=[int(per_rank.argmax())] if own.any() else [], files=ctx.names_of(files),
                             time_window=ctx.counter_window("STDIO", files), metrics=metrics),
                    rec.stdio_buffering(), source="counters", partial=False, score=max(bshare, tshare))]
