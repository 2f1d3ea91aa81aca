"""Reads and writes of a Recorder trace as DXT-shaped segments, with the offsets calls do not carry.

`pwrite`, `pread` and `MPI_File_*_at*` name their offset. `write`, `read`, `fwrite`, `MPI_File_write`, ...
use the file position, which is followed per rank through the calls that move it: an open puts it at 0 (at
the end of what this rank wrote for O_APPEND / mode "a"), a seek sets it, each read or write advances it by
its size, a close forgets it. Recorder 2.4 names files instead of descriptors, so positions are kept per
(rank, path) for POSIX and per (rank, file handle) for MPI-IO.
"""
from __future__ import annotations

import hashlib

import polars as pl

from ..log import MODULE, OP, SEGMENT_SCHEMA

POSIX_WRITES = frozenset({"write", "pwrite", "pwrite64", "writev", "fwrite"})
POSIX_READS = frozenset({"read", "pread", "pread64", "readv", "fread"})
POSIX_OPENS = frozenset({"open", "open64", "creat", "creat64", "fopen", "fopen64", "fdopen"})
POSIX_SEEKS = frozenset({"lseek", "lseek64", "fseek", "fseeko"})
POSIX_CLOSES = frozenset({"close", "fclose"})
O_APPEND = 0o2000
SEEK = {"0": 0, "1": 1, "2": 2, "MPI_SEEK_SET": 0, "MPI_SEEK_CUR": 1, "MPI_SEEK_END": 2}


def file_id(path: str) -> int:
    """A stable 64-bit id for a path (Recorder has no record ids: this plays Darshan's name hash)."""
    return int.from_bytes(hashlib.blake2b(path.encode("utf-8", "replace"), digest_size=8).digest(), "little")


def mpiio_op(func: str):
    """'write'/'read' for an MPI-IO data call (split collectives counted at their _begin), else None."""
    if not func.startswith("MPI_File_") or func.endswith("_end"):
        return None
    return "write" if "write" in func else "read" if "read" in func else None


def io_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """The reads and writes among `calls`, with `op` and `module`, and the offset where the call names it."""
    ops = {**{f: "write" for f in POSIX_WRITES}, **{f: "read" for f in POSIX_READS}}
    funcs = calls["func"].unique().to_list()
    ops.update({f: op for f in funcs if (op := mpiio_op(f))})
    return (calls.filter(pl.col("func").is_in(list(ops)))
            .with_columns(op=pl.col("func").replace_strict(ops, return_dtype=pl.String),
                          module=pl.when(pl.col("layer") == "MPI-IO").then(pl.lit("DXT_MPIIO"))
                          .otherwise(pl.lit("DXT_POSIX"))))


def positioned_offsets(calls: pl.DataFrame) -> dict:
    """(rank, seq) -> offset, for every read/write that carries no offset, following the file positions."""
    funcs = set(calls["func"].unique().to_list())
    moving = (POSIX_OPENS | POSIX_SEEKS | POSIX_CLOSES | {"write", "read", "writev", "readv", "fwrite", "fread"}
              | {f for f in funcs if f.startswith("MPI_File_") and "_at" not in f
                 and (mpiio_op(f) or f in ("MPI_File_open", "MPI_File_seek", "MPI_File_close"))})
    rows = calls.filter(pl.col("func").is_in(list(moving))).sort("rank", "seq")
    out, pos, extent = {}, {}, {}
    for rank, seq, func, layer, args, path, fd, offset, count, whence in zip(
            *(rows[c].to_list() for c in ("rank", "seq", "func", "layer", "args", "path", "fd", "offset",
                                          "count", "whence"))):
        mpi = layer == "MPI-IO"
        key = (rank, fd) if mpi else (rank, path)
        if func in POSIX_OPENS or func == "MPI_File_open":
            append = (not mpi and func.startswith("f") and "a" in (args[1] if len(args) > 1 else "")) or (
                not mpi and func.startswith("open") and int(_num(args[1] if len(args) > 1 else 0)) & O_APPEND)
            pos[key] = extent.get((rank, path), 0) if append else 0
        elif func in POSIX_CLOSES or func == "MPI_File_close":
            pos.pop(key, None)
        elif func in POSIX_SEEKS or func == "MPI_File_seek":
            how = SEEK.get(whence, 0)
            base = 0 if how == 0 else pos.get(key, 0) if how == 1 else extent.get((rank, path), 0)
            pos[key] = base + (offset or 0)
        else:  # a read or write at the file position
            at = pos.get(key, 0)
            out[(rank, seq)] = at
            pos[key] = at + (count or 0)
            if mpiio_op(func) == "write" or func in POSIX_WRITES:
                extent[(rank, path)] = max(extent.get((rank, path), 0), at + (count or 0))
    return out


def _num(text) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return 0


def segments_table(calls: pl.DataFrame) -> pl.DataFrame:
    """DXT-shaped segments (module, file_id, rank, hostname, op, offset, length, start, end) of the reads and
    writes whose size is known."""
    io = io_calls(calls).filter(pl.col("count").is_not_null())
    if io.is_empty():
        return pl.DataFrame(schema=SEGMENT_SCHEMA)
    found = positioned_offsets(calls)
    if found:
        keys = pl.DataFrame({"rank": [k[0] for k in found], "seq": [k[1] for k in found],
                             "_pos": list(found.values())}, schema={"rank": pl.Int64, "seq": pl.Int64,
                                                                    "_pos": pl.Int64})
        io = io.join(keys, on=["rank", "seq"], how="left").with_columns(
            offset=pl.coalesce("offset", "_pos")).drop("_pos")
    io = io.with_columns(pl.col("path").fill_null("<unknown>"), pl.col("offset").fill_null(0))
    ids = {p: file_id(p) for p in io["path"].unique().to_list()}
    return io.sort("rank", "seq").select(
        pl.col("module").cast(MODULE),
        pl.col("path").replace_strict(ids, return_dtype=pl.UInt64).alias("file_id"),
        "rank",
        pl.lit("", dtype=pl.Categorical).alias("hostname"),  # Recorder does not record host names
        pl.col("op").cast(OP),
        "offset",
        pl.col("count").alias("length"),
        "start", "end",
    )


def mpiio_paths(calls: pl.DataFrame) -> pl.DataFrame:
    """MPI-IO calls name a file handle: give them the path the handle was opened with (per rank, in order)."""
    handle_path = (pl.when(pl.col("layer") == "MPI-IO").then(
        pl.when(pl.col("func") == "MPI_File_open").then(pl.col("path")).otherwise(None)
        .forward_fill().over(["rank", "fd"], order_by="seq"))
        .otherwise(pl.col("path")))
    return calls.with_columns(path=handle_path)

