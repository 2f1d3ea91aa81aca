"""What the request findings share (SMALL_IO, MISALIGNED_IO, RANDOM_ACCESS, HDF5_METADATA, the redundant ones):
the POSIX trace's columns, the counters' size bins, and the busiest rank's time in some requests."""
from __future__ import annotations

import numpy as np
import polars as pl

from ....model.darshan import SIZE_BINS
from ...segments import group_sums, groups

SIZE_NAMES = {OP: tuple(f"POSIX_SIZE_{OP}_{b}" for b, _, _ in SIZE_BINS) for OP in ("READ", "WRITE")}
SIZES = SIZE_NAMES["READ"] + SIZE_NAMES["WRITE"]  # every size bin, in the counters' order (a slice)


def size_rows(ctx, OP: str, top: int = len(SIZE_BINS)) -> np.ndarray:
    """The first `top` size bins (default: all) of kind `OP` x records (integers, clipped at 0): a slice of the POSIX
    counters, not a column each."""
    return ctx.counter_rows("POSIX", SIZE_NAMES[OP][:top])


def trace_arrays(ctx) -> dict:
    """The POSIX trace's columns the request findings read, once per log: operation-kind masks ("write",
    "read"), file_id, offset, length, start, end, rank and duration."""
    def compute():
        seg = ctx.trace_posix
        return {"write": seg.is_op("write"), "read": seg.is_op("read"), "file_id": seg.file_id,
                "offset": seg.offset, "length": seg.length, "start": seg.start, "end": seg.end, "rank": seg.rank,
                "duration": seg.duration}
    return ctx.memo("requests.posix_trace_arrays", compute)


def column_stakes(ctx, rank: np.ndarray, columns: np.ndarray) -> list:
    """`common.counter_stake` of each row of `columns` (columns x records), with the same bits: per-rank sums in
    record order (as `np.bincount`), the shared records' sums as polars sums them (`float_sums`)."""
    own = rank >= 0
    every = bool(own.all())  # no shared record (most logs): no mask to apply
    out = np.zeros(columns.shape[0])
    if every or own.any():
        mine, columns_mine = (rank, columns) if every else (rank[own], columns[:, own])
        nranks, k = int(mine.max()) + 1, columns.shape[0]
        # every (rank, column) sum as np.add.at adds them (from 0.0, in record order: a column's records are
        # met in order), in one bincount over the cells (np.add.at over rows costs a millisecond on two
        # thousand records)
        cells = (mine * k + np.arange(k)[:, None]).ravel()
        per_rank = np.bincount(cells, weights=columns_mine.ravel(), minlength=nranks * k).reshape(nranks, k)
        out = per_rank.max(axis=0)
    if not every:
        out = out + float_sums(columns[:, ~own].T) / ctx.nprocs
    return out.tolist()


SEQUENTIAL_SUM_BELOW = 128  # polars sums fewer floats than its pairwise block in order, one by one


def float_sums(values: np.ndarray) -> np.ndarray:
    """`context.float_sum` of each column (0.0 for a null or signed zero), without a Series per column."""
    if len(values) < SEQUENTIAL_SUM_BELOW:
        sums = np.cumsum(values, axis=0)[-1]
    else:
        sums = np.array([pl.Series(values[:, i], dtype=pl.Float64).sum() or 0.0 for i in range(values.shape[1])])
    return np.where(sums == 0, 0.0, sums)


def trace_stake(ctx, mask: np.ndarray, every: bool | None = None) -> float:
    """`rank_stake` of the traced POSIX requests where `mask` is true; when that is every request (`every`,
    if known), the largest of the whole trace's per-rank times (`Context.rank_times`: the same group-by, once
    per log for the request findings and RANK_IMBALANCE)."""
    seg = ctx.trace_posix
    if (bool(mask.all()) if every is None else every) and len(mask):
        return float(ctx.rank_times(seg).max())
    return rank_stake(seg.rank[mask], seg.duration[mask])


def rank_stake(rank: np.ndarray, duration: np.ndarray) -> float:
    """`common.dxt_stake` of the requests with these ranks and durations: the largest per-rank sum (a polars
    group-by's float sums, `segments.group_sums`)."""
    if not len(rank):
        return 0.0
    first, inv = groups(rank)
    return float(group_sums(inv, duration, len(first)).max())


def most_first(values: np.ndarray) -> list:
    """The distinct values by how often they occur, most first (ties: smallest first)."""
    distinct, n = np.unique(values, return_counts=True)
    return distinct[np.lexsort((distinct, -n))].tolist()


def bins_below(limit: int) -> int:
    """How many size bins may hold requests smaller than `limit` (a bin counts when its lower edge is below
    it): 0..10."""
    return sum(1 for _, lo, _ in SIZE_BINS if lo < limit)
