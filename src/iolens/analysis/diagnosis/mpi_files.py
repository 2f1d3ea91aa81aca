"""What NO_COLLECTIVE_IO and COLLECTIVE_IO share: the MPI-IO files' requests and ranks."""
from __future__ import annotations

import numpy as np

from ...model.darshan import SIZE_BINS

OPS = (("write", "WRITES", "WRITE", "WRITTEN"), ("read", "READS", "READ", "READ"))


def mpi_file_ranks(ctx):
    """How many ranks opened each MPI-IO file (`Context.file_ranks`), or None without MPI-IO records."""
    return ctx.file_ranks("MPI-IO") if ctx.has("MPI-IO") else None


def mpi_table(ctx):
    """Per MPI-IO file (in id order), numpy columns: independent, collective and other requests, bytes,
    requests below the large size, and the ranks on it. Computed once a log."""
    return ctx.memo("mpi_table", lambda: _mpi_table_of(ctx))


def _mpi_table_of(ctx):
    if not ctx.has("MPI-IO"):
        return None
    large = int(ctx.th.large_request_bytes)
    below = [b for b, lo, _ in SIZE_BINS if lo < large]
    total = ctx.per_file_total  # numpy per-file integer sums: a few records cost less than a group-by
    ids, _ = ctx.file_groups("MPI-IO")
    cols = {"file_id": ids}
    for op, OPS_, OP, B in OPS:
        cols[f"indep_{op}s"] = total("MPI-IO", f"MPIIO_INDEP_{OPS_}")
        cols[f"coll_{op}s"] = total("MPI-IO", f"MPIIO_COLL_{OPS_}")
        cols[f"other_{op}s"] = total("MPI-IO", f"MPIIO_SPLIT_{OPS_}", f"MPIIO_NB_{OPS_}")
        cols[f"bytes_{op}"] = total("MPI-IO", f"MPIIO_BYTES_{B}")
        cols[f"below_large_{op}s"] = total("MPI-IO", *(f"MPIIO_SIZE_{OP}_AGG_{b}" for b in below))
    cols["nranks"] = mpi_file_ranks(ctx)
    return cols


def by_largest(table: dict, rows: np.ndarray, column: str) -> np.ndarray:
    """`rows` of the table, the largest `column` first (ties in file id order)."""
    return rows[np.argsort(-table[column][rows], kind="stable")]


def traced(seg, op: str, fids):
    """The traced operations of kind `op` on the files `fids`."""
    return seg.take(seg.is_op(op) & np.isin(seg.file_id, np.asarray(fids, dtype=np.uint64)))
