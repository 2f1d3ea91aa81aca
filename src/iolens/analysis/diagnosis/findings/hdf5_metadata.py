"""HDF5_METADATA: HDF5 metadata operations take a large share of the HDF5 time or of the requests.

The rule: HDF5's metadata operations take at least `hdf5_meta_min_share` of its time and the average rank's
share matters for the run; or the POSIX writes to HDF5 files of at most `hdf5_meta_request_bytes` (metadata
blocks) are at least `small_min_ops` and `hdf5_meta_min_share` of those writes, and the busiest rank's time in
them matters.

The times are job totals. Which writes are small depends on `hdf5_meta_request_bytes`: from the counters the
features keep them, and the busiest rank's estimated time in them, per size-bin edge (any limit is answered
by the edge at or below it, as the diagnosis rounds it); from a complete trace they are counted at the
build's limit (`hdf5_metadata_trace_limit`), and another limit needs the trace again (`stale`).
"""
from __future__ import annotations

import functools
import re

import numpy as np
import polars as pl

from ....model.darshan import SIZE_BINS
from ...segments import float_sum, is_in
from ..common import EDGE_NAMES, KiB, MiB, counter_stake, edge_index, edge_names, edge_suffix, matters
from ..context import HDF5_SUFFIXES, MAX_RANKS
from .. import fixes
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..stages import stage
from ..savings import upper_bound
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time
from . import _advice as advice
from ._lustre import lustre_records
from ._ranks import heaviest_ranks
from ._requests import rank_stake

CODE = "HDF5_METADATA"
THRESHOLDS = (
    Threshold("hdf5_meta_min_share", 0.5, "share",
              "HDF5_METADATA: metadata time (H5F/H5D open, close, flush) is at least this share of the HDF5 "
              "time, or small metadata-sized writes are at least this share of the POSIX writes to HDF5 files."),
    Threshold("hdf5_meta_request_bytes", 4 * KiB, "bytes",
              "POSIX writes to an HDF5 file of at most this size are counted as metadata writes."),
)
P = "hdf5_metadata_"
ALL_EDGES = range(1, len(EDGE_NAMES) + 1)  # 100 B .. 1 GiB and every bin: a limit never falls past them


def hdf5_files(ctx) -> list:
    """The data files `Context.file_kind` calls 'hdf5' (in H5F, in H5D, or named so), in the same order; once
    per log."""
    return ctx.memo("hdf5_files", lambda: _hdf5_files(ctx))


def _hdf5_files(ctx) -> list:
    h5 = ctx.ids_in("H5F") | ctx.ids_in("H5D", "file_rec_id") | named_hdf5(ctx.names)
    if not h5:
        return []
    return [f for f in set(ctx.names) if f in h5 and ctx.is_data(f)]


def named_hdf5(names: dict) -> set:
    """The ids of the names with an HDF5 suffix (`context.HDF5_SUFFIXES`, any case): most logs name none, which
    one search of the names joined tells (a test of each name in Python costs 0.3 ms on two thousand)."""
    joined = "\n".join(names.values()).lower() + "\n"  # each name lowered, then its end
    if not _hdf5_ending(HDF5_SUFFIXES).search(joined):
        return set()
    return {f for f, name in names.items() if name.lower().endswith(HDF5_SUFFIXES)}


@functools.cache
def _hdf5_ending(suffixes: tuple) -> re.Pattern:
    """A name's end with one of `suffixes`, in names joined by newlines."""
    return re.compile("(?:" + "|".join(re.escape(s) for s in suffixes) + ")\n")


def times(ctx) -> dict:
    """HDF5's metadata and data seconds (H5F, H5D), its flushes, and the metadata seconds per rank."""
    meta_t = data_t = 0.0
    flushes = 0
    if ctx.has("H5F"):
        meta_t += float(float_sum(ctx.column("H5F", "H5F_F_META_TIME")) or 0)
        flushes += ctx.total("H5F", "H5F_FLUSHES")
    if ctx.has("H5D"):
        meta_t += float(float_sum(ctx.column("H5D", "H5D_F_META_TIME")) or 0)
        data_t += float(float_sum(ctx.column("H5D", "H5D_F_READ_TIME") + ctx.column("H5D", "H5D_F_WRITE_TIME")) or 0)
        flushes += ctx.total("H5D", "H5D_FLUSHES")
    # the flushes' syncs priced (fixes.sync_less): what flushing less saves here
    sync = fixes.sync_less(ctx).seconds if flushes else None
    return {P + "meta_time": meta_t, P + "data_time": data_t, P + "meta_time_per_rank": meta_t / ctx.nprocs,
            P + "flushes": flushes, P + "sync_saving": sync}


def small_writes(ctx, fids, edges) -> dict:
    """The POSIX writes to the HDF5 files `fids`, and the small ones with the busiest rank's time in them:
    from a complete trace at `hdf5_meta_request_bytes`, else from the counters per size-bin edge."""
    row = {P + "writes": None, P + "from_trace": False, P + "trace_limit": None, P + "trace_small_writes": None,
           P + "trace_stake": None}
    row.update(dict.fromkeys(edge_names(P + "small_writes", tuple(edges))))
    row.update(dict.fromkeys(edge_names(P + "counter_stake", tuple(edges))))
    if not fids:  # no HDF5 file: the trace is not even looked at
        return row
    if not ctx.trace_posix.empty and ctx.trace_complete("DXT_POSIX", "write"):
        row.update(_traced_writes(ctx, fids))
    elif ctx.has("POSIX"):
        row.update(_counted_writes(ctx, fids, edges))
    return row


def _traced_writes(ctx, fids) -> dict:
    limit = int(ctx.th.hdf5_meta_request_bytes)
    seg = ctx.trace_posix
    writes = seg.is_op("write") & is_in(seg.file_id, np.asarray(fids, dtype=np.uint64))
    small = np.flatnonzero(writes & (seg.length <= limit))
    return {P + "writes": int(writes.sum()), P + "from_trace": True, P + "trace_limit": limit,
            P + "trace_small_writes": len(small),
            P + "trace_stake": rank_stake(seg.rank[small], seg.duration[small]) if len(small) else 0.0}


def _counted_writes(ctx, fids, edges) -> dict:
    """The writes to `fids` and, per edge, those in the size bins below it with the busiest rank's estimated
    time in them (its write time × their share of its writes), from the counters (numpy: the same integer
    sums and per-record products as a query)."""
    mine = np.isin(ctx.column("POSIX", "file_id"), np.asarray(fids, dtype=np.uint64))
    total = int(ctx.column("POSIX", "POSIX_WRITES")[mine].sum())
    row = {P + "writes": total}
    rank, wtime = ctx.column("POSIX", "rank")[mine], ctx.column("POSIX", "POSIX_F_WRITE_TIME")[mine]
    stakes = {}  # small writes -> stake: edges without writes between them share it
    running = 0
    for k in range(1, max(edges, default=0) + 1):
        running += int(ctx.column("POSIX", f"POSIX_SIZE_WRITE_{SIZE_BINS[k - 1][0]}")[mine].sum())
        if k not in edges:
            continue
        row[f"{P}small_writes_{edge_suffix(k)}"] = running
        if total:
            if running not in stakes:
                est = wtime * (running / total)
                stakes[running] = counter_stake(ctx, rank, np.where(np.isnan(est), 0.0, est))
            row[f"{P}counter_stake_{edge_suffix(k)}"] = stakes[running]
    return row


def features(ctx, edges=None) -> dict:
    """HDF5_METADATA's features of one log; `edges`: the size-bin edges to keep (None: every one)."""
    edges = list(ALL_EDGES) if edges is None else [k for k in edges if k > 0]
    return {**times(ctx), **small_writes(ctx, hdf5_files(ctx), edges)}


def measure(ctx) -> dict | None:
    """One log's features at the edge of its `hdf5_meta_request_bytes`; None without HDF5, or when neither
    part can matter (the rule cannot find it: no query)."""
    fids = hdf5_files(ctx)
    if not ctx.has("H5F") and not ctx.has("H5D") and not fids:
        return None
    k = edge_index(int(ctx.th.hdf5_meta_request_bytes))
    row = {**times(ctx), **small_writes(ctx, fids, [k] if k else [])}
    return None if _unimportant(row, ctx.th, k) else row


def dtypes() -> dict:
    out = {P + "meta_time": pl.Float64, P + "data_time": pl.Float64, P + "meta_time_per_rank": pl.Float64,
           P + "flushes": pl.Int64, P + "sync_saving": pl.Float64, P + "writes": pl.Int64, P + "from_trace": pl.Boolean,
           P + "trace_limit": pl.Int64, P + "trace_small_writes": pl.Int64, P + "trace_stake": pl.Float64}
    for k in ALL_EDGES:
        out[f"{P}small_writes_{edge_suffix(k)}"] = pl.Int64
        out[f"{P}counter_stake_{edge_suffix(k)}"] = pl.Float64
    return out


def rule(th) -> dict:
    k = edge_index(int(th.hdf5_meta_request_bytes))
    meta, data, per_rank = pl.col(P + "meta_time"), pl.col(P + "data_time"), pl.col(P + "meta_time_per_rank")
    share = meta / (meta + data)
    timed = (meta + data) > 0
    by_time = (timed & (share >= th.hdf5_meta_min_share) & matters(per_rank, th)).fill_null(False)
    trace = pl.col(P + "from_trace")
    counted = pl.col(f"{P}small_writes_{edge_suffix(k)}") if k else pl.lit(0, pl.Int64)
    counted_stake = pl.col(f"{P}counter_stake_{edge_suffix(k)}") if k else pl.lit(0.0)
    small = pl.when(trace).then(pl.col(P + "trace_small_writes")).otherwise(counted)
    stake = pl.when(trace).then(pl.col(P + "trace_stake")).otherwise(counted_stake)
    writes = pl.col(P + "writes")
    small_share = small / writes
    by_writes = ((writes > 0) & (small >= th.small_min_ops) & (small_share >= th.hdf5_meta_min_share)
                 & matters(stake, th)).fill_null(False)
    found = by_time | by_writes
    score = pl.max_horizontal(pl.lit(0.0), pl.when(by_time).then(share), pl.when(by_writes).then(small_share))
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": score, "by_time": by_time, "by_writes": by_writes,
            "time_share": pl.when(timed).then(share), "small_writes": small, "writes": writes, "stake": stake}


def title(v: dict, th) -> str:
    share = v["time_share"]
    if share is not None and share >= th.hdf5_meta_min_share:
        return f"HDF5 metadata dominates: metadata operations take {fmt_pct(share)} of the HDF5 time"
    return f"HDF5 metadata dominates: {fmt_count(v['small_writes'])} small metadata writes"


def stale(th) -> pl.Expr:
    """Jobs whose small HDF5 writes were counted from the trace at another `hdf5_meta_request_bytes`."""
    at = pl.col(P + "trace_limit")
    return (pl.col(P + "from_trace") & at.is_not_null() & (at != int(th.hdf5_meta_request_bytes))
            & (pl.col(P + "writes") > 0)).fill_null(False)


def _unimportant(row, th, k) -> bool:
    """Neither of the rule's parts can matter (`matters` fails on the time per rank, and on the small writes'
    stake or there are no writes): the rule would not find it, so no query is run."""
    if row[P + "meta_time_per_rank"] >= th.min_stake_floor:
        return False
    if not row[P + "writes"]:
        return True
    stake = row[P + "trace_stake"] if row[P + "from_trace"] else row[f"{P}counter_stake_{edge_suffix(k)}"] if k else 0.0
    return stake is not None and stake < th.min_stake_floor


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, judged) -> list:
    th = ctx.th
    fids = hdf5_files(ctx)
    limit = int(th.hdf5_meta_request_bytes)
    meta_t, data_t, flushes = judged[P + "meta_time"], judged[P + "data_time"], judged[P + "flushes"]
    per_rank_meta = judged[P + "meta_time_per_rank"]
    metrics, reasons = {}, []
    if meta_t + data_t > 0:
        share = judged["time_share"]
        metrics.update({"hdf5_metadata_time_s": meta_t, "hdf5_data_time_s": data_t, "metadata_time_share": share,
                        "metadata_time_per_rank_s": per_rank_meta, "flushes": flushes})
        if judged["by_time"]:
            reasons.append(f"HDF5 spends {fmt_pct(share)} of its time in metadata operations (file and dataset "
                           f"open/create/close/flush: {fmt_time(per_rank_meta)} per rank on average, "
                           f"{fmt_pct(per_rank_meta / ctx.run_time) if ctx.run_time else '?'} of the run) "
                           f"against {fmt_time(data_t / ctx.nprocs)} per rank reading and writing data")

    # small writes at the POSIX layer of HDF5 files: metadata blocks (superblock, object headers, B-trees, heaps)
    ranks, window, source = [], None, "counters"
    small, total = judged["small_writes"], judged["writes"]
    if judged[P + "from_trace"] and small:
        seg = ctx.trace_posix
        sm = seg.take(seg.is_op("write") & (seg.length <= limit) & np.isin(seg.file_id, np.asarray(fids, np.uint64)))
        ranks = heaviest_ranks(sm.rank, np.ones(len(sm), dtype=np.int64))[:MAX_RANKS]  # the most writes first
        window = ctx.trace_window(sm)
        source = "dxt"
    if total:
        metrics.update({"small_metadata_writes": small, "posix_writes_to_hdf5": total})
        metrics["busiest_rank_metadata_write_time_s"] = judged["stake"]
        if judged["by_writes"]:
            reasons.append(f"{fmt_count(small)} of the {fmt_count(total)} POSIX writes to HDF5 files "
                           f"({fmt_pct(small / total)}) are at most {fmt_bytes(limit)}: metadata writes")
    title_ = title(judged, th)
    summary = "; ".join(reasons) + "."
    if flushes:
        summary += f" The application flushed {fmt_count(flushes)} times."
    recs = [advice.hdf5_collective_metadata(), *hdf5_metadata_cache()]
    lus_file, _, stripe_size, _, _ = lustre_records(ctx.log)  # every layout component, no table built
    on = np.isin(lus_file, np.asarray(fids, dtype=np.uint64))
    if on.any():
        recs.append(advice.hdf5_alignment(int(stripe_size[on].max())))
    h5f = ctx.has("H5F")
    if window is None:
        window = ctx.counter_window("H5F", None, ops=("OPEN", "CLOSE")) if h5f else None
    h5files = fids or (ctx.file_groups("H5F")[0].tolist() if h5f else [])
    return [Insight(CODE, judged["severity"], title_, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(h5files), time_window=window, metrics=metrics),
                    recs, source=source, partial=False, score=judged["score"])]


def hdf5_metadata_cache(meta_block: int = 4 * MiB) -> list:
    return [
        Recommendation(
            "HDF5: larger metadata blocks and deferred metadata flushes",
            "Aggregate metadata into bigger blocks and keep the metadata cache from evicting (writing) entries "
            "during the run; everything is written once at H5Fclose. Avoid H5Fflush in the time loop.",
            "H5Pset_meta_block_size(fapl, " + f"{meta_block}" + ");\n"
            "H5AC_cache_config_t mdc;\n"
            "mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;\n"
            "H5Pget_mdc_config(fapl, &mdc);\n"
            "mdc.set_initial_size = 1;\n"
            "mdc.initial_size = 16 * 1024 * 1024;\n"
            "mdc.max_size = 64 * 1024 * 1024;\n"
            "mdc.evictions_enabled = 0;             /* no metadata writes until close */\n"
            "mdc.incr_mode = H5C_incr__off;          /* required when evictions are off */\n"
            "mdc.flash_incr_mode = H5C_flash_incr__off;\n"
            "mdc.decr_mode = H5C_decr__off;\n"
            "H5Pset_mdc_config(fapl, &mdc);", "c",
            try_now=advice.try_with(f"hdf5.meta_block_size={advice.knob_size(meta_block)}", "hdf5.mdc_flush=deferred"),
            needs=("hdf5",), fix="sync_less"),
    ]


FINDING = Finding(
    code=CODE,
    meaning="HDF5 metadata operations take a large share of the HDF5 time or of the requests.",
    key_metrics=("metadata_time_share", "small_metadata_writes"),
    thresholds=THRESHOLDS,
    reads=("small_min_ops",),
    trigger="HDF5 metadata time (H5F/H5D open, create, close, flush) is at least `hdf5_meta_min_share` of the "
            "HDF5 time and matters per rank; or POSIX writes of at most `hdf5_meta_request_bytes` are at least "
            "that share of the writes to HDF5 files (and at least `small_min_ops`).",
    source="counters / dxt",
    report=report,
    saving=upper_bound("busiest_rank_metadata_write_time_s"),
    # the small metadata writes' time (an upper bound), or what flushing less saves when the application flushes
    saving_rule=lambda th: {None: pl.max_horizontal(pl.when(pl.col(P + "writes") > 0).then(stage(CODE, "stake")),
                                                    pl.col(P + "sync_saving"))},
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title, stale=stale,
)
