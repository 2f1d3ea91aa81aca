"""FSYNC_HEAVY and STDIO_HEAVY: interface choices that cost time."""
from __future__ import annotations

import numpy as np
import polars as pl

from . import recommendations as rec
from .context import clip
from .insight import Evidence, Insight
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_time


def check_fsync(ctx) -> list:
    th = ctx.th
    p = ctx.counters("POSIX")
    if p is None:
        return []
    per = p.group_by("file_id").agg((clip("POSIX_FSYNCS") + clip("POSIX_FDSYNCS")).sum().alias("syncs"),
                                    clip("POSIX_WRITES").sum().alias("writes"))
    syncs, writes = int(per["syncs"].sum() or 0), int(per["writes"].sum() or 0)
    if syncs < th.fsync_min_count or syncs < th.fsync_per_write * max(writes, 1):
        return []
    fids = per.filter(pl.col("syncs") > 0).sort("syncs", descending=True)["file_id"].to_list()
    mpi_syncs = 0
    if ctx.counters("MPI-IO") is not None:
        mpi_syncs = int(ctx.counters("MPI-IO").select(clip("MPIIO_SYNCS").sum()).item() or 0)
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
    sb = int(s.select((clip("STDIO_BYTES_READ") + clip("STDIO_BYTES_WRITTEN")).sum()).item() or 0)
    st = s.with_columns((clip("STDIO_F_READ_TIME") + clip("STDIO_F_WRITE_TIME") + clip("STDIO_F_META_TIME")).alias("_t"))
    stime = float(st["_t"].sum())
    pb = pt = 0.0
    p = ctx.counters("POSIX")
    if p is not None:
        pb = float(p.select((clip("POSIX_BYTES_READ") + clip("POSIX_BYTES_WRITTEN")).sum()).item() or 0)
        pt = float(p.select((clip("POSIX_F_READ_TIME") + clip("POSIX_F_WRITE_TIME") + clip("POSIX_F_META_TIME"))
                            .sum()).item() or 0)
    bshare = sb / (sb + pb) if sb + pb else 0.0
    tshare = stime / (stime + pt) if stime + pt else 0.0
    per_rank = np.zeros(n)
    own = st.filter((pl.col("rank") >= 0) & (pl.col("rank") < n))
    if own.height:
        np.add.at(per_rank, own["rank"].to_numpy(), own["_t"].to_numpy())
    per_rank += float(st.filter(pl.col("rank") < 0)["_t"].sum()) / n
    worst = float(per_rank.max())
    by_bytes = bshare >= th.stdio_min_share and sb >= th.stdio_min_bytes
    by_time = tshare >= th.stdio_min_share and worst >= 1.0 and ctx.matters(worst)
    if not (by_bytes or by_time):
        return []
    files = (s.group_by("file_id").agg((clip("STDIO_BYTES_READ") + clip("STDIO_BYTES_WRITTEN")).sum().alias("b"))
             .sort("b", descending=True)["file_id"].to_list())
    flushes = int(s.select(clip("STDIO_FLUSHES").sum()).item() or 0)
    metrics = {"stdio_bytes": sb, "stdio_bytes_share": bshare, "stdio_time_s": stime, "stdio_time_share": tshare,
               "max_rank_stdio_time_s": worst, "flushes": flushes,
               "stdio_operations": int(s.select((clip("STDIO_READS") + clip("STDIO_WRITES")).sum()).item() or 0)}
    title = (f"STDIO carries {fmt_pct(bshare)} of the bytes and {fmt_pct(tshare)} of the I/O time "
             f"({fmt_bytes(sb)}, {fmt_time(stime)})")
    summary = (f"{fmt_bytes(sb)} go through buffered C stdio (fopen/fread/fwrite/fprintf) on {len(files)} file(s), "
               f"taking {fmt_time(stime)} summed over ranks ({fmt_time(worst)} on the busiest rank)"
               + (f", with {fmt_count(flushes)} explicit flushes" if flushes else "") + ".")
    return [Insight("STDIO_HEAVY", "warning", title, summary,
                    Evidence(ranks=[int(per_rank.argmax())] if own.height else [], files=ctx.names_of(files),
                             time_window=ctx.counter_window("STDIO", files), metrics=metrics),
                    rec.stdio_buffering(), source="counters", partial=False, score=max(bshare, tshare))]
