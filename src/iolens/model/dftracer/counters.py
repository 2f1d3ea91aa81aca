"""Darshan-shaped POSIX and STDIO counters from every call of a DFTracer trace.

One row per (file, rank) with Darshan's full counter list, so `info`, `files` and every analysis that reads
counters run; a counter the calls cannot give (alignment, strides, common access sizes, ...) is -1, Darshan's
'not recorded'. Reads and writes count when they returned (a 0-byte read at end of file is a read, a failed
one is not).

Each counter is a plain sum, min or max per group of a per-call value computed once (a group-by of such
aggregations is polars' fast path; a filter inside each aggregation is not).
"""
from __future__ import annotations

import polars as pl

from ...reader.counter_names import COUNTER_NAMES
from ..darshan import SIZE_BINS
from .tables import CLOSE, FSEEK, LSEEK, OPEN, OPEN_APPEND, READS, WRITES

STAT_CALLS = ("stat", "stat64", "lstat", "lstat64", "fstat", "fstat64", "__xstat", "__xstat64", "__lxstat",
              "__lxstat64", "__fxstat", "__fxstat64", "fstatat", "fstatat64", "newfstatat", "statx")


def _flags(module: str) -> dict:
    """name -> a boolean per call: which counter a call adds one to."""
    kind, func, done = pl.col("kind"), pl.col("func"), pl.col("bytes").is_not_null()
    read, write = kind.is_in(READS) & done, kind.is_in(WRITES) & done
    opens, closes = kind.is_in([OPEN, OPEN_APPEND]), kind == CLOSE
    size = pl.col("bytes")
    flags = {"_r": read, "_w": write, "_open": opens, "_close": closes, "_meta": ~kind.is_in(READS + WRITES)}
    if module == "POSIX":
        flags.update({
            "POSIX_OPENS": opens, "POSIX_READS": read, "POSIX_WRITES": write, "POSIX_SEEKS": kind == LSEEK,
            "POSIX_STATS": func.is_in(STAT_CALLS), "POSIX_MMAPS": func.is_in(["mmap", "mmap64"]),
            "POSIX_FSYNCS": func == "fsync", "POSIX_FDSYNCS": func == "fdatasync",
            "POSIX_DUPS": func.is_in(["dup", "dup2", "dup3"]),
        })
        for op, sel in (("READ", read), ("WRITE", write)):
            for suffix, low, high in SIZE_BINS:
                flags[f"POSIX_SIZE_{op}_{suffix}"] = sel & (size > (-1 if low == 0 else low)) & (size <= high)
    else:
        flags.update({
            "STDIO_OPENS": opens, "STDIO_FDOPENS": func == "fdopen", "STDIO_READS": read, "STDIO_WRITES": write,
            "STDIO_SEEKS": kind == FSEEK, "STDIO_FLUSHES": func == "fflush",
        })
    return flags


def _per_call(prefix: str) -> list:
    """The per-call values the byte, offset, time and timestamp counters sum, min or max."""
    r, w = pl.col("_r"), pl.col("_w")
    nbytes = pl.col("bytes").fill_null(0)
    last_byte = pl.col("offset") + pl.col("bytes") - 1
    span = pl.col("end") - pl.col("start")
    cols = [pl.when(r).then(nbytes).otherwise(0).alias(f"{prefix}_BYTES_READ"),
            pl.when(w).then(nbytes).otherwise(0).alias(f"{prefix}_BYTES_WRITTEN"),
            pl.when(r).then(last_byte).alias("_max_byte_read"), pl.when(w).then(last_byte).alias("_max_byte_written"),
            pl.when(r).then(span).otherwise(0.0).alias(f"{prefix}_F_READ_TIME"),
            pl.when(w).then(span).otherwise(0.0).alias(f"{prefix}_F_WRITE_TIME"),
            pl.when(pl.col("_meta")).then(span).otherwise(0.0).alias(f"{prefix}_F_META_TIME")]
    for what, sel in (("OPEN", "_open"), ("READ", "_r"), ("WRITE", "_w"), ("CLOSE", "_close")):
        cols += [pl.when(sel).then(pl.col("start")).alias(f"_first_{what}"),
                 pl.when(sel).then(pl.col("end")).alias(f"_last_{what}")]
    return cols


def _aggregations(prefix: str, counts: list) -> list:
    out = [pl.col(c).sum().cast(pl.Int64) for c in counts]
    out += [pl.col(f"{prefix}_BYTES_READ").sum(), pl.col(f"{prefix}_BYTES_WRITTEN").sum(),
            pl.col("_max_byte_read").max().fill_null(-1).alias(f"{prefix}_MAX_BYTE_READ"),
            pl.col("_max_byte_written").max().fill_null(-1).alias(f"{prefix}_MAX_BYTE_WRITTEN"),
            pl.col(f"{prefix}_F_READ_TIME").sum(), pl.col(f"{prefix}_F_WRITE_TIME").sum(),
            pl.col(f"{prefix}_F_META_TIME").sum(),
            pl.col(f"{prefix}_F_READ_TIME").max().alias(f"{prefix}_F_MAX_READ_TIME"),
            pl.col(f"{prefix}_F_WRITE_TIME").max().alias(f"{prefix}_F_MAX_WRITE_TIME"),
            pl.lit(0.0).alias(f"{prefix}_F_SLOWEST_RANK_TIME")]  # records are per rank, never reduced
    for what in ("OPEN", "READ", "WRITE", "CLOSE"):
        out += [pl.col(f"_first_{what}").min().fill_null(0.0).alias(f"{prefix}_F_{what}_START_TIMESTAMP"),
                pl.col(f"_last_{what}").max().fill_null(0.0).alias(f"{prefix}_F_{what}_END_TIMESTAMP")]
    return out


def counters_table(io: pl.DataFrame, module: str) -> pl.DataFrame | None:
    """Darshan's `module` counters ('POSIX' or 'STDIO') per (file, rank) from the calls on named files."""
    rows = io.filter((pl.col("layer") == module) & pl.col("file_id").is_not_null())
    if rows.is_empty():
        return None
    flags = _flags(module)
    counts = [name for name in flags if not name.startswith("_")]
    per_call = rows.select("file_id", "rank", "bytes", "offset", "start", "end",
                           *(cond.alias(name) for name, cond in flags.items())).with_columns(_per_call(module))
    got = per_call.group_by("file_id", "rank").agg(_aggregations(module, counts)).sort("rank", "file_id")
    names, fnames = COUNTER_NAMES[module]
    full = [pl.col("file_id"), pl.col("rank")]
    full += [pl.col(n).cast(pl.Int64) if n in got.columns else pl.lit(-1, dtype=pl.Int64).alias(n) for n in names]
    full += [pl.col(n).cast(pl.Float64) if n in got.columns else pl.lit(-1.0, dtype=pl.Float64).alias(n)
             for n in fnames]
    return got.select(full)
