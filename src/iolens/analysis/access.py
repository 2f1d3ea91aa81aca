"""Access patterns: how each rank walks through each file, per layer.

    from iolens.analysis.access import file_patterns
    file_patterns(iolens.read("job.darshan"))   # one row per file × layer

Each rank's requests on a file are taken in time order (per operation kind); every request after the first
is a *transition* from the previous one:

* consecutive: it starts where the previous one ended;
* forward gap: it starts after that (a stride when the gap repeats);
* backward: it starts before (Darshan's "non-sequential").

The pattern of a file at one layer, from these shares (`classify`):

| pattern | rule |
|---|---|
| `consecutive` | at least 80% of the transitions are consecutive (or one request per rank) |
| `rank-interleaved` | mostly forward and the ranks' byte ranges overlap (the sum of the ranks' spans is ≥ 1.5× the file's span): the ranks' blocks alternate (with a dominant stride or blocks of varying size) |
| `strided` | mostly forward with a dominant stride |
| `sequential` | mostly forward (≥ 80%), gaps with no dominant stride, the ranks' ranges apart |
| `random` | otherwise: backward jumps (≥ 20%) and no dominant stride |

From counters only (no DXT), Darshan's POSIX_CONSEC_*, POSIX_SEQ_* and POSIX_STRIDE1_COUNT give the same
shares (summed over ranks, so `rank-interleaved` cannot be told from `strided` there).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from .layers import recorded
from ..model.darshan import DXT_MODULES
from .segments import (Segments, groups, log_segments, per_group_at, rows_by_group, run_heads,
                       sort_groups)

PATTERNS = ("consecutive", "sequential", "strided", "rank-interleaved", "random")
CONSECUTIVE_SHARE = 0.8
FORWARD_SHARE = 0.8
STRIDE_SHARE = 0.5
BACKWARD_SHARE = 0.2
INTERLEAVED_OVERLAP = 1.5
LAYER_OF = {"DXT_POSIX": "posix", "DXT_MPIIO": "mpiio", "POSIX": "posix"}

SCHEMA = {"file_id": pl.UInt64, "layer": pl.Utf8, "pattern": pl.Utf8, "requests": pl.Int64, "ranks": pl.Int64,
          "consecutive_share": pl.Float64, "forward_gap_share": pl.Float64, "backward_share": pl.Float64,
          "dominant_stride_bytes": pl.Int64, "dominant_stride_share": pl.Float64,
          "median_request_bytes": pl.Float64, "rank_overlap": pl.Float64, "source": pl.Utf8}


@dataclass(frozen=True)
class Transitions:
    """Every request after each rank's first on a file (per group of keys and operation kind), in time order
    within each (keys, rank, op): `rows` indexes the segments, with the previous request's offset and end."""
    rows: np.ndarray
    prev_off: np.ndarray
    prev_end: np.ndarray


def transitions(seg: Segments, by=()) -> Transitions:
    """The transitions of `seg`, grouped by the key arrays `by` (one per segment; the file id is always
    a key), then rank and operation kind; requests without an offset left out."""
    keys = (seg.file_id, *by, seg.rank, seg.op)
    if (seg.offset >= 0).all():  # every request has an offset: the columns as they are
        order, new = sort_groups(keys, seg.start)  # by the keys in turn, then start; ties stable
    else:
        valid = np.flatnonzero(seg.offset >= 0)
        order, new = sort_groups(tuple(k[valid] for k in keys), seg.start[valid])
        order = valid[order]
    after = np.flatnonzero(~new)  # positions (in time order) that follow one of their own group
    prev = order[after - 1]
    return Transitions(order[after], seg.offset[prev], seg.offset[prev] + seg.length[prev])


def segment_shares(seg: Segments, by: tuple, trans: Transitions) -> dict:
    """Per group of the key arrays `by` (the first being the file id; groups in sorted key order): `keys`
    (the first row of each group), requests, ranks, the shares of consecutive / forward-gap / backward
    transitions, the dominant stride (the most common offset difference of non-consecutive transitions; the
    smallest of the most common) and how far the ranks' byte ranges overlap. Every value an integer or an
    integer ratio: the same in any order."""
    valid = np.flatnonzero(seg.offset >= 0)
    every = len(valid) == len(seg)  # (most traces: the columns as they are, no copies)

    def rows(column):
        return column if every else column[valid]
    first, g = groups(*(rows(k) for k in by))
    n = len(first)
    off, length, rank = rows(seg.offset), rows(seg.length), rows(seg.rank)
    end = off + length
    requests = np.bincount(g, minlength=n)
    # ranks, and each rank's span: the sum of the ranks' spans over the file's span
    rfirst, rg = groups(g, rank)
    owner = g[rfirst]
    ranks = np.bincount(owner, minlength=n)
    r_hi, r_lo = _group_max(rg, end, len(rfirst)), _group_min(rg, off, len(rfirst))
    span = r_hi - r_lo
    spans = np.bincount(owner, weights=span, minlength=n) if span.sum() < (1 << 53) else _int_sums(owner, span, n)
    extent = _group_max(owner, r_hi, n) - _group_min(owner, r_lo, n)  # the ranks' extremes are the group's
    # transitions: the group of each transition's row, and how it moves on from the previous request
    tg, t_off, at, (back, consec, gap, tn) = _moves(seg, valid, g, n, trans)
    jump = ~at
    stride, k = _dominant(tg[jump], (t_off - trans.prev_off)[jump], n)
    return {"first": valid[first], "requests": requests, "ranks": ranks,
            "median_request_bytes": _group_median(g, length, n, requests),
            "rank_overlap": spans / np.maximum(extent, 1), **_move_shares(back, consec, gap, tn),
            "dominant_stride_bytes": stride, "dominant_stride_share": k / np.maximum(tn - consec, 1),
            "stride_known": k > 0}


def _moves(seg: Segments, valid: np.ndarray, g: np.ndarray, n: int, trans: Transitions) -> tuple:
    """(each transition's group, its offset, whether it is consecutive, (backward, consecutive, forward-gap
    and all transitions per group)) of the groups `g` of the requests with an offset (`valid`)."""
    if len(valid) == len(seg):
        tg = g[trans.rows]
    else:
        row_group = np.full(len(seg), -1, dtype=np.int64)
        row_group[valid] = g
        tg = row_group[trans.rows]
    t_off = seg.offset[trans.rows]
    ahead = t_off > trans.prev_end
    at = t_off == trans.prev_end
    moves = np.bincount(tg * 3 + (ahead * 2 + at), minlength=3 * n).reshape(n, 3)  # backward, consecutive, gap
    back, consec, gap = moves[:, 0], moves[:, 1], moves[:, 2]
    return tg, t_off, at, (back, consec, gap, back + consec + gap)


def _move_shares(back, consec, gap, tn) -> dict:
    return {"consecutive_share": np.where(tn > 0, consec / np.maximum(tn, 1), 1.0),
            "forward_gap_share": gap / np.maximum(tn, 1), "backward_share": back / np.maximum(tn, 1)}


def random_groups(seg: Segments, by: tuple, trans: Transitions) -> tuple:
    """(the first row of each group of `segment_shares`, whether `classify` calls the group "random"), from
    the transitions' shares alone: what a check needing only the random groups reads, without the medians,
    strides and rank spans of the other patterns."""
    valid = np.flatnonzero(seg.offset >= 0)
    every = len(valid) == len(seg)
    first, g = groups(*(k if every else k[valid] for k in by))
    return valid[first], is_random(_move_shares(*_moves(seg, valid, g, len(first), trans)[3]))


def is_random(v: dict) -> np.ndarray:
    """`classify(v) == "random"` from three shares: `classify`'s first true condition is its last (backward
    at least BACKWARD_SHARE, which rules out its strided case before it) only when the requests are neither
    consecutive nor mostly forward, whatever the strides and the ranks' overlap."""
    consec, back = v["consecutive_share"], v["backward_share"]
    return (~(consec >= CONSECUTIVE_SHARE) & ~(consec + v["forward_gap_share"] >= FORWARD_SHARE)
            & (back >= BACKWARD_SHARE))


def _group_max(g, values, n):
    out = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    per_group_at(np.maximum, out, g, values)
    return out


def _group_min(g, values, n):
    out = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    per_group_at(np.minimum, out, g, values)
    return out


def _int_sums(g, values, n):
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, g, values)
    return out


def _group_median(g, values, n, counts) -> np.ndarray:
    """Median per group (`counts` values each; the mean of the two middle values of an even count), as a
    float."""
    start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    lo, hi = start + (counts - 1) // 2, start + counts // 2
    ok = counts > 0
    heads = run_heads(g) if n <= PARTITION_GROUPS else None
    if heads is not None:  # a few groups, in runs (a trace's files): each partitioned
        v = _middle_by_partition(values[rows_by_group(g, heads)], start[ok], lo[ok], hi[ok])
    else:
        sorted_values = _sorted_in_groups(g, values, n).astype(np.float64)
        v = sorted_values[lo[ok]], sorted_values[hi[ok]]
    out = np.full(n, np.nan)
    out[ok] = (v[0] + v[1]) / 2
    return out


PARTITION_GROUPS = 32  # up to this many groups, each group's middle values are found by partitioning it


def _middle_by_partition(v, start, lo, hi) -> tuple:
    """The values at positions `lo` and `hi` of the values sorted by group, then value, as floats, from the
    values group after group (`v`; each group from `start`): picked by np.partition (no sort)."""
    out = np.empty((2, len(start)))
    for k, (a, i, j) in enumerate(zip(start.tolist(), lo.tolist(), hi.tolist())):
        part = np.partition(v[a:i + j - a + 1], (i - a, j - a))  # the group: lo - start + hi - start + 1 values
        out[:, k] = part[i - a], part[j - a]
    return out[0], out[1]


def _sorted_in_groups(g, values, n) -> np.ndarray:
    """The integer `values` sorted by group (0 .. n-1), then value: one sort of a single int64 key when
    the groups' value ranges fit in one (only the values are read: no stable order needed)."""
    if not len(values):
        return values
    lo, span = int(values.min()), int(values.max()) - int(values.min()) + 1
    if n * span >= (1 << 63):
        return values[np.lexsort((values, g))]
    return np.sort(g * span + (values - lo)) % span + lo


def _dominant(g, stride, n) -> tuple:
    """Per group: (the most common stride, null-able as a masked float array -> object; how often it occurs)."""
    out = np.full(n, None, dtype=object)
    count = np.zeros(n, dtype=np.int64)
    if not len(g):
        return out, count
    first, sg = groups(g, stride)
    k = np.bincount(sg, minlength=len(first))
    owner, value = g[first], stride[first]
    best = np.lexsort((value, -k, owner))  # per group: most common first, then the smallest stride
    lead = np.concatenate(([True], owner[best][1:] != owner[best][:-1]))
    pick = best[lead]
    out[owner[pick]] = value[pick].tolist()
    count[owner[pick]] = k[pick]
    return out, count


def classify(v: dict) -> np.ndarray:
    """The pattern name of each group (see the module's table) from numpy columns: consecutive_share,
    forward_gap_share, backward_share, dominant_stride_share, `stride_known` (a dominant stride exists),
    ranks and rank_overlap (NaN: unknown)."""
    consec, back = v["consecutive_share"], v["backward_share"]
    forward = consec + v["forward_gap_share"]
    has_stride = (v["dominant_stride_share"] >= STRIDE_SHARE) & v["stride_known"]
    with np.errstate(invalid="ignore"):
        interleaved = (v["ranks"] > 1) & (v["rank_overlap"] >= INTERLEAVED_OVERLAP)
    fwd = forward >= FORWARD_SHARE
    # the ranks' blocks alternate: interleaved whether or not the blocks have one size (records of 1-4 KiB
    # from 2 ranks have no dominant stride, yet are not "sequential")
    return np.select([consec >= CONSECUTIVE_SHARE, fwd & interleaved, fwd & has_stride, fwd,
                      has_stride & (back < BACKWARD_SHARE), back >= BACKWARD_SHARE],
                     ["consecutive", "rank-interleaved", "strided", "sequential", "strided", "random"],
                     "sequential").astype(object)


def classify_segments(seg: Segments, by: tuple, trans: Transitions | None = None) -> dict:
    """`segment_shares` plus the pattern name (`pattern`) of each group."""
    v = segment_shares(seg, by, transitions(seg, by[1:]) if trans is None else trans)
    v["pattern"] = classify(v)
    return v


def _from_counters(log) -> pl.DataFrame:
    df = log.counters.get("POSIX")
    if df is None or df.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    n = (recorded("POSIX_READS") + recorded("POSIX_WRITES")).sum()
    per = df.group_by("file_id").agg(
        n.alias("requests"), pl.len().alias("_records"),
        pl.when((pl.col("rank") < 0).any()).then(pl.lit(None, dtype=pl.Int64))
        .otherwise(pl.col("rank").n_unique()).alias("ranks"),
        (recorded("POSIX_CONSEC_READS") + recorded("POSIX_CONSEC_WRITES")).sum().alias("_consec"),
        (recorded("POSIX_SEQ_READS") + recorded("POSIX_SEQ_WRITES")).sum().alias("_seq"),
        recorded("POSIX_STRIDE1_COUNT").sum().alias("_k"),
        pl.col("POSIX_STRIDE1_STRIDE").max().alias("dominant_stride_bytes"),
        ((recorded("POSIX_BYTES_READ") + recorded("POSIX_BYTES_WRITTEN")).sum() / pl.max_horizontal(n, pl.lit(1)))
        .cast(pl.Float64).alias("median_request_bytes"),
        pl.lit(None, dtype=pl.Float64).alias("rank_overlap"),
    ).filter(pl.col("requests") > 0)
    # transitions: every request after a record's first (Darshan counts none for the first)
    r = pl.max_horizontal(pl.col("requests") - pl.col("_records"), pl.lit(1))
    none = pl.col("requests") <= pl.col("_records")
    per = per.with_columns(
        pl.when(none).then(1.0).otherwise((pl.col("_consec") / r).clip(0, 1)).alias("consecutive_share"),
        pl.when(none).then(0.0).otherwise(((pl.col("_seq") - pl.col("_consec")) / r).clip(0, 1)).alias("forward_gap_share"),
        pl.when(none).then(0.0).otherwise(((r - pl.col("_seq")) / r).clip(0, 1)).alias("backward_share"),
        (pl.col("_k") / pl.max_horizontal(r - pl.col("_consec"), pl.lit(1))).clip(0, 1).alias("dominant_stride_share"),
        pl.col("dominant_stride_bytes").cast(pl.Int64),
    )
    cols = {c: per[c].to_numpy() for c in ("consecutive_share", "forward_gap_share", "backward_share",
                                            "dominant_stride_share")}
    pattern = classify({**cols, "stride_known": per["dominant_stride_bytes"].is_not_null().to_numpy(),
                        "ranks": per["ranks"].fill_null(0).to_numpy(), "rank_overlap": np.full(per.height, np.nan)})
    # summed over ranks, interleaving cannot be seen: never call it rank-interleaved from counters
    pattern[pattern == "rank-interleaved"] = "strided"
    per = per.with_columns(pl.Series("pattern", pattern.tolist(), dtype=pl.Utf8), pl.lit("posix").alias("layer"),
                           pl.lit("counters").alias("source"), pl.col("ranks").cast(pl.Int64))
    return per.select(list(SCHEMA))


def file_patterns(log) -> pl.DataFrame:
    """One row per file × layer ('posix', 'mpiio'): the pattern name and the numbers behind it.

    From the DXT trace where a file was traced at that layer, from the POSIX counters for the other files.
    Columns: file_id, name, layer, pattern, requests, ranks, consecutive_share, forward_gap_share,
    backward_share, dominant_stride_bytes, dominant_stride_share, median_request_bytes, rank_overlap (the
    sum of the ranks' spans over the file's span; null from counters), source.
    """
    parts = []
    traced = set()
    seg = log_segments(log)
    if not seg.empty:
        layer = seg.module.astype(np.int64)  # DXT_POSIX, DXT_MPIIO: posix, mpiio
        v = classify_segments(seg, (seg.file_id, layer))
        names = np.array([LAYER_OF[m] for m in DXT_MODULES], dtype=object)
        dxt = pl.DataFrame({"file_id": pl.Series(seg.file_id[v["first"]], dtype=pl.UInt64),
                            "layer": pl.Series(names[layer[v["first"]]].tolist(), dtype=pl.Utf8),
                            "pattern": pl.Series(v["pattern"].tolist(), dtype=pl.Utf8),
                            **{k: v[k] for k in ("requests", "ranks", "consecutive_share", "forward_gap_share",
                                                 "backward_share", "dominant_stride_share", "median_request_bytes",
                                                 "rank_overlap")},
                            "dominant_stride_bytes": pl.Series(v["dominant_stride_bytes"].tolist(), dtype=pl.Int64),
                            "source": "dxt"})
        parts.append(dxt.select([pl.col(k).cast(v) for k, v in SCHEMA.items()]))
        traced = set(dxt.filter(pl.col("layer") == "posix")["file_id"].to_list())
    counters = _from_counters(log)
    if traced:
        counters = counters.filter(~pl.col("file_id").is_in(pl.Series(sorted(traced), dtype=pl.UInt64).implode()))
    parts.append(counters.select([pl.col(k).cast(v) for k, v in SCHEMA.items()]))
    out = pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)
    names = log.files.select(pl.col("file_id").cast(pl.UInt64), "name")
    return (out.join(names, on="file_id", how="left").sort(["layer", "requests"], descending=[False, True])
            .select("file_id", "name", *[k for k in SCHEMA if k != "file_id"]))
