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

import polars as pl

from .layers import recorded

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


def transitions(seg: pl.DataFrame, by=("file_id",)) -> pl.DataFrame:
    """Every request after each rank's first on a file (per `by` group and operation kind), with the
    previous request's offset and end, in time order."""
    keys = [*by, "rank", "op"]
    extra = [c for c in ("end",) if c in seg.columns]
    s = seg.select(*keys, "offset", "length", "start", *extra).filter(pl.col("offset") >= 0).sort([*keys, "start"])
    same = pl.all_horizontal([pl.col(k) == pl.col(k).shift(1) for k in keys])
    return (s.with_columns(pl.when(same).then(pl.col("offset").shift(1)).alias("prev_off"),
                           pl.when(same).then((pl.col("offset") + pl.col("length")).shift(1)).alias("prev_end"))
            .filter(pl.col("prev_end").is_not_null()))


def segment_shares(seg: pl.DataFrame, by=("file_id",), trans: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per `by` group: requests, ranks, the shares of consecutive / forward-gap / backward transitions and
    the dominant stride (the most common offset difference of non-consecutive transitions).
    `trans`: `transitions(seg, by)` when the caller already has it."""
    by = list(by)
    valid = seg.filter(pl.col("offset") >= 0)
    base = valid.group_by(by).agg(
        pl.len().alias("requests"), pl.col("rank").n_unique().alias("ranks"),
        pl.col("length").median().cast(pl.Float64).alias("median_request_bytes"),
        ((pl.col("offset") + pl.col("length")).max() - pl.col("offset").min()).alias("_extent"))
    # how much the ranks' byte ranges overlap: the sum of each rank's span over the file's span
    spans = (valid.group_by([*by, "rank"]).agg(((pl.col("offset") + pl.col("length")).max() - pl.col("offset").min())
                                                .alias("_span"))
             .group_by(by).agg(pl.col("_span").sum()))
    base = (base.join(spans, on=by, how="left")
            .with_columns((pl.col("_span") / pl.max_horizontal(pl.col("_extent"), pl.lit(1))).alias("rank_overlap"))
            .drop("_span", "_extent"))
    t = transitions(seg, by) if trans is None else trans
    shares = t.group_by(by).agg(
        pl.len().alias("_n"),
        (pl.col("offset") == pl.col("prev_end")).sum().alias("_consec"),
        (pl.col("offset") > pl.col("prev_end")).sum().alias("_gap"),
        (pl.col("offset") < pl.col("prev_end")).sum().alias("_back"))
    strides = (t.filter(pl.col("offset") != pl.col("prev_end"))
               .group_by([*by, (pl.col("offset") - pl.col("prev_off")).alias("stride")]).agg(pl.len().alias("_k"))
               .sort([*by, "_k", "stride"], descending=[*([False] * len(by)), True, False])
               .group_by(by, maintain_order=True).agg(pl.col("stride").first().alias("dominant_stride_bytes"),
                                                      pl.col("_k").first().alias("_k")))
    out = (base.join(shares, on=by, how="left").join(strides, on=by, how="left")
           .with_columns(pl.col("_n", "_consec", "_gap", "_back", "_k").fill_null(0)))
    n = pl.max_horizontal(pl.col("_n"), pl.lit(1))
    return out.with_columns(
        pl.when(pl.col("_n") > 0).then(pl.col("_consec") / n).otherwise(1.0).alias("consecutive_share"),
        (pl.col("_gap") / n).alias("forward_gap_share"),
        (pl.col("_back") / n).alias("backward_share"),
        (pl.col("_k") / pl.max_horizontal(pl.col("_n") - pl.col("_consec"), pl.lit(1))).alias("dominant_stride_share"),
    ).drop("_n", "_consec", "_gap", "_back", "_k")


def classify() -> pl.Expr:
    """The pattern name from the columns of `segment_shares` (see the module's table)."""
    forward = pl.col("consecutive_share") + pl.col("forward_gap_share")
    has_stride = (pl.col("dominant_stride_share") >= STRIDE_SHARE) & pl.col("dominant_stride_bytes").is_not_null()
    interleaved = (pl.col("ranks") > 1) & (pl.col("rank_overlap") >= INTERLEAVED_OVERLAP)
    return (pl.when(pl.col("consecutive_share") >= CONSECUTIVE_SHARE).then(pl.lit("consecutive"))
            # the ranks' blocks alternate: interleaved whether or not the blocks have one size (records of
            # 1-4 KiB from 2 ranks have no dominant stride, yet are not "sequential")
            .when((forward >= FORWARD_SHARE) & interleaved).then(pl.lit("rank-interleaved"))
            .when((forward >= FORWARD_SHARE) & has_stride).then(pl.lit("strided"))
            .when(forward >= FORWARD_SHARE).then(pl.lit("sequential"))
            .when(has_stride & (pl.col("backward_share") < BACKWARD_SHARE)).then(pl.lit("strided"))
            .when(pl.col("backward_share") >= BACKWARD_SHARE).then(pl.lit("random"))
            .otherwise(pl.lit("sequential")).alias("pattern"))


def classify_segments(seg: pl.DataFrame, by=("file_id",), trans: pl.DataFrame | None = None) -> pl.DataFrame:
    """`segment_shares` plus the pattern name."""
    if seg.is_empty():
        return pl.DataFrame(schema={k: v for k, v in SCHEMA.items() if k not in ("layer", "source")} |
                            {k: seg.schema[k] for k in by if k in seg.schema})
    return segment_shares(seg, by, trans).with_columns(classify())


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
    # summed over ranks, interleaving cannot be seen: never call it rank-interleaved from counters
    per = per.with_columns(classify()).with_columns(
        pl.when(pl.col("pattern") == "rank-interleaved").then(pl.lit("strided")).otherwise(pl.col("pattern"))
        .alias("pattern"), pl.lit("posix").alias("layer"), pl.lit("counters").alias("source"),
        pl.col("ranks").cast(pl.Int64))
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
    if log.has_dxt:
        seg = log.segments.filter(pl.col("module").is_in(["DXT_POSIX", "DXT_MPIIO"]))
        if not seg.is_empty():
            seg = seg.with_columns(pl.col("module").cast(pl.Utf8).replace_strict(LAYER_OF, default=None).alias("layer"))
            dxt = classify_segments(seg, ("file_id", "layer")).with_columns(pl.lit("dxt").alias("source"))
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
