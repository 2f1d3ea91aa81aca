"""SLOW_OST as a rule: the single-stripe files on one OST take at least `slow_ost_ratio` × the time per byte
(median over its files) of those on the other OSTs (median of their medians), over at least
`slow_ost_min_files` files, and the slowest of them costs enough to matter for the run.

The per-OST medians do not depend on a threshold: the features keep one entry per OST (its median, the
others' median, files, slowest file time), slowest relative to the others first, so any threshold is answered
by the first entry that passes it.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from .common import COMMON_THRESHOLDS, matters
from .lustre_striping import layouts

THRESHOLDS = ("slow_ost_ratio", "slow_ost_min_files") + COMMON_THRESHOLDS
P = "slow_ost_"
MIN_BYTES = 1 << 20  # a record compared must move at least this much and take time
ENTRY = pl.Struct({"ost": pl.Int64, "ratio": pl.Float64, "seconds_per_gib": pl.Float64,
                   "typical_seconds_per_gib": pl.Float64, "files": pl.Int64, "slowest_time": pl.Float64,
                   "bytes": pl.Int64})


def records(ctx):
    """The POSIX records of single-stripe files moving at least 1 MiB and taking time, with their OST and
    seconds per GiB; None when at most 3 such records exist (too few OSTs to compare)."""
    from ..context import clip

    lay = layouts(ctx)
    p = ctx.counters("POSIX")
    if lay is None or p is None:
        return None
    # at least 4 OSTs each with a record of >= 1 MiB taking time: count such records first (same arithmetic)
    b = ctx.column("POSIX", "POSIX_BYTES_READ") + ctx.column("POSIX", "POSIX_BYTES_WRITTEN")
    t = ctx.column("POSIX", "POSIX_F_READ_TIME") + ctx.column("POSIX", "POSIX_F_WRITE_TIME")
    if int(((b >= MIN_BYTES) & (t > 0)).sum()) < 4:
        return None
    one = np.flatnonzero(lay.stripe_count == 1)
    single = pl.DataFrame({"file_id": pl.Series(lay.file_id[one], dtype=pl.UInt64),
                           "ost": pl.Series([int(lay.osts[i][0]) if len(lay.osts[i]) else None for i in one.tolist()],
                                            dtype=pl.Int64)})
    return (p.with_columns((clip("POSIX_BYTES_READ") + clip("POSIX_BYTES_WRITTEN")).alias("b"),
                           (clip("POSIX_F_READ_TIME") + clip("POSIX_F_WRITE_TIME")).alias("t"))
            .select("file_id", "rank", "b", "t").join(single, on="file_id", how="inner")
            .filter((pl.col("b") >= MIN_BYTES) & (pl.col("t") > 0) & pl.col("ost").is_not_null())
            .with_columns((pl.col("t") / (pl.col("b") / (1 << 30))).alias("s_per_gib")))


def per_ost(rec_):
    """OST -> the median seconds per GiB of its records, their count, the slowest one's time, bytes; None
    with fewer than 4 OSTs."""
    if rec_ is None or rec_.is_empty():
        return None
    per = rec_.group_by("ost").agg(pl.col("s_per_gib").median().alias("med"), pl.len().alias("files"),
                                   pl.col("t").max().alias("tmax"), pl.col("b").sum().alias("bytes"))
    return per if per.height >= 4 else None


def osts(per) -> list:
    """One entry per OST of `per_ost` (`ENTRY`), the slowest relative to the others first."""
    if per is None:
        return []
    out = []
    for ost, med, files, tmax, nbytes in per.iter_rows():
        others = per.filter(pl.col("ost") != ost)["med"].median()
        if others:
            out.append({"ost": int(ost), "ratio": med / others, "seconds_per_gib": med,
                        "typical_seconds_per_gib": others, "files": int(files), "slowest_time": tmax,
                        "bytes": int(nbytes)})
    out.sort(key=lambda e: -e["ratio"])  # stable: the diagnosis's order among equals
    return out


def features(ctx, edges=None) -> dict:
    entries = osts(per_ost(records(ctx)))
    return {P + "osts": entries or None}


def dtypes() -> dict:
    return {P + "osts": pl.List(ENTRY)}


def slow(th) -> pl.Expr:
    """The entries that pass the thresholds (slowest first)."""
    e = pl.element().struct
    return pl.col(P + "osts").list.eval(pl.element().filter(
        (e.field("files") >= th.slow_ost_min_files) & (e.field("ratio") >= th.slow_ost_ratio)))


def rule(th) -> dict:
    passing = slow(th)
    top = passing.list.first()
    tmax = top.struct.field("slowest_time")
    found = (passing.list.len() > 0) & matters(tmax, th)
    found = found.fill_null(False)
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": top.struct.field("ratio"), "top": top,
            "slow_osts": passing.list.eval(pl.element().struct.field("ost"))}


def title(v: dict, th) -> str:
    t = v["top"]
    return (f"OST {t['ost']} is {t['ratio']:.0f}× slower than the others: its {t['files']} single-stripe files take "
            f"{t['seconds_per_gib']:.0f} s/GiB against {t['typical_seconds_per_gib']:.1f} s/GiB elsewhere")
