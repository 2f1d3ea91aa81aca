"""What every rule shares: the job facts it reads, `matters`/`judge` and the global demotion as expressions."""
from __future__ import annotations

import functools

import polars as pl

from ...measures import largest_rank_sum
from ...measures import small_bins  # noqa: F401 - the bins below an edge, as the checks count them
from ...segments import float_sum
from ....model.darshan import SIZE_BINS

# the size-bin edges a threshold in bytes can fall between: counters round a limit down to one of these
EDGES = tuple(hi for _, _, hi in SIZE_BINS[:-1])  # 100 B .. 1 GiB
EDGE_NAMES = ("100", "1K", "10K", "100K", "1M", "4M", "10M", "100M", "1G", "max")  # "max": every bin (diagnose only)
SEVERITY_RANK = {"critical": 3, "warning": 2, "info": 1}

RUN_TIME, IO_TIME_SHARE = "rule_run_time", "rule_io_time_share"
COMMON_FEATURES = {RUN_TIME: pl.Float64, IO_TIME_SHARE: pl.Float64}
COMMON_THRESHOLDS = ("strong_share", "min_runtime_share", "min_stake_seconds", "min_stake_floor",
                     "min_io_time_share")


class RuleError(ValueError):
    """A threshold value the stored features cannot answer (one line)."""


def stage_name(code: str, name: str) -> str:
    return f"_{code}.{name}"


def stage(code: str, name: str) -> pl.Expr:
    """The column of stage `name` of `code`'s rule: a rule is evaluated stage by stage (`rules.stages`), each
    a column the later ones read, so that no expression repeats another (a million rows in seconds)."""
    return pl.col(stage_name(code, name))


def edge_index(limit: int) -> int:
    """How many of Darshan's size bins hold only requests of at most `limit` bytes (`small_bins`): 0..10."""
    return sum(1 for _, _, hi in SIZE_BINS if hi <= limit)


def edge_suffix(k: int) -> str:
    return f"le{EDGE_NAMES[k - 1]}"


@functools.cache
def edge_names(stem: str, edges: tuple) -> tuple:
    """The features `stem` at each size-bin edge, `{stem}_le{edge}` (made once per process: per log, the
    f-strings cost more than the rule's sums)."""
    return tuple(f"{stem}_{edge_suffix(k)}" for k in edges)


def common_features(ctx) -> dict:
    """The job facts every rule reads, as the diagnosis's `Context` sees them."""
    return {RUN_TIME: ctx.run_time, IO_TIME_SHARE: ctx.io_time_share}


def matters(seconds: pl.Expr, th) -> pl.Expr:
    """`Context.matters`: is a problem costing the busiest rank `seconds` worth a warning for this run?

    At least `min_stake_floor`, and either at least `min_runtime_share` of the run time or at least
    `min_stake_seconds` (a run of unknown length: any cost above the floor)."""
    run = pl.col(RUN_TIME)
    return (pl.when(seconds < th.min_stake_floor).then(False)
            .when(run <= 0).then(True)
            .otherwise((seconds >= th.min_runtime_share * run) | (seconds >= th.min_stake_seconds)))


def judge(stake: pl.Expr, share: pl.Expr, th) -> tuple:
    """`Context.judge`: (severity, strong) of a pattern costing `stake` seconds and covering `share`.

    Strong (share at least `strong_share`) is structural: a warning on any run; a weaker pattern is a warning
    only when its cost matters (`matters`), else info."""
    strong = (share >= th.strong_share).fill_null(False)
    severity = pl.when(strong | matters(stake, th)).then(pl.lit("warning")).otherwise(pl.lit("info"))
    return severity, strong


def demoted(severity: pl.Expr, demotable: pl.Expr, th) -> pl.Expr:
    """The global post-pass: a demotable warning or critical is info when the slowest rank spends less than
    `min_io_time_share` of the run in I/O (fixing it cannot speed the job up noticeably)."""
    share = pl.col(IO_TIME_SHARE)
    negligible = (share.is_not_null() & (share < th.min_io_time_share) & demotable
                  & severity.is_in(["critical", "warning"])).fill_null(False)
    return pl.when(negligible).then(pl.lit("info")).otherwise(severity)


def counter_stake(ctx, rank, values) -> float:
    """The largest per-rank sum of `values` (seconds, one per counter record): a rank's own records plus an
    even share of the records of files shared by all ranks."""
    own = largest_rank_sum(rank, values)
    shared = float(float_sum(values[rank < 0]) or 0.0) / ctx.nprocs if (rank < 0).any() else 0.0
    return float(own or 0.0) + shared


def dxt_stake(seg: pl.DataFrame) -> float:
    """The largest per-rank time spent in the given traced operations."""
    if seg.is_empty():
        return 0.0
    return float(seg.group_by("rank").agg((pl.col("end") - pl.col("start")).sum().alias("t"))["t"].max() or 0.0)
