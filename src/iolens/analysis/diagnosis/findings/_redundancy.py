"""What REDUNDANT_READS and REDUNDANT_WRITES share: one pattern in two directions.

The rule, per kind: on the data files whose bytes moved are at least `redundant_ratio` × their extent (the union
of the byte ranges touched from a complete trace, else the highest offset + 1 from the counters), the excess is
at least `redundant_min_bytes`; the busiest rank's time in the excess and the excess share of the bytes decide
warning/info (`judge`).

Which files count depends on `redundant_ratio`, so the features hold those files' totals at the build's ratio
(`*_at_ratio`) and the largest ratio of any file: a larger ratio than every file's finds nothing, another
ratio below it needs the log again (`stale`).
"""
from __future__ import annotations

from functools import partial

import numpy as np
import polars as pl

from ...segments import RUN_ROWS, Segments, groups, per_group_at
from .. import fixes, savings
from ..common import counter_stake, judge
from ..context import MAX_RANKS
from ..stages import stage
from ..costmodel import project
from ..finding import Finding
from ..insight import Evidence, Insight
from ..savings import traffic
from ..units import fmt_bytes, fmt_pct, fmt_time, plural
from ._ranks import heaviest_ranks
from ._requests import rank_stake

OPS = {"write": ("REDUNDANT_WRITES", "WRITTEN", "redundant_writes_"), "read": ("REDUNDANT_READS", "READ",
                                                                                "redundant_reads_")}


def coverage(seg: Segments, rows: np.ndarray | None = None) -> tuple:
    """Per file of the traced operations `seg` (those where `rows` is true, if given: a mask costs less than a
    filtered copy): (file ids, sorted; bytes moved; the size of the union of the byte ranges touched)."""
    keep = (seg.offset >= 0) & (seg.length > 0)
    if rows is not None:
        keep &= rows
    if not keep.any():
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    fid = seg.file_id[keep]
    first, codes = groups(fid)  # the files, sorted, and each operation's: from the trace's runs
    files = fid[first]
    a = seg.offset[keep]
    b = a + seg.length[keep]
    nfiles = len(files)
    span = int(b.max()) + 1
    out_bytes = _file_sums(codes, b - a, nfiles)
    if span * nfiles < (1 << 62):
        # one pass over all files: shift each file into its own range so a running max never crosses files
        shift = codes.astype(np.int64) * span
        a2 = a + shift
        order = np.argsort(a2, kind="stable")  # one int64 key (file, offset); a trace is mostly in runs of it
        a2, b2, c2 = a2[order], (b + shift)[order], codes[order]
        prev = np.maximum.accumulate(b2)
        starts = np.ones(len(a2), dtype=bool)
        starts[1:] = a2[1:] > prev[:-1]
        heads = np.flatnonzero(starts)
        g_start = a2[heads]
        g_end = prev[np.append(heads[1:] - 1, len(a2) - 1)]  # the running max at a run's last is its end
        union = _file_sums(c2[heads], g_end - g_start, nfiles)
    else:  # pragma: no cover - offsets near 2^62 with many files
        union = np.zeros(nfiles)
        for k in range(nfiles):
            m = codes == k
            aa, bb = a[m], b[m]
            o = np.argsort(aa, kind="stable")
            aa, bb = aa[o], bb[o]
            prev = np.maximum.accumulate(bb)
            st = np.ones(len(aa), dtype=bool)
            st[1:] = aa[1:] > prev[:-1]
            union[k] = float((np.maximum.reduceat(bb, np.flatnonzero(st)) - aa[st]).sum())
    return files.astype(np.uint64), out_bytes.astype(np.int64), union.astype(np.int64)


def _file_sums(codes: np.ndarray, values: np.ndarray, nfiles: int) -> np.ndarray:
    """Sums per file of byte counts (non-negative integers) of many rows: in integers, once per run of a file's
    rows, when they stay below 2^53 (where float sums of them are exact in any order); else (and for a few
    rows) as float sums in row order."""
    if len(values) >= RUN_ROWS and float(values.sum(dtype=np.float64)) < (1 << 52):
        out = np.zeros(nfiles, dtype=np.int64)
        per_group_at(np.add, out, codes, values)
        return out
    return np.bincount(codes, weights=values.astype(np.float64), minlength=nfiles)


def redundant_files(ctx, op: str) -> dict:
    """The per-file table of `op` and what it is from: {"source", "table" (or None: no file at the build's
    ratio), "max_ratio"}; None when neither a complete trace of `op` nor POSIX counters say anything. Once per
    log and kind."""
    return ctx.memo(("redundant_files", op), lambda: _files(ctx, op))


def _files(ctx, op: str) -> dict:
    _, B, _ = OPS[op]
    if ctx.trace_complete("DXT_POSIX", op):
        rows = ctx.trace_posix.is_op(op)
        if not rows.any():
            return None
        ids, moved, extent = coverage(ctx.trace_posix, rows)
        source = "dxt"
    elif ctx.has("POSIX"):
        # per file in integers: bytes moved, highest offset touched + 1
        ids, _ = ctx.file_groups("POSIX")
        moved = ctx.per_file_total("POSIX", f"POSIX_BYTES_{B}")
        extent = np.maximum(ctx.per_file_max("POSIX", f"POSIX_MAX_BYTE_{B}") + 1, 0)
        source = "counters"
    else:
        return None
    return {"source": source, **_redundant_files(ctx, ids, moved, extent)}


def _redundant_files(ctx, ids, moved, extent) -> dict:
    """{"max_ratio": the largest ratio of bytes moved over extent of a data file, or None; "table": the data
    files at or above the build's ratio, the most excess first, as numpy columns (file_id, bytes, extent,
    ratio, excess), or None} (numpy: most logs have none)."""
    std = ctx.std_ids  # a handful at most: a set lookup per file costs less than np.isin's set-up
    keep = extent > 0
    if std:  # (most logs name no standard stream among these files' ids: nothing to drop)
        keep &= ~np.array([i in std for i in ids.tolist()], dtype=bool)
    if not keep.any():
        return {"table": None, "max_ratio": None}
    ids, moved, extent = ids[keep], moved[keep], extent[keep]
    ratio = moved / extent
    best = float(ratio.max())
    bad = ratio >= ctx.th.redundant_ratio
    if not bad.any():
        return {"table": None, "max_ratio": best}
    excess = moved - extent
    order = np.flatnonzero(bad)[np.argsort(-excess[bad], kind="stable")]
    table = {"file_id": ids[order], "bytes": moved[order], "extent": extent[order], "ratio": ratio[order],
             "excess": excess[order]}
    return {"table": table, "max_ratio": best}


def stake(ctx, op: str, found: dict) -> float:
    """The busiest rank's time in the excess bytes. Rewrites from a complete trace: the time of the very bytes a
    later write covers (`fixes.overwritten_by_file`, what writing each region once saves); otherwise each file's
    op time in proportion to its excess."""
    bad = found["table"]
    ids, frac = bad["file_id"], bad["excess"] / bad["bytes"]
    if found["source"] == "dxt":
        exact = (fixes.overwritten_by_file(ctx) if op == "write" else None) or {}
        known = np.array([int(f) in exact for f in ids.tolist()], dtype=bool)
        seg = ctx.trace_posix
        rows = seg.is_op(op) & _members(seg.file_id, ids[~known])
        if not known.any():
            if not rows.any():
                return 0.0
            times = seg.duration[rows] * _lookup(ids, frac, seg.file_id[rows])
            return rank_stake(seg.rank[rows], times)  # per-rank sums (`group_sums`)
        per_rank = np.sum([exact[int(f)][0] for f in ids[known].tolist()], axis=0)
        if rows.any():  # a rewritten file the trace could not attribute: in proportion, as above
            rank = seg.rank[rows]
            ok = (rank >= 0) & (rank < len(per_rank))
            times = seg.duration[rows] * _lookup(ids, frac, seg.file_id[rows])
            per_rank = per_rank + np.bincount(rank[ok], weights=times[ok], minlength=len(per_rank))[:len(per_rank)]
        return float(per_rank.max())
    fid = ctx.column("POSIX", "file_id")
    recs = _members(fid, ids)
    OP = "WRITE" if op == "write" else "READ"
    values = ctx.column("POSIX", f"POSIX_F_{OP}_TIME")[recs] * _lookup(ids, frac, fid[recs])
    values[np.isnan(values)] = 0.0
    return counter_stake(ctx, ctx.column("POSIX", "rank")[recs], values)


def _members(values, ids):
    """np.isin(values, ids): by comparison when small (np.isin's set-up costs ~0.1 ms on a few dozen)."""
    if len(values) * len(ids) <= 100_000:
        return (values[:, None] == ids[None, :]).any(axis=1)
    return np.isin(values, ids)


def _lookup(ids, values, keys):
    """values[i] where ids[i] == key, for each key (every key is among `ids`)."""
    order = np.argsort(ids)
    return values[order][np.searchsorted(ids[order], keys)]


def features(ctx, op: str) -> dict:
    """The features of `op`: the largest ratio of any data file, and the totals of the files at or above the
    log's `redundant_ratio` with the busiest rank's time in their excess."""
    P = OPS[op][2]
    row = {P + "max_ratio": None, P + "at_ratio": float(ctx.th.redundant_ratio), P + "moved": None,
           P + "extent": None, P + "excess": None, P + "stake": None, P + "overwrite": None}
    found = redundant_files(ctx, op)
    if found is None:
        return row
    row[P + "max_ratio"] = found["max_ratio"]
    bad = found["table"]
    if bad is None:
        return row
    if "stake" not in found:
        found["stake"] = stake(ctx, op, found)
    row.update({P + "moved": int(bad["bytes"].sum()), P + "extent": int(bad["extent"].sum()),
                P + "excess": int(bad["excess"].sum()), P + "stake": found["stake"]})
    if op == "write":  # writing these files' regions once, priced from the trace (None without one)
        row[P + "overwrite"] = fixes.overwrite(ctx, bad["file_id"].tolist()).seconds
    return row


def measure(ctx, op: str) -> dict | None:
    """One log's features of `op`; None when no file is at or above its ratio (no query)."""
    found = redundant_files(ctx, op)
    if found is None or found["table"] is None:
        return None
    return features(ctx, op)


def dtypes(op) -> dict:
    P = OPS[op][2]
    return {P + "max_ratio": pl.Float64, P + "at_ratio": pl.Float64, P + "moved": pl.Int64, P + "extent": pl.Int64,
            P + "excess": pl.Int64, P + "stake": pl.Float64, P + "overwrite": pl.Float64}


def rule(op, th) -> dict:
    P = OPS[op][2]
    moved, extent, excess = pl.col(P + "moved"), pl.col(P + "extent"), pl.col(P + "excess")
    stake_ = pl.col(P + "stake").fill_null(0.0)
    found = ((pl.col(P + "max_ratio") >= th.redundant_ratio) & (excess >= th.redundant_min_bytes)).fill_null(False)
    severity, strong = judge(stake_, excess / moved, th)
    return {"severity": pl.when(found).then(severity).otherwise(pl.lit(None, pl.String)), "strong": strong & found,
            "score": moved / extent, "ratio": moved / extent, "moved": moved, "extent": extent, "excess": excess,
            "stake": stake_}


def title(op, v: dict) -> str:
    verb = "written" if op == "write" else "read"
    return (f"{'Rewrites' if op == 'write' else 'Re-reads'}: {fmt_bytes(v['moved'])} {verb} for "
            f"{fmt_bytes(v['extent'])} of file extent ({v['ratio']:.1f}×)")


def stale(op, th) -> pl.Expr:
    """Jobs with a file at or above `redundant_ratio` whose features were computed at another ratio: a rebuild
    answers."""
    P = OPS[op][2]
    could = pl.col(P + "max_ratio") >= th.redundant_ratio
    other = pl.col(P + "at_ratio") != float(th.redundant_ratio)
    return (could & other).fill_null(False)


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, judged, op: str, recommendations) -> list:
    """The insight of `op`; `recommendations(ctx, file ids)`: its fixes."""
    found = redundant_files(ctx, op)
    source, partial, bad = found["source"], False, found["table"]
    excess, moved, extent = judged["excess"], judged["moved"], judged["extent"]
    fids = bad["file_id"].tolist()
    ratio, stake_ = judged["ratio"], judged["stake"]
    metrics = {f"bytes_{'written' if op == 'write' else 'read'}": moved, "extent_bytes": extent,
               "excess_bytes": excess, "ratio": ratio, "files": len(fids)}
    ranks, window = [], None
    seg = ctx.trace_posix
    s = seg.take(seg.is_op(op) & np.isin(seg.file_id, bad["file_id"]))
    if not s.empty:
        window = ctx.trace_window(s)
        ranks = heaviest_ranks(s.rank, s.length)[:MAX_RANKS]
        partial = source == "dxt" and not ctx.trace_complete("DXT_POSIX", op)
    if window is None:
        window = ctx.counter_window("POSIX", fids, ops=("WRITE",) if op == "write" else ("READ",))
    verb = "written" if op == "write" else "read"
    how = ("the union of the byte ranges actually touched (from the trace)" if source == "dxt" else
           "the highest offset touched (from the counters; a lower bound on the redundancy when files "
           "are sparse)")
    summary = (f"On {plural(len(fids), 'file')}, the bytes {verb} at the POSIX layer are {ratio:.1f}× {how}: "
               f"{fmt_bytes(excess)} ({fmt_pct(excess / moved)}) move more than once.")
    recs = recommendations(ctx, fids)
    if op == "write":
        price_on_these_files(ctx, recs, fids)
    metrics["busiest_rank_redundant_time_s"] = stake_
    severity, strong = judged["severity"], judged["strong"]
    if severity == "info":
        summary += (f" The repeated traffic costs the busiest rank about {fmt_time(stake_)}: not worth fixing "
                    "for this run.")
    summary += " " + project(ctx, metrics, stake_, nbytes=excess, op=op)
    return [Insight(OPS[op][0], severity, title(op, judged), summary,
                    Evidence(ranks=ranks, files=ctx.names_of(fids), time_window=window, metrics=metrics),
                    recs, source=source, partial=partial, score=ratio, demotable=not strong)]


def price_on_these_files(ctx, recs: list, fids: list) -> None:
    """The recommendations that stop rewrites save the rewrites of the files this insight is about (the files
    its cost counts), not every file's (`fixes.overwrite` of them); where the trace cannot say, the finding's own
    saving applies (its cost)."""
    price = fixes.overwrite(ctx, fids)
    for r in recs:
        if r.fix != "overwrite":
            continue
        if price.seconds is None:
            r.fix = ""
        else:
            r.expected_saving, r.saving_basis = price.seconds, price.basis
            savings.say_if_slower(r, ctx)


def saving_rule(op, th) -> dict:
    """The expected saving: writing each region once, priced from the trace, else the time in the excess."""
    P = OPS[op][2]
    return {None: pl.coalesce(pl.col(P + "overwrite"), stage(OPS[op][0], "stake"))}


def finding(code: str, op: str, meaning: str, report) -> Finding:
    """REDUNDANT_READS or REDUNDANT_WRITES (`op`): one rule over their shared features, told apart by `op`."""
    moved = "read" if op == "read" else "written"
    return Finding(
        code=code,
        meaning=meaning,
        key_metrics=("excess_bytes",),
        reads=("redundant_ratio", "redundant_min_bytes"),
        trigger=f"per file, bytes {moved} at the POSIX layer are at least `redundant_ratio` × the extent — the "
                "union of the byte ranges touched (DXT, exact) or the highest offset + 1 (counters, a lower "
                "bound) — and the excess is at least `redundant_min_bytes`."
                + (" Its cost, the busiest rank's time in the excess, is from a complete trace the time of the very "
                   "bytes a later write covers (what writing each region once saves), else each file's write time "
                   "in proportion to its excess." if op == "write" else ""),
        source="dxt / counters",
        report=report,
        saving=traffic("busiest_rank_redundant_time_s"),
        saving_rule=partial(saving_rule, op),
        features=partial(features, op=op), dtypes=partial(dtypes, op),
        rule=partial(rule, op), measure=partial(measure, op=op),
        title=lambda v, th: title(op, v), stale=partial(stale, op),
    )
