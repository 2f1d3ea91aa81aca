"""OST_IMBALANCE as a rule: the job's Lustre bytes (at least `ost_min_bytes`) are uneven over its OSTs: the
heaviest OST carries at least `ost_imbalance_ratio` × the mean.

The bytes per OST come from the trace's OST lists when the trace is complete, else from each file's layout
and POSIX bytes; they do not depend on a threshold, so the features keep their total, mean and maximum.
The diagnosis drops this insight when its first three files are all among the files LUSTRE_STRIPING names
(one big single-stripe file on one OST): that depends on `lustre_large_file_bytes`, so the features keep the
smallest extent of those three files when all of them are striping candidates (null when not).
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ....model.log import reader_arrays
from ....model.osts import layouts as osts_layouts, segment_osts
from ...segments import group_sums, groups
from ..units import fmt_bytes
from .common import COMMON_THRESHOLDS
from .lustre_striping import candidates, file_sizes, layouts

THRESHOLDS = ("ost_imbalance_ratio", "ost_min_bytes", "lustre_large_file_bytes") + COMMON_THRESHOLDS
P = "ost_imbalance_"
NAMED = 3  # the insight's files the deduplication compares with LUSTRE_STRIPING's
LISTED = 10  # how many files an insight's evidence names (`context.MAX_FILES`)


def bytes_per_ost(ctx) -> tuple:
    """({ost: bytes} in the order the OSTs are met, (OST, file id, bytes) of every file's share of an OST as
    numpy arrays, "dxt" or "counters")."""
    if ctx.trace_complete("DXT_POSIX"):
        shares = _traced_shares(ctx)
        if shares is not None:
            return _sum_per_ost(*shares), shares, "dxt"
    shares = _spread_by_layout(ctx)
    return _sum_per_ost(*shares), shares, "counters"


def _traced_shares(ctx):
    """(OST, file id, bytes) per OST and file from the traced POSIX operations on Lustre files (each operation's
    bytes split evenly over the OSTs it touches; per-group sums of `group_sums`), or None when
    none touches an OST."""
    osts = _trace_osts(ctx)
    if osts is None:
        return None
    count, flat = osts
    if not len(flat):
        return None
    seg = ctx.trace_posix
    on = count > 0
    fid = np.repeat(seg.file_id[on], count[on])
    share = np.repeat(seg.length[on] / count[on], count[on])
    first, inv = groups(flat, fid)
    return flat[first], fid[first], group_sums(inv, share, len(first))


def _trace_osts(ctx):
    """(how many OSTs each traced POSIX operation touches, their ids one after the other), or None without
    OSTs: a Darshan log's from the reader's arrays (`model.osts`, as the segments table lists them), else the
    table's `osts` column."""
    raw = reader_arrays(ctx.log)
    if raw is None:
        seg = ctx.seg_posix
        if "osts" not in seg.columns:
            return None
        lists = seg["osts"]
    else:
        lay, recs = osts_layouts(raw.lustre), raw.dxt.get("DXT_POSIX")
        if lay is None or recs is None or not len(recs.ids):
            return None
        lists = segment_osts(lay, lay.file_index(recs.ids), recs.write_counts + recs.read_counts,
                             recs.column("offset"), recs.column("length"))
        if lists is None:
            return None
    return lists.list.len().fill_null(0).to_numpy().astype(np.int64), lists.explode().drop_nulls().to_numpy()


def _sum_per_ost(ost, fid, share) -> dict:
    """{ost: its shares summed one after the other, in their order}, OSTs in the order first met."""
    if not len(ost):
        return {}
    first, inv = groups(ost)  # np.unique's (first occurrence, inverse) from one stable sort, without its set-up
    ids = ost[first]
    sums = np.zeros(len(ids))
    np.add.at(sums, inv, share)  # unbuffered: each OST's shares added in their order
    met = np.argsort(first, kind="stable")
    return dict(zip(ids[met].tolist(), sums[met]))


def _spread_by_layout(ctx) -> tuple:
    """(OST, file id, bytes) arrays: each file's POSIX bytes spread over its layout's OSTs by its stripes
    (files in id order, each file's OSTs in layout order, shares of 0 left out)."""
    lay, sizes = layouts(ctx), file_sizes(ctx)
    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64), np.zeros(0))
    if sizes is None:
        return none
    ids, extent, nbytes, _ = sizes
    at = np.minimum(np.searchsorted(ids, lay.file_id), len(ids) - 1)
    c = lay.osts.count
    on = np.flatnonzero((ids[at] == lay.file_id) & (nbytes[at] > 0) & (c > 0))
    if not len(on):
        return none
    k, c = at[on], c[on]
    stripes = np.maximum(1, -(-np.maximum(extent[k], 1) // lay.stripe_size[on]))
    j = np.arange(c.sum()) - np.repeat(np.cumsum(c) - c, c)  # each OST's place in its file's layout
    per = np.repeat(stripes // c, c) + (j < np.repeat(stripes % c, c))  # stripes on it
    share = np.repeat(nbytes[k].astype(float), c) * (per / np.repeat(stripes.astype(float), c))
    ost = lay.osts.flat[np.repeat(lay.osts.start[on], c) + j].astype(np.int64)  # each file's, in layout order
    fid = np.repeat(lay.file_id[on], c)
    keep = per > 0
    return ost[keep], fid[keep], share[keep]


def measure(ctx) -> tuple:
    """(features, {ost: bytes}, the heaviest OST's file ids heaviest first, source); (nulls, ...) without
    Lustre layouts or with fewer than two OSTs."""
    row = {P + n: None for n in ("osts", "bytes", "mean_bytes", "max_bytes", "heaviest", "posix_bytes",
                                 "from_trace", "striped_files_extent")}
    if layouts(ctx) is None:
        return row, {}, [], "counters"
    per_ost, (ost, fid, share), source = bytes_per_ost(ctx)
    if len(per_ost) < 2:
        return row, per_ost, [], source
    vals = np.array(list(per_ost.values()))
    heaviest = max(per_ost, key=per_ost.get)
    on = np.flatnonzero(ost == heaviest)
    fids = fid[on[np.argsort(-share[on], kind="stable")]].tolist()
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
