"""What the findings naming ranks share: the ranks or files of some traced operations, heaviest first, and what
the other ranks do while they wait (RANK_IMBALANCE, STRAGGLER, SERIALIZED_IO, DATA_SIEVING, ...)."""
from __future__ import annotations

import numpy as np

from ...segments import Segments, float_sum, groups
from ..units import fmt_time


def heaviest_ranks(rank: np.ndarray, length: np.ndarray) -> list:
    """The ranks of some traced operations, the most bytes first (ties: the lower rank)."""
    ranks, inv = np.unique(rank, return_inverse=True)
    nbytes = np.zeros(len(ranks), dtype=np.int64)
    np.add.at(nbytes, inv, length)
    return ranks[np.lexsort((ranks, -nbytes))].tolist()


def files_by_bytes(seg: Segments) -> list:
    """The file ids of some traced operations, the most bytes first (the lowest id among equals)."""
    first, inv = groups(seg.file_id)
    nbytes = np.zeros(len(first), dtype=np.int64)  # integers: summed exactly in any order
    np.add.at(nbytes, inv, seg.length)
    return seg.file_id[first][np.lexsort((seg.file_id[first], -nbytes))].tolist()


def mpiio_meta_time_per_rank(ctx) -> float | None:
    """The mean MPI-IO metadata time (open, close, sync, set_view: where ranks wait for each other in
    collective file calls) per rank, from the counters."""
    if not ctx.has("MPI-IO") or not ctx.records["MPI-IO"].has("MPIIO_F_META_TIME"):
        return None
    return float_sum(ctx.column("MPI-IO", "MPIIO_F_META_TIME")) / ctx.nprocs


def meanwhile(ctx, metrics: dict) -> str:
    """What the other ranks do while they wait: their MPI-IO metadata time (close, collectives)."""
    meta = mpiio_meta_time_per_rank(ctx)
    if not meta:
        return ""
    metrics["mean_rank_mpiio_meta_time_s"] = meta
    return (f" Meanwhile the ranks spend {fmt_time(meta)} each on average in MPI-IO metadata calls (open, close, "
            "sync, set_view): waiting for a late rank inside MPI_File_close or a collective file call shows up "
            "there; waiting in MPI_Barrier or in compute is not recorded by Darshan.")
