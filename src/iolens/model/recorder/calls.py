"""The `calls` table of a Recorder trace: one row per call of every rank, with typed columns for the common
arguments. Built per call signature (a rank's distinct calls) with polars expressions, then gathered per
call."""
from __future__ import annotations

import numpy as np
import polars as pl

LAYERS = ("POSIX", "MPI-IO", "MPI", "HDF5", "user")  # Recorder's function classes 0..4, in that order
LAYER = pl.Enum(list(LAYERS))

MPI_TYPE_BYTES = {
    "MPI_BYTE": 1, "MPI_CHAR": 1, "MPI_SIGNED_CHAR": 1, "MPI_UNSIGNED_CHAR": 1, "MPI_PACKED": 1,
    "MPI_INT8_T": 1, "MPI_UINT8_T": 1, "MPI_C_BOOL": 1, "MPI_SHORT": 2, "MPI_UNSIGNED_SHORT": 2,
    "MPI_INT16_T": 2, "MPI_UINT16_T": 2, "MPI_INT": 4, "MPI_UNSIGNED": 4, "MPI_FLOAT": 4, "MPI_INT32_T": 4,
    "MPI_UINT32_T": 4, "MPI_LONG": 8, "MPI_UNSIGNED_LONG": 8, "MPI_LONG_LONG": 8, "MPI_LONG_LONG_INT": 8,
    "MPI_UNSIGNED_LONG_LONG": 8, "MPI_DOUBLE": 8, "MPI_INT64_T": 8, "MPI_UINT64_T": 8, "MPI_LONG_DOUBLE": 16,
    "MPI_C_DOUBLE_COMPLEX": 16, "MPI_DOUBLE_COMPLEX": 16, "MPI_C_FLOAT_COMPLEX": 8, "MPI_COMPLEX": 8,
}
# POSIX argument positions as Recorder 2.3–2.5 store them (it names the file where the call took a descriptor)
PREADWRITE = ("pwrite", "pwrite64", "pread", "pread64")  # (path, buf, count, offset)
READWRITE = ("write", "read")  # (path, buf, count)
VECTORED = ("writev", "readv")  # (path, total bytes, iovcnt)
STREAM_IO = ("fwrite", "fread")  # (ptr, size, nmemb, path)
SEEKS = ("lseek", "lseek64", "fseek", "fseeko")  # (path, offset, whence)
STATS = ("__xstat", "__xstat64", "__lxstat", "__lxstat64", "__fxstat", "__fxstat64")  # (version, path, buf)

CALL_SCHEMA = {"rank": pl.Int64, "seq": pl.Int64, "func": pl.String, "layer": LAYER, "depth": pl.Int64,
               "start": pl.Float64, "end": pl.Float64, "args": pl.List(pl.String), "path": pl.String,
               "fd": pl.String, "offset": pl.Int64, "count": pl.Int64, "whence": pl.String, "comm": pl.String}


def _arg(i: int) -> pl.Expr:
    return pl.col("args").list.get(i, null_on_oob=True)


def _int(i: int) -> pl.Expr:
    return _arg(i).cast(pl.Int64, strict=False)


def _type_bytes(i: int) -> pl.Expr:
    return _arg(i).replace_strict(MPI_TYPE_BYTES, default=None, return_dtype=pl.Int64)


def typed_columns() -> list:
    """path, fd, offset, count (bytes; null for a derived MPI datatype, whose size the trace lacks),
    whence and comm, from `func`, `layer` and `args`."""
    f, posix, mpiio = pl.col("func"), pl.col("layer") == "POSIX", pl.col("layer") == "MPI-IO"
    mpi_rw = mpiio & f.str.contains("read|write") & ~f.str.ends_with("_end")
    mpi_at = mpi_rw & f.str.contains("_at")
    mpi_seek = f.is_in(["MPI_File_seek", "MPI_File_seek_shared"])
    path = (pl.when(posix & f.is_in(STREAM_IO)).then(_arg(3))
            .when(posix & f.is_in(STATS)).then(_arg(1))
            .when(posix & _arg(0).str.starts_with("/")).then(_arg(0))
            .when(posix & f.is_in(PREADWRITE + READWRITE + VECTORED + SEEKS)).then(_arg(0))
            .when(f == "MPI_File_open").then(_arg(1)))
    fd = pl.when(f == "MPI_File_open").then(_arg(4)).when(mpiio).then(_arg(0))
    offset = (pl.when(posix & f.is_in(PREADWRITE)).then(_int(3))
              .when(posix & f.is_in(SEEKS)).then(_int(1))
              .when(mpi_at | mpi_seek).then(_int(1)))
    count = (pl.when(posix & f.is_in(PREADWRITE + READWRITE)).then(_int(2))
             .when(posix & f.is_in(VECTORED)).then(_int(1))
             .when(posix & f.is_in(STREAM_IO)).then(_int(1) * _int(2))
             .when(mpi_at).then(_int(3) * _type_bytes(4))
             .when(mpi_rw).then(_int(2) * _type_bytes(3)))
    whence = pl.when(posix & f.is_in(SEEKS)).then(_arg(2)).when(mpi_seek).then(_arg(2))
    # MPI calls name their communicator last (MPI_Barrier, MPI_Allreduce, ...) or first (MPI_Comm_rank)
    last = pl.col("args").list.last()
    is_comm = r"^(MPI_COMM\w*|\d+-\d+)$"
    comm = (pl.when((pl.col("layer") == "MPI") & last.str.contains(is_comm)).then(last)
            .when((pl.col("layer") == "MPI") & _arg(0).str.contains(is_comm)).then(_arg(0))
            .when(f == "MPI_File_open").then(_arg(0)))
    return [path.alias("path"), fd.alias("fd"), offset.alias("offset"), count.alias("count"),
            whence.alias("whence"), comm.alias("comm")]


def signature_table(raw, tables: list) -> pl.DataFrame:
    """One row per call signature of each of `tables` (RankTraces) in turn: func, layer, depth, args, typed
    columns."""
    names = np.array(list(raw.func_names) + ["?"] * (256 - len(raw.func_names)), dtype=object)
    func_id = np.concatenate([rt.sig_func for rt in tables])
    layer = np.array(LAYERS, dtype=object)[raw.func_classes()[func_id]]
    frame = pl.DataFrame({
        "func": pl.Series(names[func_id], dtype=pl.String),
        "layer": pl.Series(layer, dtype=pl.String).cast(LAYER),
        "depth": pl.Series(np.concatenate([rt.sig_depth for rt in tables]).astype(np.int64)),
        "argc": pl.Series(np.concatenate([rt.sig_argc for rt in tables]).astype(np.int64)),
        "text": pl.Series([a for rt in tables for a in rt.sig_args], dtype=pl.String),
    })
    # arguments never hold a space (Recorder stored spaces as '_'): split the joined text back
    frame = frame.with_columns(args=pl.when(pl.col("argc") > 0).then(pl.col("text").str.split(" "))
                               .otherwise(pl.lit([], dtype=pl.List(pl.String)))).drop("argc", "text")
    user = pl.col("layer") == "user"  # a user function's name is its second argument
    frame = frame.with_columns(func=pl.when(user).then(_arg(1).fill_null("?")).otherwise(pl.col("func")))
    return frame.with_columns(typed_columns())


def _distinct_tables(raw) -> tuple:
    """The distinct signature tables (all ranks of a trace merged across ranks share one) and the row where
    each rank's table starts among them."""
    tables, first_row, base, rows = [], {}, [], 0
    for rt in raw.ranks:
        if id(rt.sig_args) not in first_row:
            first_row[id(rt.sig_args)] = rows
            rows += len(rt.sig_args)
            tables.append(rt)
        base.append(first_row[id(rt.sig_args)])
    return tables, np.array(base, dtype=np.int64)


def calls_table(raw) -> pl.DataFrame:
    """Every call of every rank in order: the signature's columns gathered by each call's signature."""
    if not raw.ranks or not sum(len(rt.calls) for rt in raw.ranks):
        return pl.DataFrame(schema=CALL_SCHEMA)
    tables, base = _distinct_tables(raw)
    sigs = signature_table(raw, tables)
    rows = np.concatenate([rt.calls.astype(np.int64) + base[k] for k, rt in enumerate(raw.ranks)])
    out = sigs[pl.Series(rows)]
    return out.with_columns(
        rank=pl.Series(np.repeat(np.arange(len(raw.ranks), dtype=np.int64), [len(rt.calls) for rt in raw.ranks])),
        seq=pl.Series(np.concatenate([np.arange(len(rt.calls), dtype=np.int64) for rt in raw.ranks])),
        start=pl.Series(np.concatenate([rt.start for rt in raw.ranks])),
        end=pl.Series(np.concatenate([rt.end for rt in raw.ranks]))).select(list(CALL_SCHEMA))
