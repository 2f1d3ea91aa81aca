"""DATA_SIEVING as a rule: files written or read through MPI-IO whose POSIX layer reads at least
`sieving_min_bytes` more than MPI-IO asked for, and at least `sieving_min_share` of the bytes written (or asked
for), or of the POSIX time.

Which files count depends on both sieving thresholds, and the busiest rank's time over them is not a sum of
per-file values: the features hold the finding at the build's thresholds, and a job that could be found at
others (its largest unrequested read reaches `sieving_min_bytes`) is stale there: a rebuild answers.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ..units import fmt_bytes
from .common import COMMON_THRESHOLDS, counter_stake, judge

SIEVING = ("sieving_min_bytes", "sieving_min_share")
THRESHOLDS = SIEVING + COMMON_THRESHOLDS
P = "data_sieving_"


def largest_extra(ctx):
    """The most bytes one MPI-IO file (written or read) reads at POSIX beyond what MPI-IO asked for, or None
    (no such file). Most logs have none worth a look: this spares them the per-file tables."""
    if ctx.counters("MPI-IO") is None or ctx.counters("POSIX") is None:
        return None
    mpi_ids, _ = ctx.file_groups("MPI-IO")
    posix_ids, _ = ctx.file_groups("POSIX")
    mpi_read = ctx.per_file_total("MPI-IO", "MPIIO_BYTES_READ")
    mpi_written = ctx.per_file_total("MPI-IO", "MPIIO_BYTES_WRITTEN")
    posix_read = ctx.per_file_total("POSIX", "POSIX_BYTES_READ")
    both, in_mpi, in_posix = np.intersect1d(mpi_ids, posix_ids, assume_unique=True, return_indices=True)
    used = (mpi_written[in_mpi] > 0) | (mpi_read[in_mpi] > 0)
    extra = np.maximum(posix_read[in_posix] - mpi_read[in_mpi], 0)[used]
    return int(extra.max()) if extra.size else None


def files(ctx):
    """The per-file table of the files found at the log's thresholds (largest unrequested reads first), or None."""
    from ..context import clip

    th = ctx.th
    mpi, posix = ctx.counters("MPI-IO"), ctx.counters("POSIX")
    m = mpi.group_by("file_id").agg(clip("MPIIO_BYTES_READ").sum().alias("mpi_read"),
                                    clip("MPIIO_BYTES_WRITTEN").sum().alias("mpi_written"),
                                    clip("MPIIO_INDEP_WRITES").sum().alias("indep_writes"),
                                    clip("MPIIO_COLL_WRITES").sum().alias("coll_writes"),
                                    clip("MPIIO_INDEP_READS").sum().alias("indep_reads"),
                                    clip("MPIIO_COLL_READS").sum().alias("coll_reads"))
    p = posix.group_by("file_id").agg(clip("POSIX_BYTES_READ").sum().alias("posix_read"),
                                      clip("POSIX_READS").sum().alias("posix_reads"),
                                      clip("POSIX_BYTES_WRITTEN").sum().alias("posix_written"),
                                      (clip("POSIX_F_READ_TIME") + clip("POSIX_F_WRITE_TIME")).sum().alias("posix_time"),
                                      clip("POSIX_F_READ_TIME").sum().alias("posix_read_time"))
    # written files: read-modify-write, measured against the bytes written; read-only files: sieved reads,
    # measured against the bytes the application asked for
    j = (m.join(p, on="file_id").filter((pl.col("mpi_written") > 0) | (pl.col("mpi_read") > 0))
         .with_columns((pl.col("posix_read") - pl.col("mpi_read")).clip(lower_bound=0).alias("extra"),
                       (pl.col("mpi_written") > 0).alias("written"))
         .with_columns(pl.when(pl.col("written")).then(pl.col("posix_written")).otherwise(pl.col("mpi_read"))
                       .alias("base")))
    # time of the unrequested reads: the POSIX read time, in proportion when the application also reads
    j = j.with_columns((pl.col("posix_read_time") * pl.col("extra") / pl.max_horizontal(pl.col("posix_read"), pl.lit(1)))
                       .alias("extra_time"))
    j = j.filter((pl.col("extra") >= th.sieving_min_bytes) &
                 ((pl.col("extra") >= th.sieving_min_share * pl.col("base")) |
                  (pl.col("extra_time") >= th.sieving_min_share * pl.col("posix_time"))))
    return None if j.is_empty() else j.sort("extra", descending=True)


def stake(ctx, j) -> float:
    """The busiest rank's POSIX read time on the found files, in proportion to their unrequested bytes."""
    from ..context import clip

    frac = j.select("file_id", (pl.col("extra") / pl.max_horizontal(pl.col("posix_read"), pl.lit(1))).alias("frac"))
    recs = ctx.counters("POSIX").join(frac, on="file_id")
    values = recs.select((clip("POSIX_F_READ_TIME") * pl.col("frac")).fill_nan(0.0).fill_null(0.0)
                         .cast(pl.Float64)).to_series().to_numpy()
    return counter_stake(ctx, recs["rank"].to_numpy(), values)


def measure(ctx) -> tuple:
    """(features, the found files' table or None, the stake): once a log (the rule's features, the check, and
    REDUNDANT_READS's dedupe all read it)."""
    return ctx.memo("data_sieving", lambda: _measure(ctx))


def _measure(ctx) -> tuple:
    th = ctx.th
    row = {P + "largest_extra": None, P + "at_min_bytes": float(th.sieving_min_bytes),
           P + "at_min_share": float(th.sieving_min_share), P + "extra": None, P + "base": None, P + "stake": None,
           P + "writes": None, P + "written": None, P + "asked": None}
    row[P + "largest_extra"] = largest = largest_extra(ctx)
    if largest is None or largest < th.sieving_min_bytes:
        return row, None, None
    j = files(ctx)
    if j is None:
        return row, None, None
    s = stake(ctx, j)
    writes = bool(j.filter(pl.col("written"))["extra"].sum() >= j.filter(~pl.col("written"))["extra"].sum())
    row.update({P + "extra": int(j["extra"].sum()), P + "base": max(int(j["base"].sum()), 1), P + "stake": s,
                P + "writes": writes, P + "written": int(j["posix_written"].sum()),
                P + "asked": int(j["mpi_read"].sum())})
    return row, j, s


def features(ctx, edges=None) -> dict:
    return dict(measure(ctx)[0])


def dtypes() -> dict:
    return {P + "largest_extra": pl.Int64, P + "at_min_bytes": pl.Float64, P + "at_min_share": pl.Float64,
            P + "extra": pl.Int64, P + "base": pl.Int64, P + "stake": pl.Float64, P + "writes": pl.Boolean,
            P + "written": pl.Int64, P + "asked": pl.Int64}


def rule(th) -> dict:
    extra, base = pl.col(P + "extra"), pl.col(P + "base")
    found = (extra.is_not_null() & (pl.col(P + "largest_extra") >= th.sieving_min_bytes)).fill_null(False)
    severity, strong = judge(pl.col(P + "stake").fill_null(0.0), extra / base, th)
    return {"severity": pl.when(found).then(severity).otherwise(pl.lit(None, pl.String)),
            "strong": (strong & found).fill_null(False), "score": extra / base, "extra": extra, "base": base,
            "writes": pl.col(P + "writes"), "written": pl.col(P + "written"), "asked": pl.col(P + "asked")}


def title(v: dict, th) -> str:
    """The check's title: read-modify-write when most unrequested bytes are on written files, else sieved reads."""
    extra, asked = v["extra"], v["asked"]
    if v["writes"]:
        return (f"Read-modify-write: the file system reads {fmt_bytes(extra)} the application never asked for "
                f"while writing {fmt_bytes(v['written'])}")
    return (f"Data sieving: the file system reads {fmt_bytes(extra + asked)} for the {fmt_bytes(asked)} the "
            f"application asked for ({(extra + asked) / max(asked, 1):.1f}×)")


def stale(th) -> pl.Expr:
    """Jobs whose largest unrequested read reaches `sieving_min_bytes`, built at other sieving thresholds."""
    could = pl.col(P + "largest_extra") >= th.sieving_min_bytes
    other = ((pl.col(P + "at_min_bytes") != float(th.sieving_min_bytes))
             | (pl.col(P + "at_min_share") != float(th.sieving_min_share)))
    return (could & other).fill_null(False)
