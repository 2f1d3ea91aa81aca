"""NO_COLLECTIVE_IO: many ranks use small independent MPI-IO requests on a shared file.

The rule, one part per operation kind: independent MPI-IO requests on files shared by several ranks are at
least `no_collective_min_ops`, `no_collective_min_share` of the MPI-IO requests and
`no_collective_min_ops_per_rank` per rank, and most requests are below `large_request_bytes`.

Which requests are below `large_request_bytes` depends on Darshan's size bins (a bin counts when its lower
edge is below the limit), so the features keep the count for each number of bins; everything else is
independent of the thresholds.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ....model.darshan import SIZE_BINS
from .. import fixes
from ..common import counter_stake, judge
from ..context import MAX_RANKS
from ..costmodel import project
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight
from ..savings import latency
from ..stages import stage
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time, plural
from . import _advice as advice
from ._lustre import lustre_records
from ..mpi_files import by_largest, mpi_file_ranks, mpi_table, traced
from ._requests import bins_below

CODE = "NO_COLLECTIVE_IO"
THRESHOLDS = (
    Threshold("no_collective_min_ops", 1000, "count",
              "NO_COLLECTIVE_IO: at least this many independent MPI-IO requests on shared files ..."),
    Threshold("no_collective_min_share", 0.5, "share", "... at least this share of the MPI-IO requests ..."),
    Threshold("no_collective_min_ops_per_rank", 100, "count",
              "... and at least this many per rank on average (a few independent header reads per rank cost "
              "nothing)."),
)
OPS = (("write", "WRITES", "WRITE"), ("read", "READS", "READ"))
PARTS = tuple(op for op, *_ in OPS)
P = "no_collective_io_"
MOST_SMALL = 0.5  # independent requests of large blocks are fine: only when most requests are small
SIZE_NAMES = {OP: tuple(f"MPIIO_SIZE_{OP}_AGG_{b}" for b, _, _ in SIZE_BINS) for OP in ("READ", "WRITE")}
# the call counters, in the counters' order (a slice): each kind's READS then WRITES
CALLS = tuple(f"MPIIO_{kind}_{OPS_}" for kind in ("INDEP", "COLL", "SPLIT", "NB") for OPS_ in ("READS", "WRITES"))
BELOW_NAMES = {op: tuple(f"{P}below_{op}s_{k}" for k in range(1, len(SIZE_BINS) + 1)) for op in PARTS}
KEYS = ([f"{P}{k}_{op}s" for op in PARTS for k in ("independent", "mpi", "all", "ranks", "files")]
        + [f"{P}stake_{op}" for op in PARTS] + [f"{P}saving_{op}" for op in PARTS]
        + [n for op in PARTS for n in BELOW_NAMES[op]])
NOTHING_SHARED = {**{f"{P}{k}_{op}s": 0 for op in PARTS for k in ("independent", "all", "mpi", "files")},
                  **{n: 0 for op in PARTS for n in BELOW_NAMES[op]}, **{f"{P}ranks_{op}s": 1 for op in PARTS},
                  **{f"{P}stake_{op}": 0.0 for op in PARTS}, **{f"{P}saving_{op}": None for op in PARTS}}


def S(name: str) -> pl.Expr:
    return stage(CODE, name)


def features(ctx) -> dict:
    """Per kind, over the MPI-IO files shared by several ranks: independent, collective + independent, and
    all requests; those in the first k size bins (k = 1..10); the most ranks on a file with independent
    requests; the busiest rank's time in independent calls on those files (counters)."""
    if not ctx.has("MPI-IO"):
        return dict.fromkeys(KEYS)
    shared = mpi_file_ranks(ctx) >= 2
    if not shared.any():  # no file shared by several ranks (file per process): nothing to count
        return dict(NOTHING_SHARED)
    _, inv = ctx.file_groups("MPI-IO")
    recs = shared[inv]  # the records of shared files
    every = bool(recs.all())
    calls = ctx.counter_rows("MPI-IO", CALLS)  # the call kinds x records: one slice
    sizes = ctx.counter_rows("MPI-IO", SIZE_NAMES["READ"] + SIZE_NAMES["WRITE"])
    # integer sums over the shared files' records, every call kind and size bin at once: exact in any order
    calls_on = dict(zip(CALLS, (calls if every else calls[:, recs]).sum(axis=1).tolist()))
    below = np.cumsum((sizes if every else sizes[:, recs]).sum(axis=1).reshape(2, len(SIZE_BINS)), axis=1).tolist()
    indep = ctx.per_file_sums("MPI-IO", calls[:2])  # independent calls per file, (READ, WRITE) x files
    row, per_record = {}, None
    for k, (op, OPS_, OP) in enumerate(OPS[::-1]):  # READ first, as the counters' rows
        on = shared & (indep[k] > 0)  # files with independent requests of this kind
        row.update(_kind_features(ctx, op, OPS_, on, calls_on, below[k]))
        if row[f"{P}independent_{op}s"]:
            per_record = _independent_times(ctx, calls) if per_record is None else per_record
            row[f"{P}stake_{op}"] = counter_stake(ctx, ctx.column("MPI-IO", "rank")[on[inv]], per_record[k][on[inv]])
            row[f"{P}saving_{op}"] = fixes.collective(ctx, op).seconds  # what collective I/O would save here
        else:
            row[f"{P}stake_{op}"] = 0.0
            row[f"{P}saving_{op}"] = None
    return row


def _kind_features(ctx, op: str, OPS_: str, on, calls_on: dict, below: list) -> dict:
    """One kind's features over the files shared by several ranks, from the integer sums over their records
    of each call kind (`calls_on`) and size bin (`below`, running), and the files with independent calls
    of the kind (`on`)."""
    independent, coll = calls_on[f"MPIIO_INDEP_{OPS_}"], calls_on[f"MPIIO_COLL_{OPS_}"]
    row = {f"{P}independent_{op}s": independent,
           f"{P}all_{op}s": independent + coll + calls_on[f"MPIIO_SPLIT_{OPS_}"] + calls_on[f"MPIIO_NB_{OPS_}"],
           f"{P}mpi_{op}s": independent + coll}
    row.update(zip(BELOW_NAMES[op], below))
    row[f"{P}ranks_{op}s"] = int(mpi_file_ranks(ctx)[on].max()) if on.any() else 1
    row[f"{P}files_{op}s"] = int(on.sum())
    return row


def _independent_times(ctx, calls) -> np.ndarray:
    """(READ, WRITE) x records: each record's time in independent calls, its time in proportion to its
    independent share of its calls (element-wise: the bits of the polars expression)."""
    every = calls.reshape(len(CALLS) // 2, 2, -1).sum(axis=0)  # integers: exact in any order
    time = np.stack([ctx.column("MPI-IO", "MPIIO_F_READ_TIME"), ctx.column("MPI-IO", "MPIIO_F_WRITE_TIME")])
    values = time * calls[:2] / np.maximum(every, 1)
    return np.where(np.isnan(values), 0.0, values)


def measure(ctx) -> dict | None:
    """One log's features; None with too few independent requests on any file (integer totals: the rule cannot
    find it) or without MPI-IO."""
    if all(ctx.total("MPI-IO", f"MPIIO_INDEP_{OPS_}") < ctx.th.no_collective_min_ops for _, OPS_, _ in OPS):
        return None
    if mpi_table(ctx) is None:
        return None
    return features(ctx)


def dtypes() -> dict:
    out = {f"{P}{k}_{op}s": pl.Int64 for op in PARTS for k in ("independent", "mpi", "all", "ranks", "files")}
    out.update({f"{P}stake_{op}": pl.Float64 for op in PARTS})
    out.update({f"{P}saving_{op}": pl.Float64 for op in PARTS})
    out.update({f"{P}below_{op}s_{k}": pl.Int64 for op in PARTS for k in range(1, len(SIZE_BINS) + 1)})
    return out


def rule(th) -> dict:
    """Stages per kind: `found_<op>`, `severity_<op>`, `strong_<op>`, `score_<op>` (one insight each)."""
    k = bins_below(int(th.large_request_bytes))
    out = {}
    for op in PARTS:
        indep, every = pl.col(f"{P}independent_{op}s"), pl.col(f"{P}all_{op}s")
        mpi = pl.col(f"{P}mpi_{op}s")
        below = pl.col(f"{P}below_{op}s_{k}") if k else pl.lit(0, pl.Int64)
        out[f"small_share_{op}"] = below / pl.max_horizontal(mpi, pl.lit(1))
        out[f"share_{op}"] = indep / every
        mostly_large = (mpi > 0) & (S(f"small_share_{op}") < MOST_SMALL)
        per_rank = indep / pl.max_horizontal(pl.col(f"{P}ranks_{op}s"), pl.lit(1))
        out[f"found_{op}"] = ((every > 0) & (indep >= th.no_collective_min_ops)
                              & (S(f"share_{op}") >= th.no_collective_min_share) & ~mostly_large
                              & (per_rank >= th.no_collective_min_ops_per_rank)).fill_null(False)
        # structural when most MPI-IO requests are both independent and small
        severity, strong = judge(pl.col(f"{P}stake_{op}"),
                                 pl.min_horizontal(S(f"share_{op}"), S(f"small_share_{op}")), th)
        out[f"severity_{op}"] = pl.when(S(f"found_{op}")).then(severity)
        out[f"strong_{op}"] = strong & S(f"found_{op}")
        out[f"score_{op}"] = S(f"share_{op}")
        out[f"independent_{op}s"], out[f"all_{op}s"] = indep, every
        out[f"files_{op}s"], out[f"ranks_{op}s"] = pl.col(f"{P}files_{op}s"), pl.col(f"{P}ranks_{op}s")
    return out


def title(v: dict, th, op: str | None = None) -> str:
    """The title of kind `op` (default: the part `rules.with_stages` chose, `best`)."""
    op = op or v["best"]
    indep, every = v[f"independent_{op}s"], v[f"all_{op}s"]
    return (f"No collective I/O: {fmt_count(indep)} independent MPI-IO {op}s ({fmt_pct(indep / every)}) "
            f"on {plural(v[f'files_{op}s'], 'shared file')} used by up to {v[f'ranks_{op}s']} ranks")


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, v) -> list:
    th = ctx.th
    table = mpi_table(ctx)
    out = []
    for op in PARTS:
        if v[f"severity_{op}"] is None:
            continue
        shared = table["nranks"] >= 2
        indep, allops = v[f"independent_{op}s"], v[f"all_{op}s"]
        below = int(table[f"below_large_{op}s"][shared].sum())
        mpi_ops = int((table[f"indep_{op}s"] + table[f"coll_{op}s"])[shared].sum())
        files = by_largest(table, np.flatnonzero(shared & (table[f"indep_{op}s"] > 0)), f"indep_{op}s")
        fids = table["file_id"][files].tolist()
        nranks = int(table["nranks"][files].max())
        metrics = {f"independent_{op}s": indep, f"mpiio_{op}s": allops, "independent_share": indep / allops,
                   "ranks_on_file": nranks, "shared_files": len(fids),
                   f"requests_below_{int(th.large_request_bytes)}_bytes_share": below / max(mpi_ops, 1)}
        ranks, window, source, partial = [], None, "counters", False
        s = traced(ctx.trace_mpiio, op, fids)
        if not s.empty:
            ranks = np.unique(s.rank).tolist()[:MAX_RANKS]
            window = ctx.trace_window(s)
            source, partial = "dxt", not ctx.trace_complete("DXT_MPIIO", op)
            metrics["median_request_bytes"] = float(np.median(s.length))
        if window is None:
            window = ctx.counter_window("MPI-IO", fids, ops=("WRITE",) if op == "write" else ("READ",))
        stake = v[f"{P}stake_{op}"]  # the busiest rank's time in independent calls
        metrics["busiest_rank_independent_time_s"] = stake
        severity, strong = v[f"severity_{op}"], v[f"strong_{op}"]
        title_ = title(v, th, op)
        summary = (f"{fmt_pct(indep / allops)} of the MPI-IO {op}s to files shared by several ranks are "
                   f"independent (MPI_File_{op}/_{op}_at) and {fmt_pct(below / max(mpi_ops, 1))} are smaller than "
                   f"{fmt_bytes(th.large_request_bytes)}: each becomes its own file-system request instead of "
                   "being aggregated by collective buffering.")
        if severity == "info":
            summary += f" They cost the busiest rank only {fmt_time(stake)}: not worth changing for this run."
        summary += " " + project(ctx, metrics, stake, requests=indep, layer="mpiio", op=op)
        kinds = ctx.kinds(fids[:20])
        recs = []
        if "hdf5" in kinds:
            recs.append(advice.hdf5_collective_transfer())
            recs.append(advice.hdf5_collective_metadata())
        if "netcdf" in kinds or "pnetcdf" in kinds:
            recs.append(advice.netcdf_collective("netcdf" in kinds, "pnetcdf" in kinds))
        lus_file, _, _, stripe_count, _ = lustre_records(ctx.log)  # every layout component, no table built
        on = np.isin(lus_file, np.asarray(fids, dtype=np.uint64))
        stripe = int(stripe_count[on].max()) if on.any() else None
        recs.extend(advice.collective_io(op, ctx.hosts or None, stripe))
        out.append(Insight(CODE, severity, title_, summary,
                           Evidence(ranks=ranks, files=ctx.names_of(fids), time_window=window, metrics=metrics),
                           recs, source=source, partial=partial, score=v[f"score_{op}"], demotable=not strong))
    return out


FINDING = Finding(
    code=CODE,
    meaning="Many ranks use small independent MPI-IO requests on a shared file.",
    key_metrics=("independent_writes", "independent_reads"),
    thresholds=THRESHOLDS,
    reads=("large_request_bytes",),
    trigger="on files shared by several ranks, independent MPI-IO requests are at least `no_collective_min_ops`, "
            "at least `no_collective_min_share` of the MPI-IO requests and at least "
            "`no_collective_min_ops_per_rank` per rank, and most MPI-IO requests are smaller than "
            "`large_request_bytes` (independent large blocks are fine). Structural (a warning on any run) when "
            "both shares reach `strong_share`.",
    source="counters (+dxt for ranks/window)",
    report=report,
    saving=latency("busiest_rank_independent_time_s", "mpiio", ("independent_writes", "independent_reads"),
                   ("median_request_bytes",)),
    saving_rule=lambda th: {op: pl.col(f"{P}saving_{op}") for op in PARTS},
    features=features, dtypes=dtypes, rule=rule, measure=measure, parts=PARTS, title=title,
)
