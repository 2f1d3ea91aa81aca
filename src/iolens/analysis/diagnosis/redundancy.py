"""REDUNDANT_READS / REDUNDANT_WRITES: bytes moved far exceed the extent of the files (re-reads, rewrites)."""
from __future__ import annotations

import numpy as np
import polars as pl

from . import recommendations as rec
from .context import MAX_RANKS, clip
from .insight import Evidence, Insight
from .costmodel import project
from .requests import counter_stake
from .units import fmt_bytes, fmt_pct, fmt_time


def _dxt_coverage(seg: pl.DataFrame, rows: pl.Series | None = None) -> pl.DataFrame:
    """file_id -> bytes moved and the size of the union of the byte ranges touched (exact overlap), over the
    operations of `seg` (those where `rows` is true, if given: a mask costs less than a filtered copy)."""
    keep = (seg["offset"] >= 0) & (seg["length"] > 0)
    keep = (keep & rows if rows is not None else keep).to_numpy()
    if not keep.any():
        return pl.DataFrame(schema={"file_id": pl.UInt64, "bytes": pl.Int64, "extent": pl.Int64})
    fid = seg["file_id"].to_numpy()[keep]
    files = pl.Series(np.unique(fid), dtype=pl.UInt64)  # sorted
    codes = np.searchsorted(files.to_numpy(), fid)
    a = seg["offset"].to_numpy()[keep]
    b = a + seg["length"].to_numpy()[keep]
    nfiles = len(files)
    span = int(b.max()) + 1
    out_bytes = np.bincount(codes, weights=(b - a).astype(np.float64), minlength=nfiles)
    if span * nfiles < (1 << 62):
        # one pass over all files: shift each file into its own range so a running max never crosses files
        shift = codes.astype(np.int64) * span
        a2 = a + shift
        order = np.argsort(a2)  # one int64 key (file, offset): several times faster than a two-key sort
        a2, b2, c2 = a2[order], (b + shift)[order], codes[order]
        prev = np.maximum.accumulate(b2)
        starts = np.ones(len(a2), dtype=bool)
        starts[1:] = a2[1:] > prev[:-1]
        g_start = a2[starts]
        g_end = np.maximum.reduceat(b2, np.flatnonzero(starts))
        g_file = c2[starts]
        union = np.bincount(g_file, weights=(g_end - g_start).astype(np.float64), minlength=nfiles)
    else:  # pragma: no cover - offsets near 2^62 with many files
        union = np.zeros(nfiles)
        for k in range(nfiles):
            m = codes == k
            aa, bb = a[m], b[m]
            o = np.argsort(aa, kind="stable")
            aa, bb = aa[o], bb[o]
            prev = np.maximum.accumulate(bb)
            st = np.ones(len(aa), dtype=bool)
            st[1:] = aa[1:] > prev[:-1]
            union[k] = float((np.maximum.reduceat(bb, np.flatnonzero(st)) - aa[st]).sum())
    return pl.DataFrame({"file_id": files, "bytes": out_bytes.astype(np.int64), "extent": union.astype(np.int64)})


def _any_redundant(ctx, ids, moved, extent) -> bool:
    """Is any data file's ratio of bytes moved over extent at least `redundant_ratio` (the filter below, in
    numpy: the same integer division)? Most logs have none: they skip the per-file table."""
    keep = (extent > 0) & ~np.isin(ids, np.fromiter(ctx.std_ids, dtype=np.uint64))
    return bool((moved[keep] / extent[keep] >= ctx.th.redundant_ratio).any())


def check(ctx) -> list:
    th = ctx.th
    out = []
    p = ctx.counters("POSIX")
    for op, B in (("write", "WRITTEN"), ("read", "READ")):
        code = "REDUNDANT_WRITES" if op == "write" else "REDUNDANT_READS"
        source, partial = "counters", False
        if ctx.trace_complete("DXT_POSIX", op):
            rows = ctx.seg_posix["op"] == op
            if not rows.any():
                continue
            table = _dxt_coverage(ctx.seg_posix, rows)
            source = "dxt"
            if not _any_redundant(ctx, table["file_id"].to_numpy(), table["bytes"].to_numpy(),
                                  table["extent"].to_numpy()):
                continue
        elif p is not None:
            # per file in integers: bytes moved, highest offset touched + 1
            ids, _ = ctx.file_groups("POSIX")
            moved_, extent_ = ctx.per_file_total("POSIX", f"POSIX_BYTES_{B}"), \
                np.maximum(ctx.per_file_max("POSIX", f"POSIX_MAX_BYTE_{B}") + 1, 0)
            if not _any_redundant(ctx, ids, moved_, extent_):
                continue  # the usual case, decided without building a table
            table = pl.DataFrame({"file_id": pl.Series(ids, dtype=pl.UInt64), "bytes": moved_, "extent": extent_})
        else:
            continue
        table = table.filter((pl.col("extent") > 0) & pl.col("file_id").is_in(
            pl.Series(sorted(ctx.std_ids), dtype=pl.UInt64).implode()).not_())
        table = table.with_columns((pl.col("bytes") / pl.col("extent")).alias("ratio"),
                                   (pl.col("bytes") - pl.col("extent")).alias("excess"))
        bad = table.filter(pl.col("ratio") >= th.redundant_ratio).sort("excess", descending=True)
        if bad.is_empty():
            continue
        excess, moved, extent = int(bad["excess"].sum()), int(bad["bytes"].sum()), int(bad["extent"].sum())
        if excess < th.redundant_min_bytes:
            continue
        fids = bad["file_id"].to_list()
        ratio = moved / extent
        stake = 0.0
        if source == "dxt":
            frac = dict(zip(bad["file_id"].to_list(), (bad["excess"] / bad["bytes"]).to_list()))
            s_ = (ctx.seg_posix.filter((pl.col("op") == op) & pl.col("file_id").is_in(pl.Series(fids, dtype=pl.UInt64).implode()))
                  .with_columns(pl.col("file_id").replace_strict(frac, default=0.0, return_dtype=pl.Float64).alias("frac")))
            stake = float(s_.group_by("rank").agg(((pl.col("end") - pl.col("start")) * pl.col("frac")).sum().alias("t"))
                          ["t"].max() or 0.0)
        elif p is not None:
            # time of the repeated bytes: each file's op time in proportion to its excess bytes
            ex = bad.select("file_id", (pl.col("excess") / pl.col("bytes")).alias("frac"))
            recs_ = p.join(ex, on="file_id", how="inner")
            OP = "WRITE" if op == "write" else "READ"
            stake = counter_stake(ctx, recs_, clip(f"POSIX_F_{OP}_TIME") * pl.col("frac"))
        metrics = {f"bytes_{'written' if op == 'write' else 'read'}": moved, "extent_bytes": extent,
                   "excess_bytes": excess, "ratio": ratio, "files": len(fids)}
        ranks, window = [], None
        if not ctx.seg_posix.is_empty():
            s = ctx.seg_posix.filter((pl.col("op") == op) & pl.col("file_id").is_in(pl.Series(fids, dtype=pl.UInt64).implode()))
            if not s.is_empty():
                window = ctx.seg_window(s)
                ranks = (s.group_by("rank").agg(pl.col("length").sum()).sort(["length", "rank"], descending=[True, False])["rank"]
                         .head(MAX_RANKS).to_list())
                partial = source == "dxt" and not ctx.trace_complete("DXT_POSIX", op)
        if window is None:
            window = ctx.counter_window("POSIX", fids, ops=("WRITE",) if op == "write" else ("READ",))
        verb = "written" if op == "write" else "read"
        title = (f"{'Rewrites' if op == 'write' else 'Re-reads'}: {fmt_bytes(moved)} {verb} for "
                 f"{fmt_bytes(extent)} of file extent ({ratio:.1f}×)")
        how = ("the union of the byte ranges actually touched (from the trace)" if source == "dxt" else
               "the highest offset touched (from the counters; a lower bound on the redundancy when files "
               "are sparse)")
        summary = (f"On {len(fids)} file(s), the bytes {verb} at the POSIX layer are {ratio:.1f}× {how}: "
                   f"{fmt_bytes(excess)} ({fmt_pct(excess / moved)}) move more than once.")
        if op == "write":
            kinds = ctx.kinds(fids[:20])
            recs = []
            if kinds & {"netcdf", "pnetcdf"} or not kinds & {"hdf5"}:
                recs.append(rec.netcdf_no_fill())
            if "hdf5" in kinds or not kinds & {"netcdf", "pnetcdf"}:
                recs.append(rec.hdf5_no_fill())
            if not kinds & {"hdf5", "netcdf", "pnetcdf"}:
                recs[0].detail = "If a NetCDF library writes fill values first: " + recs[0].detail
                recs[-1].detail = "If HDF5 pre-fills datasets: " + recs[-1].detail
            recs.append(rec.Recommendation(
                "Write each region once", "Rewriting the same bytes (fill then data, repeated checkpoints into "
                "the same region, header rewrites) doubles the traffic; compute the final content before "
                "writing it.", "", "text"))
        else:
            recs = [rec.read_once_broadcast(), rec.Recommendation(
                "Keep data you read again in memory",
                "If the same data is read repeatedly by the same rank (e.g. every epoch or time step), cache it "
                "in memory or on node-local storage after the first read.", "", "text")]
        metrics["busiest_rank_redundant_time_s"] = stake
        severity, strong = "warning", False
        if source == "dxt" or p is not None:
            severity, strong = ctx.judge(stake, excess / moved)
        if severity == "info":
            summary += f" The repeated traffic costs the busiest rank about {fmt_time(stake)}: not worth fixing for this run."
        summary += " " + project(ctx, metrics, stake, nbytes=excess, op=op)
        out.append(Insight(code, severity, title, summary,
                           Evidence(ranks=ranks, files=ctx.names_of(fids), time_window=window, metrics=metrics),
                           recs, source=source, partial=partial, score=ratio, demotable=not strong))
    return out
