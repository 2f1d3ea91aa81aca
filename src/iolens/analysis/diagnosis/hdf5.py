"""HDF5_METADATA: HDF5 spends its time (or its requests) on metadata rather than on data."""
from __future__ import annotations

import polars as pl

from . import recommendations as rec
from .context import MAX_RANKS, SIZE_BINS, clip
from .insight import Evidence, Insight
from .requests import counter_stake, dxt_stake
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_time


def check(ctx) -> list:
    th = ctx.th
    h5f, h5d = ctx.counters("H5F"), ctx.counters("H5D")
    hdf5_files = [f for f in set(ctx.names) if ctx.is_data(f) and ctx.file_kind(f) == "hdf5"]
    if h5f is None and h5d is None and not hdf5_files:
        return []
    metrics, reasons, score = {}, [], 0.0
    meta_t = data_t = 0.0
    flushes = 0
    if h5f is not None:
        meta_t += float(h5f.select(clip("H5F_F_META_TIME").sum()).item() or 0)
        flushes += int(h5f.select(clip("H5F_FLUSHES").sum()).item() or 0)
    if h5d is not None:
        meta_t += float(h5d.select(clip("H5D_F_META_TIME").sum()).item() or 0)
        data_t += float(h5d.select((clip("H5D_F_READ_TIME") + clip("H5D_F_WRITE_TIME")).sum()).item() or 0)
        flushes += int(h5d.select(clip("H5D_FLUSHES").sum()).item() or 0)
    per_rank_meta = meta_t / ctx.nprocs
    if meta_t + data_t > 0:
        share = meta_t / (meta_t + data_t)
        metrics.update({"hdf5_metadata_time_s": meta_t, "hdf5_data_time_s": data_t, "metadata_time_share": share,
                        "metadata_time_per_rank_s": per_rank_meta, "flushes": flushes})
        if share >= th.hdf5_meta_min_share and ctx.matters(per_rank_meta):
            reasons.append(f"HDF5 spends {fmt_pct(share)} of its time in metadata operations (file and dataset "
                           f"open/create/close/flush: {fmt_time(per_rank_meta)} per rank on average, "
                           f"{fmt_pct(per_rank_meta / ctx.run_time) if ctx.run_time else '?'} of the run) "
                           f"against {fmt_time(data_t / ctx.nprocs)} per rank reading and writing data")
            score = max(score, share)

    # small writes at the POSIX layer of HDF5 files: metadata blocks (superblock, object headers, B-trees, heaps)
    ranks, window, source = [], None, "counters"
    fids = hdf5_files
    limit = int(th.hdf5_meta_request_bytes)
    seg = ctx.seg_posix
    small = total = 0
    if fids and not seg.is_empty() and ctx.trace_complete("DXT_POSIX", "write"):
        s = seg.filter((pl.col("op") == "write") & pl.col("file_id").is_in(pl.Series(fids, dtype=pl.UInt64).implode()))
        total = s.height
        sm = s.filter(pl.col("length") <= limit)
        small = sm.height
        if small:
            ranks = (sm.group_by("rank").agg(pl.len().alias("n")).sort(["n", "rank"], descending=[True, False])["rank"]
                     .head(MAX_RANKS).to_list())
            window = ctx.seg_window(sm)
            source = "dxt"
    elif fids and ctx.counters("POSIX") is not None:
        bins = [b for b, _, hi in SIZE_BINS if hi <= limit]
        p = ctx.counters("POSIX").filter(pl.col("file_id").is_in(pl.Series(fids, dtype=pl.UInt64).implode()))
        total = int(p.select(clip("POSIX_WRITES").sum()).item() or 0)
        small = int(p.select(pl.sum_horizontal([clip(f"POSIX_SIZE_WRITE_{b}") for b in bins]).sum()).item() or 0) \
            if bins else 0
    if total:
        metrics.update({"small_metadata_writes": small, "posix_writes_to_hdf5": total})
        if source == "dxt":
            stake = dxt_stake(sm)
        elif ctx.counters("POSIX") is not None and total:
            p = ctx.counters("POSIX").filter(pl.col("file_id").is_in(pl.Series(fids, dtype=pl.UInt64).implode()))
            stake = counter_stake(ctx, p, clip("POSIX_F_WRITE_TIME") * (small / total))
        else:
            stake = 0.0
        metrics["busiest_rank_metadata_write_time_s"] = stake
        if small >= th.small_min_ops and small / total >= th.hdf5_meta_min_share and ctx.matters(stake):
            reasons.append(f"{fmt_count(small)} of the {fmt_count(total)} POSIX writes to HDF5 files "
                           f"({fmt_pct(small / total)}) are at most {fmt_bytes(limit)}: metadata writes")
            score = max(score, small / total)
    if not reasons:
        return []
    title = "HDF5 metadata dominates: " + ("metadata operations take " + fmt_pct(metrics["metadata_time_share"])
                                         + " of the HDF5 time" if "metadata_time_share" in metrics and
                                         metrics["metadata_time_share"] >= th.hdf5_meta_min_share else
                                         f"{fmt_count(small)} small metadata writes")
    summary = "; ".join(reasons) + "."
    if flushes:
        summary += f" The application flushed {fmt_count(flushes)} times."
    recs = [rec.hdf5_collective_metadata(), *rec.hdf5_metadata_cache()]
    lus = ctx.log.lustre
    if not lus.is_empty():
        s = lus.filter(pl.col("file_id").is_in(pl.Series(fids, dtype=pl.UInt64).implode()))
        if s.height:
            recs.append(rec.hdf5_alignment(int(s["stripe_size"].max())))
    if window is None:
        window = ctx.counter_window("H5F", None, ops=("OPEN", "CLOSE")) if h5f is not None else None
    h5files = fids or ([] if h5f is None else h5f["file_id"].unique().to_list())
    return [Insight("HDF5_METADATA", "warning", title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(h5files), time_window=window, metrics=metrics),
                    recs, source=source, partial=False, score=score)]
