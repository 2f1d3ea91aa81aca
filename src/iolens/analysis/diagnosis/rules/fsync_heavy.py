"""FSYNC_HEAVY as a rule: at least `fsync_min_count` fsync/fdatasync calls and at least `fsync_per_write` per
POSIX write. Both are job totals, so any threshold is answered from the stored features."""
from __future__ import annotations

import polars as pl

from ..units import fmt_count
from .common import COMMON_THRESHOLDS

THRESHOLDS = ("fsync_min_count", "fsync_per_write") + COMMON_THRESHOLDS
P = "fsync_heavy_"


def features(ctx, edges=None) -> dict:
    """The job's fsync/fdatasync calls and POSIX writes (null without POSIX counters)."""
    if not ctx.has("POSIX"):
        return {P + "syncs": None, P + "writes": None}
    return {P + "syncs": ctx.total("POSIX", "POSIX_FSYNCS", "POSIX_FDSYNCS"),
            P + "writes": ctx.total("POSIX", "POSIX_WRITES")}


def dtypes() -> dict:
    return {P + "syncs": pl.Int64, P + "writes": pl.Int64}


def rule(th) -> dict:
    syncs, writes = pl.col(P + "syncs"), pl.col(P + "writes")
    per_write = pl.max_horizontal(writes, pl.lit(1, pl.Int64))
    found = ((syncs >= th.fsync_min_count) & (syncs >= th.fsync_per_write * per_write)).fill_null(False)
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": syncs / per_write, "syncs": syncs, "writes": writes}


def title(v: dict, th) -> str:
    return f"{fmt_count(v['syncs'])} fsync calls: one per {max(v['writes'], 1) / v['syncs']:.1f} writes"
