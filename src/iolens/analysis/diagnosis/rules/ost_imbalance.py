"""OST_IMBALANCE as a rule: the job's Lustre bytes (at least `ost_min_bytes`) are uneven over its OSTs: the
heaviest OST carries at least `ost_imbalance_ratio` × the mean.

The bytes per OST come from the trace's OST lists when the trace is complete, else from each file's layout
and POSIX bytes; they do not depend on a threshold, so the features keep their total, mean and maximum.
The diagnosis drops this insight when its first three files are all among the files LUSTRE_STRIPING names
(one big single-stripe file on one OST): that depends on `lustre_large_file_bytes`, so the features keep the
smallest extent of those three files when all of them are striping candidates (null when not).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import polars as pl

from ..units import fmt_bytes
from .common import COMMON_THRESHOLDS
from .lustre_striping import candidates, file_sizes, layouts

THRESHOLDS = ("ost_imbalance_ratio", "ost_min_bytes", "lustre_large_file_bytes") + COMMON_THRESHOLDS
P = "ost_imbalance_"
NAMED = 3  # the insight's files the deduplication compares with LUSTRE_STRIPING's
LISTED = 10  # how many files an insight's evidence names (`context.MAX_FILES`)


def bytes_per_ost(ctx) -> tuple:
    """({ost: bytes}, {ost: [(bytes, file_id)]}, "dxt" or "counters")."""
    per_ost = defaultdict(float)
    files_on = defaultdict(list)
    source = "counters"
    seg = ctx.seg_posix
    if not seg.is_empty() and "osts" in seg.columns and ctx.trace_complete("DXT_POSIX"):
        s = seg.filter(pl.col("osts").is_not_null() & (pl.col("osts").list.len() > 0))
        if s.height:
            source = "dxt"
            e = (s.select("file_id", "osts", (pl.col("length") / pl.col("osts").list.len()).alias("b"))
                 .explode("osts").group_by(["osts", "file_id"]).agg(pl.col("b").sum()))
            for ost, fid, b in e.iter_rows():
                per_ost[int(ost)] += b
                files_on[int(ost)].append((b, fid))
    if source == "counters":
        _spread_by_layout(ctx, per_ost, files_on)
    return per_ost, files_on, source


def _spread_by_layout(ctx, per_ost, files_on) -> None:
    """Each file's POSIX bytes spread over its layout's OSTs by its stripes (files in id order)."""
    lay, sizes = layouts(ctx), file_sizes(ctx)
    if sizes is None:
        return
    ids, extent, nbytes, _ = sizes
    at = np.minimum(np.searchsorted(ids, lay.file_id), len(ids) - 1)
    for i in np.flatnonzero((ids[at] == lay.file_id) & (nbytes[at] > 0)).tolist():
        osts, k = lay.osts[i], int(at[i])
        if not len(osts):
            continue
        fid, nb = int(lay.file_id[i]), int(nbytes[k])
        stripes = max(1, -(-max(int(extent[k]), 1) // int(lay.stripe_size[i])))
        c = len(osts)
        share = np.full(c, stripes // c, dtype=float)
        share[: stripes % c] += 1
        share /= share.sum()
        for ost, f in zip(osts.tolist(), share):
            if f > 0:
                per_ost[ost] += nb * f
                files_on[ost].append((nb * f, fid))


def measure(ctx) -> tuple:
    """(features, {ost: bytes}, the heaviest OST's file ids heaviest first, source); (nulls, ...) without
    Lustre layouts or with fewer than two OSTs."""
    row = {P + n: None for n in ("osts", "bytes", "mean_bytes", "max_bytes", "heaviest", "posix_bytes",
                                 "from_trace", "striped_files_extent")}
    if layouts(ctx) is None:
        return row, {}, [], "counters"
    per_ost, files_on, source = bytes_per_ost(ctx)
    if len(per_ost) < 2:
        return row, per_ost, [], source
    vals = np.array(list(per_ost.values()))
    heaviest = max(per_ost, key=per_ost.get)
    fids = [f for _, f in sorted(files_on[heaviest], key=lambda x: -x[0])]
    row.update({P + "osts": len(per_ost), P + "bytes": float(vals.sum()), P + "mean_bytes": float(vals.mean()),
                P + "max_bytes": float(vals.max()), P + "heaviest": int(heaviest),
                P + "posix_bytes": ctx.total("POSIX", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"),
                P + "from_trace": source == "dxt", P + "striped_files_extent": striped_extent(ctx, fids)})
    return row, per_ost, fids, source


def striped_extent(ctx, fids):
    """The smallest extent of the insight's first `NAMED` files if LUSTRE_STRIPING would name every one of
    them once their size counts as large (single-stripe, shared, among its `LISTED` largest); else None."""
    c = candidates(ctx)
    if not fids or not len(c):
        return None
    names = [ctx.name(f) for f in fids[:LISTED]][:NAMED]
    extents = c.extent  # largest first
    # a file's place among the large files, at any limit up to its extent: the candidates strictly larger
    larger = np.searchsorted(-extents, -extents, side="left")
    listed = {}
    for fid, extent, above in zip(c.file_id.tolist(), extents.tolist(), larger.tolist()):
        if above < LISTED:
            listed.setdefault(ctx.name(fid), extent)
    if not all(n in listed for n in names):
        return None
    return int(min(listed[n] for n in names))


def features(ctx, edges=None) -> dict:
    return measure(ctx)[0]


def dtypes() -> dict:
    return {P + "osts": pl.Int64, P + "bytes": pl.Float64, P + "mean_bytes": pl.Float64,
            P + "max_bytes": pl.Float64, P + "heaviest": pl.Int64, P + "posix_bytes": pl.Int64,
            P + "from_trace": pl.Boolean, P + "striped_files_extent": pl.Int64}


def rule(th) -> dict:
    total, mean, top = pl.col(P + "bytes"), pl.col(P + "mean_bytes"), pl.col(P + "max_bytes")
    enough = pl.col(P + "from_trace") | (pl.col(P + "posix_bytes") >= 0.99 * th.ost_min_bytes)
    uneven = ((pl.col(P + "osts") >= 2) & (total >= th.ost_min_bytes) & (mean > 0)
              & (top / mean >= th.ost_imbalance_ratio))
    # LUSTRE_STRIPING names its files and says it with the fix
    striping_says_it = (pl.col(P + "striped_files_extent") >= int(th.lustre_large_file_bytes)).fill_null(False)
    found = (enough & uneven).fill_null(False) & ~striping_says_it
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": top / mean, "found_before_dedupe": (enough & uneven).fill_null(False),
            "osts": pl.col(P + "osts"), "bytes": total, "mean_bytes": mean, "max_bytes": top,
            "heaviest": pl.col(P + "heaviest")}


def title(v: dict, th) -> str:
    return (f"OST {v['heaviest']} moves {v['max_bytes'] / v['mean_bytes']:.1f}× the mean OST's bytes "
            f"({fmt_bytes(v['max_bytes'])} of {fmt_bytes(v['bytes'])} over {v['osts']} OSTs)")
