"""FSYNC_HEAVY: the application forces data to disk (fsync) very often.

The rule: at least `fsync_min_count` fsync/fdatasync calls and at least `fsync_per_write` per POSIX write. Both
are job totals, so any threshold is answered from the stored features.
"""
from __future__ import annotations

import polars as pl

from .. import fixes
from ..context import clip
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight
from ..units import fmt_count, plural
from . import _advice as advice

CODE = "FSYNC_HEAVY"
THRESHOLDS = (
    Threshold("fsync_min_count", 100, "count", "FSYNC_HEAVY: at least this many fsync/fdatasync calls ..."),
    Threshold("fsync_per_write", 0.1, "ratio", "... and at least this many per write."),
)
P = "fsync_heavy_"


def features(ctx) -> dict:
    """The job's fsync/fdatasync calls and POSIX writes (null without POSIX counters)."""
    if not ctx.has("POSIX"):
        return {P + "syncs": None, P + "writes": None, P + "saving": None}
    syncs = ctx.total("POSIX", "POSIX_FSYNCS", "POSIX_FDSYNCS")
    return {P + "syncs": syncs, P + "writes": ctx.total("POSIX", "POSIX_WRITES"),
            P + "saving": fixes.sync_less(ctx).seconds if syncs else None}  # syncing less, priced


def measure(ctx) -> dict | None:
    """One log's features; None without POSIX counters or with too few syncs (no query)."""
    if not ctx.has("POSIX"):
        return None
    row = features(ctx)
    return row if row[P + "syncs"] >= ctx.th.fsync_min_count else None


def dtypes() -> dict:
    return {P + "syncs": pl.Int64, P + "writes": pl.Int64, P + "saving": pl.Float64}


def rule(th) -> dict:
    syncs, writes = pl.col(P + "syncs"), pl.col(P + "writes")
    per_write = pl.max_horizontal(writes, pl.lit(1, pl.Int64))
    found = ((syncs >= th.fsync_min_count) & (syncs >= th.fsync_per_write * per_write)).fill_null(False)
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": syncs / per_write, "syncs": syncs, "writes": writes}


def title(v: dict, th) -> str:
    return f"{fmt_count(v['syncs'])} fsync calls: one per {max(v['writes'], 1) / v['syncs']:.1f} writes"


def report(ctx, v) -> list:
    syncs, writes = v["syncs"], v["writes"]
    per = ctx.counters("POSIX").group_by("file_id").agg((clip("POSIX_FSYNCS") + clip("POSIX_FDSYNCS")).sum().alias("syncs"))
    fids = per.filter(pl.col("syncs") > 0).sort(["syncs", "file_id"], descending=[True, False])["file_id"].to_list()
    mpi_syncs = 0
    if ctx.has("MPI-IO"):
        mpi_syncs = ctx.total("MPI-IO", "MPIIO_SYNCS")
    metrics = {"fsyncs": syncs, "writes": writes, "fsyncs_per_write": syncs / max(writes, 1),
               "mpiio_syncs": mpi_syncs, "files": len(fids)}
    summary = (f"The application forces data to stable storage {fmt_count(syncs)} times for {fmt_count(writes)} "
               f"writes on {plural(len(fids), 'file')}; each fsync waits for the storage servers and its time is "
               "counted "
               "as write time.")
    return [Insight(CODE, v["severity"], title(v, ctx.th), summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=None, metrics=metrics),
                    [advice.fewer_fsync(ctx.has_layer("mpiio"))], source="counters", partial=False, score=v["score"])]


FINDING = Finding(
    code=CODE,
    meaning="The application forces data to disk (fsync) very often.",
    key_metrics=("fsyncs",),
    thresholds=THRESHOLDS,
    trigger="at least `fsync_min_count` fsync/fdatasync calls and at least `fsync_per_write` per write.",
    source="counters",
    report=report,
    saving_rule=lambda th: {None: pl.col(P + "saving")},
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title,
)
