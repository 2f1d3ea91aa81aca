"""RANDOM_ACCESS: non-sequential (backward-seeking) small requests dominate.

The rule, one part per operation kind: POSIX requests smaller than `large_request_bytes` at random offsets are
at least `random_min_ops` and `random_min_share` of the kind's requests; the busiest rank's time in them
decides warning/info (`judge`).

From counters (no complete trace of the kind), a request is random when Darshan did not count it as
sequential, and only when most requests are below `large_request_bytes`: which requests are below depends on
Darshan's size bins (a bin counts when its lower edge is below the limit), so the features keep the count for
each number of bins. From the trace, the small random requests are counted at the build's
`large_request_bytes` (`random_access_trace_limit`): another limit needs the trace again (`stale`).
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ....model.darshan import SIZE_BINS
from ...segments import OP_CODES, is_in
from ..common import counter_stake, judge
from ..context import MAX_RANKS
from ..costmodel import project
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..savings import latency
from ..stages import stage
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time
from . import _advice as advice
from ._requests import SIZES, bins_below, most_first, rank_stake, trace_arrays, trace_stake

CODE = "RANDOM_ACCESS"
THRESHOLDS = (
    Threshold("random_min_share", 0.20, "share",
              "RANDOM_ACCESS: requests that go backwards in the file (per rank) are at least this share ..."),
    Threshold("random_min_ops", 1000, "count", "... and at least this many."),
)
OPS = (("write", "WRITE", "WRITES"), ("read", "READ", "READS"))
PARTS = tuple(op for op, *_ in OPS)
P = "random_access_"
MOST_SMALL = 0.5  # without the trace the sizes of the random requests are unknown: most requests must be small


def S(name: str) -> pl.Expr:
    return stage(CODE, name)


def requests_of(ctx, op: str, large: int, prune=None) -> dict | None:
    """Kind `op`'s requests (`total`), the non-sequential ones (`n_random`) and, from a complete trace, the
    random ones below `large` (`n_small`); from counters the requests in the first k size bins (`below`, k =
    1..10). None: no POSIX data for the kind. `prune(bound, total)`: from the trace, False when even every
    request below `large` could not be a finding (the access patterns then need not be classified)."""
    OP, OPS_ = {o: (a, b) for o, a, b in OPS}[op]
    if ctx.trace_complete("DXT_POSIX", op):
        tr = trace_arrays(ctx)  # numpy masks: no query each; the rows themselves only for a finding (`cost`)
        mine = tr[op] & (tr["offset"] >= 0)
        total = int(mine.sum())
        m = {"source": "dxt", "total": total, "n_random": None, "n_small": 0, "below": None}
        # every small random request below is one of these
        bound = int((mine & (tr["length"] < large)).sum())
        if not bound if prune is None else not prune(bound, total):
            return m
        # on a file whose pattern is random every request is random (forward jumps too); elsewhere only
        # the backward ones are
        pat, trans = ctx.posix_random, transition_arrays(ctx)
        random_files = pat["file_id"][(pat["op"] == OP_CODES[op]) & pat["random"]]
        back = trans[op] & (trans["offset"] < trans["prev_end"])
        small_here = mine & is_in(tr["file_id"], random_files) & (tr["length"] < large)
        # (tested per request in trace order, then read at the transitions' rows: one gather, not two)
        small_back_here = back & (~is_in(tr["file_id"], random_files) & (tr["length"] < large))[trans.rows]
        m.update(n_random=int(back.sum()), n_small=int(small_here.sum()) + int(small_back_here.sum()),
                 tr=tr, trans=trans, small_here=small_here, small_back_here=small_back_here)
        return m
    if not ctx.has("POSIX"):
        return None
    total, n_random, rnd, below = counter_requests(ctx)[OP]
    return {"source": "counters", "total": total, "n_random": n_random, "rnd": rnd, "below": below}


def counter_requests(ctx) -> dict:
    """Per kind ("READ", "WRITE"), from the POSIX counters: (requests, those Darshan did not count as
    sequential, those per file, requests in the first k size bins for k = 1..10), both kinds in one pass over
    the records (integers: exact in any order), once per log."""
    def compute():
        ops_ = ctx.per_file_sums("POSIX", ctx.counter_rows("POSIX", ("POSIX_READS", "POSIX_WRITES")))
        seq = ctx.per_file_sums("POSIX", ctx.counter_rows("POSIX", ("POSIX_SEQ_READS", "POSIX_SEQ_WRITES")))
        rnd = np.maximum(ops_ - seq, 0)  # per file: requests Darshan did not count as sequential
        below = np.cumsum(ctx.counter_rows("POSIX", SIZES).sum(axis=1).reshape(2, len(SIZE_BINS)), axis=1)
        totals, n_random = ops_.sum(axis=1).tolist(), rnd.sum(axis=1).tolist()
        return {OP: (totals[k], n_random[k], rnd[k], below[k].tolist()) for k, OP in enumerate(("READ", "WRITE"))}
    return ctx.memo("random_access.counter_requests", compute)


def transition_arrays(ctx) -> dict:
    """`Context.posix_transitions`' columns, as `small_io.trace_arrays` has the trace's, once per log (each
    gathered the first time it is read: the stake's only for a finding)."""
    def compute():
        trans = ctx.posix_transitions
        return _RowsOf(trace_arrays(ctx), trans.rows, prev_end=trans.prev_end)
    return ctx.memo("requests.posix_transition_arrays", compute)


class _RowsOf(dict):
    """The columns of `columns` at `rows`, each gathered when first read."""

    def __init__(self, columns: dict, rows: np.ndarray, **given):
        super().__init__(given)
        self.columns, self.rows = columns, rows

    def __missing__(self, key):
        self[key] = self.columns[key][self.rows]
        return self[key]


def cost(ctx, m: dict, op: str) -> None:
    """Adds to `m` the busiest rank's time in the random requests (`stake`), their files (most first) and,
    from the trace, ranks, time window and median size (`median`; from counters their sizes are unknown)."""
    if "stake" in m:
        return
    m["ranks"], m["window"] = [], None
    if m["source"] == "dxt":
        here, back = m["small_here"], m["small_back_here"]  # the traced requests, then the backward jumps
        tr, back = m["tr"], m["trans"].rows[back]  # the backward jumps' own rows: only theirs gathered
        rank = np.concatenate([tr["rank"][here], tr["rank"][back]])
        if len(back):
            m["stake"] = rank_stake(rank, np.concatenate([tr["duration"][here], tr["duration"][back]]))
        else:  # the traced requests in trace order: the whole trace's per-rank times when they are all of it
            m["stake"] = trace_stake(ctx, here)
        m["ranks"] = most_first(rank)[:MAX_RANKS]
        if len(rank):  # their size prices the fix (savings.latency), as SMALL_IO's sizes price its own
            m["median"] = float(np.median(np.concatenate([tr["length"][here], tr["length"][back]])))
        m["files"] = most_first(np.concatenate([tr["file_id"][here], tr["file_id"][back]]))
        if here.any() or len(back):
            starts = np.concatenate([tr["start"][here], tr["start"][back]])
            ends = np.concatenate([tr["end"][here], tr["end"][back]])
            m["window"] = (float(starts.min()), float(ends.max()))
        return
    OP, OPS_ = {o: (a, b) for o, a, b in OPS}[op]
    ids, rnd = ctx.file_groups("POSIX")[0], m["rnd"]
    order = np.argsort(-rnd[rnd > 0], kind="stable")  # most first; ties by file id
    m["files"] = ids[rnd > 0][order].tolist()
    time, ops_ = ctx.column("POSIX", f"POSIX_F_{OP}_TIME"), ctx.column("POSIX", f"POSIX_{OPS_}")
    nonseq = np.maximum(ops_ - ctx.column("POSIX", f"POSIX_SEQ_{OPS_}"), 0)
    est = time * nonseq / np.maximum(ops_, 1)  # element-wise: the bits of the polars expression
    m["stake"] = counter_stake(ctx, ctx.column("POSIX", "rank"), np.where(np.isnan(est), 0.0, est).astype(np.float64))


def values(m: dict | None, op: str, large: int) -> dict:
    """Kind `op`'s features of `requests_of` (and `cost` when it ran) as a row."""
    row = dict.fromkeys(VALUE_NAMES[op])
    if m is None:
        return row
    dxt = m["source"] == "dxt"
    row.update({f"{P}from_trace_{op}": dxt, f"{P}requests_{op}": m["total"], f"{P}nonsequential_{op}": m["n_random"],
                f"{P}trace_small_{op}": m["n_small"] if dxt else None,
                f"{P}stake_{op}": m.get("stake", 0.0)})  # no random request: no time
    if not dxt:
        row.update(zip(BELOW_NAMES[op], m["below"]))
    return row


BELOW_NAMES = {op: tuple(f"{P}below_{op}s_{k}" for k in range(1, len(SIZE_BINS) + 1)) for op in PARTS}
VALUE_NAMES = {op: tuple(f"{P}{k}_{op}" for k in ("from_trace", "requests", "nonsequential", "trace_small", "stake"))
               + BELOW_NAMES[op] for op in PARTS}


def features(ctx) -> dict:
    large = int(ctx.th.large_request_bytes)
    row = {P + "trace_limit": None}
    for op in PARTS:
        m = requests_of(ctx, op, large)
        if m is not None and (m["n_small"] if m["source"] == "dxt" else m["n_random"]):
            cost(ctx, m, op)
        row.update(values(m, op, large))
        if m is not None and m["source"] == "dxt":
            row[P + "trace_limit"] = large
    return row


def measure(ctx) -> dict | None:
    """One log's features: each kind's requests, pruned where too few are small for a finding, and the cost of
    the kinds `found` can find (the same tests in Python, no query); None when none can."""
    th = ctx.th
    large = int(th.large_request_bytes)

    def prune(bound, total):  # too few requests below `large` for a finding: no need to classify patterns
        return bool(total) and bound >= th.random_min_ops and bound / total >= th.random_min_share

    row, any_found = {}, False
    measured = ctx.memo("random_access.measured", dict)  # the report's
    for op in PARTS:
        m = measured[op] = requests_of(ctx, op, large, prune)
        if m is not None and could_be_found(m, th, large):
            cost(ctx, m, op)
            any_found = True
        row.update(values(m, op, large))
    return row if any_found else None


def could_be_found(m: dict, th, large: int) -> bool:
    """`found`'s tests on one kind's `requests_of`."""
    total = m["total"]
    if m["source"] == "dxt":
        small = m["n_small"]
    else:
        k = bins_below(large)
        below = m["below"][k - 1] if k else 0
        small = m["n_random"] if total > 0 and below / total >= MOST_SMALL else 0
    return total > 0 and small >= th.random_min_ops and small / total >= th.random_min_share


def dtypes() -> dict:
    out = {P + "trace_limit": pl.Int64}
    for op in PARTS:
        out.update({f"{P}from_trace_{op}": pl.Boolean, f"{P}requests_{op}": pl.Int64,
                    f"{P}nonsequential_{op}": pl.Int64, f"{P}trace_small_{op}": pl.Int64,
                    f"{P}stake_{op}": pl.Float64})
        out.update({f"{P}below_{op}s_{k}": pl.Int64 for k in range(1, len(SIZE_BINS) + 1)})
    return out


def found(th, op: str) -> dict:
    """Kind `op`'s stages `random_<op>s` (the small random requests), `share_<op>`, `found_<op>`."""
    k = bins_below(int(th.large_request_bytes))
    total = pl.col(f"{P}requests_{op}")
    below = pl.col(f"{P}below_{op}s_{k}") if k else pl.lit(0, pl.Int64)
    counted = pl.when((total > 0) & (below / total >= MOST_SMALL)).then(pl.col(f"{P}nonsequential_{op}")).otherwise(0)
    small = S(f"random_{op}s")
    return {f"random_{op}s": pl.when(pl.col(f"{P}from_trace_{op}")).then(pl.col(f"{P}trace_small_{op}")).otherwise(counted),
            f"share_{op}": small / total,
            f"found_{op}": ((total > 0) & (small >= th.random_min_ops)
                            & (S(f"share_{op}") >= th.random_min_share)).fill_null(False)}


def rule(th, ops=PARTS) -> dict:
    """Stages per kind: `found_<op>`, `severity_<op>`, `strong_<op>`, `score_<op>` (one insight each)."""
    out = {}
    for op in ops:
        out.update(found(th, op))
        severity, strong = judge(pl.col(f"{P}stake_{op}"), S(f"share_{op}"), th)
        out[f"severity_{op}"] = pl.when(S(f"found_{op}")).then(severity)
        out[f"strong_{op}"] = strong & S(f"found_{op}")
        out[f"score_{op}"] = S(f"share_{op}")
        out[f"requests_{op}"] = pl.col(f"{P}requests_{op}")
    return out


def title(v: dict, th, op: str | None = None) -> str:
    """The title of kind `op` (default: the part `rules.with_stages` chose, `best`)."""
    op = op or v["best"]
    n, total = v[f"random_{op}s"], v[f"requests_{op}"]
    return f"Random {op}s: {fmt_count(n)} of {fmt_count(total)} POSIX {op}s ({fmt_pct(n / total)}) are at random offsets"


def stale(th) -> pl.Expr:
    """Jobs whose RANDOM_ACCESS under `th` needs their trace at another `large_request_bytes` than the one the
    features were computed with (a rebuild answers)."""
    at = pl.col(P + "trace_limit")
    traced = pl.any_horizontal([pl.col(f"{P}from_trace_{op}").fill_null(False) for op in PARTS])
    return (at.is_not_null() & (at != int(th.large_request_bytes)) & traced).fill_null(False)


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, judged) -> list:
    th = ctx.th
    large = int(th.large_request_bytes)
    out = []
    for op in PARTS:
        if judged[f"severity_{op}"] is None:
            continue
        m = ctx.memo("random_access.measured", dict)[op]
        source, partial = m["source"], False
        metrics, ranks, window, files, stake = {}, m["ranks"], m["window"], m["files"], m["stake"]
        total, n_random, n_small_random = m["total"], m["n_random"], judged[f"random_{op}s"]
        metrics.update({f"random_{op}s": n_small_random, f"{op}s": total, "random_share": n_small_random / total,
                        "nonsequential_requests": n_random})
        if m.get("median") is not None:
            metrics["median_request_bytes"] = m["median"]
        title_ = title(judged, th, op)
        if source == "dxt":
            summary = (f"{fmt_pct(n_small_random / total)} of the POSIX {op}s are smaller than {fmt_bytes(large)} "
                       f"and random: on files with no dominant stride where the ranks jump back and forth "
                       f"({fmt_pct(n_random / total)} of the {op}s start before the end of the same rank's previous "
                       f"{op}, Darshan's non-sequential).")
        else:
            summary = (f"{fmt_pct(n_small_random / total)} of the POSIX {op}s start before the end of the same rank's "
                       f"previous {op} on that file (Darshan's definition of non-sequential).")
        summary += " Small random requests defeat read-ahead and write-behind and cost a seek or lock each."
        metrics["busiest_rank_random_time_s"] = stake
        severity, strong = judged[f"severity_{op}"], judged[f"strong_{op}"]
        if severity == "info":
            summary += f" They cost the busiest rank at most {fmt_time(stake)}: not worth fixing for this run."
        summary += " " + project(ctx, metrics, stake, requests=n_small_random, op=op)
        recs = [advice.aggregate_requests(op)]
        if op == "read":
            recs.insert(0, sort_and_batch(ctx))
            if "hdf5" in ctx.kinds(files[:20]):
                recs.append(Recommendation(
                    "HDF5: chunk to match the access pattern and enlarge the chunk cache",
                    "Random element access into large chunks re-reads whole chunks; choose chunk shapes that "
                    "match the read pattern and give the chunk cache room for the working set.",
                    "H5Pset_chunk_cache(dapl, 12421, 64 * 1024 * 1024, 1.0);   /* slots, bytes, w0 */", "c",
                    needs=("hdf5",)))
        out.append(Insight(CODE, severity, title_, summary,
                           Evidence(ranks=ranks, files=ctx.names_of(files), time_window=window, metrics=metrics),
                           recs, source=source, partial=partial, score=n_small_random / total,
                           demotable=not strong))
    return out

def sort_and_batch(ctx) -> Recommendation:
    """Read sorted contiguous ranges; the library calls that do it for you, of the layers the program uses."""
    calls = [call for layer, call in (("mpiio", "MPI_File_read_at_all with a file view"),
                                      ("hdf5", "H5Dread with a hyperslab union")) if ctx.has_layer(layer)]
    return Recommendation(
        "Sort and batch the reads", "Collect the offsets you need, sort them and read contiguous ranges "
        + (f"(or use {' / '.join(calls)}) " if calls else "") + "so the file system sees large forward reads.",
        "", "text")


FINDING = Finding(
    code=CODE,
    meaning="Non-sequential (backward-seeking) small requests dominate.",
    key_metrics=("random_reads", "random_writes"),
    thresholds=THRESHOLDS,
    reads=("large_request_bytes",),
    trigger="random POSIX requests smaller than `large_request_bytes` are at least `random_min_share` and "
            "`random_min_ops`. With DXT, a request is random when its file's pattern is `random` (no dominant "
            "stride, backward jumps: then forward jumps count too) or when it starts before the end of the same "
            "rank's previous request (Darshan's non-sequential); from counters, the non-sequential count. Strided "
            "and rank-interleaved access (each rank going forward) is not random.",
    source="dxt / counters",
    report=report,
    saving=latency("busiest_rank_random_time_s", "posix", ("random_reads", "random_writes"),
                   ("median_request_bytes",)),
    saving_rule=lambda th: {op: pl.col(f"{P}stake_{op}") for op in PARTS},  # the time at stake bounds it
    features=features, dtypes=dtypes, rule=rule, measure=measure, parts=PARTS, title=title, stale=stale,
)
