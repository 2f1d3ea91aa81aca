"""HDF5_METADATA: HDF5 spends its time (or its requests) on metadata rather than on data."""
from __future__ import annotations

import numpy as np

from . import recommendations as rec
from .context import MAX_RANKS
from .redundancy import heaviest_ranks
from .rules.lustre_striping import lustre_records
from .insight import Evidence, Insight
from .rules import hdf5_metadata, one_row
from .rules.common import common_features, edge_index, edge_suffix
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_time


def _unimportant(row, th, k) -> bool:
    """Neither of the rule's parts can matter (`matters` fails on the time per rank, and on the small writes'
    stake or there are no writes): the rule would not find it, so no query is run."""
    P = hdf5_metadata.P
    if row[P + "meta_time_per_rank"] >= th.min_stake_floor:
        return False
    if not row[P + "writes"]:
        return True
    stake = row[P + "trace_stake"] if row[P + "from_trace"] else row[f"{P}counter_stake_{edge_suffix(k)}"] if k else 0.0
    return stake is not None and stake < th.min_stake_floor


def check(ctx) -> list:
    # the rule decides (rules/hdf5_metadata.py, shared with the fleet)
    th = ctx.th
    fids = hdf5_metadata.hdf5_files(ctx)
    if not ctx.has("H5F") and not ctx.has("H5D") and not fids:  # no HDF5: nothing to judge
        return []
    limit = int(th.hdf5_meta_request_bytes)
    row = {**hdf5_metadata.times(ctx), **hdf5_metadata.small_writes(ctx, fids, [k for k in (edge_index(limit),) if k])}
    if _unimportant(row, th, edge_index(limit)):
        return []
    judged = one_row({**common_features(ctx), **row}, hdf5_metadata.rule(th))
    if judged["severity"] is None:
        return []
    P = hdf5_metadata.P
    meta_t, data_t, flushes = row[P + "meta_time"], row[P + "data_time"], row[P + "flushes"]
    per_rank_meta = row[P + "meta_time_per_rank"]
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
    if row[P + "from_trace"] and small:
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
    title = hdf5_metadata.title(judged, th)
    summary = "; ".join(reasons) + "."
    if flushes:
        summary += f" The application flushed {fmt_count(flushes)} times."
    recs = [rec.hdf5_collective_metadata(), *rec.hdf5_metadata_cache()]
    lus_file, _, stripe_size, _, _ = lustre_records(ctx.log)  # every layout component, no table built
    on = np.isin(lus_file, np.asarray(fids, dtype=np.uint64))
    if on.any():
        recs.append(rec.hdf5_alignment(int(stripe_size[on].max())))
    h5f = ctx.has("H5F")
    if window is None:
        window = ctx.counter_window("H5F", None, ops=("OPEN", "CLOSE")) if h5f else None
    h5files = fids or (ctx.file_groups("H5F")[0].tolist() if h5f else [])
    return [Insight("HDF5_METADATA", judged["severity"], title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(h5files), time_window=window, metrics=metrics),
                    recs, source=source, partial=False, score=judged["score"])]
