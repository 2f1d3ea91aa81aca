"""METADATA_HEAVY: opens, stats and seeks take a large share of the I/O time, or many files are tiny.

The rule: metadata time (opens, stats, seeks, ...) is at least `metadata_min_share` of the POSIX/STDIO I/O time
and the busiest rank's share of it matters for the run (info when that rank's metadata time exceeds the run
itself: overlapping threads or blocking opens); or, failing that, at least `tiny_files_min` files with data,
at least `tiny_files_min_share` of them, have an extent of at most `tiny_file_bytes`.

The time features are job totals: any share or stake threshold is answered from them. Which files are tiny
depends on `tiny_file_bytes`: the features count them at the build's limit (`metadata_heavy_tiny_limit`),
and another limit needs the log again (`stale`) for the jobs where the tiny files could decide.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ...segments import float_sum
from ..common import RUN_TIME, KiB, matters
from ..context import MAX_RANKS, clip
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..savings import upper_bound
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time

CODE = "METADATA_HEAVY"
THRESHOLDS = (
    Threshold("metadata_min_share", 0.30, "share",
              "METADATA_HEAVY: metadata time is at least this share of the POSIX/STDIO I/O time."),
    Threshold("tiny_file_bytes", 64 * KiB, "bytes", "A file whose extent is at most this size is tiny."),
    Threshold("tiny_files_min", 1000, "count", "METADATA_HEAVY: at least this many tiny files ..."),
    Threshold("tiny_files_min_share", 0.5, "share", "... that are at least this share of the files."),
)
P = "metadata_heavy_"
OVERLAP = 1.05  # a rank's metadata time beyond this share of the run: threads overlap or opens block


def times(ctx) -> tuple:
    """(metadata seconds, data seconds, metadata seconds per rank) over POSIX and STDIO, once per log."""
    return ctx.memo("metadata_heavy.times", lambda: _times(ctx))


def _times(ctx) -> tuple:
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


def features(ctx) -> dict:
    meta, data, per_rank = times(ctx)
    return {P + "meta_time": meta, P + "data_time": data, P + "max_rank_meta_time": float(per_rank.max()),
            **tiny_files(ctx)}


def measure(ctx) -> dict | None:
    """One log's features; None without POSIX/STDIO time or when the rule cannot find it (no query)."""
    row = features(ctx)
    if row[P + "meta_time"] + row[P + "data_time"] <= 0 or _cannot_find(row, ctx.th):
        return None
    return row


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


def _cannot_find(row, th) -> bool:
    """The time part is below its share or does not matter (`matters`), and too few tiny files: the rule
    cannot find it, so no query is run."""
    meta, data, tiny = (row[P + n] for n in ("meta_time", "data_time", "tiny_files"))
    worst = row[P + "max_rank_meta_time"]
    small = meta / (meta + data) < th.metadata_min_share or worst < th.min_stake_floor
    return small and (tiny is None or tiny < th.tiny_files_min)


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, judged) -> list:
    th = ctx.th
    meta, data, per_rank = times(ctx)
    counts = {"opens": 0, "stats": 0, "seeks": 0}
    files_meta = []
    for module, p in (("POSIX", "POSIX"), ("STDIO", "STDIO")):
        df = ctx.counters(module)
        if df is None:
            continue
        counts["opens"] += ctx.total(module, f"{p}_OPENS")
        counts["seeks"] += ctx.total(module, f"{p}_SEEKS")
        if module == "POSIX":
            counts["stats"] += ctx.total(module, "POSIX_STATS")
        files_meta.append(df.select("file_id", pl.Series("_m", ctx.column(module, f"{p}_F_META_TIME"))))
    out = []
    share = judged["share"]
    worst_rank = int(per_rank.argmax())
    worst = float(per_rank[worst_rank])
    if judged["by_time"]:
        fm = (pl.concat([f.group_by("file_id").agg(pl.col("_m").sum()) for f in files_meta])
              .group_by("file_id").agg(pl.col("_m").sum()).sort(["_m", "file_id"], descending=[True, False]))
        order = np.argsort(-per_rank, kind="stable")
        ranks = [int(r) for r in order[:MAX_RANKS] if per_rank[r] >= 0.5 * worst and per_rank[r] > 0]
        metrics = {"metadata_time_s": meta, "data_time_s": data, "metadata_time_share": share,
                   "max_rank_metadata_time_s": worst, "max_rank_metadata_runtime_share":
                   worst / ctx.run_time if ctx.run_time else 0, **counts}
        title_ = title(judged, th)
        severity = judged["severity"]
        summary = (f"Opens, closes, stats, seeks and syncs take {fmt_time(meta)} summed over ranks against "
                   f"{fmt_time(data)} of reads and writes ({fmt_count(counts['opens'])} opens, "
                   f"{fmt_count(counts['stats'])} stats, {fmt_count(counts['seeks'])} seeks); "
                   f"{ctx.rank_label(worst_rank)} alone spends {fmt_time(worst)}"
                   + (f" ({fmt_pct(worst / ctx.run_time)} of the run)." if ctx.run_time else "."))
        if severity == "info":
            # a serial rank cannot spend longer than the run in open/stat/seek: its threads overlap, or the
            # opens block (named pipes, sockets, locks) - not a file-system metadata cost
            summary += (" That is more than the run time itself: the rank's threads overlap or the opens block "
                        "waiting (named pipes/FIFOs, sockets, lock files), so this is not file-system metadata "
                        "cost; look at what these files are.")
        out.append(Insight(CODE, severity, title_, summary,
                           Evidence(ranks=ranks, files=ctx.names_of(fm["file_id"].to_list()), time_window=None,
                                    metrics=metrics),
                           metadata_fixes(ctx, False), source="counters", partial=False, score=judged["score"]))
    if judged["by_tiny_files"]:  # many tiny files
        f = ctx.counters("POSIX").group_by("file_id").agg(
            (pl.max_horizontal(pl.col("POSIX_MAX_BYTE_WRITTEN"), pl.col("POSIX_MAX_BYTE_READ")).max() + 1)
            .clip(lower_bound=0).alias("extent"),
            (clip("POSIX_BYTES_READ") + clip("POSIX_BYTES_WRITTEN")).sum().alias("bytes"))
        f = f.filter(pl.col("bytes") > 0)
        tiny = f.filter(pl.col("extent") <= th.tiny_file_bytes)
        metrics = {"tiny_files": tiny.height, "files_with_data": f.height,
                   "tiny_file_share": tiny.height / f.height, "tiny_file_bytes": int(tiny["bytes"].sum()),
                   "tiny_file_limit_bytes": int(th.tiny_file_bytes)}
        if out:
            out[0].evidence.metrics.update(metrics)
            out[0].summary += (f" Also, {fmt_count(tiny.height)} of the {fmt_count(f.height)} files with data "
                               f"are at most {fmt_bytes(th.tiny_file_bytes)}.")
            out[0].recommendations = metadata_fixes(ctx, True)
        else:
            out.append(Insight(
                CODE, judged["severity"], title(judged, th),
                f"The job reads or writes {fmt_count(tiny.height)} files of at most "
                f"{fmt_bytes(th.tiny_file_bytes)} ({fmt_bytes(tiny['bytes'].sum())} in all): every one costs "
                "metadata-server operations (create/open/close) that dwarf the data moved.",
                Evidence(ranks=[], files=ctx.names_of(tiny["file_id"].to_list()), time_window=None,
                         metrics=metrics),
                metadata_fixes(ctx, True), source="counters", partial=False, score=judged["score"]))
    return out


def metadata_fixes(ctx, many_tiny_files: bool) -> list:
    """The fixes, worded for the layers the log shows (`ctx.layers`)."""
    recs = [Recommendation(
        "Open files once and keep them open",
        "Repeated open/close/stat of the same files costs a metadata-server round trip each time. Open once, "
        "reuse the descriptor, and avoid stat()/access() probes (e.g. in loops or from every rank).", "", "text")]
    if many_tiny_files:
        # the libraries that write one shared file, among those the program already calls
        libraries = [name for layer, name in (("mpiio", "MPI-IO"), ("hdf5", "HDF5"), ("netcdf", "NetCDF"))
                     if ctx.has_layer(layer)]
        recs.append(Recommendation(
            "Pack many tiny files into fewer, larger ones",
            "Thousands of tiny files are bound by the metadata server, not bandwidth: write one shared file "
            + (f"({', '.join(libraries)}) " if libraries else "")
            + f"or an archive per node instead of a file per {'rank' if ctx.has_layer('mpi') else 'process'} per "
            "step.", "", "text"))
    recs.append(Recommendation(
        "Let one rank do shared metadata work",
        "When every rank opens or stats the same file, do it on rank 0 and broadcast the result"
        + (", or open the file collectively with MPI_File_open." if ctx.has_layer("mpiio") else "."),
        "struct stat st;\nint rc = 0;\nif (rank == 0) rc = stat(path, &st);\n"
        "MPI_Bcast(&rc, 1, MPI_INT, 0, comm);\nMPI_Bcast(&st, sizeof st, MPI_BYTE, 0, comm);", "c", needs=("mpi",)))
    return recs


FINDING = Finding(
    code=CODE,
    meaning="Opens, stats and seeks take a large share of the I/O time, or many files are tiny.",
    key_metrics=("metadata_time_share", "tiny_files"),
    thresholds=THRESHOLDS,
    trigger="POSIX+STDIO metadata time (open, close, stat, seek, sync) is at least `metadata_min_share` of their "
            "I/O time and matters for the busiest rank (info when a rank's metadata time exceeds the run time: "
            "overlapping threads or blocking opens of pipes, not file-system cost); or at least `tiny_files_min` "
            "files with data, and `tiny_files_min_share` of them, are at most `tiny_file_bytes`.",
    source="counters",
    report=report,
    saving=upper_bound("max_rank_metadata_time_s"),
    saving_rule=lambda th: {None: pl.col(P + "max_rank_meta_time")},  # an upper bound
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title, stale=stale,
)
