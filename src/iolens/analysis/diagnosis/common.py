"""What every finding shares: the job facts a rule reads, `matters`/`judge` and the global demotion as
expressions, and the thresholds shared by many findings (the judging ones, the cost model's `fs_*`)."""
from __future__ import annotations

import functools

import polars as pl

from ..measures import largest_rank_sum
from ..segments import float_sum
from ...model.darshan import SIZE_BINS
from .finding import Threshold

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# the size-bin edges a threshold in bytes can fall between: counters round a limit down to one of these
EDGES = tuple(hi for _, _, hi in SIZE_BINS[:-1])  # 100 B .. 1 GiB
EDGE_NAMES = ("100", "1K", "10K", "100K", "1M", "4M", "10M", "100M", "1G", "max")  # "max": every bin (diagnose only)
SEVERITY_RANK = {"critical": 3, "warning": 2, "info": 1}

RUN_TIME, IO_TIME_SHARE = "rule_run_time", "rule_io_time_share"
COMMON_FEATURES = {RUN_TIME: pl.Float64, IO_TIME_SHARE: pl.Float64}

# how much a pattern must cost to matter (`judge`, `matters`, the demotion): every finding reads these
JUDGING = (
    Threshold("strong_share", 0.5, "share",
              "A pattern covering at least this share (of the requests, bytes, or the busiest rank's I/O time) "
              "is structural: at least a warning on any run, however cheap it is on the machine that made the "
              "log (see the cost model)."),
    Threshold("min_runtime_share", 0.05, "share",
              "Imbalance, stragglers, serialization and metadata only matter when the time at stake is at least "
              "this share of the run time."),
    Threshold("min_stake_seconds", 60.0, "seconds",
              "... or at least this long (a minute of every rank waiting is worth fixing in a long run)."),
    Threshold("min_stake_floor", 0.25, "seconds",
              "... but never when less than this (tiny test runs: a 30 ms open is not a problem)."),
    Threshold("min_io_time_share", 0.01, "share",
              "When the slowest rank spends less than this share of the run time in I/O, warnings are "
              "demoted to info: fixing them cannot speed the job up noticeably."),
    Threshold("saving_noise_ratio", 1.25, "ratio",
              "A finding whose fixes are expected to save less than the noise of two identical runs is info, not "
              "a warning: two runs' slowest-rank I/O times within this factor of each other (1.25: a fifth of "
              "the time, the median difference of the same run repeated in tests/data/pairs; `iolens compare` "
              "calls a change real only past 1.5×) ..."),
    Threshold("saving_noise_seconds", 0.01, "seconds", "... or within this many seconds (compare's floor)."),
)
COMMON_THRESHOLDS = tuple(t.name for t in JUDGING)
# a traced training loop (DFTracer's spans): the engine's post-pass for I/O hidden behind compute
LOOP = (
    Threshold("loop_io_wait_share", 0.05, "share",
              "When a traced training loop (DFTracer spans) waits for I/O less than this share of its time after "
              "its first batch (its waits for data, its checkpoints, its own calls), warnings are demoted to "
              "info: the rest of the I/O overlaps its compute."),
)
# read by several findings
REQUESTS = (
    Threshold("large_request_bytes", 1 * MiB, "bytes",
              "Requests of at least this size are efficient even when random or independent "
              "(RANDOM_ACCESS and NO_COLLECTIVE_IO only count smaller ones)."),
)
REDUNDANCY = (
    Threshold("redundant_ratio", 1.5, "ratio",
              "REDUNDANT_READS/WRITES: bytes moved are at least this multiple of the file extent ..."),
    Threshold("redundant_min_bytes", 64 * MiB, "bytes", "... and the excess is at least this many bytes."),
)
# the file-system cost model (costmodel.py); `--fs-profile FILE` sets these too
FS_PREFIX = "fs_"
COST_MODEL = (
    Threshold("fs_request_latency", 0.5e-3, "seconds",
              "Cost model: service time of one request at a storage server (RPC + seek) when requests "
              "are small or random."),
    Threshold("fs_lock_latency", 2e-3, "seconds",
              "Cost model: one extent-lock conflict (a request sharing a stripe with another rank's request)."),
    Threshold("fs_ost_bandwidth", 1 * GiB, "bytes", "Cost model: bytes per second one storage server (OST) "
                                                    "streams."),
    Threshold("fs_osts", 8, "count", "Cost model: storage servers (OSTs) a shared file is spread over."),
    Threshold("fs_scale_ranks", 1024, "count",
              "Cost model: the rank count the projection is made for (weak scaling: every rank does what "
              "the average rank of this run did)."),
)
SHARED_THRESHOLDS = JUDGING + LOOP + REQUESTS + REDUNDANCY + COST_MODEL


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


def least_mattering(th) -> pl.Expr:
    """The least seconds that matter for the run (`matters` as one bound: it is monotone in them)."""
    run = pl.col(RUN_TIME)
    return (pl.when(run <= 0).then(pl.lit(th.min_stake_floor))
            .otherwise(pl.max_horizontal(pl.lit(th.min_stake_floor),
                                         pl.min_horizontal(th.min_runtime_share * run, pl.lit(th.min_stake_seconds)))))


def judge(stake: pl.Expr, share: pl.Expr, th) -> tuple:
    """`Context.judge`: (severity, strong) of a pattern costing `stake` seconds and covering `share`.

    Strong (share at least `strong_share`) is structural: a warning on any run; a weaker pattern is a warning
    only when its cost matters (`matters`), else info."""
    strong = (share >= th.strong_share).fill_null(False)
    severity = pl.when(strong | matters(stake, th)).then(pl.lit("warning")).otherwise(pl.lit("info"))
    return severity, strong


def noise(th) -> pl.Expr:
    """Seconds of the slowest rank's I/O time two identical runs can differ by: what `iolens compare` calls no
    real change, `saving_noise_seconds` or a factor `saving_noise_ratio` of the job's I/O time."""
    io = pl.col(IO_TIME_SHARE) * pl.col(RUN_TIME)
    return pl.max_horizontal(pl.lit(float(th.saving_noise_seconds)), io * _noise_share(th))


def _noise_share(th) -> float:
    """The share of the I/O time within `saving_noise_ratio` (a ratio of 1 or less: none)."""
    return 1.0 - 1.0 / max(float(th.saving_noise_ratio), 1.0)


def noise_seconds(ctx) -> float:
    """`noise` of one log, in Python (the per-log findings: no query)."""
    th = ctx.th
    share = ctx.io_time_share
    io = share * ctx.run_time if share is not None else None
    floor = float(th.saving_noise_seconds)
    return floor if io is None else max(floor, io * _noise_share(th))


def under_noise(saving: pl.Expr, th) -> pl.Expr:
    """Is an expected saving (seconds; null: not estimated) under the `noise` of two identical runs?"""
    return (saving < noise(th)).fill_null(False)


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
