"""One row per file: which layers touched it, by how many ranks, bytes and ops per layer, trace, striping."""
from __future__ import annotations

import polars as pl

from ..model import Log
from ..model.darshan import BYTE_SOURCE_ORDER, LAYERS
from .measures import recorded


def _prefix(layer_name: str) -> str:
    return layer_name.lower().replace("-", "")


def _layer_rows(log: Log, layer) -> pl.DataFrame | None:
    df = log.counters.get(layer.module)
    if df is None or df.is_empty():
        return None
    p = _prefix(layer.name)
    return df.group_by("file_id").agg(
        recorded(layer.bytes_read).sum().alias(f"{p}_bytes_read"),
        recorded(layer.bytes_written).sum().alias(f"{p}_bytes_written"),
        pl.sum_horizontal([recorded(c) for c in layer.reads]).sum().alias(f"{p}_reads"),
        pl.sum_horizontal([recorded(c) for c in layer.writes]).sum().alias(f"{p}_writes"),
        pl.col("rank").alias(f"{p}_ranks"),
    )


def file_table(log: Log) -> pl.DataFrame:
    files = log.files
    nprocs = int(log.job["nprocs"])
    present = []
    for layer in LAYERS:
        rows = _layer_rows(log, layer)
        if rows is not None:
            files = files.join(rows, on="file_id", how="left")
            present.append(layer.name)
    if not log.dxt_records.is_empty():
        seg = log.dxt_records.group_by("file_id").agg(
            (pl.col("write_count") + pl.col("read_count")).sum().alias("segments"),
            pl.col("rank").alias("dxt_ranks"))
        files = files.join(seg, on="file_id", how="left")
    if not log.lustre.is_empty():
        stripes = log.lustre.filter(pl.col("component") == 0).unique("file_id", keep="first").select(
            "file_id", "stripe_size", "stripe_count")
        files = files.join(stripes, on="file_id", how="left")
    files = files.with_columns(
        layers=pl.concat_str([pl.when(pl.col(f"{_prefix(n)}_reads").is_not_null()).then(pl.lit(n + " "))
                              .otherwise(pl.lit("")) for n in present] or [pl.lit("")]).str.strip_chars(),
        ranks=_ranks_expr(files.columns, nprocs),
    )
    files = files.with_columns(
        bytes_read=pl.coalesce([pl.col(f"{_prefix(n)}_bytes_read") for n in BYTE_SOURCE_ORDER if n in present]
                               or [pl.lit(None, dtype=pl.Int64)]),
        bytes_written=pl.coalesce([pl.col(f"{_prefix(n)}_bytes_written") for n in BYTE_SOURCE_ORDER
                                   if n in present] or [pl.lit(None, dtype=pl.Int64)]),
        reads=pl.coalesce([pl.col(f"{_prefix(n)}_reads") for n in BYTE_SOURCE_ORDER if n in present]
                          or [pl.lit(None, dtype=pl.Int64)]),
        writes=pl.coalesce([pl.col(f"{_prefix(n)}_writes") for n in BYTE_SOURCE_ORDER if n in present]
                           or [pl.lit(None, dtype=pl.Int64)]),
    )
    drop = [c for c in files.columns if c.endswith("_ranks")]
    files = files.drop(drop).filter(pl.col("layers") != "")
    for col in ("segments", "stripe_size", "stripe_count"):
        if col not in files.columns:
            files = files.with_columns(pl.lit(None, dtype=pl.Int64).alias(col))
    lead = ["file_id", "name", "mount", "fs_type", "layers", "ranks", "bytes_read", "bytes_written", "reads",
            "writes", "segments", "stripe_size", "stripe_count"]
    files = files.select(lead + [c for c in files.columns if c not in lead])
    return files.sort(pl.col("bytes_read").fill_null(0) + pl.col("bytes_written").fill_null(0),
                      descending=True, maintain_order=True)


def _ranks_expr(columns, nprocs: int) -> pl.Expr:
    """Distinct ranks that touched the file; a reduced record (rank -1) means all of them."""
    lists = [pl.col(c) for c in columns if c.endswith("_ranks")]
    if not lists:
        return pl.lit(None, dtype=pl.Int64)
    merged = pl.concat_list([lst.fill_null(pl.lit([], dtype=pl.List(pl.Int64))) for lst in lists])
    return (pl.when(merged.list.contains(-1)).then(pl.lit(nprocs, dtype=pl.Int64))
            .otherwise(merged.list.unique().list.len().cast(pl.Int64)))
