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

from ...segments import group_sums, in_sorted
from ..units import fmt_bytes
from .common import COMMON_THRESHOLDS, counter_stake, judge

SIEVING = ("sieving_min_bytes", "sieving_min_share")
THRESHOLDS = SIEVING + COMMON_THRESHOLDS
P = "data_sieving_"


def largest_extra(ctx):
    """The most bytes one MPI-IO file (written or read) reads at POSIX beyond what MPI-IO asked for, or None
    (no such file). Most logs have none worth a look: this spares them the per-file tables."""
    if not ctx.has("MPI-IO") or not ctx.has("POSIX"):
        return None
    mpi_ids, _ = ctx.file_groups("MPI-IO")
    posix_ids, _ = ctx.file_groups("POSIX")
    mpi_read = ctx.per_file_total("MPI-IO", "MPIIO_BYTES_READ")
    mpi_written = ctx.per_file_total("MPI-IO", "MPIIO_BYTES_WRITTEN")
    posix_read = ctx.per_file_total("POSIX", "POSIX_BYTES_READ")
    both, in_mpi, in_posix = shared_ids(mpi_ids, posix_ids)
    used = (mpi_written[in_mpi] > 0) | (mpi_read[in_mpi] > 0)
    extra = np.maximum(posix_read[in_posix] - mpi_read[in_mpi], 0)[used]
    return int(extra.max()) if extra.size else None


def shared_ids(mpi_ids: np.ndarray, posix_ids: np.ndarray) -> tuple:
    """(the file ids in both sorted, distinct id arrays; their places in each): np.intersect1d's with
    `assume_unique` and `return_indices`, by a search (its set-up costs more on a few files)."""
    in_mpi = np.flatnonzero(in_sorted(mpi_ids, posix_ids))
    both = mpi_ids[in_mpi]
    return both, in_mpi, np.searchsorted(posix_ids, both)


def files(ctx):
    """The files found at the log's thresholds, largest unrequested reads first, as numpy columns (file_id,
    mpi_read, mpi_written, indep/coll_writes/reads, posix_read, posix_reads, posix_written, posix_time,
    posix_read_time, extra, written, base, extra_time), or None: per-file integer sums, and the per-file time
    sums of `group_sums`."""
    th = ctx.th
    mpi_ids, _ = ctx.file_groups("MPI-IO")
    posix_ids, inv = ctx.file_groups("POSIX")
    both, in_mpi, in_posix = shared_ids(mpi_ids, posix_ids)
    mpi = {k: ctx.per_file_total("MPI-IO", c)[in_mpi] for k, c in (
        ("mpi_read", "MPIIO_BYTES_READ"), ("mpi_written", "MPIIO_BYTES_WRITTEN"),
        ("indep_writes", "MPIIO_INDEP_WRITES"), ("coll_writes", "MPIIO_COLL_WRITES"),
        ("indep_reads", "MPIIO_INDEP_READS"), ("coll_reads", "MPIIO_COLL_READS"))}
    posix = {k: ctx.per_file_total("POSIX", c)[in_posix] for k, c in (
        ("posix_read", "POSIX_BYTES_READ"), ("posix_reads", "POSIX_READS"), ("posix_written", "POSIX_BYTES_WRITTEN"))}
    read_t, write_t = ctx.column("POSIX", "POSIX_F_READ_TIME"), ctx.column("POSIX", "POSIX_F_WRITE_TIME")
    posix["posix_time"] = group_sums(inv, read_t + write_t, len(posix_ids))[in_posix]
    posix["posix_read_time"] = group_sums(inv, read_t, len(posix_ids))[in_posix]
    j = {"file_id": both, **mpi, **posix}
    # written files: read-modify-write, measured against the bytes written; read-only files: sieved reads,
    # measured against the bytes the application asked for
    j = _take(j, (j["mpi_written"] > 0) | (j["mpi_read"] > 0))
    j["extra"] = np.maximum(j["posix_read"] - j["mpi_read"], 0)
    j["written"] = j["mpi_written"] > 0
    j["base"] = np.where(j["written"], j["posix_written"], j["mpi_read"])
    # time of the unrequested reads: the POSIX read time, in proportion when the application also reads
    j["extra_time"] = j["posix_read_time"] * j["extra"] / np.maximum(j["posix_read"], 1)
    found = (j["extra"] >= th.sieving_min_bytes) & ((j["extra"] >= th.sieving_min_share * j["base"])
                                                    | (j["extra_time"] >= th.sieving_min_share * j["posix_time"]))
    if not found.any():
        return None
    rows = np.flatnonzero(found)
    return _take(j, rows[np.argsort(-j["extra"][rows], kind="stable")])


def _take(columns: dict, rows) -> dict:
    return {k: v[rows] for k, v in columns.items()}


def stake(ctx, j) -> float:
    """The busiest rank's POSIX read time on the found files, in proportion to their unrequested bytes."""
    fid = ctx.column("POSIX", "file_id")
    recs = np.isin(fid, j["file_id"])  # the found files' records, in record order
    by_id = np.argsort(j["file_id"])
    frac = (j["extra"] / np.maximum(j["posix_read"], 1))[by_id]
    values = ctx.column("POSIX", "POSIX_F_READ_TIME")[recs] * frac[np.searchsorted(j["file_id"][by_id], fid[recs])]
    values[np.isnan(values)] = 0.0
    return counter_stake(ctx, ctx.column("POSIX", "rank")[recs], values)


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
    writes = bool(j["extra"][j["written"]].sum() >= j["extra"][~j["written"]].sum())
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
