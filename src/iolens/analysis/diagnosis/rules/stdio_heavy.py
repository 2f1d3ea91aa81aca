"""STDIO_HEAVY as a rule: buffered C stdio carries at least `stdio_min_share` of the bytes (and at least
`stdio_min_bytes`), or of the I/O time with the busiest rank spending at least 1 s in it and that mattering
for the run. The features are job totals against POSIX's, so any threshold is answered from them."""
from __future__ import annotations

import numpy as np
import polars as pl

from ..units import fmt_bytes, fmt_pct, fmt_time
from ...segments import float_sum
from .common import COMMON_THRESHOLDS, matters

THRESHOLDS = ("stdio_min_share", "stdio_min_bytes") + COMMON_THRESHOLDS
P = "stdio_heavy_"
NAMES = ("bytes", "time", "posix_bytes", "posix_time", "max_rank_time")


def measure(ctx) -> tuple:
    """(features, STDIO time per record, per rank) of a log with STDIO counters; (features of nulls, None,
    None) without."""
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


def features(ctx, edges=None) -> dict:
    return measure(ctx)[0]


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
