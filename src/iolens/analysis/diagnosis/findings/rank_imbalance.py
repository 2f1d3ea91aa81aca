"""RANK_IMBALANCE: I/O time or bytes are very uneven across ranks.

Two kinds of insight share the code. An *aggregator bottleneck*: a file accessed with collective MPI-IO by
several ranks whose file-system I/O goes through (nearly) one rank; from the counters only when at least
`single_aggregator_min_ranks` ranks share it; its time must matter for the run. A *spread*: the busiest rank
carries at least `imbalance_ratio` × the mean from some angle (bytes, operations, I/O time, fsyncs) and the
excess is large enough (`imbalance_min_bytes`, `small_min_ops`, 10 fsyncs, a time that matters).

The per-rank loads do not depend on a threshold: the features keep, per angle, the heaviest rank over the
mean, the excess and the four heaviest ranks; per candidate file of a bottleneck, its ranks, heaviest rank,
share and time. A spread whose heaviest rank a bottleneck names is dropped, and so is one SERIALIZED_IO
supersedes (its `spread` part: the rank doing I/O alone).
"""
from __future__ import annotations

import functools

import numpy as np
import polars as pl

from ...measures import TableCounters
from ...segments import distinct, group_sums, groups, per_group_at
from ....model.darshan import COUNTER_PREFIX, DXT_MODULES
from ..common import RUN_TIME, MiB, least_mattering
from ..context import MAX_RANKS, RANK_WORDS, capital
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..savings import Saving
from ..stages import evaluate, stage, superseded
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time
from . import _advice as advice
from ._ranks import files_by_bytes, meanwhile

CODE = "RANK_IMBALANCE"
THRESHOLDS = (
    Threshold("imbalance_ratio", 2.0, "ratio",
              "RANK_IMBALANCE: the busiest rank's I/O time (or bytes) is at least this multiple of the mean."),
    Threshold("imbalance_min_bytes", 16 * MiB, "bytes",
              "RANK_IMBALANCE by bytes: the busiest rank moves at least this many bytes more than the mean rank "
              "(by operations: at least `small_min_ops` more operations)."),
    Threshold("single_aggregator_min_ranks", 256, "count",
              "RANK_IMBALANCE from counters only: one rank doing nearly all file-system I/O of a collectively "
              "written file is flagged when the file was opened by at least this many ranks (the node count "
              "is unknown without DXT; with DXT, fewer aggregators than nodes is flagged)."),
)
P = "rank_imbalance_"

# (module, counter prefix) of the layers a rank's load is read at, the application's first
LAYERS = tuple((m, COUNTER_PREFIX[m]) for m in ("MPI-IO", "POSIX", "STDIO"))
ANGLES = ("bytes", "operations", "time", "fsyncs")
ANGLE_METRIC = {"bytes": "volume", "operations": "operations", "time": "time", "fsyncs": "fsync"}
# the requests a rank's operations count, per layer (MPI-IO: its independent and collective calls)
COUNTED = {"MPI-IO": ("MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES"),
           "POSIX": ("POSIX_READS", "POSIX_WRITES"), "STDIO": ("STDIO_READS", "STDIO_WRITES")}
MIN_EXCESS_FSYNCS = 10  # a few more fsyncs on one rank (closing its own files) is not an imbalance
SLOWER_RATIO = 1.25  # a rank with more bytes/operations matters when its I/O time is at least this × the mean
TOP = 4  # the heaviest ranks a title names
AGGREGATOR_FIELDS = {"rank": pl.Int64, "ranks_on_file": pl.Int64, "from_counters": pl.Boolean, "time": pl.Float64,
                     "share": pl.Float64}
AGGREGATOR = pl.Struct(AGGREGATOR_FIELDS)


# --- per-rank load at the layer the application calls ---------------------------------------------
def rank_loads(ctx):
    """Per rank 0..nprocs-1 at the application's layer: ({"time", "bytes", "operations", "fsyncs": array,
    "end": array or None}, source, partial), or None without any I/O record.

    MPI-IO for files opened with MPI-IO, POSIX for the other files, plus STDIO. From the trace when it is
    complete; from the counters otherwise, where a shared (reduced) record gives its slowest and fastest rank
    their recorded share and spreads the rest evenly. fsyncs come from the POSIX counters of each rank's own
    records (a shared record does not say which rank synced); `end` (the end of a rank's last traced I/O)
    only from the trace.
    """
    return ctx.memo("rank_loads", lambda: _rank_loads(ctx))


def _rank_loads(ctx):
    n = ctx.nprocs
    complete = all(ctx.trace_complete(m) for m in DXT_MODULES if m in ctx.dxt and ctx.dxt[m]["segments"])
    seg = ctx.trace_app
    fsyncs = _fsyncs(ctx)
    if not seg.empty and complete:
        first, inv = ctx.rank_groups(seg)
        r = seg.rank[first]
        per_t = ctx.rank_times(seg)  # the POSIX trace's (shared with the stakes)
        per_b = np.zeros(len(r), dtype=np.int64)  # integers: exact in any order
        per_group_at(np.add, per_b, inv, seg.length)
        per_e = np.full(len(r), -np.inf)
        per_group_at(np.maximum, per_e, inv, seg.end)
        t, b, ops, end = np.zeros(n), np.zeros(n), np.zeros(n), np.full(n, np.nan)
        ok = (r >= 0) & (r < n)
        t[r[ok]] += per_t[ok]
        b[r[ok]] += per_b[ok]
        ops[r[ok]] += np.bincount(inv, minlength=len(r))[ok]
        end[r[ok]] = per_e[ok]
        st, sb, so, _ = _counter_loads(ctx, ("STDIO",))
        loads = {"time": t + st, "bytes": b + sb, "operations": ops + so, "fsyncs": fsyncs, "end": end}
        return loads, "dxt", False
    t, b, ops, any_rows = _counter_loads(ctx, ("MPI-IO", "POSIX", "STDIO"))
    if not any_rows:
        return None
    return {"time": t, "bytes": b, "operations": ops, "fsyncs": fsyncs, "end": None}, "counters", False


def _fsyncs(ctx):
    out = np.zeros(ctx.nprocs)
    if not ctx.has("POSIX") or not ctx.records["POSIX"].has("POSIX_FSYNCS"):
        return out
    own = ctx.own_records("POSIX")
    if own.any():
        syncs = ctx.column("POSIX", "POSIX_FSYNCS")
        if ctx.records["POSIX"].has("POSIX_FDSYNCS"):
            syncs = syncs + ctx.column("POSIX", "POSIX_FDSYNCS")
        per = np.zeros(ctx.nprocs, dtype=np.int64)  # integer counts: summed exactly in any order
        np.add.at(per, ctx.column("POSIX", "rank")[own], syncs[own])
        seen = np.zeros(ctx.nprocs, dtype=bool)
        seen[ctx.column("POSIX", "rank")[own]] = True
        out[seen] = per[seen]
    return out


def _counter_loads(ctx, modules):
    n = ctx.nprocs
    t, b, ops = np.zeros(n), np.zeros(n), np.zeros(n)
    any_rows = False
    for module, p in LAYERS:
        if module not in modules:
            continue
        if not ctx.has(module):
            continue
        keep = ctx.data_records(module) if module != "STDIO" else np.ones(len(ctx.column(module, "rank")), bool)
        if module == "POSIX":
            keep = keep & ~ctx.on_files_of("POSIX", "MPI-IO")
        if not keep.any():
            continue
        any_rows = True
        col = ctx.column
        # element-wise, in the order polars' expressions added them: the same floats
        rt = col(module, f"{p}_F_READ_TIME") + col(module, f"{p}_F_WRITE_TIME") + col(module, f"{p}_F_META_TIME")
        # integers, each record's counters summed at once (a slice): exact in any order
        rb = ctx.counter_rows(module, (f"{p}_BYTES_READ", f"{p}_BYTES_WRITTEN")).sum(axis=0)
        rn = ctx.counter_rows(module, [c for c in COUNTED[module] if ctx.records[module].has(c)]).sum(axis=0)
        rank = col(module, "rank")
        own = keep & ctx.own_records(module)
        if own.any():
            mine = slice(None) if own.all() else own  # every record one rank's (most logs): no masked copies
            np.add.at(t, rank[mine], rt[mine])
            np.add.at(b, rank[mine], rb[mine])
            np.add.at(ops, rank[mine], rn[mine])
        shared = np.flatnonzero(keep & (rank < 0))
        if len(shared):
            raw = _recorded(ctx, module, shared)
            for i, rt_, rb_, rn_ in zip(range(len(shared)), rt[shared].tolist(), rb[shared].tolist(),
                                        rn[shared].tolist()):
                _spread(t, float(rt_), raw(f"{p}_SLOWEST_RANK")[i], raw(f"{p}_F_SLOWEST_RANK_TIME")[i],
                        raw(f"{p}_FASTEST_RANK")[i], raw(f"{p}_F_FASTEST_RANK_TIME")[i])
                _spread(b, int(rb_), raw(f"{p}_SLOWEST_RANK")[i], raw(f"{p}_SLOWEST_RANK_BYTES")[i],
                        raw(f"{p}_FASTEST_RANK")[i], raw(f"{p}_FASTEST_RANK_BYTES")[i])
                ops += int(rn_) / n
    return t, b, ops, any_rows


def _recorded(ctx, module: str, rows: np.ndarray):
    """name -> counter `name` of `rows` of `module` as recorded, as Python values (-1 kept, None when absent):
    the slowest/fastest rank fields, read without a row-wise pass over every counter."""
    c, cache = ctx.records[module], {}

    def values(name: str) -> list:
        if name not in cache:
            if not c.has_column(name):
                cache[name] = [None] * len(rows)
            elif isinstance(c, TableCounters):  # a job's merged table may hold nulls: None, as polars reads them
                cache[name] = c.df[name].gather(rows).to_list()
            else:
                cache[name] = c.raw(name)[rows].tolist()
        return cache[name]
    return values


def _spread(arr, total, slow, slow_v, fast, fast_v):
    n = len(arr)
    known = [(r, v) for r, v in ((slow, slow_v), (fast, fast_v))
             if r is not None and v is not None and 0 <= r < n and v >= 0]
    if len(known) == 2 and known[0][0] == known[1][0]:
        known = known[:1]
    rest = total - sum(v for _, v in known)
    others = n - len(known)
    if rest < 0 or others <= 0:
        arr += total / n
        return
    base = rest / others
    arr += base
    for r, v in known:
        arr[r] += v - base


def angle_features(loads) -> dict:
    """Per angle: the heaviest rank over the mean, its excess over the mean, its I/O time over the mean time,
    the mean, and the `TOP` heaviest ranks and their loads (heaviest first; null when the mean is 0)."""
    per = [loads[angle] for angle in ANGLES]
    if len(per[0]) <= SORT_EVERY_RANK_BELOW:  # a few ranks: each reduction once for the four angles
        stacked = np.stack(per)  # a row's mean has the bits of the array's own
        means, tops = stacked.mean(axis=1).tolist(), stacked.max(axis=1).tolist()
        orders = np.argsort(-stacked, axis=1, kind="stable")[:, :TOP].tolist()
    else:
        means, tops = [float(a.mean()) for a in per], [float(a.max()) for a in per]
        orders = [heaviest(a, TOP) for a in per]
    t = loads["time"]
    t_mean = means[ANGLES.index("time")]
    out = {}
    for i, angle in enumerate(ANGLES):
        mean, top = means[i], tops[i]
        if mean <= 0:
            out.update(dict.fromkeys(P + f"{angle}_{k}" for k in ANGLE_FEATURES))
            continue
        order = orders[i]
        heavy = order[0]
        out.update({P + f"{angle}_ratio": top / mean, P + f"{angle}_excess": top - mean, P + f"{angle}_mean": mean,
                    P + f"{angle}_time_ratio": float(t[heavy]) / t_mean if t_mean > 0 else 0.0,
                    P + f"{angle}_top_ranks": order, P + f"{angle}_top_loads": per[i][order].tolist()})
    return out


SORT_EVERY_RANK_BELOW = 256


def heaviest(row: np.ndarray, k: int) -> list:
    """The `k` heaviest ranks of per-rank loads `row`, heaviest first and the lowest rank first among equals
    (the first `k` of a stable argsort of -row): the ranks at the largest load (in rank order), then at the
    next largest, until `k` (a few passes over the ranks, where a sort of 65,536 ranks costs milliseconds)."""
    top = row.max()
    if np.isnan(top):  # NaN sorts last in the argsort, first in a max: sort
        return np.argsort(-row, kind="stable")[:k].tolist()
    out = []
    while True:
        out += _first(row == top, k - len(out))
        lower = row < top
        if len(out) >= k or not lower.any():
            return out
        top = row.max(where=lower, initial=-np.inf)


def _first(mask: np.ndarray, n: int) -> list:
    """The first `n` places where `mask` is true, searched in growing prefixes (every rank equal: a few)."""
    out, start, size = [], 0, 64
    while len(out) < n and start < len(mask):
        out += (np.flatnonzero(mask[start:start + size]) + start)[:n - len(out)].tolist()
        start, size = start + size, size * 4
    return out


ANGLE_FEATURES = {"ratio": pl.Float64, "excess": pl.Float64, "mean": pl.Float64, "time_ratio": pl.Float64,
                  "top_ranks": pl.List(pl.Int64), "top_loads": pl.List(pl.Float64)}


# --- aggregator bottlenecks -----------------------------------------------------------------------
def aggregator_candidates(ctx) -> list:
    """Collectively accessed shared files whose file-system I/O goes through (nearly) one rank, before the
    thresholds: one dict per file, by file id (file_id, rank, ranks_on_file, from_counters, time, bytes,
    file_bytes, share, aggregators, nodes, posix_rows: the indices of the file's POSIX records)."""
    return ctx.memo("aggregator_candidates", lambda: _aggregator_candidates(ctx))


def _aggregator_candidates(ctx) -> list:
    if ctx.nprocs < 2 or not ctx.has("MPI-IO") or not ctx.has("POSIX") or not ctx.total(
            "MPI-IO", "MPIIO_COLL_WRITES", "MPIIO_COLL_READS"):
        return []  # no collective request at all (integer total): nothing below can match
    ids, _ = ctx.file_groups("MPI-IO")
    coll = ctx.per_file_total("MPI-IO", "MPIIO_COLL_WRITES", "MPIIO_COLL_READS") > 0
    nranks_of = ctx.file_ranks("MPI-IO")
    posix_ids = ctx.column("POSIX", "file_id")
    posix_bytes = ctx.column("POSIX", "POSIX_BYTES_READ") + ctx.column("POSIX", "POSIX_BYTES_WRITTEN")
    seg = ctx.trace_posix
    traced = (distinct(seg.file_id) if not seg.empty and ctx.trace_complete("DXT_POSIX")
              else np.zeros(0, np.uint64))
    out = []
    for fid, nranks in zip(ids[coll], nranks_of[coll].tolist()):  # fid a uint64: compared exactly
        rows = np.flatnonzero(posix_ids == fid)
        if not len(rows) or nranks < 2:
            continue
        fb = int(posix_bytes[rows].sum())
        if fb <= 0:
            continue
        if fid in traced:
            mine = np.flatnonzero(seg.file_id == fid)  # the file's operations (only three columns read)
            nodes = ctx.hosts
            if not nodes or len(distinct(seg.rank[mine])) >= nodes:  # as many ranks as nodes access it: no
                continue  # bottleneck, whichever rank is the heaviest (not summed, then)
            top_rank, top_b, top_t, aggregators = _heaviest_rank(seg.rank[mine], seg.length[mine],
                                                                 seg.duration[mine])
            counters = False
        else:
            shared = rows[ctx.column("POSIX", "rank")[rows] < 0]
            if not len(shared):
                continue
            raw = _recorded(ctx, "POSIX", shared[:1])
            top_rank, top_b = raw("POSIX_SLOWEST_RANK")[0], raw("POSIX_SLOWEST_RANK_BYTES")[0]
            top_t = raw("POSIX_F_SLOWEST_RANK_TIME")[0]
            if top_rank is None or top_rank < 0 or top_b is None or top_b < (2 / 3) * fb:
                continue
            aggregators, nodes, counters = 1, None, True
        out.append({"file_id": int(fid), "rank": top_rank, "ranks_on_file": nranks, "from_counters": counters,
                    "time": top_t, "bytes": top_b, "file_bytes": fb, "share": top_b / fb,
                    "aggregators": aggregators, "nodes": nodes, "posix_rows": rows})
    return out


def _heaviest_rank(rank: np.ndarray, length: np.ndarray, duration: np.ndarray) -> tuple:
    """(rank, bytes, time) of the rank moving the most bytes of a file's traced operations (their rank, length
    and duration in trace order; the lowest rank among equals), and how many ranks access it."""
    first, inv = groups(rank)
    nbytes = np.zeros(len(first), dtype=np.int64)  # integers: exact in any order
    np.add.at(nbytes, inv, length)
    top = int(np.lexsort((rank[first], -nbytes))[0])
    time = group_sums(inv, duration, len(first))[top]
    return int(rank[first][top]), int(nbytes[top]), float(time), len(first)


# --- the rule -------------------------------------------------------------------------------------
def features(ctx) -> dict:
    row = dict.fromkeys(feature_names())
    if ctx.nprocs < 2:
        return row
    row[P + "aggregators"] = [{k: c[k] for k in AGGREGATOR_FIELDS} for c in aggregator_candidates(ctx)]
    got = rank_loads(ctx)
    if got is not None:
        row.update(peer_features(ctx, got[0]))
    return row


MIN_PEERS = 2  # processes of one kind to compare (a role with one process has no imbalance)


def peer_features(ctx, loads) -> dict:
    """`angle_features` over the ranks that are peers (`Context.peers`): all ranks of one program; else per
    angle, those of the group of peers (of `MIN_PEERS` or more) whose heaviest is the most over its mean, its
    ranks numbered as in the log: a loader's workers against each other, never the main process against them."""
    peers = ctx.peers
    if peers is None:
        return angle_features(loads)
    out = {P + f"{angle}_{k}": None for angle in ANGLES for k in ANGLE_FEATURES}
    for g in peers:
        if len(g) < MIN_PEERS:
            continue
        mine = angle_features({a: loads[a][g.ranks] for a in ANGLES})
        for angle in ANGLES:
            ratio, best = mine[P + f"{angle}_ratio"], out[P + f"{angle}_ratio"]
            if ratio is None or (best is not None and ratio <= best):
                continue
            out.update({P + f"{angle}_{k}": mine[P + f"{angle}_{k}"] for k in ANGLE_FEATURES})
            out[P + f"{angle}_top_ranks"] = g.ranks[mine[P + f"{angle}_top_ranks"]].tolist()
    return out


def measure(ctx) -> dict | None:
    """One log's features; None with a single rank (nothing to compare)."""
    return features(ctx) if ctx.nprocs >= 2 else None


@functools.cache
def feature_names() -> tuple:
    """The columns of `dtypes`, made once per process (its polars types cost microseconds per log)."""
    return tuple(dtypes())


def dtypes() -> dict:
    out = {P + "aggregators": pl.List(AGGREGATOR)}
    for angle in ANGLES:
        out.update({P + f"{angle}_{k}": t for k, t in ANGLE_FEATURES.items()})
    return out


def _field(name: str) -> pl.Expr:
    return pl.col(P + "aggregators").list.eval(pl.element().struct.field(name))


def _aggregators(th, least: pl.Expr) -> dict:
    """Which candidate files are bottlenecks under `th` (a 0/1 list), how many, and the first with the
    largest share (the insight the diagnosis sorts first)."""
    enough_ranks = pl.col(P + "aggregators").list.eval(
        (~pl.element().struct.field("from_counters")
         | (pl.element().struct.field("ranks_on_file") >= th.single_aggregator_min_ranks)).cast(pl.Int64))
    # time >= least, element-wise against this row's bound (x - y >= 0 exactly when x >= y)
    costly = (_field("time") - least).list.eval((pl.element() >= 0).cast(pl.Int64))
    ok = enough_ranks * costly
    best = (ok * _field("share") + (ok - 1)).list.arg_max()  # a file that fails: -1
    return {"ok": ok, "count": ok.list.sum().fill_null(0), "best": best}


def imbalanced(th, least: pl.Expr) -> dict:
    """angle -> is it imbalanced: the heaviest rank carries at least `imbalance_ratio` × the mean and the
    excess is large enough to matter (bytes or operations by volume, fsyncs by count, time when it matters)."""
    out = {}
    for angle in ANGLES:
        r, excess = pl.col(P + f"{angle}_ratio"), pl.col(P + f"{angle}_excess")
        big = {"bytes": excess >= th.imbalance_min_bytes, "operations": excess >= th.small_min_ops,
               "fsyncs": excess >= MIN_EXCESS_FSYNCS, "time": excess >= least}[angle]
        out[angle] = ((r >= th.imbalance_ratio) & big).fill_null(False)
    return out


def _largest(angles: dict) -> tuple:
    """(angle, its ratio) of the imbalanced angle with the largest ratio (the first of ANGLES among equals)."""
    kind, ratio = pl.lit(None, pl.String), pl.lit(None, pl.Float64)
    for angle in ANGLES:
        r = pl.col(P + f"{angle}_ratio")
        found = angles[angle] & (ratio.is_null() | (r > ratio)).fill_null(False)
        kind = pl.when(found).then(pl.lit(angle)).otherwise(kind)
        ratio = pl.when(found).then(r).otherwise(ratio)
    return kind, ratio


def _of_kind(kind: pl.Expr, name: str) -> pl.Expr:
    out = pl.lit(None, dtype=ANGLE_FEATURES[name])
    for angle in ANGLES:
        out = pl.when(kind == angle).then(pl.col(P + f"{angle}_{name}")).otherwise(out)
    return out


def S(name: str) -> pl.Expr:
    """An earlier stage of this rule (`stages.stage`): each stage a column the later ones read, so that the
    expressions stay small (the largest angle's fields are read many times over)."""
    return stage(CODE, name)


def rule(th) -> dict:
    least = least_mattering(th)
    agg = _aggregators(th, least)
    stages = {f"found_{a}": f for a, f in imbalanced(th, least).items()}
    stages["aggregators"] = agg["ok"]
    kind, ratio = _largest({a: S(f"found_{a}") for a in ANGLES})
    stages.update(kind=kind, ratio=ratio)
    for name in ("mean", "top_ranks", "top_loads", "time_ratio"):
        stages[name] = _of_kind(S("kind"), name)
    ok = S("aggregators")
    heavy = S("top_ranks").list.first()
    named = ((_field("rank") - heavy).list.eval((pl.element() == 0).cast(pl.Int64)) * ok).list.sum() > 0
    # a bottleneck names its rank already; SERIALIZED_IO may say "rank 0 does most of the I/O" more precisely
    restated = named.fill_null(False) | superseded(CODE, "spread")
    spread = S("kind").is_not_null() & ~restated
    info = (S("kind") != "time") & (S("time_ratio") < SLOWER_RATIO)
    stages["spread"] = pl.when(spread).then(pl.when(info).then(pl.lit("info")).otherwise(pl.lit("warning")))
    count = ok.list.sum().fill_null(0)
    best = (ok * _field("share") + (ok - 1)).list.arg_max()  # a file that fails: -1
    agg_score = (ok * _field("share")).list.max() * 10
    # the insight the diagnosis sorts first: a bottleneck (written first) unless a warning spread scores more
    stages["aggregator_first"] = (count > 0) & ((S("spread") != "warning") | (agg_score >= S("ratio"))).fill_null(True)
    first = S("aggregator_first")
    stages.update({
        "severity": pl.when(count > 0).then(pl.lit("warning")).otherwise(S("spread")),
        "strong": pl.lit(False),
        "score": pl.when(first).then(agg_score).otherwise(S("ratio")),
        "count": count + (S("spread") == "warning").fill_null(False).cast(pl.Int64),
        "found_before_dedupe": S("kind").is_not_null(),
        "headline": pl.when(first).then(pl.lit("aggregator")).otherwise(pl.lit("spread")),
        "aggregator": pl.col(P + "aggregators").list.get(best, null_on_oob=True)})
    return stages


def heavy_ranks(v: dict, th) -> list:
    """The ranks at least `imbalance_ratio` × the mean, heaviest first (the title's first `TOP`)."""
    return [r for r, x in zip(v["top_ranks"], v["top_loads"]) if x >= th.imbalance_ratio * v["mean"]]


def title(v: dict, th, words=RANK_WORDS) -> str:
    """`words`: how the text names ranks (a log's `Context`)."""
    if v["headline"] == "aggregator":
        a = v["aggregator"]
        return bottleneck_title(words, a["rank"], a["share"], a["ranks_on_file"])
    ranks = heavy_ranks(v, th)
    noun = v["kind"]
    return (f"I/O {noun} uneven across {words.peers_noun(v['top_ranks'][0])}: {words.rank_labels(ranks[:TOP])} "
            f"{'carries' if len(ranks) == 1 else 'carry'} up to {v['ratio']:.1f}× the mean")


def bottleneck_title(words, rank: int, share: float, ranks_on_file: int) -> str:
    return (f"{capital(words.rank_label(rank))} does {fmt_pct(share)} of the file-system I/O of a file "
            f"{fmt_count(ranks_on_file)} ranks write collectively")


# --- the insight ---------------------------------------------------------------------------------------
def imbalanced_angles(ctx, loads) -> dict:
    """angle -> (max over mean, heaviest rank) for the angles the rule finds imbalanced (`imbalanced`)."""
    values = {RUN_TIME: ctx.run_time, **peer_features(ctx, loads)}
    least = least_mattering(ctx.th)
    judged = evaluate(values, imbalanced(ctx.th, least), {RUN_TIME: pl.Float64, **dtypes()})
    return {a: (values[P + f"{a}_ratio"], values[P + f"{a}_top_ranks"][0]) for a in ANGLES if judged[a]}


def report(ctx, judged) -> list:
    candidates = aggregator_candidates(ctx)
    out = [_bottleneck(ctx, c) for c, ok in zip(candidates, judged["aggregators"] or []) if ok]
    if judged["spread"] is None:
        return out
    loads, source, partial = rank_loads(ctx)
    out.append(_spread_insight(ctx, judged, loads, source, partial))
    return out


def _spread_insight(ctx, judged: dict, loads: dict, source: str, partial: bool) -> Insight:
    """The insight of an imbalanced angle (`judged["kind"]`): the heaviest rank against the mean."""
    th = ctx.th
    kind, ratio = judged["kind"], judged["ratio"]
    angles = {a for a in ANGLES if judged[f"found_{a}"]}
    peers = ctx.peers_of(judged["top_ranks"][0])  # None: every rank a peer
    if peers is not None:  # the heaviest rank's peers only, numbered 0.. here and as in the log in the text
        loads = {k: (v[peers.ranks] if v is not None else None) for k, v in loads.items()}
    rank_of = peers.ranks if peers is not None else np.arange(ctx.nprocs)
    t, b, ops, arr = loads["time"], loads["bytes"], loads["operations"], loads[kind]
    at = int(arr.argmax())
    heavy = int(rank_of[at])
    mean, top = float(arr.mean()), float(arr.max())
    order = np.argsort(-arr, kind="stable")
    heavy_ranks = [int(rank_of[r]) for r in order[:MAX_RANKS] if arr[r] >= th.imbalance_ratio * mean]
    excess_t = float(t[at] - t.mean())
    share = top / arr.sum()
    metrics = {"max_over_mean": ratio, f"max_rank_{kind}": top, f"mean_rank_{kind}": mean,
               "heaviest_rank": heavy, "heaviest_rank_share": share,
               "heaviest_rank_time_s": float(t[at]), "heaviest_rank_bytes": float(b[at]),
               "heaviest_rank_operations": float(ops[at]),
               "mean_rank_time_s": float(t.mean()), "mean_rank_bytes": float(b.mean()),
               "ranks_with_io": int((arr > 0).sum()), "job_ranks": ctx.nprocs,
               "excess_time_s": excess_t}
    if peers is not None:
        metrics["peers"] = len(peers)  # the processes compared (its role: the title's noun)
    for angle in ANGLES:
        m = float(loads[angle].mean())
        if m > 0:  # the heaviest rank against the mean from every angle (no "bytes" in a ratio's name)
            metrics[f"{ANGLE_METRIC[angle]}_max_over_mean"] = float(loads[angle][at]) / m
    title_ = title(judged, th, ctx)
    parts = [f"moves {fmt_bytes(b[at])} ({float(b[at]) / max(float(b.mean()), 1e-300):.1f}× the mean of "
             f"{fmt_bytes(b.mean())})" if b.mean() > 0 else None,
             f"issues {fmt_count(ops[at])} I/O operations ({float(ops[at]) / float(ops.mean()):.1f}× the mean)"
             if ops.mean() > 0 else None,
             f"spends {fmt_time(t[at])} in I/O (mean {fmt_time(t.mean())})",
             f"calls fsync {fmt_count(loads['fsyncs'][at])} times (mean {loads['fsyncs'].mean():.1f})"
             if loads["fsyncs"].sum() > 0 else None]
    over = f"{ctx.nprocs} ranks" if peers is None else f"the {len(peers)} {ctx.peers_noun(heavy)}"
    summary = (capital(ctx.rank_label(heavy)) + " " + ", ".join(x for x in parts if x) + f" over {over}"
               + (f"; it carries {fmt_pct(share)} of all I/O {kind}." if kind != "time" else "."))
    end = loads["end"]
    if end is not None and np.isfinite(end[at]):
        late = float(end[at] - np.nanmedian(end))
        metrics["heaviest_rank_end_delay_s"] = late
        if late > 0:
            summary += f" It finishes its I/O {fmt_time(late)} after the median " + (
                "rank." if peers is None else f"one of the {ctx.peers_noun(heavy)}.")
    waits = peers is None or peers.synchronised  # MPI ranks of one program wait for each other; others need not
    if waits:
        summary += meanwhile(ctx, metrics)
    if source == "counters" and any(ctx.has(m) and (ctx.column(m, "rank") < 0).any() for m, _ in LAYERS):
        summary += (" Files shared by all ranks only record their slowest and fastest rank: the other "
                    "ranks' shares are estimated as even.")
    if judged["spread"] == "info":
        # more bytes or operations, but no more time: rank 0 writing small metadata, or cached I/O
        summary += (f" Its I/O time is within {fmt_pct(SLOWER_RATIO - 1)} of the mean, so the others do not wait "
                    "for it on this run." if waits else
                    f" Its I/O time is within {fmt_pct(SLOWER_RATIO - 1)} of the mean: it takes no longer than "
                    "the others on this run.")
    elif kind != "time" and not ctx.matters(excess_t):
        summary += ((f" On this run the others wait at most {fmt_time(max(excess_t, 0.0))} for it, but the "
                     if waits else f" On this run its I/O takes at most {fmt_time(max(excess_t, 0.0))} longer "
                     "than the mean, but the ")
                    + f"imbalance is structural: at scale {ctx.rank_label(heavy)}'s share of the work stays "
                    f"{ratio:.1f}× the mean.")
    window = None
    files = []
    if not ctx.trace_app.empty:
        mine = ctx.trace_app.take(ctx.trace_app.rank == heavy)
        window = ctx.trace_window(mine)
        files = files_by_bytes(mine)
    recs = [spread(ctx, heavy, ratio)]
    if "fsyncs" in angles:
        recs.append(advice.fewer_fsync(ctx.has_layer("mpiio")))
    return Insight(CODE, judged["spread"], title_, summary,
                   Evidence(ranks=heavy_ranks, files=ctx.names_of(files), time_window=window, metrics=metrics),
                   recs, source=source, partial=partial, score=ratio)


def spread(ctx, heavy: int, ratio: float) -> Recommendation:
    """Even out the ranks' shares; with MPI-IO, collective calls let the library balance them."""
    if ctx.has_layer("mpiio"):
        return Recommendation(
            "Spread the I/O over all ranks",
            f"Give every rank a similar share of the data to write/read ({ctx.rank_label(heavy)} does "
            f"{ratio:.1f}× the average), or use collective MPI-IO so the library balances the file-system "
            "requests over its aggregators.",
            "/* each rank writes its own part, all at once */\n"
            "MPI_File_write_at_all(fh, my_offset, my_buf, my_count, MPI_BYTE, MPI_STATUS_IGNORE);", "c")
    noun = ctx.peers_noun(heavy)
    return Recommendation(
        f"Spread the I/O over all {noun}",
        f"Give every {'process' if noun.endswith('processes') else 'rank'} a similar share of the data to write/read "
        f"({ctx.rank_label(heavy)} does {ratio:.1f}× the average), so that no one of them sets the pace.", "",
        "text")


def _bottleneck(ctx, c: dict) -> Insight:
    """The insight of a collectively accessed shared file whose file-system I/O all goes through (nearly)
    one rank (`aggregator_candidates`, one the rule finds)."""
    fid, nranks, top_rank, top_b, top_t = c["file_id"], c["ranks_on_file"], c["rank"], c["bytes"], c["time"]
    fb, share, aggregators, nodes, rows = (c[k] for k in ("file_bytes", "share", "aggregators", "nodes", "posix_rows"))
    name = ctx.name(fid)
    metrics = {"aggregators": aggregators, "ranks_on_file": nranks, "heaviest_rank": top_rank,
               "heaviest_rank_bytes": top_b, "heaviest_rank_share": share, "heaviest_rank_time_s": top_t,
               "file_bytes": fb}
    if nodes:
        metrics["nodes"] = nodes
    lus = ctx.log.lustre.filter(pl.col("file_id") == fid) if not ctx.log.lustre.is_empty() else None
    stripe_count = int(lus["stripe_count"].max()) if lus is not None and lus.height else None
    if stripe_count:
        metrics["stripe_count"] = stripe_count
    title_ = bottleneck_title(ctx, top_rank, share, nranks)
    summary = (f"{name} is accessed with collective MPI-IO by {fmt_count(nranks)} ranks, but at the POSIX layer "
               f"{ctx.rank_label(top_rank)} moves {fmt_bytes(top_b)} of {fmt_bytes(fb)} ({fmt_pct(share)}) in "
               f"{fmt_time(top_t)}: collective buffering uses {'only one aggregator' if aggregators == 1 else f'{aggregators} aggregators'}"
               + (f" for {nodes} nodes" if nodes else "") + ", and every other rank waits for it inside the "
               "collective calls.")
    if stripe_count == 1:
        summary += (" The file has a single Lustre stripe, and ROMIO's Lustre driver uses at most one "
                    "aggregator per stripe by default.")
    recs = []
    if stripe_count is not None and stripe_count <= 4:
        posix = ctx.records["POSIX"]  # the largest offset written or read, as recorded (-1: none)
        extent = int(np.maximum(posix.raw("POSIX_MAX_BYTE_WRITTEN")[rows], posix.raw("POSIX_MAX_BYTE_READ")[rows])
                     .max()) + 1
        count = advice.stripe_count_for(extent if extent > 0 else fb, nranks)  # same rule as LUSTRE_STRIPING
        recs.append(advice.lustre_setstripe(name, count, 1 << 20,
                                            f"A wider stripe lets ROMIO use {count} aggregators in parallel."))
    recs.append(more_aggregators(nodes, stripe_count, nranks, ctx.has_layer("lustre"), striped=bool(recs)))
    return Insight(CODE, "warning", title_, summary,
                   Evidence(ranks=[top_rank], files=[name], time_window=ctx.counter_window("POSIX", [fid]),
                            metrics=metrics),
                   recs, source="counters" if c["from_counters"] else "dxt", partial=False, score=share * 10)


def more_aggregators(nodes: int | None, stripe_count: int | None, ranks: int, lustre: bool = True,
                     striped: bool = True) -> Recommendation:
    """`lustre`: the file is on Lustre (its striping caps the aggregators); `striped`: an lfs setstripe
    recommendation comes before this one."""
    target = nodes or max(1, min(ranks // 32, 64))
    hints = {"cb_nodes": str(target), "romio_cb_write": "enable"}
    detail = (f"Set cb_nodes to the number of nodes ({target}" + (")" if nodes else ", a guess: iolens cannot "
              "see the node count without DXT)") + ".")
    if lustre:
        detail += (" On Lustre, ROMIO caps the aggregators at the stripe count unless the file is striped wider: "
                   + ("stripe the file too (see the lfs setstripe recommendation)." if striped else
                      "stripe the file too."))
    return advice.mpi_hints_c(hints, "Use more collective-buffering aggregators", detail)


def _saving(ctx, insight):
    """Balanced, the busiest rank's excess over the mean rank is gone."""
    m = insight.evidence.metrics
    if "excess_time_s" not in m:
        return None
    t = float(m["excess_time_s"])
    return t, f"the busiest rank's I/O time above the mean rank's ({fmt_time(t)}): balanced, it is gone"


FINDING = Finding(
    code=CODE,
    meaning="I/O time or bytes are very uneven across ranks.",
    key_metrics=("max_over_mean", "heaviest_rank_share"),
    thresholds=THRESHOLDS,
    reads=("small_min_ops",),
    trigger="(a) at the application layer, the busiest rank carries at least `imbalance_ratio` × the mean over "
            "all ranks of the bytes (and `imbalance_min_bytes` more), the operations (and `small_min_ops` more), "
            "the fsyncs (and 10 more) or the I/O time (when the wait matters for this run). "
            "Bytes/operations/fsyncs are structural (a warning on any run) when the rank's I/O time is also at "
            "least 1.25× the mean, else info (\"rank 0 writes the small metadata\"); or (b) a collectively "
            "accessed file's file-system I/O goes through fewer aggregators than nodes (DXT) or through one rank "
            "(counters, at least `single_aggregator_min_ranks` ranks). Names the heaviest ranks. Only peers are "
            "compared: one program's ranks, else the processes of one role of a step (a loader's workers; "
            "at least 2), never a main process against its workers.",
    source="dxt / counters",
    report=report,
    saving=Saving(_saving, "the busiest rank's I/O time above the mean rank's (`excess_time_s`)"),
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title,
)
