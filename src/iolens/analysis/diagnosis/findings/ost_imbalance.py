"""OST_IMBALANCE: bytes are very uneven across the Lustre OSTs used.

The rule: the job's Lustre bytes (at least `ost_min_bytes`) are uneven over its OSTs: the heaviest OST carries
at least `ost_imbalance_ratio` × the mean. The bytes per OST come from the trace's OST lists when the trace is
complete, else from each file's layout and POSIX bytes; they do not depend on a threshold, so the features keep
their total, mean and maximum. (LUSTRE_STRIPING supersedes it when its first files are all the big
single-stripe files that one names.)
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ..common import GiB
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..units import fmt_bytes, plural
from ._lustre import heaviest_ost, layouts

CODE = "OST_IMBALANCE"
THRESHOLDS = (
    Threshold("ost_imbalance_ratio", 2.0, "ratio",
              "OST_IMBALANCE: the busiest OST moves at least this multiple of the mean OST's bytes ..."),
    Threshold("ost_min_bytes", 1 * GiB, "bytes", "... and the job moves at least this many bytes on Lustre."),
)
P = "ost_imbalance_"
NAMES = ("osts", "bytes", "mean_bytes", "max_bytes", "heaviest", "posix_bytes", "from_trace")


def features(ctx) -> dict:
    """The OSTs' bytes: how many, their total, mean and maximum, the heaviest (nulls without Lustre layouts or
    with fewer than two OSTs)."""
    per_ost, _, source = heaviest_ost(ctx)
    if len(per_ost) < 2:
        return {P + n: None for n in NAMES}
    vals = np.array(list(per_ost.values()))
    return {P + "osts": len(per_ost), P + "bytes": float(vals.sum()), P + "mean_bytes": float(vals.mean()),
            P + "max_bytes": float(vals.max()), P + "heaviest": int(max(per_ost, key=per_ost.get)),
            P + "posix_bytes": ctx.total("POSIX", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"),
            P + "from_trace": source == "dxt"}


def measure(ctx) -> dict | None:
    """One log's features; None when the OSTs are even enough at its thresholds (the rule cannot find it)."""
    th = ctx.th
    row = features(ctx)
    total, mean, top = (row[P + n] for n in ("bytes", "mean_bytes", "max_bytes"))
    if row[P + "osts"] is None or total < th.ost_min_bytes or not mean > 0 or top / mean < th.ost_imbalance_ratio:
        return None
    return row


def dtypes() -> dict:
    return {P + "osts": pl.Int64, P + "bytes": pl.Float64, P + "mean_bytes": pl.Float64,
            P + "max_bytes": pl.Float64, P + "heaviest": pl.Int64, P + "posix_bytes": pl.Int64,
            P + "from_trace": pl.Boolean}


def rule(th) -> dict:
    total, mean, top = pl.col(P + "bytes"), pl.col(P + "mean_bytes"), pl.col(P + "max_bytes")
    enough = pl.col(P + "from_trace") | (pl.col(P + "posix_bytes") >= 0.99 * th.ost_min_bytes)
    uneven = ((pl.col(P + "osts") >= 2) & (total >= th.ost_min_bytes) & (mean > 0)
              & (top / mean >= th.ost_imbalance_ratio))
    found = (enough & uneven).fill_null(False)
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": top / mean, "osts": pl.col(P + "osts"), "bytes": total,
            "mean_bytes": mean, "max_bytes": top, "heaviest": pl.col(P + "heaviest")}


def title(v: dict, th) -> str:
    return (f"OST {v['heaviest']} moves {v['max_bytes'] / v['mean_bytes']:.1f}× the mean OST's bytes "
            f"({fmt_bytes(v['max_bytes'])} of {fmt_bytes(v['bytes'])} over {v['osts']} OSTs)")


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, judged) -> list:
    th = ctx.th
    per_ost, fids, source = heaviest_ost(ctx)
    total, mean, top, heaviest = judged["bytes"], judged["mean_bytes"], judged["max_bytes"], judged["heaviest"]
    heavy_osts = sorted((o for o in per_ost if per_ost[o] >= th.ost_imbalance_ratio * mean),
                        key=lambda o: -per_ost[o])
    metrics = {"osts_used": len(per_ost), "heaviest_ost": heaviest, "heaviest_ost_bytes": top,
               "mean_ost_bytes": mean, "max_over_mean": top / mean, "heaviest_ost_share": top / total,
               "overloaded_osts": len(heavy_osts), "lustre_bytes": total}
    title_ = title(judged, th)
    summary = (f"The job's Lustre traffic is uneven across the {len(per_ost)} OSTs it uses: "
               f"{plural(len(heavy_osts), 'OST')} (" + ", ".join(map(str, heavy_osts[:8])) + ") carry at least "
               f"{th.ost_imbalance_ratio:g}× the mean, so the slowest server sets the pace. "
               f"{plural(len(fids), 'file')} {'has' if len(fids) == 1 else 'have'} data on OST {heaviest}.")
    big = int(layouts(ctx).stripe_count.max())
    recs = [Recommendation(
        "Spread the data over more OSTs",
        "Stripe the large files over several OSTs so their bytes spread evenly, and let Lustre choose the "
        "starting OST (do not pass -i/--stripe-index). For many single-stripe files, keep -c 1 but make sure "
        "files are created by different ranks over time so the allocator can round-robin them.",
        f"lfs setstripe -c {max(4, big)} -S 1M <output-dir>\nlfs df -h <mount>   # check OST fullness: "
        "full OSTs are skipped by the allocator", "shell", needs=("lustre",))]
    return [Insight(CODE, judged["severity"], title_, summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=None, metrics=metrics),
                    recs, source=source, partial=False, score=judged["score"])]


FINDING = Finding(
    code=CODE,
    meaning="Bytes are very uneven across the Lustre OSTs used.",
    key_metrics=("max_over_mean",),
    thresholds=THRESHOLDS,
    trigger="bytes per OST (from the trace, or the files' extents spread over their stripes) are uneven: the "
            "busiest OST moves at least `ost_imbalance_ratio` × the mean, with at least `ost_min_bytes` on "
            "Lustre.",
    source="dxt / counters",
    report=report,
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title,
)
