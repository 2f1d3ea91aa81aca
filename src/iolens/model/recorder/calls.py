"""The `calls` table of a Recorder trace: one row per call of every rank, with typed columns for the common
arguments, built per call signature (few) and gathered per call (many)."""
from __future__ import annotations

import numpy as np
import polars as pl

LAYERS = ("POSIX", "MPI-IO", "MPI", "HDF5", "user")  # Recorder's function classes 0..4, in that order
LAYER = pl.Enum(list(LAYERS))

# argument positions: (path, offset, count, whence) per function as Recorder 2.4 stores them (None: absent)
_POSIX_ARGS = {
    **{f: (0, 3, 2, None) for f in ("pwrite", "pwrite64", "pread", "pread64")},
    **{f: (0, None, 2, None) for f in ("write", "read")},
    **{f: (0, None, 1, None) for f in ("writev", "readv")},
    **{f: (3, None, None, None) for f in ("fwrite", "fread")},  # count = size * nmemb, below
    **{f: (0, 1, None, 2) for f in ("lseek", "lseek64", "fseek", "fseeko")},
    **{f: (1, None, None, None) for f in ("__xstat", "__xstat64", "__lxstat", "__lxstat64", "__fxstat",
                                          "__fxstat64")},
}
MPI_TYPE_BYTES = {
    "MPI_BYTE": 1, "MPI_CHAR": 1, "MPI_SIGNED_CHAR": 1, "MPI_UNSIGNED_CHAR": 1, "MPI_PACKED": 1,
    "MPI_INT8_T": 1, "MPI_UINT8_T": 1, "MPI_C_BOOL": 1, "MPI_SHORT": 2, "MPI_UNSIGNED_SHORT": 2,
    "MPI_INT16_T": 2, "MPI_UINT16_T": 2, "MPI_INT": 4, "MPI_UNSIGNED": 4, "MPI_FLOAT": 4, "MPI_INT32_T": 4,
    "MPI_UINT32_T": 4, "MPI_LONG": 8, "MPI_UNSIGNED_LONG": 8, "MPI_LONG_LONG": 8, "MPI_LONG_LONG_INT": 8,
    "MPI_UNSIGNED_LONG_LONG": 8, "MPI_DOUBLE": 8, "MPI_INT64_T": 8, "MPI_UINT64_T": 8, "MPI_LONG_DOUBLE": 16,
    "MPI_C_DOUBLE_COMPLEX": 16, "MPI_DOUBLE_COMPLEX": 16, "MPI_C_FLOAT_COMPLEX": 8, "MPI_COMPLEX": 8,
}

CALL_SCHEMA = {"rank": pl.Int64, "seq": pl.Int64, "func": pl.String, "layer": LAYER, "depth": pl.Int64,
               "start": pl.Float64, "end": pl.Float64, "args": pl.List(pl.String), "path": pl.String,
               "fd": pl.String, "offset": pl.Int64, "count": pl.Int64, "whence": pl.String, "comm": pl.String}


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _arg(args, i):
    return args[i] if i is not None and i < len(args) else None


def typed_args(func: str, layer: int, args: list) -> tuple:
    """(path, fd, offset, count, whence, comm, datatype) of one signature; count is in bytes for POSIX
    calls and in elements of `datatype` for MPI-IO ones."""
    path = fd = offset = count = whence = comm = datatype = None
    if layer == 0:
        pos = _POSIX_ARGS.get(func)
        if pos is not None:
            p, o, c, w = pos
            path, offset, count, whence = _arg(args, p), _int(_arg(args, o)), _int(_arg(args, c)), _arg(args, w)
            if func in ("fwrite", "fread"):
                size, nmemb = _int(_arg(args, 1)), _int(_arg(args, 2))
                count = size * nmemb if size is not None and nmemb is not None else None
        elif args and args[0].startswith("/"):  # open, close, fsync, mkdir, unlink, ...: the path comes first
            path = args[0]
    elif layer == 1:
        if func == "MPI_File_open":
            comm, path, fd = _arg(args, 0), _arg(args, 1), _arg(args, 4)
        else:
            fd = _arg(args, 0)
            at = "_at" in func
            if func in ("MPI_File_seek", "MPI_File_seek_shared"):
                offset, whence = _int(_arg(args, 1)), _arg(args, 2)
            elif "read" in func or "write" in func:
                # (fh, [offset,] buf, count, datatype, ...)
                offset = _int(_arg(args, 1)) if at else None
                count = _int(_arg(args, 3 if at else 2))
                datatype = _arg(args, 4 if at else 3)
    elif layer == 2:
        comm = next((a for a in reversed(args) if a.startswith("MPI_COMM") or _is_comm_id(a)), None)
    return path, fd, offset, count, whence, comm, datatype


def _is_comm_id(text: str) -> bool:
    """Recorder names communicators other than WORLD/SELF '<creator world rank>-<serial>'."""
    a, sep, b = text.partition("-")
    return bool(sep) and a.isdigit() and b.isdigit()


def signature_table(raw) -> pl.DataFrame:
    """One row per call signature of every rank: rank, sig, func, layer, depth, args and the typed columns."""
    cols = {k: [] for k in ("rank", "sig", "func", "layer", "depth", "args", "path", "fd", "offset", "count",
                            "whence", "comm")}
    names = raw.func_names
    for rt in raw.ranks:
        for sig, (f, depth, args) in enumerate(zip(rt.sig_func.tolist(), rt.sig_depth.tolist(), rt.sig_args)):
            layer = raw.func_class(f)
            func = names[f] if f < len(names) else (args[1] if len(args) > 1 else "?")
            path, fd, offset, count, whence, comm, datatype = typed_args(func, layer, args)
            if count is not None and datatype is not None:
                # elements -> bytes; a derived datatype's size is not in the trace: its count stays unknown
                size = MPI_TYPE_BYTES.get(datatype)
                count = count * size if size else None
            for k, v in (("rank", rt.rank), ("sig", sig), ("func", func), ("layer", LAYERS[layer]),
                         ("depth", depth), ("args", args), ("path", path), ("fd", fd), ("offset", offset),
                         ("count", count), ("whence", whence), ("comm", comm)):
                cols[k].append(v)
    schema = {k: CALL_SCHEMA.get(k, pl.Int64) for k in cols}
    return pl.DataFrame(cols, schema=schema)


def calls_table(raw) -> pl.DataFrame:
    """Every call of every rank in order: the signature's columns gathered by each call's signature."""
    sigs = signature_table(raw)
    base = np.zeros(len(raw.ranks) + 1, dtype=np.int64)  # rank r's signatures start at row base[r]
    np.cumsum([len(rt.sig_args) for rt in raw.ranks], out=base[1:])
    if not raw.ranks or not sum(len(rt.calls) for rt in raw.ranks):
        return pl.DataFrame(schema=CALL_SCHEMA)
    rows = np.concatenate([rt.calls.astype(np.int64) + base[k] for k, rt in enumerate(raw.ranks)])
    out = sigs.drop("sig")[pl.Series(rows)]
    seq = np.concatenate([np.arange(len(rt.calls), dtype=np.int64) for rt in raw.ranks])
    return out.with_columns(
        seq=pl.Series(seq), start=pl.Series(np.concatenate([rt.start for rt in raw.ranks])),
        end=pl.Series(np.concatenate([rt.end for rt in raw.ranks]))).select(list(CALL_SCHEMA))
