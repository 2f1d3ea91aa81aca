"""DATA_SIEVING: the file system sees reads the application never asked for (read-modify-write).

The rule: files written or read through MPI-IO whose POSIX layer reads at least `sieving_min_bytes` more than
MPI-IO asked for, and at least `sieving_min_share` of the bytes written (or asked for), or of the POSIX time.

Which files count depends on both sieving thresholds, and the busiest rank's time over them is not a sum of
per-file values: the features hold the finding at the build's thresholds, and a job that could be found at
others (its largest unrequested read reaches `sieving_min_bytes`) is stale there: a rebuild answers.

It supersedes REDUNDANT_READS when it names all of that one's files: the re-reads are the read half of
read-modify-write.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ...segments import float_sum, group_sums, in_sorted, is_in
from ..common import MiB, counter_stake, judge
from ..context import MAX_RANKS
from ..costmodel import project
from ..finding import Finding, Supersedes, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..savings import traffic
from ..units import fmt_bytes, fmt_pct, fmt_time, plural
from . import _advice as advice
from ._ranks import heaviest_ranks
from ._redundancy import redundant_files

CODE = "DATA_SIEVING"
THRESHOLDS = (
    Threshold("sieving_min_share", 0.10, "share",
              "DATA_SIEVING: POSIX reads the application did not ask for are at least this share of the bytes "
              "written to the file, or their read time is at least this share of the POSIX time on it ..."),
    Threshold("sieving_min_bytes", 16 * MiB, "bytes", "... and at least this many bytes."),
)
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


def sieving(ctx) -> tuple:
    """(features, the found files' table or None, the stake): once a log (the rule's features, the insight,
    and whether it names REDUNDANT_READS's files all read it)."""
    return ctx.memo("data_sieving", lambda: _sieving(ctx))


def _sieving(ctx) -> tuple:
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


def features(ctx) -> dict:
    return dict(sieving(ctx)[0])


def measure(ctx) -> dict | None:
    """One log's features; None when no file is found at its thresholds (the rule cannot find it: no query)."""
    row, j, _ = sieving(ctx)
    return dict(row) if j is not None else None


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
    """The insight's title: read-modify-write when most unrequested bytes are on written files, else sieved reads."""
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


# --- REDUNDANT_READS restates it ----------------------------------------------------------------------
REREADS = "redundant_reads_"  # the relation's columns, as a fleet store keeps them


def names_rereads(th) -> pl.Expr:
    """DATA_SIEVING names every file REDUNDANT_READS lists (at the build's sieving thresholds)."""
    return pl.col(REREADS + "sieved").fill_null(False)


def rereads_sieved(ctx) -> dict:
    """Whether this finding (at the log's thresholds) names every file REDUNDANT_READS lists (null when that
    one has no file), and the sieving thresholds it was told at."""
    th = ctx.th
    found = redundant_files(ctx, "read")
    sieved = None
    if found is not None and found["table"] is not None:
        sieved = names_all(ctx, found["table"]["file_id"].tolist())
    return {REREADS + "sieved": sieved, REREADS + "at_sieving_min_bytes": float(th.sieving_min_bytes),
            REREADS + "at_sieving_min_share": float(th.sieving_min_share)}


def names_all(ctx, fids) -> bool:
    """Does this finding's insight (at the log's thresholds) name every one of the listed `fids`?"""
    j = sieving(ctx)[1]
    if j is None:
        return False  # found on no file: it names none
    listed = ctx.names_of(fids)
    return bool(listed) and set(listed) <= set(ctx.names_of(j["file_id"].tolist()))


def rereads_dtypes() -> dict:
    return {REREADS + "sieved": pl.Boolean, REREADS + "at_sieving_min_bytes": pl.Float64,
            REREADS + "at_sieving_min_share": pl.Float64}


def rereads_stale(th) -> pl.Expr:
    """Jobs with a re-read file whose relation was found at other sieving thresholds: a rebuild answers."""
    could = pl.col(REREADS + "max_ratio") >= th.redundant_ratio
    other = pl.col(REREADS + "sieved").is_not_null() & (
        (pl.col(REREADS + "at_sieving_min_bytes") != float(th.sieving_min_bytes))
        | (pl.col(REREADS + "at_sieving_min_share") != float(th.sieving_min_share)))
    return (could & other).fill_null(False)


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, v) -> list:
    _, j, stake = sieving(ctx)
    fids = j["file_id"].tolist()
    extra, base, writes, written, asked = v["extra"], v["base"], v["writes"], v["written"], v["asked"]
    indep, coll = int(j["indep_writes"].sum()), int(j["coll_writes"].sum())
    if not writes:
        indep, coll = int(j["indep_reads"].sum()), int(j["coll_reads"].sum())
    read_time, posix_time = float_sum(j["extra_time"]), float_sum(j["posix_time"])
    metrics = {"unrequested_read_bytes": extra, "posix_bytes_written": written, "mpiio_bytes_read": asked,
               "extra_read_share": extra / base,
               "posix_read_time_s": read_time, "posix_read_time_share": read_time / posix_time if posix_time else 0,
               "independent_writes" if writes else "independent_reads": indep,
               "collective_writes" if writes else "collective_reads": coll}
    ranks, window, source, partial = [], None, "counters", False
    seg = ctx.trace_posix
    s = seg.take(seg.is_op("read") & is_in(seg.file_id, j["file_id"]))
    if not s.empty:
        ranks = heaviest_ranks(s.rank, s.length)[:MAX_RANKS]
        window = ctx.trace_window(s)
        source, partial = "dxt", not ctx.trace_complete("DXT_POSIX", "read")
        metrics["posix_reads"] = len(s)
    metrics["busiest_rank_unrequested_read_time_s"] = stake
    severity, strong = v["severity"], v["strong"]
    collective = coll >= indep
    if writes:
        cause = ("collective writes whose file domains have holes: ROMIO's two-phase write reads each aggregator's "
                 "domain before writing it" if collective else
                 "independent noncontiguous writes: ROMIO's data sieving reads the whole extent, patches it and "
                 "writes it back")
        summary = (f"{plural(len(fids), 'file')} {'is' if len(fids) == 1 else 'are'} written through MPI-IO, yet "
                   f"the POSIX layer reads {fmt_bytes(extra)} "
                   f"more than MPI-IO asked for ({fmt_pct(extra / base)} of the bytes written, their share of the "
                   f"ranks' POSIX read time: {fmt_time(read_time)}) from them. Likely cause: {cause}.")
    else:
        cause = ("collective reads over holes: two-phase I/O reads each aggregator's whole domain" if collective else
                 "independent noncontiguous reads: ROMIO's data sieving reads whole extents, holes included, "
                 "and keeps only the pieces asked for")
        summary = (f"On {plural(len(fids), 'file')} read through MPI-IO, the POSIX layer reads {fmt_bytes(extra)} "
                   "more than "
                   f"MPI-IO asked for ({fmt_pct(extra / base)} extra; their share of the ranks' POSIX read time: "
                   f"{fmt_time(read_time)}). Likely cause: {cause}.")
    if severity == "info":
        summary += f" It costs the busiest rank only {fmt_time(stake)}: not worth changing for this run."
    summary += " " + project(ctx, metrics, stake, nbytes=extra, op="read")
    title_ = title(v, ctx.th)
    recs = []
    if collective:
        recs.append(Recommendation(
            "Write whole regions so collective buffers have no holes",
            "Two-phase I/O only skips the read when an aggregator's domain is completely covered by the data "
            "being written. Make each collective call cover contiguous regions (e.g. write all variables of a "
            "record together, avoid gaps between ranks' blocks"
            + (", contiguous rather than chunked HDF5 layout with gaps, or chunks sized to the ranks' blocks)."
               if ctx.has_layer("hdf5") else ")."), "", "text", needs=("mpiio",)))
        recs.append(advice.mpi_hints_c({"romio_cb_write": "enable", "cb_buffer_size": str(16 << 20)},
                                       "Larger collective buffers",
                                       "Fewer, larger two-phase rounds reduce how often partially covered domains "
                                       "are read back."))
    else:
        op = "write" if writes else "read"
        recs.extend(advice.collective_io(op, ctx.hosts or None))
        recs.append(disable_data_sieving(op))
    return [Insight(CODE, severity, title_, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(fids), time_window=window, metrics=metrics),
                    recs, source=source, partial=partial, score=extra / base, demotable=not strong)]


def disable_data_sieving(op: str = "write") -> Recommendation:
    key = "romio_ds_write" if op == "write" else "romio_ds_read"
    return advice.mpi_hints_c({key: "disable"}, f"Turn off data sieving for {op}s ({key}=disable)",
                              ("With data sieving ROMIO reads the whole extent around a noncontiguous independent "
                               "write, patches it and writes it back, holding a lock." if op == "write" else
                               "With data sieving ROMIO reads the whole extent around noncontiguous independent reads, "
                               "holes included, and keeps the pieces asked for.")
                              + " Disabling it issues one request per piece instead: better when the pieces are large; "
                              f"when they are small, prefer collective {op}s.")


FINDING = Finding(
    code=CODE,
    meaning="The file system sees reads the application never asked for (read-modify-write).",
    key_metrics=("unrequested_read_bytes",),
    thresholds=THRESHOLDS,
    trigger="on files accessed through MPI-IO, the POSIX layer reads at least `sieving_min_bytes` more than "
            "MPI-IO asked for, and that is at least `sieving_min_share` of the bytes written (written files: "
            "read-modify-write by data sieving of independent noncontiguous writes, or two-phase writes over "
            "holes) or of the bytes MPI-IO read (read-only files: data sieving of noncontiguous reads, holes "
            "included), or of the POSIX time on the file.",
    source="counters (+dxt)",
    report=report,
    saving=traffic("busiest_rank_unrequested_read_time_s"),
    saving_rule=lambda th: {None: pl.col(P + "stake")},  # the extra traffic's time: all of it
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title, stale=stale,
    supersedes=(Supersedes("REDUNDANT_READS", when=names_rereads, features=rereads_sieved, dtypes=rereads_dtypes,
                           stale=rereads_stale, reads=("sieving_min_bytes", "sieving_min_share")),),
)
