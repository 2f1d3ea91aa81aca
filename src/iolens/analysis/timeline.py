"""What the DXT timeline shows at a glance: I/O phases, the slowest rank of each, heavy ranks, busiest ranks.

All functions take the `Log.segments` table (possibly filtered) and work per layer, since one MPI-IO call
and the POSIX calls it turns into are two views of the same I/O.

* An **I/O phase** is a span where some rank is doing I/O: the union of every operation's
  [start, end], with idle gaps shorter than `min_gap` bridged. When there are more than `max_phases`
  spans, only the longest idle gaps split phases.
* A rank's **busy time** in a phase is the time during which it has an operation running there: the union
  of its operations' intervals (`measures.busy_time`).
* A phase's **slowest rank** is the one with the most busy time; it is a **heavy rank** when it is busy at
  least `HEAVY_RATIO` times the median rank's busy time of that phase (and by a visible margin).

"Heavy" is the timeline's word for this load rule; a **straggler** is the diagnosis' STRAGGLER, a rank that
finishes its I/O late, and **imbalance** the ratio of the heaviest rank's load to the median's.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ..model.darshan import DXT_LAYERS, DXT_VIEW_ORDER
from .measures import busy_added, idle_gaps

LAYER_OF_MODULE = DXT_LAYERS
HEAVY_RATIO = 1.5
MIN_MARGIN = 0.05  # a heavy rank is also busier than the median by 5% of the phase duration


def phase_of_segments(start: np.ndarray, end: np.ndarray, *, max_phases: int = 48,
                      min_gap: float | None = None) -> np.ndarray:
    """Phase number (0, 1, ...) of every operation, in input order."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    order, busy_until, gap = idle_gaps(start, end)  # gap > 0: nobody is doing I/O between two operations
    span = float(busy_until[-1] - start[order[0]])
    if min_gap is None:
        min_gap = max(1e-5, 2e-3 * span)
    cut = np.flatnonzero(gap > min_gap)
    if len(cut) >= max_phases:
        cut = np.sort(cut[np.argsort(gap[cut], kind="stable")[len(cut) - (max_phases - 1):]])
    step = np.zeros(n, dtype=np.int32)
    step[cut + 1] = 1
    phase = np.empty(n, dtype=np.int32)
    phase[order] = np.cumsum(step, dtype=np.int32)
    return phase


def rank_busy(segments: pl.DataFrame, by=("rank",)) -> pl.DataFrame:
    """Per group: operations, bytes, busy time (`measures.busy_time` of its operations), first start, last end."""
    by = list(by)
    return segments.sort([*by, "start"]).with_columns(busy_added(by).alias("_added")).group_by(by).agg(
        pl.len().alias("ops"),
        pl.col("length").clip(lower_bound=0).sum().alias("bytes"),
        pl.col("_added").sum().alias("busy"),
        pl.col("start").min().alias("first"),
        pl.col("end").max().alias("last"),
    )


def io_phases(segments: pl.DataFrame, phase: np.ndarray | None = None, *, max_phases: int = 48,
              min_gap: float | None = None) -> list:
    """The I/O phases of one layer's segments, in time order, each with its slowest rank.

    `phase` gives each segment's phase number when the phases were found on more layers than this one."""
    if segments.is_empty():
        return []
    if phase is None:
        phase = phase_of_segments(segments["start"].to_numpy(), segments["end"].to_numpy(),
                                  max_phases=max_phases, min_gap=min_gap)
    seg = segments.select("rank", "length", "start", "end").with_columns(phase=pl.Series(phase))
    per_rank = rank_busy(seg, by=("phase", "rank"))
    per_phase = per_rank.group_by("phase").agg(
        pl.col("first").min().alias("start"),
        pl.col("last").max().alias("end"),
        pl.col("ops").sum().alias("ops"),
        pl.col("bytes").sum().alias("bytes"),
        pl.len().alias("ranks"),
        pl.col("rank").sort_by(["busy", "rank"], descending=[True, False]).first().alias("slowest_rank"),
        pl.col("busy").max().alias("slowest_busy"),
        pl.col("busy").median().alias("median_busy"),
        pl.col("busy").min().alias("fastest_busy"),
    ).sort("phase")
    return [_phase_row(row) for row in per_phase.iter_rows(named=True)]


def _phase_row(row: dict) -> dict:
    duration = row["end"] - row["start"]
    median = row["median_busy"] or 0.0
    ratio = row["slowest_busy"] / median if median > 0 else None
    heavy = (row["ranks"] > 1 and ratio is not None and ratio >= HEAVY_RATIO
             and row["slowest_busy"] - median >= MIN_MARGIN * duration)
    return {
        "phase": row["phase"] + 1,
        "start": row["start"],
        "end": row["end"],
        "duration": duration,
        "ops": row["ops"],
        "bytes": row["bytes"],
        "ranks": row["ranks"],
        "slowest_rank": row["slowest_rank"],
        "slowest_busy": row["slowest_busy"],
        "median_busy": median,
        "fastest_busy": row["fastest_busy"],
        "imbalance": ratio,
        "heavy": bool(heavy),
    }


def rank_summary(segments: pl.DataFrame, *, top: int = 5) -> dict:
    """Busiest ranks and heavy ranks of one layer over the whole (filtered) trace."""
    if segments.is_empty():
        return {"busiest": [], "heavy_ranks": [], "median_busy": 0.0}
    busy = rank_busy(segments).sort(["busy", "rank"], descending=[True, False])
    median = float(busy["busy"].median() or 0.0)
    rows = busy.head(top).to_dicts()
    heavy = []
    if busy.height > 1 and median > 0:
        slow = busy.filter(pl.col("busy") >= HEAVY_RATIO * median)
        heavy = [{**r, "ratio": r["busy"] / median} for r in slow.head(top * 4).to_dicts()]
    return {"busiest": rows, "heavy_ranks": heavy, "median_busy": median}


def timeline_analysis(segments: pl.DataFrame, *, max_phases: int = 48) -> dict:
    """layer -> {phases, busiest, heavy_ranks, median_busy} for every traced layer.

    Phases are found on all layers together (a POSIX call happens inside the MPI-IO call that made it), so
    both facets of the timeline shade the same spans; each layer then gets its own slowest ranks."""
    if segments.is_empty():
        return {}
    phase = phase_of_segments(segments["start"].to_numpy(), segments["end"].to_numpy(), max_phases=max_phases)
    out = {}
    for module in DXT_VIEW_ORDER:
        mask = (segments["module"] == module).to_numpy()
        if not mask.any():
            continue
        part = segments.filter(pl.Series(mask))
        out[LAYER_OF_MODULE[module]] = {"phases": io_phases(part, phase[mask]), **rank_summary(part)}
    return out
