"""SLOW_OST: files on one Lustre OST take far longer per byte than on the others (a slow storage server).

The rule: the single-stripe files on one OST take at least `slow_ost_ratio` × the time per byte (median over
its files) of those on the other OSTs (median of their medians), over at least `slow_ost_min_files` files, and
the slowest of them costs enough to matter for the run. The per-OST medians do not depend on a threshold: the
features keep one entry per OST (its median, the others' median, files, slowest file time), slowest relative to
the others first, so any threshold is answered by the first entry that passes it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ..common import matters
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..units import fmt_time, plural
from ._lustre import layouts

CODE = "SLOW_OST"
THRESHOLDS = (
    Threshold("slow_ost_ratio", 4.0, "ratio",
              "SLOW_OST: single-stripe files on one OST take at least this multiple of the typical time per byte "
              "(median over the other OSTs) ..."),
    Threshold("slow_ost_min_files", 3, "count", "... over at least this many files on that OST."),
)
P = "slow_ost_"
MIN_BYTES = 1 << 20  # a record compared must move at least this much and take time
ENTRY = pl.Struct({"ost": pl.Int64, "ratio": pl.Float64, "seconds_per_gib": pl.Float64,
                   "typical_seconds_per_gib": pl.Float64, "files": pl.Int64, "slowest_time": pl.Float64,
                   "bytes": pl.Int64})


@dataclass
class Records:
    """POSIX records compared by SLOW_OST (numpy, in record order): file, rank, bytes, seconds, OST, s/GiB."""
    file_id: np.ndarray
    rank: np.ndarray
    b: np.ndarray
    t: np.ndarray
    ost: np.ndarray
    s_per_gib: np.ndarray


def records(ctx):
    """The POSIX records of single-stripe files moving at least 1 MiB and taking time, with their OST and
    seconds per GiB (`Records`); None when at most 3 such records exist (too few OSTs to compare). Once per
    log."""
    return ctx.memo("slow_ost.records", lambda: _records(ctx))


def _records(ctx):
    lay = layouts(ctx)
    if lay is None or not ctx.has("POSIX"):
        return None
    # at least 4 OSTs each with a record of >= 1 MiB taking time: count such records first (same arithmetic)
    b = ctx.column("POSIX", "POSIX_BYTES_READ") + ctx.column("POSIX", "POSIX_BYTES_WRITTEN")
    t = ctx.column("POSIX", "POSIX_F_READ_TIME") + ctx.column("POSIX", "POSIX_F_WRITE_TIME")
    big = (b >= MIN_BYTES) & (t > 0)
    if int(big.sum()) < 4:
        return None
    one = np.flatnonzero((lay.stripe_count == 1) & (lay.osts.count > 0))
    if not len(one):
        return None
    single, ost_of = lay.file_id[one], lay.osts.flat[lay.osts.start[one]].astype(np.int64)  # each one's OST
    fid = ctx.column("POSIX", "file_id")
    at = np.minimum(np.searchsorted(single, fid), len(single) - 1)
    rows = np.flatnonzero(big & (single[at] == fid))
    b, t = b[rows], t[rows]
    return Records(fid[rows], ctx.column("POSIX", "rank")[rows], b, t, ost_of[at[rows]], t / (b / (1 << 30)))


def median(values: np.ndarray) -> float:
    """polars' median (the middle two values interpolated, not averaged: the same bits as a query's)."""
    v = np.sort(values)
    n = len(v)
    return float(v[n // 2]) if n % 2 else float(v[n // 2 - 1] + (v[n // 2] - v[n // 2 - 1]) * 0.5)


def group_medians(inv: np.ndarray, ngroups: int, values: np.ndarray) -> list:
    """`median` of each group's values (`inv`: each value's group, every group non-empty), from one sort by
    group then value (not a sort per group: an OST each on thousands of files)."""
    v = values[np.lexsort((values, inv))]
    counts = np.bincount(inv, minlength=ngroups)
    mid = np.cumsum(counts) - counts + counts // 2  # each group's middle place (the upper one when even)
    med = v[mid]
    even = np.flatnonzero(counts % 2 == 0)
    a = v[mid[even] - 1]
    med[even] = a + (med[even] - a) * 0.5  # as `median` interpolates: the same bits
    return med.tolist()


def medians_of_others(values: list) -> list:
    """For each value, `median` of the others (every value but it), from one sort (not one per value: an OST
    each on thousands of files): the others sorted are the values sorted less that value's place."""
    order = np.argsort(np.asarray(values, dtype=np.float64), kind="stable")
    ordered = np.asarray(values, dtype=np.float64)[order].tolist()
    place = np.empty(len(order), dtype=np.int64)
    place[order] = np.arange(len(order))
    m = len(values) - 1  # how many others
    out = []
    for p in place.tolist():
        lo, hi = (m - 1) // 2, m // 2  # the middle of the others (one place when m is odd)
        a, b = ordered[lo + (lo >= p)], ordered[hi + (hi >= p)]
        out.append(float(a) if m % 2 else float(a + (b - a) * 0.5))
    return out


@dataclass
class PerOst:
    """Per OST compared (sorted ids): the median seconds per GiB of its records, their count, the slowest
    one's time, their bytes."""
    ost: np.ndarray
    med: list
    files: np.ndarray
    tmax: np.ndarray
    bytes: np.ndarray

    @property
    def height(self) -> int:
        return len(self.ost)


def per_ost(rec_):
    """`PerOst` of the records; None with fewer than 4 OSTs."""
    if rec_ is None or not len(rec_.ost):
        return None
    ids, inv = np.unique(rec_.ost, return_inverse=True)
    if len(ids) < 4:
        return None
    med = group_medians(inv, len(ids), rec_.s_per_gib)
    tmax = np.full(len(ids), -np.inf)
    np.maximum.at(tmax, inv, rec_.t)
    nbytes = np.zeros(len(ids), dtype=np.int64)
    np.add.at(nbytes, inv, rec_.b)
    return PerOst(ids, med, np.bincount(inv, minlength=len(ids)), tmax, nbytes)


def osts(per) -> list:
    """One entry per OST of `per_ost` (`ENTRY`), the slowest relative to the others first."""
    if per is None:
        return []
    out = []
    for i, (ost, others) in enumerate(zip(per.ost.tolist(), medians_of_others(per.med))):
        med = per.med[i]
        if others:
            out.append({"ost": int(ost), "ratio": med / others, "seconds_per_gib": med,
                        "typical_seconds_per_gib": others, "files": int(per.files[i]),
                        "slowest_time": float(per.tmax[i]), "bytes": int(per.bytes[i])})
    out.sort(key=lambda e: -e["ratio"])  # stable: the diagnosis's order among equals
    return out


def features(ctx) -> dict:
    entries = osts(per_ost(records(ctx)))
    return {P + "osts": entries or None}


def measure(ctx) -> dict | None:
    """One log's features; None when no OST passes the thresholds (the rule cannot find it: no query)."""
    th = ctx.th
    entries = osts(per_ost(records(ctx)))
    if not any(e["files"] >= th.slow_ost_min_files and e["ratio"] >= th.slow_ost_ratio for e in entries):
        return None
    return {P + "osts": entries or None}


def dtypes() -> dict:
    return {P + "osts": pl.List(ENTRY)}


def slow(th) -> pl.Expr:
    """The entries that pass the thresholds (slowest first)."""
    e = pl.element().struct
    return pl.col(P + "osts").list.eval(pl.element().filter(
        (e.field("files") >= th.slow_ost_min_files) & (e.field("ratio") >= th.slow_ost_ratio)))


def rule(th) -> dict:
    passing = slow(th)
    top = passing.list.first()
    tmax = top.struct.field("slowest_time")
    found = (passing.list.len() > 0) & matters(tmax, th)
    found = found.fill_null(False)
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": top.struct.field("ratio"), "top": top,
            "slow_osts": passing.list.eval(pl.element().struct.field("ost"))}


def title(v: dict, th) -> str:
    t = v["top"]
    return (f"OST {t['ost']} is {t['ratio']:.0f}× slower than the others: its {t['files']} single-stripe files take "
            f"{t['seconds_per_gib']:.0f} s/GiB against {t['typical_seconds_per_gib']:.1f} s/GiB elsewhere")


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, judged) -> list:
    th = ctx.th
    rec_ = records(ctx)
    per = per_ost(rec_)
    slow_ids = judged["slow_osts"]
    top = judged["top"]
    ost, ratio, med, others = top["ost"], top["ratio"], top["seconds_per_gib"], top["typical_seconds_per_gib"]
    files, tmax, nbytes = top["files"], top["slowest_time"], top["bytes"]
    on = np.flatnonzero(np.isin(rec_.ost, slow_ids))
    on = on[np.argsort(-rec_.t[on], kind="stable")]  # slowest first
    ranks = [r for r in _first_seen(rec_.rank[on]) if r >= 0][:32]
    metrics = {"ost": ost, "slowdown": ratio, "seconds_per_gib": med, "typical_seconds_per_gib": others,
               "files_on_ost": files, "bytes_on_ost": nbytes, "slowest_file_time_s": tmax,
               "slow_osts": len(slow_ids), "osts_compared": per.height}
    title_ = title(judged, th)
    summary = (f"Comparing single-stripe files of the job, those on OST {ost}"
               + (f" (and {plural(len(slow_ids) - 1, 'more OST')}: " + ", ".join(str(s) for s in slow_ids[1:6]) + ")"
                  if len(slow_ids) > 1 else "")
               + f" need {ratio:.0f}× the time per byte of files on the other {per.height - 1} OSTs. The ranks "
               f"using them finish up to {fmt_time(tmax)} late: the storage server, not the application, is the "
               "bottleneck.")
    recs = [Recommendation(
        "Report the OST and avoid it for now",
        f"Tell your site's storage administrators that OST {ost} (index {ost}) is slow (possibly failing, "
        "rebuilding or overloaded). Until it is fixed, create files on other OSTs, or stripe them over several "
        "OSTs so one slow server holds up only part of each file.",
        f"lfs df -h <mount>                      # is OST {ost} full or degraded?\n"
        f"lfs setstripe -c 4 -S 1M <output-dir>  # spread each file over several OSTs", "shell", needs=("lustre",))]
    return [Insight(CODE, judged["severity"], title_, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(_first_seen(rec_.file_id[on])),
                             time_window=None, metrics=metrics),
                    recs, source="counters", partial=False, score=judged["score"])]


def _first_seen(values: np.ndarray) -> list:
    """The distinct values in the order first met."""
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)].tolist()


def explain_rank_findings(mine: list, found: list) -> None:
    """Say so when RANK_IMBALANCE's or STRAGGLER's ranks are the ones whose files are on the slow OST."""
    slow = mine[0]
    for i in found:
        if i.code in ("RANK_IMBALANCE", "STRAGGLER") and set(i.evidence.ranks[:4]) & set(slow.evidence.ranks):
            i.summary += (f" These ranks' files are on OST {slow.evidence.metrics.get('ost')}, which is slow "
                          "(see SLOW_OST).")


FINDING = Finding(
    code=CODE,
    meaning="Files on one Lustre OST take far longer per byte than on the others (a slow storage server).",
    key_metrics=("slowdown",),
    thresholds=THRESHOLDS,
    trigger="single-stripe files on one OST need at least `slow_ost_ratio` × the time per byte of files on the "
            "other OSTs (median over at least `slow_ost_min_files` files, at least 4 OSTs compared): a slow "
            "storage server, not the application.",
    source="counters",
    report=report,
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title,
    annotate=explain_rank_findings,
)
