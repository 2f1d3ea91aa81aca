"""COLLECTIVE_IO (info): collective buffering is in use, and how many aggregators reached the file system.

The rule, one part per operation kind: an info finding whenever some MPI-IO file (with known ranks) has
collective requests of that kind. It reads no threshold but the common ones (info is never demoted).
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ..context import MAX_RANKS
from ..finding import Finding
from ..insight import Evidence, Insight
from ..savings import not_speed
from ..units import fmt_bytes, fmt_count, fmt_pct, plural
from ..mpi_files import OPS as MPI_OPS, by_largest, mpi_table, traced

CODE = "COLLECTIVE_IO"
OPS = (("write", "WRITES"), ("read", "READS"))
PARTS = tuple(op for op, _ in OPS)
P = "collective_io_"


def features(ctx) -> dict:
    """Per kind: the collective requests and the number of MPI-IO files that have some."""
    keys = [f"{P}{k}_{op}" for op in PARTS for k in ("requests", "files")]
    if not ctx.has("MPI-IO"):
        return dict.fromkeys(keys)
    row = {}
    for op, OPS_ in OPS:
        coll = ctx.per_file_total("MPI-IO", f"MPIIO_COLL_{OPS_}")
        on = coll > 0
        row[f"{P}requests_{op}"] = int(coll[on].sum())
        row[f"{P}files_{op}"] = int(on.sum())
    return row


def measure(ctx) -> dict | None:
    """One log's features; None without a collective request (nothing to judge)."""
    if not ctx.total("MPI-IO", *(f"MPIIO_COLL_{OPS_}" for _, OPS_ in OPS)) or mpi_table(ctx) is None:
        return None
    return features(ctx)


def dtypes() -> dict:
    return {f"{P}{k}_{op}": pl.Int64 for op in PARTS for k in ("requests", "files")}


def rule(th) -> dict:
    """Stages per kind: `severity_<op>` (info, or null), `strong_<op>` (never), `score_<op>` (the requests)."""
    out = {}
    for op in PARTS:
        found = (pl.col(f"{P}files_{op}") > 0).fill_null(False)
        out[f"severity_{op}"] = pl.when(found).then(pl.lit("info"))
        out[f"strong_{op}"] = pl.lit(False)
        out[f"score_{op}"] = pl.col(f"{P}requests_{op}")
    return out


def title(v: dict, th, op: str | None = None) -> str:
    """Never a headline (always info); the insight's title names the aggregators, which the counters may not tell."""
    op = op or v["best"]
    return f"Collective {op}s"


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, v) -> list:
    table = mpi_table(ctx)
    out = []
    for op, OPS_, OP, B in MPI_OPS:
        if v[f"severity_{op}"] is None:
            continue
        files = by_largest(table, np.flatnonzero(table[f"coll_{op}s"] > 0), f"bytes_{op}")
        fids = table["file_id"][files].tolist()
        coll = int(table[f"coll_{op}s"][files].sum())
        # the counters' bytes and the trace's POSIX requests are of every MPI-IO request on these files: the
        # independent ones (HDF5's metadata beside collective raw data, …) included
        indep = int((table[f"indep_{op}s"][files] + table[f"other_{op}s"][files]).sum())
        mpi_bytes = int(table[f"bytes_{op}"][files].sum())
        nranks = int(table["nranks"][files].max())
        metrics = {f"collective_{op}s": coll, f"mpiio_bytes_{op}": mpi_bytes, "ranks_on_file": nranks}
        if indep:
            metrics[f"independent_{op}s"] = indep
        ranks, source, partial, window = [], "counters", False, None
        aggregators, estimate = None, None
        if ctx.trace_complete("DXT_POSIX", op):
            s = traced(ctx.trace_posix, op, fids)
            if not s.empty:
                ranks = np.unique(s.rank).tolist()
                aggregators = len(ranks)
                metrics["posix_requests"] = len(s)
                metrics["posix_median_request_bytes"] = float(np.median(s.length))
                window = ctx.trace_window(s)
                source = "dxt"
        m = traced(ctx.trace_mpiio, op, fids)
        if not m.empty:
            metrics["mpiio_ranks"] = len(np.unique(m.rank))
            metrics["mpiio_median_request_bytes"] = float(np.median(m.length))
            window = window or ctx.trace_window(m)
        if aggregators is None and ctx.has("POSIX"):
            # from the counters: the busiest rank's share of the POSIX bytes bounds the number of aggregators
            p = np.isin(ctx.column("POSIX", "file_id"), np.asarray(fids, dtype=np.uint64))
            p &= ctx.column("POSIX", "rank") < 0
            if p.any():
                col = ctx.column
                fb = int(col("POSIX", f"POSIX_BYTES_{B}")[p].sum())
                tot = int((col("POSIX", "POSIX_BYTES_READ") + col("POSIX", "POSIX_BYTES_WRITTEN"))[p].sum())
                slowest = col("POSIX", "POSIX_SLOWEST_RANK_BYTES")[p]
                top = int(slowest.max())
                if fb and top:
                    metrics["estimated_aggregators"] = max(1, round(tot / top))
                    estimate = (top / tot, int(col("POSIX", "POSIX_SLOWEST_RANK")[p][int(np.argmax(slowest))]))
        mixed = indep >= coll  # independent requests as many: the POSIX side is mostly theirs
        if aggregators is not None and mixed:
            metrics["posix_ranks"] = aggregators  # the independent requests' ranks too: not only aggregators
            who = f"{aggregators} rank{'s' if aggregators != 1 else ''} ({ctx.rank_labels(ranks)})"
        elif aggregators is not None:
            metrics["aggregators"] = aggregators
            who = f"{aggregators} aggregator{'s' if aggregators != 1 else ''} ({ctx.rank_labels(ranks)})"
        elif "estimated_aggregators" in metrics:
            who = estimated_words(ctx, metrics["estimated_aggregators"], *estimate, fids)
        else:
            who = "an unknown number of aggregators"
        if "estimated_aggregators" in metrics and aggregators is None:  # the title names it; the summary says why
            k = metrics["estimated_aggregators"]
            reach = "1 aggregator (estimated) reaches" if k == 1 else f"about {fmt_count(k)} aggregators (estimated) reach"
        else:
            reach = f"{who} reach"
        title_ = f"Collective {op}s: {fmt_count(nranks)} ranks call MPI-IO, {reach} the file system"
        if not mixed:
            also = f"and {fmt_count(indep)} independent one{'' if indep == 1 else 's'}; " if indep else ""
            summary = (f"{fmt_count(coll)} collective MPI-IO {op}s ({also}{fmt_bytes(mpi_bytes)}) on "
                       f"{plural(len(fids), 'file')}: two-phase I/O gathers the data on {who}")
            if "posix_median_request_bytes" in metrics:
                summary += f", which issue requests of {fmt_bytes(metrics['posix_median_request_bytes'])} (median)"
            summary += f". This is the healthy way to {op} shared files from many ranks."
        else:
            summary = (f"{fmt_count(coll)} of the {fmt_count(coll + indep)} MPI-IO {op}s on "
                       f"{plural(len(fids), 'file')} "
                       f"({fmt_bytes(mpi_bytes)} in all) are collective; the other {fmt_count(indep)} are "
                       f"independent")
            if aggregators is not None:
                summary += (f": the ranks that reach the file system here ({ctx.rank_labels(ranks)}) and their "
                            f"requests ({fmt_bytes(metrics['posix_median_request_bytes'])} median) are mostly "
                            f"the independent {op}s', not two-phase I/O's")
            summary += "."
        out.append(Insight(CODE, v[f"severity_{op}"], title_, summary,
                           Evidence(ranks=ranks[:MAX_RANKS], files=ctx.names_of(fids), time_window=window,
                                    metrics=metrics),
                           [], source=source, partial=partial, score=coll, demotable=False))
    return out


def estimated_words(ctx, k: int, share: float, rank: int, fids: list) -> str:
    """The aggregators the counters support (no trace): the slowest rank's share of the files' POSIX bytes (its
    inverse is `k`, the aggregators if they share the bytes evenly) and the files' Lustre stripe counts (Cray
    MPICH's default aggregators). Not the log's `h` hints: those are the ones Darshan wrote the log itself with
    (`cb_nodes=4` by default), not the program's."""
    label = f"{ctx.rank_labels([rank])}, the slowest," if rank >= 0 else "the slowest rank"
    head = "1 aggregator" if k == 1 else f"about {fmt_count(k)} aggregators"
    why = [f"estimated from the counters: {label} moved {fmt_pct(share)} of the POSIX bytes of the shared "
           f"file record{'s' if len(fids) != 1 else ''}"]
    stripes = stripe_counts(ctx, fids)
    if stripes:
        why.append(f"{'each file has' if len(fids) > 1 else 'the file has'} {' or '.join(map(str, stripes))} "
                   f"Lustre stripe{'s' if stripes != [1] else ''}")
    return f"{head} ({'; '.join(why)})"


def stripe_counts(ctx, fids: list) -> list:
    """The distinct Lustre stripe counts of these files' layouts (first components), smallest first."""
    lus = ctx.log.lustre
    if "stripe_count" not in lus.columns or lus.is_empty():
        return []
    mine = lus.filter(pl.col("file_id").is_in(fids) & (pl.col("stripe_count") > 0))
    return sorted(set(mine["stripe_count"].to_list()))


FINDING = Finding(
    code=CODE,
    meaning="Collective buffering is in use (how many aggregators reached the file system).",
    healthy=True,
    key_metrics=("aggregators", "estimated_aggregators", "collective_writes", "collective_reads"),
    trigger="(info) collective MPI-IO requests exist; says how many ranks called MPI-IO and which ranks "
            "(aggregators) wrote at the POSIX layer, or without DXT an estimate from the counters (the slowest "
            "rank's share of the shared records' POSIX bytes, said in the summary with the files' Lustre stripe "
            "counts). "
            "The same files' independent requests are counted (`independent_writes`/`independent_reads`); "
            "where they are at least as many as the collective ones, the ranks at POSIX are `posix_ranks`, not "
            "aggregators, and the summary says the file system's requests are mostly the independent ones'.",
    source="dxt / counters",
    report=report,
    saving=not_speed("informative: nothing to fix"),
    features=features, dtypes=dtypes, rule=rule, measure=measure, parts=PARTS, title=title,
)
