"""Darshan-shaped POSIX and STDIO counters from every call of a DFTracer trace.

One row per (file, rank) with Darshan's full counter list, so `info`, `files` and every analysis that reads
counters run; a counter the calls cannot give (alignment, strides, common access sizes, ...) is -1, Darshan's
'not recorded'. Reads and writes count when they returned (a 0-byte read at end of file is a read, a failed
one is not).
"""
from __future__ import annotations

import polars as pl

from ...reader.counter_names import COUNTER_NAMES
from ..darshan import SIZE_BINS
from .tables import CLOSE, FSEEK, LSEEK, OPEN, OPEN_APPEND, READS, WRITES

STAT_CALLS = ("stat", "stat64", "lstat", "lstat64", "fstat", "fstat64", "__xstat", "__xstat64", "__lxstat",
              "__lxstat64", "__fxstat", "__fxstat64", "fstatat", "fstatat64", "newfstatat", "statx")


def _count(cond) -> pl.Expr:
    return cond.sum().cast(pl.Int64)


def _first(cond) -> pl.Expr:
    return pl.col("start").filter(cond).min().fill_null(0.0)


def _last(cond) -> pl.Expr:
    return pl.col("end").filter(cond).max().fill_null(0.0)


def _time(cond) -> pl.Expr:
    return (pl.col("end") - pl.col("start")).filter(cond).sum()


def _sizes(prefix: str, cond) -> list:
    size = pl.col("bytes")
    return [_count(cond & (size > (-1 if low == 0 else low)) & (size <= high)).alias(f"{prefix}_{suffix}")
            for suffix, low, high in SIZE_BINS]


def _shared(prefix: str, r, w, opens, closes, meta) -> list:
    """Bytes, furthest byte, timestamps and times: named alike in POSIX and STDIO."""
    nbytes = pl.col("bytes").fill_null(0)
    last_byte = pl.col("offset") + pl.col("bytes") - 1
    cols = [nbytes.filter(r).sum().alias(f"{prefix}_BYTES_READ"),
            nbytes.filter(w).sum().alias(f"{prefix}_BYTES_WRITTEN"),
            last_byte.filter(r).max().fill_null(-1).alias(f"{prefix}_MAX_BYTE_READ"),
            last_byte.filter(w).max().fill_null(-1).alias(f"{prefix}_MAX_BYTE_WRITTEN")]
    for what, sel in (("OPEN", opens), ("READ", r), ("WRITE", w), ("CLOSE", closes)):
        cols += [_first(sel).alias(f"{prefix}_F_{what}_START_TIMESTAMP"),
                 _last(sel).alias(f"{prefix}_F_{what}_END_TIMESTAMP")]
    span = pl.col("end") - pl.col("start")
    return cols + [
        _time(r).alias(f"{prefix}_F_READ_TIME"), _time(w).alias(f"{prefix}_F_WRITE_TIME"),
        _time(meta).alias(f"{prefix}_F_META_TIME"),
        span.filter(r).max().fill_null(0.0).alias(f"{prefix}_F_MAX_READ_TIME"),
        span.filter(w).max().fill_null(0.0).alias(f"{prefix}_F_MAX_WRITE_TIME"),
        pl.lit(0.0).alias(f"{prefix}_F_SLOWEST_RANK_TIME"),  # records are per rank, never reduced
    ]


def _posix() -> list:
    kind, func, done = pl.col("kind"), pl.col("func"), pl.col("bytes").is_not_null()
    r, w = kind.is_in(READS) & done, kind.is_in(WRITES) & done
    opens, closes = kind.is_in([OPEN, OPEN_APPEND]), kind == CLOSE
    meta = ~kind.is_in(READS + WRITES)
    return [
        _count(opens).alias("POSIX_OPENS"), _count(r).alias("POSIX_READS"), _count(w).alias("POSIX_WRITES"),
        _count(kind == LSEEK).alias("POSIX_SEEKS"), _count(func.is_in(STAT_CALLS)).alias("POSIX_STATS"),
        _count(func.is_in(["mmap", "mmap64"])).alias("POSIX_MMAPS"),
        _count(func == "fsync").alias("POSIX_FSYNCS"), _count(func == "fdatasync").alias("POSIX_FDSYNCS"),
        _count(func.is_in(["dup", "dup2", "dup3"])).alias("POSIX_DUPS"),
        *_sizes("POSIX_SIZE_READ", r), *_sizes("POSIX_SIZE_WRITE", w),
        *_shared("POSIX", r, w, opens, closes, meta),
    ]


def _stdio() -> list:
    kind, func, done = pl.col("kind"), pl.col("func"), pl.col("bytes").is_not_null()
    r, w = kind.is_in(READS) & done, kind.is_in(WRITES) & done
    opens, closes = kind.is_in([OPEN, OPEN_APPEND]), kind == CLOSE
    return [
        _count(opens).alias("STDIO_OPENS"), _count(func == "fdopen").alias("STDIO_FDOPENS"),
        _count(r).alias("STDIO_READS"), _count(w).alias("STDIO_WRITES"), _count(kind == FSEEK).alias("STDIO_SEEKS"),
        _count(func == "fflush").alias("STDIO_FLUSHES"),
        *_shared("STDIO", r, w, opens, closes, ~kind.is_in(READS + WRITES)),
    ]


def counters_table(io: pl.DataFrame, module: str) -> pl.DataFrame | None:
    """Darshan's `module` counters ('POSIX' or 'STDIO') per (file, rank) from the calls on named files."""
    rows = io.filter((pl.col("layer") == module) & pl.col("file_id").is_not_null())
    if rows.is_empty():
        return None
    got = rows.group_by("file_id", "rank").agg(_posix() if module == "POSIX" else _stdio()).sort("rank", "file_id")
    names, fnames = COUNTER_NAMES[module]
    full = [pl.col("file_id"), pl.col("rank")]
    full += [pl.col(n).cast(pl.Int64) if n in got.columns else pl.lit(-1, dtype=pl.Int64).alias(n) for n in names]
    full += [pl.col(n).cast(pl.Float64) if n in got.columns else pl.lit(-1.0, dtype=pl.Float64).alias(n)
             for n in fnames]
    return got.select(full)
