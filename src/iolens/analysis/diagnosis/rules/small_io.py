"""SMALL_IO as a rule: small requests are at least `small_min_share` and `small_min_ops` of the POSIX reads or
writes; the busiest rank's time in them decides warning/info (`judge`), most of the traced time and a tenth of
the run makes it critical.

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
from ...segments import float_sum, group_sums, groups
from ..units import fmt_bytes, fmt_count, fmt_pct
from .common import COMMON_THRESHOLDS, EDGES, RUN_TIME, edge_index, edge_names, edge_suffix, judge, matters, stage

THRESHOLDS = ("small_request_bytes", "small_min_share", "small_min_ops") + COMMON_THRESHOLDS
OPS = (("write", "WRITE", "WRITES"), ("read", "READ", "READS"))
SETS = {"w": ("write",), "r": ("read",), "wr": ("write", "read")}  # the flagged operation kinds
P = "small_io_"
CRITICAL_TIME_SHARE, CRITICAL_RUN_SHARE = 0.5, 0.1


def S(name: str) -> pl.Expr:
    """An earlier stage of this rule (`rules.stage`)."""
    return stage("SMALL_IO", name)


def set_name(ops) -> str:
    return "".join(op[0] for op in ("write", "read") if op in ops)


bins_below = edge_index  # how many size bins hold only requests of at most `limit` bytes: 0..10


# --- features ----------------------------------------------------------------------------------------
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


def size_rows(ctx, OP: str, top: int = len(SIZE_BINS)) -> np.ndarray:
    """The first `top` size bins (default: all) of kind `OP` x records (integers, clipped at 0): a slice of the POSIX
    counters, not a column each."""
    return ctx.counter_rows("POSIX", SIZE_NAMES[OP][:top])


SIZE_NAMES = {OP: tuple(f"POSIX_SIZE_{OP}_{b}" for b, _, _ in SIZE_BINS) for OP in ("READ", "WRITE")}
SIZES = SIZE_NAMES["READ"] + SIZE_NAMES["WRITE"]  # every size bin, in the counters' order (a slice)


def trace_arrays(ctx) -> dict:
    """The POSIX trace's columns the request rules read, once per log: operation-kind masks ("write",
    "read"), file_id, offset, length, start, end, rank and duration."""
    def compute():
        seg = ctx.trace_posix
        return {"write": seg.is_op("write"), "read": seg.is_op("read"), "file_id": seg.file_id,
                "offset": seg.offset, "length": seg.length, "start": seg.start, "end": seg.end, "rank": seg.rank,
                "duration": seg.duration}
    return ctx.memo("requests.posix_trace_arrays", compute)


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


# --- shared with the other request rules (they belong in rules/common.py) -------------------------
def column_stakes(ctx, rank: np.ndarray, columns: np.ndarray) -> list:
    """`common.counter_stake` of each row of `columns` (columns x records), with the same bits: per-rank sums in
    record order (as `np.bincount`), the shared records' sums as polars sums them (`float_sums`)."""
    own = rank >= 0
    every = bool(own.all())  # no shared record (most logs): no mask to apply
    out = np.zeros(columns.shape[0])
    if every or own.any():
        mine, columns_mine = (rank, columns) if every else (rank[own], columns[:, own])
        nranks, k = int(mine.max()) + 1, columns.shape[0]
        # every (rank, column) sum as np.add.at adds them (from 0.0, in record order: a column's records are
        # met in order), in one bincount over the cells (np.add.at over rows costs a millisecond on two
        # thousand records)
        cells = (mine * k + np.arange(k)[:, None]).ravel()
        per_rank = np.bincount(cells, weights=columns_mine.ravel(), minlength=nranks * k).reshape(nranks, k)
        out = per_rank.max(axis=0)
    if not every:
        out = out + float_sums(columns[:, ~own].T) / ctx.nprocs
    return out.tolist()


SEQUENTIAL_SUM_BELOW = 128  # polars sums fewer floats than its pairwise block in order, one by one


def float_sums(values: np.ndarray) -> np.ndarray:
    """`context.float_sum` of each column (0.0 for a null or signed zero), without a Series per column."""
    if len(values) < SEQUENTIAL_SUM_BELOW:
        sums = np.cumsum(values, axis=0)[-1]
    else:
        sums = np.array([pl.Series(values[:, i], dtype=pl.Float64).sum() or 0.0 for i in range(values.shape[1])])
    return np.where(sums == 0, 0.0, sums)


def trace_stake(ctx, mask: np.ndarray, every: bool | None = None) -> float:
    """`rank_stake` of the traced POSIX requests where `mask` is true; when that is every request (`every`,
    if known), the largest of the whole trace's per-rank times (`Context.rank_times`: the same group-by, once
    per log for the request rules and RANK_IMBALANCE)."""
    seg = ctx.trace_posix
    if (bool(mask.all()) if every is None else every) and len(mask):
        return float(ctx.rank_times(seg).max())
    return rank_stake(seg.rank[mask], seg.duration[mask])


def rank_stake(rank: np.ndarray, duration: np.ndarray) -> float:
    """`common.dxt_stake` of the requests with these ranks and durations: the largest per-rank sum (a polars
    group-by's float sums, `segments.group_sums`)."""
    if not len(rank):
        return 0.0
    first, inv = groups(rank)
    return float(group_sums(inv, duration, len(first)).max())


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
