"""SERIALIZED_IO: one rank does I/O alone while the other ranks wait.

Judged per log from the trace: the ranks' operations merged into busy intervals (gaps shorter than
`serialized_gap` bridged), the rank doing I/O alone the longest, for at least `serialized_min_share` of the
I/O window and a time that matters. It supersedes RANK_IMBALANCE's spread when that one's heaviest rank is the
one doing I/O alone: "rank 0 does most of the I/O" said more precisely.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ...measures import busy_runs, group_runs
from ...segments import MODULE_CODES, group_sums, groups, is_in, time_order
from ....model.darshan import DXT_MODULES
from ..common import least_mattering
from ..finding import Finding, Supersedes, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..savings import Saving
from ..stages import stage
from ..units import fmt_bytes, fmt_pct, fmt_time, plural
from . import _advice as advice
from ._ranks import files_by_bytes

CODE = "SERIALIZED_IO"
THRESHOLDS = (
    Threshold("serialized_min_share", 0.5, "share",
              "SERIALIZED_IO: one rank is the only rank doing I/O for at least this share of the I/O window."),
    Threshold("serialized_gap", 0.01, "seconds",
              "Gaps shorter than this between one rank's operations count as busy (SERIALIZED_IO)."),
)
SPREAD = "rank_imbalance_"  # the relation's columns, as a fleet store keeps them


def alone_time(intervals: pl.DataFrame) -> pl.DataFrame:
    """Per rank: the time during which it is the only rank busy, plus the first/last moment of that (columns
    rank, alone, first, last: `alone_spans` of the table's columns)."""
    rank, alone, first, last = alone_spans(*(intervals[c].to_numpy() for c in ("rank", "start", "end")))
    return pl.DataFrame({"rank": rank, "alone": alone, "first": first, "last": last})


def alone_spans(rank: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple:
    """Over busy intervals (`measures.group_runs`): (ranks, in order; the time each is the only rank busy;
    the first and last moment of that), for the ranks ever alone."""
    # the ends first, so that one stable sort by time puts them before the starts at the same time (within a
    # tie only the last event has a duration): np.lexsort((d, t)) of the starts then the ends
    t = np.concatenate([end, start])
    d = np.concatenate([np.full(len(end), -1, dtype=np.int64), np.ones(len(start), dtype=np.int64)])
    r = np.concatenate([-rank, rank]).astype(np.int64)
    order = time_order(t)
    t, active, who = t[order], np.cumsum(d[order]), np.cumsum(r[order])
    dt = np.append(t[1:] - t[:-1], 0.0)
    one = (active == 1) & (dt > 0)
    who, t, dt = who[one], t[one], dt[one]
    first, inv = groups(who)
    alone = group_sums(inv, dt, len(first))  # over the events in time order
    lo, hi = np.full(len(first), np.inf), np.full(len(first), -np.inf)
    np.minimum.at(lo, inv, t)
    np.maximum.at(hi, inv, t + dt)
    return who[first], alone, lo, hi


def serial_alone(ctx) -> dict | None:
    """The rank doing I/O alone the longest (ranks' operations merged into busy intervals, gaps shorter
    than `serialized_gap` bridged): {seg (the trace off the standard streams, `Segments`), rank, secs, first,
    last, window}; None without such a time."""
    return ctx.memo(("serial_alone", ctx.th.serialized_gap), lambda: _serial_alone(ctx))


def _serial_alone(ctx):
    if ctx.nprocs < 2 or ctx.trace.empty:
        return None
    seg = ctx.trace
    if ctx.std_ids:  # (a log naming no standard stream needs no test)
        std = is_in(seg.file_id, np.fromiter(ctx.std_ids, dtype=np.uint64))
        if std.any():
            seg = seg.take(~std)
    if seg.empty:
        return None
    rank, start, end = group_runs(seg.rank, seg.start, seg.end, ctx.th.serialized_gap)
    window = float(end.max()) - float(start.min())
    if window <= 0:
        return None
    ranks, alone, first, last = alone_spans(rank, start, end)
    if not len(ranks):
        return None
    i = int(np.argmax(alone))  # the longest; among equal times the lowest rank
    return {"seg": seg, "rank": int(ranks[i]), "secs": float(alone[i]), "first": float(first[i]),
            "last": float(last[i]), "window": window}


# --- the insight ---------------------------------------------------------------------------------------
def busy_intervals(seg: pl.DataFrame, gap: float) -> pl.DataFrame:
    """Per rank, its operations merged into busy intervals (gaps shorter than `gap` bridged)."""
    return busy_runs(seg, "rank", gap)


def report(ctx, _=None) -> list:
    th = ctx.th
    alone = serial_alone(ctx)
    if alone is None:
        return []
    seg, rank, secs, first, last, window = (alone[k] for k in ("seg", "rank", "secs", "first", "last", "window"))
    share = secs / window
    if share < th.serialized_min_share or not ctx.matters(secs):
        return []
    ranks, at = np.unique(seg.rank, return_inverse=True)
    ranks_io = len(ranks)
    starts = np.full(len(ranks), np.inf)
    np.minimum.at(starts, at, seg.start)
    later = int(((ranks != rank) & (starts >= first)).sum())  # the other ranks whose I/O starts after
    mine = seg.take((seg.rank == rank) & (seg.start < last) & (seg.end > first))
    mpiio = mine.module == MODULE_CODES["DXT_MPIIO"]
    app = mine.take(mpiio) if mpiio.any() else mine  # the application's layer where it was traced
    nbytes = int(app.length.sum())
    files = files_by_bytes(app)
    kinds = ctx.kinds(files)
    total_bytes = int(ctx.trace_app.length.sum())
    metrics = {"serial_share": share, "serial_time_s": secs, "io_window_s": window, "serial_rank": rank,
               "bytes_while_alone": nbytes, "bytes_share_while_alone": nbytes / total_bytes if total_bytes else 0,
               "ranks_with_io": ranks_io, "ranks_starting_after": later, "job_ranks": ctx.nprocs}
    title = (f"Serialized I/O: {ctx.rank_label(rank)} does I/O alone for {fmt_pct(share)} of the I/O window "
             f"({fmt_time(secs)})")
    summary = (f"From {first:.2f} s to {last:.2f} s only {ctx.rank_label(rank)} is doing I/O ({fmt_bytes(nbytes)} on "
               f"{plural(len(files), 'file')}); {plural(later, 'other rank')} start{'s' if later == 1 else ''} "
               f"{'its' if later == 1 else 'their'} I/O only after that, so {'it' if later == 1 else 'they'} most "
               f"likely wait{'s' if later == 1 else ''} for it.")
    recs = []
    if "netcdf" in kinds or "pnetcdf" in kinds:
        recs.append(advice.netcdf_no_fill())
    if "hdf5" in kinds:
        recs.append(advice.hdf5_no_fill())
    if not recs:
        recs.append(advice.netcdf_no_fill())
        recs.append(advice.hdf5_no_fill())
        recs[0].detail = "If this is a NetCDF file being pre-filled by one rank: " + recs[0].detail
        recs[1].detail = "If this is an HDF5 dataset being pre-filled: " + recs[1].detail
    recs.append(parallel_write(ctx.has_layer("mpiio"), "rank" if ctx.has_layer("mpi") else "process"))
    partial = any(ctx.trace_truncated(m) for m in DXT_MODULES)
    return [Insight(CODE, "critical" if share >= 0.8 else "warning", title, summary,
                    Evidence(ranks=[rank], files=ctx.names_of(files), time_window=(first, last), metrics=metrics),
                    recs, source="dxt", partial=partial, score=share)]


def parallel_write(mpiio: bool = True, who: str = "rank") -> Recommendation:
    """Every rank writes its part: collectively with MPI-IO (`mpiio`: the program calls it), else at its offset
    (`who`: 'rank', or 'process' for processes without MPI)."""
    if not mpiio:
        return Recommendation(
            f"Write in parallel instead of through one {who}",
            f"Let each {who} write its own part of the file at its own offset instead of funnelling the data "
            f"through one {who}.",
            f"/* each {who} writes its block */\n"
            f"off_t off = (off_t){'rank' if who == 'rank' else 'index'} * block_bytes;\n"
            "pwrite(fd, block, block_bytes, off);", "c")
    return Recommendation(
        "Write in parallel instead of through one rank",
        "Let each rank write its own part of the file (collectively) instead of funnelling the data through "
        "one rank.",
        "/* each rank writes its block; all ranks call it */\n"
        "MPI_Offset off = (MPI_Offset)rank * block_bytes;\n"
        "MPI_File_write_at_all(fh, off, block, block_bytes, MPI_BYTE, MPI_STATUS_IGNORE);", "c", needs=("mpiio",))


def _saving(ctx, insight):
    """Every rank writing its part, the time one rank works alone shrinks to its 1/N share."""
    m = insight.evidence.metrics
    if "serial_time_s" not in m:
        return None
    t = float(m["serial_time_s"]) * (1 - 1 / ctx.nprocs)
    return t, (f"the time one rank does I/O alone ({fmt_time(float(m['serial_time_s']))}) less its "
               f"1/{ctx.nprocs} share once every rank writes its part")


# --- RANK_IMBALANCE's spread restates it --------------------------------------------------------------
def names_the_spread_rank(th) -> pl.Expr:
    """SERIALIZED_IO is found on the rank RANK_IMBALANCE's spread names as the heaviest."""
    least = least_mattering(th)
    found = (pl.col(SPREAD + "serial_share") >= th.serialized_min_share) & (pl.col(SPREAD + "serial_time") >= least)
    return found & (pl.col(SPREAD + "serial_rank") == stage("RANK_IMBALANCE", "top_ranks").list.first())


def serial_features(ctx) -> dict:
    """The rank doing I/O alone the longest, its time and share of the window, and the `serialized_gap` they
    were computed at (nulls with one rank, or without a trace)."""
    row = dict.fromkeys(serial_dtypes())
    if ctx.nprocs < 2:
        return row
    serial = serial_alone(ctx)
    if serial is not None:
        row.update({SPREAD + "serial_rank": serial["rank"], SPREAD + "serial_time": serial["secs"],
                    SPREAD + "serial_share": serial["secs"] / serial["window"]})
    if not ctx.trace.empty:
        row[SPREAD + "serial_gap"] = float(ctx.th.serialized_gap)
    return row


def serial_dtypes() -> dict:
    return {SPREAD + "serial_rank": pl.Int64, SPREAD + "serial_time": pl.Float64, SPREAD + "serial_share": pl.Float64,
            SPREAD + "serial_gap": pl.Float64}


def serial_stale(th) -> pl.Expr:
    """Jobs whose spread SERIALIZED_IO might restate at another `serialized_gap` than the build's (its busy
    intervals come from the trace: a rebuild answers)."""
    at = pl.col(SPREAD + "serial_gap")
    found = stage("RANK_IMBALANCE", "found_before_dedupe")  # evaluated after the rule
    return (at.is_not_null() & (at != float(th.serialized_gap)) & found).fill_null(False)


FINDING = Finding(
    code=CODE,
    meaning="One rank does I/O alone while the other ranks wait.",
    key_metrics=("serial_share",),
    thresholds=THRESHOLDS,
    trigger="(DXT) one rank is the only rank doing I/O for at least `serialized_min_share` of the I/O window "
            "(gaps shorter than `serialized_gap` between its operations count as busy); **critical** from 80%. "
            "Names the rank, the window, and how many ranks start only afterwards.",
    source="dxt",
    report=report,
    saving=Saving(_saving, "the time one rank does I/O alone, less its 1/ranks share"),
    supersedes=(Supersedes("RANK_IMBALANCE", part="spread", when=names_the_spread_rank, features=serial_features,
                           dtypes=serial_dtypes, stale=serial_stale,
                           reads=("serialized_gap", "serialized_min_share")),),
)
