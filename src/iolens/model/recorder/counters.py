"""Darshan-shaped POSIX and MPI-IO counters computed from every call of a Recorder trace.

One row per (file, rank) with Darshan's full counter list, so every analysis that reads counters runs; a
counter the calls cannot give (alignment, strides, access patterns, ...) is -1, Darshan's 'not recorded'.
"""
from __future__ import annotations

import polars as pl

from ...reader.counter_names import COUNTER_NAMES
from ..darshan import SIZE_BINS
from .segments import POSIX_OPENS, POSIX_READS, POSIX_SEEKS, POSIX_WRITES, mpiio_op

POSIX_STATS = ("__xstat", "__xstat64", "__lxstat", "__lxstat64", "__fxstat", "__fxstat64")
POSIX_META = POSIX_OPENS | POSIX_SEEKS | {"close", "fclose", "fsync", "fdatasync", "ftruncate", "truncate",
                                          *POSIX_STATS}


def _count(cond) -> pl.Expr:
    return cond.sum().cast(pl.Int64)


def _time(cond) -> pl.Expr:
    return pl.when(cond).then(pl.col("end") - pl.col("start")).otherwise(0.0).sum()


def _first(cond, col) -> pl.Expr:
    return pl.when(cond).then(pl.col(col)).otherwise(None).min().fill_null(0.0)


def _last(cond, col) -> pl.Expr:
    return pl.when(cond).then(pl.col(col)).otherwise(None).max().fill_null(0.0)


def _histogram(prefix: str, cond, size=pl.col("count")) -> list:
    out = []
    for suffix, low, high in SIZE_BINS:
        low = -1 if low == 0 else low  # Darshan counts a 0-byte request in the first bin
        in_bin = cond & (size > low) & (size <= high)
        out.append(_count(in_bin).alias(f"{prefix}_{suffix}"))
    return out


def _posix(calls: pl.DataFrame) -> list:
    f = pl.col("func")
    w, r = f.is_in(list(POSIX_WRITES)), f.is_in(list(POSIX_READS))
    opens, seeks, stats = f.is_in(list(POSIX_OPENS)), f.is_in(list(POSIX_SEEKS)), f.is_in(list(POSIX_STATS))
    closes = f.is_in(["close", "fclose"])
    nbytes = pl.col("count").fill_null(0)
    end_of = pl.col("offset").fill_null(0) + nbytes - 1
    return [
        _count(opens).alias("POSIX_OPENS"), _count(r).alias("POSIX_READS"), _count(w).alias("POSIX_WRITES"),
        _count(seeks).alias("POSIX_SEEKS"), _count(stats).alias("POSIX_STATS"),
        _count(f == "fsync").alias("POSIX_FSYNCS"), _count(f == "fdatasync").alias("POSIX_FDSYNCS"),
        *_io_columns("POSIX", r, w, opens, closes, nbytes, meta=f.is_in(list(POSIX_META)), size="", ends=end_of),
    ]


def _mpiio(calls: pl.DataFrame) -> list:
    f = pl.col("func")
    funcs = calls["func"].unique().to_list()
    writes = [x for x in funcs if mpiio_op(x) == "write"]
    reads = [x for x in funcs if mpiio_op(x) == "read"]

    def kind(names, which):
        pick = {"coll": lambda x: "_all" in x or "_ordered" in x, "split": lambda x: x.endswith("_begin"),
                "nb": lambda x: x.startswith("MPI_File_i"), "indep": None}[which]
        if pick is None:  # what is none of the others
            return [x for x in names if not any(kind([x], k) for k in ("coll", "split", "nb"))]
        return [x for x in names if pick(x) and not (which == "coll" and x.endswith("_begin"))]

    w, r = f.is_in(writes), f.is_in(reads)
    opens, closes = f == "MPI_File_open", f == "MPI_File_close"
    nbytes = pl.col("count").fill_null(0)
    meta = f.is_in(["MPI_File_open", "MPI_File_close", "MPI_File_sync", "MPI_File_set_size",
                    "MPI_File_set_view", "MPI_File_seek", "MPI_File_get_size"])
    cols = [_count(f.is_in(kind(reads, k))).alias(f"MPIIO_{k.upper()}_READS") for k in ("indep", "coll", "split",
                                                                                         "nb")]
    cols += [_count(f.is_in(kind(writes, k))).alias(f"MPIIO_{k.upper()}_WRITES") for k in ("indep", "coll",
                                                                                            "split", "nb")]
    return cols + [
        pl.lit(0, dtype=pl.Int64).alias("MPIIO_INDEP_OPENS"), _count(opens).alias("MPIIO_COLL_OPENS"),
        _count(f == "MPI_File_sync").alias("MPIIO_SYNCS"), _count(f == "MPI_File_set_view").alias("MPIIO_VIEWS"),
        *_io_columns("MPIIO", r, w, opens, closes, nbytes, meta=meta, size="_AGG"),
    ]


def _io_columns(prefix: str, r, w, opens, closes, nbytes, meta, size: str, ends=None) -> list:
    """The byte, size-histogram, timestamp and time counters POSIX and MPI-IO records share (names differ
    only by their prefix; MPI-IO has no max-byte counters and its histograms end in _AGG)."""
    span = pl.col("end") - pl.col("start")
    cols = [pl.when(r).then(nbytes).otherwise(0).sum().alias(f"{prefix}_BYTES_READ"),
            pl.when(w).then(nbytes).otherwise(0).sum().alias(f"{prefix}_BYTES_WRITTEN")]
    if ends is not None:
        cols += [pl.when(r).then(ends).otherwise(None).max().fill_null(-1).alias(f"{prefix}_MAX_BYTE_READ"),
                 pl.when(w).then(ends).otherwise(None).max().fill_null(-1).alias(f"{prefix}_MAX_BYTE_WRITTEN")]
    cols += [*_histogram(f"{prefix}_SIZE_READ{size}", r), *_histogram(f"{prefix}_SIZE_WRITE{size}", w)]
    for what, sel in (("OPEN", opens), ("READ", r), ("WRITE", w), ("CLOSE", closes)):
        cols.append(_first(sel, "start").alias(f"{prefix}_F_{what}_START_TIMESTAMP"))
    for what, sel in (("OPEN", opens), ("READ", r), ("WRITE", w), ("CLOSE", closes)):
        cols.append(_last(sel, "end").alias(f"{prefix}_F_{what}_END_TIMESTAMP"))
    return cols + [
        _time(r).alias(f"{prefix}_F_READ_TIME"), _time(w).alias(f"{prefix}_F_WRITE_TIME"),
        _time(meta).alias(f"{prefix}_F_META_TIME"),
        pl.when(r).then(span).otherwise(0.0).max().alias(f"{prefix}_F_MAX_READ_TIME"),
        pl.when(w).then(span).otherwise(0.0).max().alias(f"{prefix}_F_MAX_WRITE_TIME"),
        pl.lit(0.0).alias(f"{prefix}_F_SLOWEST_RANK_TIME"),  # records are per rank, never reduced
    ]


def counters_table(calls: pl.DataFrame, module: str, ids: dict) -> pl.DataFrame | None:
    """Darshan's `module` counters ('POSIX' or 'MPI-IO') per (file, rank) from the calls on files."""
    layer = "POSIX" if module == "POSIX" else "MPI-IO"
    rows = calls.filter((pl.col("layer") == layer) & pl.col("path").is_not_null()
                        & pl.col("path").is_in(list(ids)))
    if rows.is_empty():
        return None
    exprs = _posix(rows) if module == "POSIX" else _mpiio(rows)
    got = rows.group_by("path", "rank").agg(exprs).sort("rank", "path")
    names, fnames = COUNTER_NAMES[module]
    full = [pl.col("path").replace_strict(ids, return_dtype=pl.UInt64).alias("file_id"), pl.col("rank")]
    for name in names:
        full.append(pl.col(name).cast(pl.Int64) if name in got.columns else pl.lit(-1, dtype=pl.Int64).alias(name))
    for name in fnames:
        full.append(pl.col(name).cast(pl.Float64) if name in got.columns
                    else pl.lit(-1.0, dtype=pl.Float64).alias(name))
    return got.select(full)
