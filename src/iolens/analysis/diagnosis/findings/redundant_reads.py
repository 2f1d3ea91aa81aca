"""REDUNDANT_READS: bytes read far exceed the extent of the files read (re-reads).

The rule and its features are REDUNDANT_WRITES' in the other direction (`_redundancy`). DATA_SIEVING supersedes
it when it names all of its files: the re-reads are the read half of read-modify-write.
"""
from __future__ import annotations

from ..insight import Recommendation
from . import _redundancy

CODE, OP = "REDUNDANT_READS", "read"


def recommendations(ctx, fids) -> list:
    return [read_once_broadcast(ctx.has_layer("mpiio")), Recommendation(
        "Keep data you read again in memory",
        "If the same data is read repeatedly by the same rank (e.g. every epoch or time step), cache it "
        "in memory or on node-local storage after the first read.", "", "text")]


def report(ctx, v) -> list:
    return _redundancy.report(ctx, v, OP, recommendations)


def read_once_broadcast(mpiio: bool = True) -> Recommendation:
    """An MPI job's ranks reading the same data (`mpiio`: it calls MPI-IO, whose collective read can too)."""
    return Recommendation(
        "Read shared input once and broadcast it",
        "When every rank reads the same data, have one rank" + (" (or a collective read)" if mpiio else "")
        + " fetch it and distribute it over the network, which is much faster than N identical file-system reads.",
        "if (rank == 0) pread(fd, buf, n, 0);\n"
        "MPI_Bcast(buf, n, MPI_BYTE, 0, comm);"
        + ("\n/* or: MPI_File_read_at_all(fh, 0, buf, n, MPI_BYTE, MPI_STATUS_IGNORE); with romio_cb_read=enable */"
           if mpiio else ""),
        "c", needs=("mpi",))


FINDING = _redundancy.finding(CODE, OP, "Bytes read far exceed the extent of the files read.", report)
