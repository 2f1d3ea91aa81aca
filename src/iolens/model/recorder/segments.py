"""Reads and writes of a Recorder trace as DXT-shaped segments, with the offsets calls do not carry.

`pwrite`, `pread` and `MPI_File_*_at*` name their offset. `write`, `read`, `fwrite`, `MPI_File_write`, ...
use the file position, which is followed per rank through the calls that move it: an open puts it at 0 (at
the end of what this rank wrote for O_APPEND / mode "a"), a seek sets it, each read or write advances it by
its size, a close forgets it. Recorder (2.3–2.5) names files instead of descriptors, so positions are kept per
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


def _moving_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """The calls that set, move or use a file position, in order, with `key` (whose position: a rank's
    path for POSIX, its file handle for MPI-IO), `kind` and `amount` (seek offset or bytes)."""
    funcs = set(calls["func"].unique().to_list())
    positional_io = {"write", "read", "writev", "readv", "fwrite", "fread"} | {
        f for f in funcs if mpiio_op(f) and "_at" not in f}
    moving = POSIX_OPENS | POSIX_SEEKS | POSIX_CLOSES | positional_io | {
        "MPI_File_open", "MPI_File_seek", "MPI_File_close"}
    f, mpi = pl.col("func"), pl.col("layer") == "MPI-IO"
    flags = pl.col("args").list.get(1, null_on_oob=True)
    append = (f.str.starts_with("fopen") & flags.str.contains("a")) | (
        f.str.starts_with("open") & ((flags.cast(pl.Int64, strict=False).fill_null(0) & O_APPEND) > 0))
    how = pl.col("whence").replace_strict(SEEK, default=0, return_dtype=pl.Int64)
    kind = (pl.when(f.is_in(list(POSIX_OPENS | {"MPI_File_open"}))).then(pl.when(append).then(pl.lit("open_end"))
                                                                          .otherwise(pl.lit("open")))
            .when(f.is_in(list(POSIX_CLOSES | {"MPI_File_close"}))).then(pl.lit("close"))
            .when(f.is_in(list(POSIX_SEEKS | {"MPI_File_seek"}))).then(
                pl.when(how == 1).then(pl.lit("seek_cur")).when(how == 2).then(pl.lit("seek_end"))
                .otherwise(pl.lit("seek_set")))
            .otherwise(pl.lit("io")))
    return (calls.filter(f.is_in(list(moving))).sort("rank", "seq")
            .with_columns(key=pl.when(mpi).then(pl.lit("fh:") + pl.col("fd")).otherwise(pl.lit("p:") + pl.col("path")),
                          kind=kind,
                          amount=pl.when(f.is_in(list(POSIX_SEEKS | {"MPI_File_seek"}))).then(pl.col("offset"))
                          .otherwise(pl.col("count")).fill_null(0),
                          is_write=(f.is_in(list(POSIX_WRITES)) | f.str.contains("write"))))


def positioned_offsets(calls: pl.DataFrame) -> pl.DataFrame:
    """rank, seq, offset of every read/write that carries no offset, following the file positions."""
    rows = _moving_calls(calls)
    if rows.filter(pl.col("kind") == "io").is_empty():
        return pl.DataFrame(schema={"rank": pl.Int64, "seq": pl.Int64, "_pos": pl.Int64})
    if rows["kind"].is_in(["seek_end", "open_end"]).any():
        return _follow_in_order(rows)  # where the end of the file is depends on every earlier write
    # an open, close or absolute seek starts a new run; inside it, relative seeks and I/O add up
    absolute = ~pl.col("kind").is_in(["seek_cur", "io"])
    delta = pl.when(absolute).then(0).otherwise(pl.col("amount"))
    base = pl.when(pl.col("kind") == "seek_set").then(pl.col("amount")).when(absolute).then(0)
    group = ["rank", "key"]
    return (rows.with_columns(run=absolute.cast(pl.Int64).cum_sum().over(group), _delta=delta, _base=base)
            .with_columns(pl.col("_base").forward_fill().over(group).fill_null(0),
                          _before=(pl.col("_delta").cum_sum() - pl.col("_delta")).over(group + ["run"]))
            .filter(pl.col("kind") == "io")
            .select("rank", "seq", (pl.col("_base") + pl.col("_before")).alias("_pos")))


def _follow_in_order(rows: pl.DataFrame) -> pl.DataFrame:
    """Positions call by call, keeping what each rank wrote of each file for seeks to its end and appends
    (what other ranks wrote is not known at that point of this rank's calls)."""
    out, pos, extent = ([], [], []), {}, {}
    for rank, seq, key, path, kind, amount, is_write in zip(
            *(rows[c].to_list() for c in ("rank", "seq", "key", "path", "kind", "amount", "is_write"))):
        k, end_key = (rank, key), (rank, path)
        if kind in ("open", "open_end"):
            pos[k] = extent.get(end_key, 0) if kind == "open_end" else 0
        elif kind == "close":
            pos.pop(k, None)
        elif kind == "seek_set":
            pos[k] = amount
        elif kind == "seek_cur":
            pos[k] = pos.get(k, 0) + amount
        elif kind == "seek_end":
            pos[k] = extent.get(end_key, 0) + amount
        else:
            at = pos.get(k, 0)
            for col, v in zip(out, (rank, seq, at)):
                col.append(v)
            pos[k] = at + amount
            if is_write:
                extent[end_key] = max(extent.get(end_key, 0), at + amount)
    return pl.DataFrame({"rank": out[0], "seq": out[1], "_pos": out[2]},
                        schema={"rank": pl.Int64, "seq": pl.Int64, "_pos": pl.Int64})


def segments_table(calls: pl.DataFrame) -> pl.DataFrame:
    """DXT-shaped segments (module, file_id, rank, hostname, op, offset, length, start, end) of the reads and
    writes whose size is known."""
    io = io_calls(calls).filter(pl.col("count").is_not_null())
    if io.is_empty():
        return pl.DataFrame(schema=SEGMENT_SCHEMA)
    found = positioned_offsets(calls)
    if found.height:
        io = io.join(found, on=["rank", "seq"], how="left").with_columns(
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

