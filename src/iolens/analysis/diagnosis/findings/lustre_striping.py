"""LUSTRE_STRIPING: a large shared file sits on too few Lustre stripes.

The rule: a file of at least `lustre_large_file_bytes`, accessed by two ranks or more, is striped over a single
OST. Which files are large depends on the threshold, so the features keep every candidate file's extent
(shared, single-stripe, any size) as a list, largest first: any `lustre_large_file_bytes` is answered by
counting them. The largest candidate's ranks name the title (the largest file is the same at any limit that
finds one).

It supersedes OST_IMBALANCE when that one's first files are all the large single-stripe files it names (one
big file on one OST): it says it with the fix.
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl

from ..common import GiB
from ..finding import Finding, Supersedes, Threshold
from ..insight import Evidence, Insight
from ..units import fmt_bytes, fmt_count, plural
from . import _advice as advice
from ._lustre import candidates, heaviest_ost

CODE = "LUSTRE_STRIPING"
THRESHOLDS = (
    Threshold("lustre_large_file_bytes", 1 * GiB, "bytes",
              "LUSTRE_STRIPING: shared files at least this large should be striped over several OSTs."),
)
P = "lustre_striping_"
MiB = 1 << 20
NAMED = 3  # OST_IMBALANCE's files compared with the ones this names
LISTED = 10  # how many files an insight's evidence names (`context.MAX_FILES`)


def features(ctx) -> dict:
    c = candidates(ctx)
    if not len(c):
        return {P + "extents": None, P + "largest_ranks": None}
    return {P + "extents": [int(x) for x in c.extent], P + "largest_ranks": int(c.nranks[0])}


def measure(ctx) -> dict | None:
    """One log's features; None when no candidate is large (the rule cannot find it: no query)."""
    row = features(ctx)
    extents = row[P + "extents"]
    if extents is None or extents[0] < int(ctx.th.lustre_large_file_bytes):
        return None
    return row


def dtypes() -> dict:
    return {P + "extents": pl.List(pl.Int64), P + "largest_ranks": pl.Int64}


def rule(th) -> dict:
    extents = pl.col(P + "extents")
    limit = int(th.lustre_large_file_bytes)
    files = extents.list.eval(pl.element() >= limit).list.sum()
    largest = extents.list.first()
    found = (largest >= limit).fill_null(False)
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": largest / (1 << 30), "files": files, "largest": largest,
            "ranks": pl.col(P + "largest_ranks")}


def title(v: dict, th) -> str:
    return (f"{plural(v['files'], 'large shared file')} on a single Lustre stripe (largest {fmt_bytes(v['largest'])}, "
            f"{fmt_count(v['ranks'])} ranks)")

# --- OST_IMBALANCE restates it ------------------------------------------------------------------------
def names_ost_files(th) -> pl.Expr:
    """OST_IMBALANCE's first files are all large single-stripe files LUSTRE_STRIPING lists."""
    return pl.col("ost_imbalance_striped_files_extent") >= int(th.lustre_large_file_bytes)


def ost_files(ctx) -> dict:
    """The smallest extent of OST_IMBALANCE's first files if this finding would list them all at some size."""
    return {"ost_imbalance_striped_files_extent": striped_extent(ctx, heaviest_ost(ctx)[1])}


def striped_extent(ctx, fids):
    """The smallest extent of the insight's first `NAMED` files if LUSTRE_STRIPING would name every one of
    them once their size counts as large (single-stripe, shared, among its `LISTED` largest); else None."""
    c = candidates(ctx)
    if not fids or not len(c):
        return None
    names = [ctx.name(f) for f in fids[:LISTED]][:NAMED]
    extents = c.extent  # largest first
    # a file's place among the large files, at any limit up to its extent: the candidates strictly larger
    larger = np.searchsorted(-extents, -extents, side="left")
    listed = {}
    for fid, extent, above in zip(c.file_id.tolist(), extents.tolist(), larger.tolist()):
        if above < LISTED:
            listed.setdefault(ctx.name(fid), extent)
    if not all(n in listed for n in names):
        return None
    return int(min(listed[n] for n in names))


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, judged) -> list:
    th = ctx.th
    c = candidates(ctx)
    bad = c.take(np.flatnonzero(c.extent >= th.lustre_large_file_bytes))
    fids = bad.file_id.tolist()
    size, writers, name = judged["largest"], judged["ranks"], ctx.name(fids[0])
    request = _dominant_request(ctx, fids[0])
    count = advice.stripe_count_for(size, writers)
    stripe = stripe_size_for(request)
    metrics = {"files": len(fids), "largest_file_bytes": size, "ranks_on_file": writers,
               "stripe_count": int(bad.stripe_count[0]), "stripe_size": int(bad.stripe_size[0]),
               "recommended_stripe_count": count, "recommended_stripe_size": stripe,
               "bytes_on_single_stripe_files": int(bad.bytes.sum())}
    if request:
        metrics["dominant_request_bytes"] = request
    title_ = title(judged, th)
    summary = (f"{name} is {fmt_bytes(size)}, accessed by {fmt_count(writers)} ranks, but striped over one OST: all its "
               "traffic goes through one storage server, and ROMIO uses one collective-buffering aggregator "
               "per stripe by default.")
    recs = [advice.lustre_setstripe(name, count, stripe,
                                    f"{count} stripes ≈ one OST per 4 GiB of the {fmt_bytes(size)} file (at least 4, "
                                    f"at most 64 and at most the {fmt_count(writers)} ranks)"
                                    + (f"; {stripe >> 20} MiB stripes match its {fmt_bytes(request)} requests."
                                       if request and stripe > (1 << 20) else "; 1 MiB stripes (the default)."),
                                    mpiio=ctx.has_layer("mpiio"))]
    if ctx.has_layer("mpiio"):
        recs.append(advice.mpi_hints_c({"striping_factor": str(count), "striping_unit": str(stripe)},
                                       "Or set the striping when MPI-IO creates the file",
                                       "ROMIO applies these hints only when it creates the file (delete the old "
                                       "file first)."))
    return [Insight(CODE, judged["severity"], title_, summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=ctx.counter_window("POSIX", fids[:1]),
                             metrics=metrics),
                    recs, source="counters", partial=False, score=judged["score"])]


def _dominant_request(ctx, fid):
    """The median traced POSIX request on file `fid`, else its most common request size from the counters."""
    seg = ctx.trace_posix
    mine = seg.file_id == fid
    if mine.any():
        return int(np.median(seg.length[mine]))
    if ctx.has("POSIX") and ctx.records["POSIX"].has("POSIX_ACCESS1_ACCESS"):
        on = ctx.column("POSIX", "file_id") == fid
        if on.any():
            v = int(ctx.column("POSIX", "POSIX_ACCESS1_ACCESS")[on].max())  # clipped at 0: -1 is none too
            return v if v > 0 else None
    return None


def stripe_size_for(request: int | None) -> int:
    """A stripe size matching the dominant request size (a power of two between 1 MiB and 64 MiB)."""
    if not request or request <= MiB:
        return MiB
    size = 1 << int(math.floor(math.log2(request)))
    return max(MiB, min(64 * MiB, size))

FINDING = Finding(
    code=CODE,
    meaning="A large shared file sits on too few Lustre stripes.",
    key_metrics=("largest_file_bytes",),
    thresholds=THRESHOLDS,
    trigger="a file of at least `lustre_large_file_bytes`, used by two or more ranks, has one stripe. The "
            "recommendation derives `-c` from the file size (one OST per 4 GiB, between 4 and 64, at most the "
            "number of ranks) and `-S` from the dominant request size (a power of two, 1–64 MiB).",
    source="counters",
    report=report,
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title,
    supersedes=(Supersedes("OST_IMBALANCE", when=names_ost_files, features=ost_files,
                           dtypes=lambda: {"ost_imbalance_striped_files_extent": pl.Int64},
                           reads=("lustre_large_file_bytes",)),),
)
