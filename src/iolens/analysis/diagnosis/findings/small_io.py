"""SMALL_IO: small requests dominate at the file-system (POSIX) layer.

The rule: small requests are at least `small_min_share` and `small_min_ops` of the POSIX reads or writes; the
busiest rank's time in them decides warning/info (`judge`), most of the traced time and a tenth of the run
makes it critical.

Counters only know Darshan's size bins, so the features keep, per size-bin edge (100 B .. 1 GiB), the small
requests and the busiest rank's estimated time in them: any `small_request_bytes` is answered from the stored
features by the edge at or below it, as the diagnosis rounds it. On a DXT log the time share and the stake come
from the trace at the exact limit the features were computed with (`small_io_trace_limit`): another limit
needs the trace again (`stale`).
"""
from __future__ import annotations

import functools

import numpy as np
import polars as pl

from ....model.darshan import SIZE_BINS
from ...access import STRIDE_SHARE
from ...measures import small_bins
from ...segments import OP_CODES, float_sum
from ..common import EDGES, RUN_TIME, KiB, edge_index, edge_names, edge_suffix, judge, matters
from ..context import MAX_RANKS
from ..costmodel import project
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight
from ..savings import latency
from ..stages import stage
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_size, fmt_time, plural
from . import _advice as advice
from ._requests import SIZES, column_stakes, most_first, trace_arrays, trace_stake

CODE = "SMALL_IO"
THRESHOLDS = (
    Threshold("small_request_bytes", 100 * KiB, "bytes",
              "A request of at most this size is small. Counters only know Darshan's size bins (100 B, 1 KiB, "
              "10 KiB, 100 KiB, 1 MiB, 4 MiB, ...): the value is rounded down to a bin edge there."),
    Threshold("small_min_share", 0.10, "share", "SMALL_IO: small requests are at least this share of the POSIX "
                                                "reads or writes ..."),
    Threshold("small_min_ops", 1000, "count", "... and at least this many."),
)
OPS = (("write", "WRITE", "WRITES"), ("read", "READ", "READS"))
SETS = {"w": ("write",), "r": ("read",), "wr": ("write", "read")}  # the flagged operation kinds
P = "small_io_"
CRITICAL_TIME_SHARE, CRITICAL_RUN_SHARE = 0.5, 0.1


def S(name: str) -> pl.Expr:
    """An earlier stage of this rule (`stages.stage`)."""
    return stage(CODE, name)


def set_name(ops) -> str:
    return "".join(op[0] for op in ("write", "read") if op in ops)


bins_below = edge_index  # how many size bins hold only requests of at most `limit` bytes: 0..10


# --- features ----------------------------------------------------------------------------------------
def measure(ctx) -> dict | None:
    """One log's features at its `small_request_bytes`: the counts at its edge, and the stake of the flagged
    kinds only when some kind is flagged (None when none is: the rule cannot find it)."""
    limit = int(ctx.th.small_request_bytes)
    edges = [k for k in (bins_below(limit),) if k]
    row = counts(ctx, edges)
    flagged = flagged_kinds(row, ctx.th)
    if not flagged:
        return None
    row.update(stakes(ctx, edges, [set_name(flagged)], limit))
    return row


def flagged_kinds(row: dict, th) -> list:
    """The kinds `flags` flags on one log's `counts` (the same tests, in Python: no query for most logs)."""
    k = bins_below(int(th.small_request_bytes))
    out = []
    for op, *_ in OPS:
        n = row[f"{P}{op}s"]
        small = row[f"{P}trace_small_{op}s"] if row[P + "from_trace"] else (
            row[f"{P}small_{op}s_{edge_suffix(k)}"] if k else 0)
        if n and small is not None and n > 0 and small >= th.small_min_ops and small / n >= th.small_min_share:
            out.append(op)
    return out


def features(ctx, edges=None, sets=None) -> dict:
    """SMALL_IO's features of one log. `edges`: the bin counts (`bins_below`) to keep (None: every edge,
    1..9, as a fleet row does); `sets`: the flagged operation kinds to price (None: all three)."""
    limit = int(ctx.th.small_request_bytes)
    edges = range(1, len(EDGES) + 1) if edges is None else [k for k in edges if k > 0]
    sets = tuple(SETS) if sets is None else tuple(sets)
    row = counts(ctx, edges)
    row.update(stakes(ctx, edges, sets, limit))
    return row


def counts(ctx, edges) -> dict:
    """Requests per kind, and those in the bins below each edge, over the data files (not stdin/out/err)."""
    row = {P + "from_trace": False, P + "trace_small_writes": None, P + "trace_small_reads": None}
    if ctx.has("POSIX"):
        requests = ctx.counter_rows("POSIX", ("POSIX_READS", "POSIX_WRITES"))
        sizes = ctx.counter_rows("POSIX", SIZES)
        data = ctx.data_records("POSIX")
        if not data.all():  # most logs name no standard stream at POSIX: no mask to apply
            requests, sizes = requests[:, data], sizes[:, data]
        # both kinds at once: integer sums per bin, then running totals (exact in any order)
        n = dict(zip(("read", "write"), requests.sum(axis=1).tolist()))
        running = np.cumsum(sizes.sum(axis=1).reshape(2, len(SIZE_BINS)), axis=1).tolist()
        running = dict(zip(("read", "write"), running))
        edges = tuple(edges)
        for op, *_ in OPS:
            row[f"{P}{op}s"] = n[op]
            row.update(zip(edge_names(f"{P}small_{op}s", edges), [running[op][k - 1] for k in edges]))
        return row
    std_ids = np.fromiter(ctx.std_ids, dtype=np.uint64)
    empty = ctx.trace_posix.empty
    limit = int(ctx.th.small_request_bytes)
    row[P + "from_trace"] = not empty
    if empty:
        row.update({f"{P}{op}s": 0 for op, *_ in OPS})
        row.update({f"{P}trace_small_{op}s": 0 for op, *_ in OPS})
    else:
        tr = trace_arrays(ctx)
        keep = ~np.isin(tr["file_id"], std_ids)
        for op, *_ in OPS:
            mine = tr[op] & keep
            row[f"{P}{op}s"] = int(mine.sum())
            row[f"{P}trace_small_{op}s"] = int((mine & (tr["length"] <= limit)).sum())
    for op, *_ in OPS:
        for k in edges:
            row[f"{P}small_{op}s_{edge_suffix(k)}"] = 0
    return row


def stakes(ctx, edges, sets, limit: int) -> dict:
    """The busiest rank's time in the small requests of each flagged set: from the counters per edge
    (time x small share of each record's requests), and from the trace at `limit`."""
    row = {}
    if ctx.has("POSIX") and edges:
        row.update(counter_stakes_per_edge(ctx, edges, sets))
    else:
        row.update({f"{P}counter_stake_{s}_{edge_suffix(k)}": 0.0 for k in edges for s in sets})
    empty = ctx.trace_posix.empty
    row[P + "trace_limit"] = None if empty else limit
    for op, *_ in OPS:
        row[f"{P}trace_incomplete_{op}"] = not ctx.trace_complete("DXT_POSIX", op)
    for s in sets:
        row[f"{P}trace_time_share_{s}"], row[f"{P}trace_stake_{s}"] = None, None
    if empty:
        return row
    tr = trace_arrays(ctx)
    total_t = float_sum(tr["duration"])
    small = tr["length"] <= limit
    done = []  # (mask, share, stake) of the sets priced: a set of the same requests has the same values
    for s in sets:
        mask = small & np.logical_or.reduce([tr[op] for op in SETS[s]])
        if not mask.any():
            continue
        same = next((v for m, *v in done if np.array_equal(m, mask)), None)
        if same is None:
            every = bool(mask.all())  # every request small (many small logs): the whole trace's sums
            small_t = total_t if every else float_sum(tr["duration"][mask])
            same = [small_t / total_t if total_t > 0 else None, trace_stake(ctx, mask, every)]
            done.append((mask, *same))
        row[f"{P}trace_time_share_{s}"], row[f"{P}trace_stake_{s}"] = same
    return row


def counter_stakes_per_edge(ctx, edges, sets) -> dict:
    """`counter_stake` of each flagged set at each edge, all in one pass over the records."""
    rank = ctx.column("POSIX", "rank")
    top = max(edges)
    rows = [k - 1 for k in edges]
    # (read, write) x edges x records: each record's time x its share of requests below the edge, both kinds
    # in one pass (element-wise: the bits of one kind at a time)
    time = np.stack([ctx.column("POSIX", "POSIX_F_READ_TIME"), ctx.column("POSIX", "POSIX_F_WRITE_TIME")])
    per = np.maximum(ctx.counter_rows("POSIX", ("POSIX_READS", "POSIX_WRITES")), 1)
    running = running_bins(ctx.counter_rows("POSIX", SIZES).reshape(2, len(SIZE_BINS), -1)[:, :top])
    both = time[:, None] * (running if len(rows) == top else running[:, rows]) / per[:, None]
    terms = {"read": both[0], "write": both[1]}
    per_set = []
    for s in sets:  # the flagged kinds added in order as the rule's expression adds them
        est = 0.0
        for op in SETS[s]:
            est = est + terms[op]
        per_set.append(est)
    values = np.stack(per_set, axis=1).reshape(len(rows) * len(sets), len(rank))  # edge-major, then set
    values = np.where(np.isnan(values), 0.0, values)
    return dict(zip(stake_names(tuple(edges), tuple(sets)), column_stakes(ctx, rank, values)))


def running_bins(counts: np.ndarray) -> np.ndarray:
    """Running totals over the size bins (axis 1) of integer request counts (kinds x bins x records): exact
    in any order. numpy's accumulate along that middle axis crawls on thousands of records, a loop of adds
    over the bins does not (on a few records the accumulate costs less)."""
    if counts.shape[-1] <= 64:
        return np.add.accumulate(counts, axis=1)
    out = np.empty(counts.shape, dtype=counts.dtype)
    out[:, 0] = counts[:, 0]
    for k in range(1, counts.shape[1]):
        np.add(out[:, k - 1], counts[:, k], out=out[:, k])
    return out


@functools.cache
def stake_names(edges: tuple, sets: tuple) -> tuple:
    """The features `counter_stakes_per_edge` fills, edge-major then set (made once per process)."""
    return tuple(f"{P}counter_stake_{s}_{edge_suffix(k)}" for k in edges for s in sets)


def _small_per_file(ctx, source: str, limit: int) -> tuple:
    """(data file ids, sorted; their small requests per operation kind; whether each has a record shared by
    all ranks) at POSIX: from the trace (`source` "dxt") or the counters' size bins, as integer counts."""
    std_ids = np.fromiter(ctx.std_ids, dtype=np.uint64)
    if source == "dxt":
        tr = trace_arrays(ctx)
        ids, inv = np.unique(tr["file_id"], return_inverse=True)
        small = tr["length"] <= limit
        per_op = {op: np.bincount(inv[tr[op] & small], minlength=len(ids)) for op, *_ in OPS}
        shared = np.zeros(len(ids), dtype=bool)
    else:
        ids, inv = ctx.file_groups("POSIX")
        shared = np.zeros(len(ids), dtype=bool)
        shared[inv[ctx.column("POSIX", "rank") < 0]] = True
        bins = small_bins(limit)
        per_op = {op: ctx.per_file_total("POSIX", *(f"POSIX_SIZE_{OP}_{b}" for b in bins)) for op, OP, *_ in OPS}
    data = ~np.isin(ids, std_ids)
    return ids[data], {op: n[data] for op, n in per_op.items()}, shared[data]


def dtypes() -> dict:
    out = {P + "writes": pl.Int64, P + "reads": pl.Int64, P + "from_trace": pl.Boolean,
           P + "trace_small_writes": pl.Int64, P + "trace_small_reads": pl.Int64, P + "trace_limit": pl.Int64,
           P + "trace_incomplete_write": pl.Boolean, P + "trace_incomplete_read": pl.Boolean}
    for k in range(1, len(EDGES) + 1):
        for op, *_ in OPS:
            out[f"{P}small_{op}s_{edge_suffix(k)}"] = pl.Int64
        for s in SETS:
            out[f"{P}counter_stake_{s}_{edge_suffix(k)}"] = pl.Float64
    for s in SETS:
        out[f"{P}trace_time_share_{s}"] = pl.Float64
        out[f"{P}trace_stake_{s}"] = pl.Float64
    return out


# --- the rule ----------------------------------------------------------------------------------------
def flags(th) -> dict:
    """Which operation kinds have enough small requests: stages {"small_writes", "flag_write", …} (each may
    read the ones before it through `S`)."""
    k = bins_below(int(th.small_request_bytes))
    out = {}
    for op, *_ in OPS:
        n = pl.col(f"{P}{op}s")
        counted = pl.col(f"{P}small_{op}s_{edge_suffix(k)}") if k else pl.lit(0, pl.Int64)
        out[f"small_{op}s"] = pl.when(pl.col(P + "from_trace")).then(pl.col(f"{P}trace_small_{op}s")).otherwise(counted)
        small = S(f"small_{op}s")
        out[f"flag_{op}"] = ((n > 0) & (small >= th.small_min_ops) & (small / n >= th.small_min_share)).fill_null(False)
    return out


def rule(th) -> dict:
    """Stages ending in {"severity", "strong", "score"} over a features frame (evaluated in order, each one a
    column the later ones read through `S`: the expressions stay small over a million rows)."""
    k = bins_below(int(th.small_request_bytes))
    out = flags(th)
    fw, fr = S("flag_write"), S("flag_read")

    def per_set(name):  # the stake and traced time share if the flagged kinds are `name`
        share = pl.col(f"{P}trace_time_share_{name}")
        partial = pl.any_horizontal([pl.col(f"{P}trace_incomplete_{op}") for op in SETS[name]])
        counted = pl.col(f"{P}counter_stake_{name}_{edge_suffix(k)}") if k else pl.lit(0.0)
        stake = pl.when(share.is_not_null() & ~partial).then(pl.col(f"{P}trace_stake_{name}")).otherwise(counted)
        return stake, share

    sets = [per_set(s) for s in ("wr", "w", "r")]
    for i, name in enumerate(("stake", "time_share")):
        out[name] = pl.when(fw & fr).then(sets[0][i]).when(fw).then(sets[1][i]).when(fr).then(sets[2][i])
    out["writes"], out["reads"] = pl.col(P + "writes"), pl.col(P + "reads")
    out["share_w"] = S("small_writes") / S("writes")
    out["share_r"] = S("small_reads") / S("reads")
    share_w, share_r = S("share_w"), S("share_r")
    out["share"] = pl.when(fw & fr).then(pl.max_horizontal(share_w, share_r)).when(fw).then(share_w).otherwise(share_r)
    stake, time_share = S("stake"), S("time_share")
    severity, strong = judge(stake, S("share"), th)
    run = pl.col(RUN_TIME)
    critical = ((time_share >= CRITICAL_TIME_SHARE) & (run > 0) & (stake >= CRITICAL_RUN_SHARE * run)
                & matters(stake, th)).fill_null(False)
    out["found"] = fw | fr
    found = S("found")
    out["severity"] = (pl.when(~found).then(pl.lit(None, pl.String)).when(critical).then(pl.lit("critical"))
                       .otherwise(severity))
    out["strong"] = strong & found
    both = pl.when(fw & fr).then(share_w + share_r).when(fw).then(share_w).otherwise(share_r)
    out["score"] = time_share.fill_null(0.0) + both
    return out


def what(v: dict) -> str:
    """'N of M writes (S%) and …' of the flagged kinds, from `rule`'s values."""
    return " and ".join(f"{fmt_count(v[f'small_{op}s'])} of {fmt_count(v[f'{op}s'])} {op}s "
                        f"({fmt_pct(v[f'small_{op}s'] / v[f'{op}s'])})" for op, *_ in OPS if v[f"flag_{op}"])


def title(v: dict, th) -> str:
    return (f"Small requests dominate at the file system: {what(v)} are at most "
            f"{fmt_bytes(int(th.small_request_bytes))}")


def stale(th) -> pl.Expr:
    """Jobs whose SMALL_IO under `th` needs their trace at another `small_request_bytes` than the one the
    features were computed with (a rebuild answers): the counts come from the trace (no POSIX counters), or
    the counters flag small requests and the stake and time share come from the trace."""
    at = pl.col(P + "trace_limit")
    needs_trace = pl.col(P + "from_trace") | S("flag_write") | S("flag_read")  # evaluated after `rule`
    return (at.is_not_null() & (at != int(th.small_request_bytes)) & needs_trace).fill_null(False)


def unanswerable(th) -> str | None:
    """A stored features table keeps the size-bin edges up to 1 GiB: a larger `small_request_bytes` needs the
    logs again."""
    if edge_index(int(th.small_request_bytes)) > len(EDGES):
        return (f"small_request_bytes: {int(th.small_request_bytes)} is past the last size-bin edge the store "
                "keeps (1 GiB)")
    return None


# --- the insight ---------------------------------------------------------------------------------------
def size_span(op: str, lo: int, hi: int) -> str:
    """`writes 128 B–1 KiB`; `reads all 1 KiB` when every request has one size (not `1 KiB–1 KiB`)."""
    if lo == hi:
        return f"{op}s all {fmt_bytes(hi)}"
    return f"{op}s {fmt_size(lo)}–{fmt_size(hi)} B" if hi < 1024 else f"{op}s {fmt_bytes(lo)}–{fmt_bytes(hi)}"


def report(ctx, judged) -> list:
    th = ctx.th
    limit = int(th.small_request_bytes)
    traced = not ctx.trace_posix.empty
    flagged = [op for op, *_ in OPS if judged[f"flag_{op}"]]
    source = "dxt" if judged["small_io_from_trace"] else "counters"
    totals = {k: judged[k] for k in ("small_writes", "small_reads")}
    totals.update({f"{op}s": judged[f"small_io_{op}s"] for op in ("write", "read")})
    ids, small_per_op, shared = _small_per_file(ctx, source, limit)

    metrics = {"small_request_bytes": limit}
    for op in ("write", "read"):
        metrics[f"small_{op}s"] = totals[f"small_{op}s"]
        metrics[f"{op}s"] = totals[f"{op}s"]
        if totals[f"{op}s"]:
            metrics[f"small_{op}_share"] = totals[f"small_{op}s"] / totals[f"{op}s"]
    per_file = sum(small_per_op[op] for op in flagged)
    order = np.argsort(-per_file[per_file > 0], kind="stable")  # most first; ties by file id
    file_ids = ids[per_file > 0][order].tolist()
    metrics["files_with_small_requests"] = len(file_ids)

    # the trace: exact sizes, time share, ranks, window, access pattern
    ranks, window, partial, time_share, pattern, size_range = [], None, False, None, None, {}
    if traced:
        tr = trace_arrays(ctx)
        small = (tr["length"] <= limit) & np.logical_or.reduce([tr[op] for op in flagged])
        if small.any():
            partial = any(not ctx.trace_complete("DXT_POSIX", op) for op in flagged)
            # Series sums of the durations: the same floats as a query's, without its fixed cost
            total_t = float_sum(tr["duration"])
            small_t = float_sum(tr["duration"][small])
            time_share = small_t / total_t if total_t > 0 else None
            metrics["small_request_time_s"] = small_t
            if time_share is not None:
                metrics["small_request_time_share"] = time_share
            by_rank = most_first(tr["rank"][small])
            metrics["ranks_with_small_requests"] = len(by_rank)
            ranks = by_rank[:MAX_RANKS]
            window = (float(tr["start"][small].min()), float(tr["end"][small].max()))
            for op in flagged:
                part = tr["length"][small & tr[op]]
                if len(part):
                    lo, hi = int(part.min()), int(part.max())
                    size_range[op] = (lo, hi)
                    metrics[f"smallest_{op}_bytes"], metrics[f"largest_small_{op}_bytes"] = lo, hi
            pat = ctx.posix_patterns
            on = np.isin(pat["file_id"], np.unique(tr["file_id"][small]))
            kinds = np.isin(pat["op"], [OP_CODES[op] for op in flagged])
            sel = on & kinds
            pattern = access_pattern(pl.DataFrame({k: pat[k][sel].tolist() for k in PATTERN_COLUMNS},
                                                  schema_overrides={"dominant_stride_bytes": pl.Int64}))
            if pattern:
                metrics.update({k: v for k, v in pattern.items() if v is not None and k != "pattern"})
            if source == "counters":
                source = "dxt" if time_share is not None else source
    elif shared.any():
        metrics["ranks_with_small_requests"] = ctx.nprocs

    stake = judged["stake"]  # the busiest rank's time in small requests
    metrics["busiest_rank_small_request_time_s"] = stake

    what_ = what(judged)
    sizes = ", ".join(size_span(op, lo, hi) for op, (lo, hi) in size_range.items())
    title_ = title(judged, th)
    summary = (f"The POSIX layer (what reaches the file system) sees {what_} of at most {fmt_bytes(limit)}"
               + (f" ({sizes})" if sizes else "") + f" on {plural(len(file_ids), 'file')}")
    if time_share is not None:
        summary += f"; they take {fmt_pct(time_share)} of the traced POSIX I/O time"
    summary += "."
    if pattern:
        stride = pattern.get("dominant_stride_bytes")
        summary += " " + PATTERN_SENTENCES[pattern["pattern"]].format(
            stride=f" (stride {fmt_bytes(stride)})" if stride else "", strided="strided, " if stride else "")
    if partial:
        summary += " The trace is truncated: the time share, ranks and sizes are from the traced part only."
    metrics["small_requests"] = sum(totals[f"small_{op}s"] for op in flagged)
    severity, strong = judged["severity"], judged["strong"]
    if severity == "info":
        summary += (f" They cost the busiest rank only {fmt_time(stake)} ({fmt_pct(stake / ctx.run_time)} of the run), "
                    "so this is not worth fixing for this run." if ctx.run_time > 0 else "")
    summary += " " + project(ctx, metrics, stake, requests=metrics["small_requests"],
                              op=flagged[0] if len(flagged) == 1 else None)
    return [Insight(CODE, severity, title_, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(file_ids), time_window=window, metrics=metrics),
                    _small_recs(ctx, file_ids, flagged), source=source, partial=partial,
                    score=judged["score"],
                    demotable=not strong)]


def _small_recs(ctx, file_ids, ops) -> list:
    recs = []
    kinds = ctx.kinds(file_ids[:20])
    mpi = ctx.counters("MPI-IO")
    wanted = np.array(file_ids, dtype=np.uint64)
    nr = ctx.ranks_on_file("POSIX")
    shared = bool((np.isin(nr["file_id"].to_numpy(), wanted) & (nr["nranks"].to_numpy() > 1)).any())
    indep = coll = 0
    if mpi is not None:  # integer sums over the files' MPI-IO records
        on = np.isin(ctx.column("MPI-IO", "file_id"), wanted)
        for op in ops:
            OPS_ = "WRITES" if op == "write" else "READS"
            indep += int(ctx.column("MPI-IO", f"MPIIO_INDEP_{OPS_}")[on].sum())
            coll += int(ctx.column("MPI-IO", f"MPIIO_COLL_{OPS_}")[on].sum())
    op = ops[0]
    nodes = ctx.hosts or None
    if "hdf5" in kinds:
        recs.append(advice.hdf5_collective_transfer())
        recs.append(advice.hdf5_collective_metadata())
    if "netcdf" in kinds or "pnetcdf" in kinds:
        recs.append(advice.netcdf_collective("netcdf" in kinds, "pnetcdf" in kinds))
    if indep > coll or (shared and not (indep or coll)):
        recs.extend(advice.collective_io(op, nodes, adopt=not (indep or coll)))
    elif coll:
        recs.append(advice.mpi_hints_c({"romio_cb_write" if op == "write" else "romio_cb_read": "enable"},
                                       "Make sure collective buffering is not disabled",
                                       "The application already calls collective MPI-IO but the file system still "
                                       "sees small requests: collective buffering may be turned off "
                                       "(romio_cb_write=disable or automatic mode deciding against it)."))
    recs.append(advice.aggregate_requests(op))
    return recs


PATTERN_SENTENCES = {
    "consecutive": "Each rank's requests are consecutive: buffering them into larger requests is straightforward.",
    "sequential": "Each rank's requests go forward through the file with irregular gaps (sequential, not random).",
    "strided": "Each rank's requests go forward through the file with a regular gap{stride}: a strided pattern, "
               "not random access.",
    "rank-interleaved": "Each rank's requests go forward through the file with gaps{stride} that the other ranks "
                        "fill: a {strided}rank-interleaved pattern, not random access — the kind collective "
                        "buffering turns into large contiguous requests.",
    "random": "The requests jump backwards and forwards with no dominant stride: random access, which defeats "
              "read-ahead and write-behind (see RANDOM_ACCESS).",
}


PATTERN_COLUMNS = ("pattern", "requests", "consecutive_share", "forward_gap_share", "backward_share",
                   "dominant_stride_share", "dominant_stride_bytes")


def access_pattern(per: pl.DataFrame):
    """The access pattern of a set of files (rows of `Context.posix_patterns`): the pattern of the file with
    the most requests, and the shares of consecutive / forward-gap (strided) / backward transitions over all."""
    if per.is_empty():
        return None
    w = pl.col("requests")
    total = float(per["requests"].sum() or 0)
    if total <= 0:
        return None
    shares = per.select(*[(pl.col(c) * w).sum() / total for c in ("consecutive_share", "forward_gap_share",
                                                                     "backward_share")]).row(0)
    top = per.sort("requests", descending=True).row(0, named=True)
    dominant = (top["dominant_stride_share"] or 0) >= STRIDE_SHARE
    stride = top["dominant_stride_bytes"] if top["pattern"] in ("strided", "rank-interleaved") and dominant else None
    return {"pattern": top["pattern"], "consecutive_share": shares[0], "strided_share": shares[1],
            "backward_share": shares[2], "dominant_stride_bytes": stride}


FINDING = Finding(
    code=CODE,
    meaning="Small requests dominate at the file-system (POSIX) layer.",
    key_metrics=("small_requests",),
    thresholds=THRESHOLDS,
    trigger="POSIX reads or writes of at most `small_request_bytes` are at least `small_min_share` of the reads "
            "(or writes) and at least `small_min_ops`. **critical** when (DXT) they take at least half of the "
            "POSIX I/O time and cost the busiest rank at least 10% of the run. The summary names the access "
            "pattern of the file holding most of them (see *Access patterns*): consecutive, sequential, strided, "
            "rank-interleaved (with the dominant stride) or random.",
    source="counters for counts, dxt for time/ranks/sizes",
    report=report,
    saving=latency("busiest_rank_small_request_time_s", "posix", (),
                   ("smallest_write_bytes", "smallest_read_bytes", "largest_small_write_bytes",
                    "largest_small_read_bytes")),
    saving_rule=lambda th: {None: S("stake")},  # the time at stake bounds what its fixes save
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title, stale=stale,
    unanswerable=unanswerable,
)
