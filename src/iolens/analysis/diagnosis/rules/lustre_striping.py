"""LUSTRE_STRIPING as a rule: a file of at least `lustre_large_file_bytes`, accessed by two ranks or more, is
striped over a single OST.

Which files are large depends on the threshold, so the features keep every candidate file's extent (shared,
single-stripe, any size) as a list, largest first: any `lustre_large_file_bytes` is answered by counting them.
The largest candidate's ranks name the title (the largest file is the same at any limit that finds one).
"""
from __future__ import annotations

import polars as pl

from ..units import fmt_bytes
from .common import COMMON_THRESHOLDS

THRESHOLDS = ("lustre_large_file_bytes",) + COMMON_THRESHOLDS
P = "lustre_striping_"


def layouts(ctx) -> pl.DataFrame:
    """One Lustre layout per file (its first component with a stripe size)."""
    return ctx.memo("lustre_layouts", lambda: _layouts_of(ctx))


def _layouts_of(ctx) -> pl.DataFrame:
    lus = ctx.log.lustre
    if lus.is_empty():
        return lus
    return (lus.filter(pl.col("stripe_size") > 0).sort(["file_id", "component"])
            .unique(["file_id"], keep="first", maintain_order=True))


def file_sizes(ctx) -> pl.DataFrame:
    """file_id -> extent (highest byte + 1), bytes moved, ranks, from the POSIX counters."""
    return ctx.memo("posix_file_sizes", lambda: _file_sizes_of(ctx))


def _file_sizes_of(ctx) -> pl.DataFrame:
    from ..context import clip

    p = ctx.counters("POSIX")
    if p is None:
        return pl.DataFrame(schema={"file_id": pl.UInt64, "extent": pl.Int64, "bytes": pl.Int64, "nranks": pl.Int64})
    return p.group_by("file_id").agg(
        (pl.max_horizontal(pl.col("POSIX_MAX_BYTE_WRITTEN"), pl.col("POSIX_MAX_BYTE_READ")).max() + 1)
        .clip(lower_bound=0).alias("extent"),
        (clip("POSIX_BYTES_READ") + clip("POSIX_BYTES_WRITTEN")).sum().alias("bytes"),
    ).join(ctx.ranks_on_file("POSIX"), on="file_id", how="left")


def candidates(ctx) -> pl.DataFrame:
    """The files LUSTRE_STRIPING flags at some size: a Lustre layout of one stripe, two ranks or more (POSIX,
    MPI-IO or the trace), with their extent, bytes and layout; largest first."""
    return ctx.memo("lustre_striping_candidates", lambda: _candidates_of(ctx))


def _candidates_of(ctx) -> pl.DataFrame:
    lay = layouts(ctx)
    if lay.is_empty():
        return pl.DataFrame(schema={"file_id": pl.UInt64, "extent": pl.Int64, "nranks": pl.Int64})
    j = lay.join(file_sizes(ctx), on="file_id", how="inner")
    mpi_ranks = ctx.ranks_on_file("MPI-IO").rename({"nranks": "mpi_nranks"})
    j = j.join(mpi_ranks, on="file_id", how="left").with_columns(
        pl.max_horizontal(pl.col("nranks").fill_null(0), pl.col("mpi_nranks").fill_null(0)).alias("nranks"))
    if not ctx.seg.is_empty():
        dxt_ranks = ctx.seg.group_by("file_id").agg(pl.col("rank").n_unique().cast(pl.Int64).alias("dxt_ranks"))
        j = j.join(dxt_ranks, on="file_id", how="left").with_columns(
            pl.max_horizontal("nranks", pl.col("dxt_ranks").fill_null(0)).alias("nranks"))
    return j.filter((pl.col("nranks") >= 2) & (pl.col("stripe_count") <= 1)).sort("extent", descending=True)


def features(ctx, edges=None) -> dict:
    c = candidates(ctx)
    if c.is_empty():
        return {P + "extents": None, P + "largest_ranks": None}
    return {P + "extents": c["extent"].cast(pl.Int64).to_list(), P + "largest_ranks": int(c["nranks"][0])}


def dtypes() -> dict:
    return {P + "extents": pl.List(pl.Int64), P + "largest_ranks": pl.Int64}


def rule(th) -> dict:
    extents = pl.col(P + "extents")
    limit = int(th.lustre_large_file_bytes)
    files = extents.list.eval(pl.element() >= limit).list.sum()
    largest = extents.list.first()
    found = (largest >= limit).fill_null(False)
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": largest / (1 << 30), "files": files, "largest": largest,
            "ranks": pl.col(P + "largest_ranks")}


def title(v: dict, th) -> str:
    return (f"{v['files']} large shared file(s) on a single Lustre stripe (largest {fmt_bytes(v['largest'])}, "
            f"{v['ranks']} ranks)")
