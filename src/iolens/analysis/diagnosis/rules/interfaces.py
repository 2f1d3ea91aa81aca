"""FSYNC_HEAVY and STDIO_HEAVY as rules: counts and shares straight from the counters."""
from __future__ import annotations

import numpy as np
import polars as pl

from ..context import float_sum
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time
from .common import COMMON_THRESHOLDS, matters

FSYNC_THRESHOLDS = ("fsync_min_count", "fsync_per_write", "min_io_time_share")
STDIO_THRESHOLDS = ("stdio_min_share", "stdio_min_bytes") + COMMON_THRESHOLDS
F, S = "fsync_heavy_", "stdio_heavy_"
WARNING = pl.lit("warning")


# --- FSYNC_HEAVY -------------------------------------------------------------------------------------
def fsync_features(ctx, edges=None) -> dict:
    """fsync + fdatasync calls and writes at POSIX (null without POSIX records)."""
    if ctx.counters("POSIX") is None:
        return {F + "fsyncs": None, F + "writes": None}
    return {F + "fsyncs": ctx.total("POSIX", "POSIX_FSYNCS", "POSIX_FDSYNCS"),
            F + "writes": ctx.total("POSIX", "POSIX_WRITES")}


def fsync_dtypes() -> dict:
    return {F + "fsyncs": pl.Int64, F + "writes": pl.Int64}


def fsync_rule(th) -> dict:
    syncs, writes = pl.col(F + "fsyncs"), pl.col(F + "writes")
    per = pl.max_horizontal(writes, pl.lit(1))
    found = ((syncs >= th.fsync_min_count) & (syncs >= th.fsync_per_write * per)).fill_null(False)
    return {"severity": pl.when(found).then(WARNING).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": syncs / per, "fsyncs": syncs, "writes": writes}


def fsync_title(v: dict, th) -> str:
    return f"{fmt_count(v['fsyncs'])} fsync calls: one per {max(v['writes'], 1) / v['fsyncs']:.1f} writes"


# --- STDIO_HEAVY -------------------------------------------------------------------------------------
def stdio_features(ctx, edges=None) -> dict:
    """STDIO's bytes and their share of STDIO + POSIX bytes, its time (summed over ranks) and share of the
    STDIO + POSIX time, and the busiest rank's STDIO time (null without STDIO records)."""
    keys = ("bytes", "bytes_share", "time", "time_share", "busiest_rank_time", "busiest_rank")
    if ctx.counters("STDIO") is None:
        return {S + k: None for k in keys}
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
    per_rank = np.zeros(n)
    own = ctx.own_records("STDIO")
    if own.any():
        np.add.at(per_rank, ctx.column("STDIO", "rank")[own], t[own])
    per_rank += float(float_sum(t[ctx.column("STDIO", "rank") < 0])) / n
    return {S + "bytes": sb, S + "bytes_share": sb / (sb + pb) if sb + pb else 0.0, S + "time": stime,
            S + "time_share": stime / (stime + pt) if stime + pt else 0.0,
            S + "busiest_rank_time": float(per_rank.max()),
            S + "busiest_rank": int(per_rank.argmax()) if own.any() else None}


def stdio_dtypes() -> dict:
    return {S + "bytes": pl.Int64, S + "bytes_share": pl.Float64, S + "time": pl.Float64,
            S + "time_share": pl.Float64, S + "busiest_rank_time": pl.Float64, S + "busiest_rank": pl.Int64}


def stdio_rule(th) -> dict:
    sb, bshare, tshare = pl.col(S + "bytes"), pl.col(S + "bytes_share"), pl.col(S + "time_share")
    worst = pl.col(S + "busiest_rank_time")
    by_bytes = (bshare >= th.stdio_min_share) & (sb >= th.stdio_min_bytes)
    by_time = (tshare >= th.stdio_min_share) & (worst >= 1.0) & matters(worst, th)
    found = (by_bytes | by_time).fill_null(False)
    return {"severity": pl.when(found).then(WARNING).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": pl.max_horizontal(bshare, tshare), "bytes": sb,
            "bytes_share": bshare, "time_share": tshare, "time": pl.col(S + "time")}


def stdio_title(v: dict, th) -> str:
    return (f"STDIO carries {fmt_pct(v['bytes_share'])} of the bytes and {fmt_pct(v['time_share'])} of the I/O "
            f"time ({fmt_bytes(v['bytes'])}, {fmt_time(v['time'])})")
