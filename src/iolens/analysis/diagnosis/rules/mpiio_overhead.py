"""MPIIO_OVERHEAD as a rule: the share of the MPI-IO read/write time on mostly-collective files not spent in
POSIX operations decides info / warning / critical, when the slowest rank spends at least
`mpiio_overhead_min_seconds` above the file system. The features are threshold-free (from the trace when the
log has one, else the counters: `diagnosis/mpiio_overhead.py`), so every threshold is exact on every job."""
from __future__ import annotations

import polars as pl

from ..units import fmt_pct, fmt_time

THRESHOLDS = ("mpiio_overhead_min_share", "mpiio_overhead_warning_share", "mpiio_overhead_critical_share",
              "mpiio_overhead_min_seconds", "min_io_time_share")
P = "mpiio_overhead_"


def features(ctx, edges=None) -> dict:
    """The overhead share, the MPI-IO time and the POSIX time inside it (all ranks), and the slowest rank's
    time above the file system (null: no mostly-collective file)."""
    from ..mpiio_overhead import measure

    m = measure(ctx)
    keys = ("share", "mpiio_time", "posix_time", "slowest_rank_overhead")
    if m is None:
        return {P + k: None for k in keys}
    return {P + "share": m["share"], P + "mpiio_time": m["total_mpiio"], P + "posix_time": m["total_posix"],
            P + "slowest_rank_overhead": m["slow_over"]}


def dtypes() -> dict:
    return {P + k: pl.Float64 for k in ("share", "mpiio_time", "posix_time", "slowest_rank_overhead")}


def rule(th) -> dict:
    share = pl.col(P + "share")
    found = ((share >= th.mpiio_overhead_min_share)
             & (pl.col(P + "slowest_rank_overhead") >= th.mpiio_overhead_min_seconds)).fill_null(False)
    level = (pl.when(share >= th.mpiio_overhead_critical_share).then(pl.lit("critical"))
             .when(share >= th.mpiio_overhead_warning_share).then(pl.lit("warning")).otherwise(pl.lit("info")))
    return {"severity": pl.when(found).then(level),
            "strong": (share >= th.mpiio_overhead_warning_share).fill_null(False) & found,
            "score": share, "share": share, "mpiio_time": pl.col(P + "mpiio_time"),
            "posix_time": pl.col(P + "posix_time")}


def title(v: dict, th) -> str:
    total, inside = v["mpiio_time"], v["posix_time"]
    return (f"MPI-IO above the file system: {fmt_pct(v['share'])} of the MPI-IO time ({fmt_time(total - inside)}"
            f" of {fmt_time(total)} over all ranks) is not spent in POSIX")
