"""METADATA_HEAVY as a rule: metadata time (opens, stats, seeks, ...) is at least `metadata_min_share` of the
POSIX/STDIO I/O time and the busiest rank's share of it matters for the run (info when that rank's metadata
time exceeds the run itself: overlapping threads or blocking opens); or, failing that, at least
`tiny_files_min` files with data, at least `tiny_files_min_share` of them, have an extent of at most
`tiny_file_bytes`.

The time features are job totals: any share or stake threshold is answered from them. Which files are tiny
depends on `tiny_file_bytes`: the features count them at the build's limit (`metadata_heavy_tiny_limit`),
and another limit needs the log again (`stale`) for the jobs where the tiny files could decide.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ..units import fmt_bytes, fmt_count, fmt_pct
from ...segments import float_sum
from .common import COMMON_THRESHOLDS, RUN_TIME, matters

THRESHOLDS = ("metadata_min_share", "tiny_file_bytes", "tiny_files_min", "tiny_files_min_share") + COMMON_THRESHOLDS
P = "metadata_heavy_"
OVERLAP = 1.05  # a rank's metadata time beyond this share of the run: threads overlap or opens block


def times(ctx) -> tuple:
    """(metadata seconds, data seconds, metadata seconds per rank) over POSIX and STDIO."""
    meta = data = 0.0
    per_rank = np.zeros(ctx.nprocs)
    for module, p in (("POSIX", "POSIX"), ("STDIO", "STDIO")):
        if not ctx.has(module):
            continue
        m = ctx.column(module, f"{p}_F_META_TIME")
        meta += float(float_sum(m))
        data += float(float_sum(ctx.column(module, f"{p}_F_READ_TIME") + ctx.column(module, f"{p}_F_WRITE_TIME")))
        ctx.add_per_rank(per_rank, module, m)
        shared = ctx.column(module, "rank") < 0
        if shared.any():
            per_rank += float(float_sum(m[shared])) / ctx.nprocs
    return meta, data, per_rank


def tiny_files(ctx) -> dict:
    """The POSIX files, those with data, and those of them with an extent (highest byte + 1) of at most
    `tiny_file_bytes` (nulls without POSIX counters)."""
    out = {P + "files": None, P + "files_with_data": None, P + "tiny_files": None,
           P + "tiny_limit": int(ctx.th.tiny_file_bytes)}
    if not ctx.has("POSIX"):
        return out
    ids, _ = ctx.file_groups("POSIX")
    extent = np.maximum(np.maximum(ctx.per_file_max("POSIX", "POSIX_MAX_BYTE_WRITTEN"),
                                   ctx.per_file_max("POSIX", "POSIX_MAX_BYTE_READ")) + 1, 0)
    with_data = ctx.per_file_total("POSIX", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN") > 0
    out.update({P + "files": len(ids), P + "files_with_data": int(with_data.sum()),
                P + "tiny_files": int((with_data & (extent <= ctx.th.tiny_file_bytes)).sum())})
    return out


def measure(ctx) -> tuple:
    """(features, metadata seconds per rank)."""
    meta, data, per_rank = times(ctx)
    row = {P + "meta_time": meta, P + "data_time": data, P + "max_rank_meta_time": float(per_rank.max()),
           **tiny_files(ctx)}
    return row, per_rank


def features(ctx, edges=None) -> dict:
    return measure(ctx)[0]


def dtypes() -> dict:
    return {P + "meta_time": pl.Float64, P + "data_time": pl.Float64, P + "max_rank_meta_time": pl.Float64,
            P + "files": pl.Int64, P + "files_with_data": pl.Int64, P + "tiny_files": pl.Int64,
            P + "tiny_limit": pl.Int64}


def parts(th) -> dict:
    """{"by_time", "by_tiny_files"} (booleans) and the shares they compare."""
    meta, data, worst = pl.col(P + "meta_time"), pl.col(P + "data_time"), pl.col(P + "max_rank_meta_time")
    timed = (meta + data) > 0
    share = meta / (meta + data)
    by_time = (timed & (share >= th.metadata_min_share) & matters(worst, th)).fill_null(False)
    nfiles, with_data, tiny = pl.col(P + "files"), pl.col(P + "files_with_data"), pl.col(P + "tiny_files")
    tiny_share = tiny / with_data
    by_tiny = (timed & (nfiles >= th.tiny_files_min) & (with_data > 0) & (tiny >= th.tiny_files_min)
               & (tiny_share >= th.tiny_files_min_share)).fill_null(False)
    return {"by_time": by_time, "by_tiny_files": by_tiny, "share": share, "tiny_share": tiny_share}


def rule(th) -> dict:
    p = parts(th)
    worst, run = pl.col(P + "max_rank_meta_time"), pl.col(RUN_TIME)
    overlapping = ((run > 0) & (worst > OVERLAP * run)).fill_null(False)
    severity = (pl.when(p["by_time"] & overlapping).then(pl.lit("info"))
                .when(p["by_time"] | p["by_tiny_files"]).then(pl.lit("warning"))
                .otherwise(pl.lit(None, pl.String)))
    score = pl.when(p["by_time"]).then(p["share"]).otherwise(p["tiny_share"])
    return {"severity": severity, "strong": pl.lit(False), "score": score, **p,
            "tiny_files": pl.col(P + "tiny_files"), "files_with_data": pl.col(P + "files_with_data")}


def title(v: dict, th) -> str:
    if v["by_time"]:
        return f"Metadata operations take {fmt_pct(v['share'])} of the POSIX/STDIO I/O time"
    return (f"{fmt_count(v['tiny_files'])} tiny files ({fmt_pct(v['tiny_share'])} of the files with data "
            f"are at most {fmt_bytes(th.tiny_file_bytes)})")


def stale(th) -> pl.Expr:
    """Jobs whose tiny files were counted at another `tiny_file_bytes` and could decide the code under `th`
    (enough files with data, and the time part does not find it): a rebuild answers."""
    timed = (pl.col(P + "meta_time") + pl.col(P + "data_time")) > 0
    return ((pl.col(P + "tiny_limit") != int(th.tiny_file_bytes)) & ~parts(th)["by_time"] & timed
            & (pl.col(P + "files_with_data") >= th.tiny_files_min)).fill_null(False)
