"""MPIIO_OVERHEAD: most MPI-IO time is spent above the file system (two-phase exchange, waiting for
aggregators).

A collective call's time is the POSIX requests its aggregators issue plus everything ROMIO does around them:
the two-phase exchange of data between ranks, synchronisation, and ranks waiting for the aggregators. Per
rank, the share of its MPI-IO read/write time not spent in POSIX operations measures that. With DXT, each
rank's POSIX operations are matched to the MPI-IO operation they run inside (same rank and file, starting
within it); without it, the counters' MPI-IO and POSIX read/write times of the same files are compared.
Open, close, sync and set_view are left out: their waiting is not what the knobs below move. Only files
accessed mostly collectively count: independent MPI-IO above POSIX (data sieving, locks) is what DATA_SIEVING
and NO_COLLECTIVE_IO describe, and the collective-buffering knobs do not move it.

The rule: that share on the mostly-collective files decides info / warning / critical, when the slowest rank
spends at least `mpiio_overhead_min_seconds` above the file system. The features are threshold-free, so every
threshold is exact on every job.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ...segments import Segments, distinct, float_sum, group_sums, groups, is_in, run_heads, time_order
from ..context import MAX_RANKS
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight
from .. import fixes, savings
from ..savings import its_own
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time, plural
from . import _advice as advice

CODE = "MPIIO_OVERHEAD"
THRESHOLDS = (
    Threshold("mpiio_overhead_min_share", 0.25, "share",
              "MPIIO_OVERHEAD: the MPI-IO read/write time not spent in POSIX operations (two-phase exchange, "
              "synchronisation, waiting for aggregators) is at least this share of the MPI-IO time (info) ..."),
    Threshold("mpiio_overhead_warning_share", 0.5, "share", "... a warning from this share ..."),
    Threshold("mpiio_overhead_critical_share", 0.8, "share", "... critical from this share ..."),
    Threshold("mpiio_overhead_min_seconds", 0.01, "seconds",
              "... and the slowest rank spends at least this long above the file system (only against timer "
              "jitter: the share decides the severity)."),
)
P = "mpiio_overhead_"
DATA_OPS = ("read", "write")
MiB = 1 << 20
TRIGGER = (
    "on files accessed mostly collectively (collective MPI-IO calls at least as many as the others), the MPI-IO "
    "read/write time not spent in POSIX operations — the two-phase exchange, synchronisation, ranks waiting for "
    "the aggregators — is at least `mpiio_overhead_min_share` of the MPI-IO time summed over ranks (info), and "
    "the slowest rank spends at least `mpiio_overhead_min_seconds` above the file system (only against timer "
    "jitter). **warning** from `mpiio_overhead_warning_share`, **critical** from `mpiio_overhead_critical_share`: "
    "the severity follows the share, never the seconds. With DXT, per rank: each POSIX operation is matched to "
    "the MPI-IO operation of the same rank and file it starts in (only its part before that call ends counts); "
    "without DXT, the counters' `MPIIO_F_{READ,WRITE}_TIME` against `POSIX_F_{READ,WRITE}_TIME` of the same files "
    "(per rank where records are per rank; for shared records, the average rank). Open, close, sync and "
    "set_view are left out, and so are files accessed mostly independently (their time above POSIX is what "
    "DATA_SIEVING and NO_COLLECTIVE_IO describe). Evidence: the ranks (most time above the file system first), "
    "`overhead_share`, `slowest_rank`, `slowest_rank_mpiio_time_s`, `slowest_rank_overhead_s`, "
    "`slowest_rank_overhead_share`, `min_rank_overhead_share` / `max_rank_overhead_share`, `ranks_with_posix_io` "
    "(the aggregators), `expected_saving_s`. Recommendations carry `knobs` (see *Knobs*): more aggregators "
    "(`romio.cb_nodes`, `romio.cb_config_list`) when fewer ranks than call MPI-IO reach the file system, a "
    "larger `romio.cb_buffer_size` when one aggregator gathers more than ROMIO's 16 MiB per call, "
    "`romio.romio_cb_write` / `romio.romio_cb_read` = `disable`, and the same hints as a ROMIO hints file.")


def overhead_by_rank(mpiio: pl.DataFrame, posix: pl.DataFrame) -> pl.DataFrame:
    """Per rank: `mpiio_s` (its MPI-IO read/write time), `posix_s` (its POSIX operation time inside those
    MPI-IO operations), `overhead_s` and `overhead_share`. Both tables are DXT segments (rank, file_id, op,
    start, end)."""
    m = (mpiio.filter(pl.col("op").is_in(DATA_OPS)).select("rank", "file_id", "start", "end")
         .sort("start"))
    if m.is_empty():
        return pl.DataFrame(schema={"rank": pl.Int64, "mpiio_s": pl.Float64, "posix_s": pl.Float64,
                                    "overhead_s": pl.Float64, "overhead_share": pl.Float64})
    per_rank = m.group_by("rank").agg((pl.col("end") - pl.col("start")).sum().alias("mpiio_s"))
    p = (posix.filter(pl.col("op").is_in(DATA_OPS)).select("rank", "file_id", "start", "end").sort("start"))
    if p.is_empty():
        inside = pl.DataFrame(schema={"rank": pl.Int64, "posix_s": pl.Float64})
    else:
        # the MPI-IO operation each POSIX operation started in: the last one of the same rank and file that
        # started before it; only the part before that operation ended counts
        j = p.join_asof(m.rename({"start": "m_start", "end": "m_end"}), left_on="start", right_on="m_start",
                        by=["rank", "file_id"], strategy="backward",
                        check_sortedness=False)  # sorted by start overall, so within each group too
        inside = (j.filter(pl.col("m_start").is_not_null())
                  .with_columns((pl.min_horizontal("end", "m_end") - pl.col("start")).clip(lower_bound=0).alias("t"))
                  .group_by("rank").agg(pl.col("t").sum().alias("posix_s")))
    return (per_rank.join(inside, on="rank", how="left").with_columns(pl.col("posix_s").fill_null(0.0))
            .with_columns((pl.col("mpiio_s") - pl.col("posix_s")).clip(lower_bound=0).alias("overhead_s"))
            .with_columns(pl.when(pl.col("mpiio_s") > 0).then(pl.col("overhead_s") / pl.col("mpiio_s"))
                          .otherwise(0.0).alias("overhead_share"))
            .sort(["overhead_s", "rank"], descending=[True, False]))


def trace_overhead_by_rank(mpiio: Segments, posix: Segments) -> dict | None:
    """`overhead_by_rank` on the trace's numpy columns (every DXT operation is a read or a write): its columns
    as numpy arrays, in its order, or None without MPI-IO operations. The per-rank time sums are `group_sums`
    over the rows in the query's order (by start, ties in trace order): its group-bys' bits below
    POLARS_SMALL_GROUP_BY rows."""
    if mpiio.empty:
        return None
    by_start = time_order(mpiio.start)
    m_rank, m_fid, m_start, m_end = (c[by_start] for c in (mpiio.rank, mpiio.file_id, mpiio.start, mpiio.end))
    ranks, inv = _rank_groups(mpiio.rank, by_start)
    mpiio_s = group_sums(inv, m_end - m_start, len(ranks))
    posix_s = np.zeros(len(ranks))
    if not posix.empty:
        # each POSIX operation's call and time inside it, found in trace order (where a record's operations
        # come in time order); then the operations by start, as the query sums them
        inside, call = _calls_started_in(m_rank, m_fid, m_start, posix.rank, posix.file_id, posix.start)
        t = np.maximum(np.minimum(posix.end, m_end[call]) - posix.start, 0)  # only the part inside
        p = time_order(posix.start)
        p = p[inside[p]]
        if len(p):
            p_ranks, inv_p = _rank_groups(posix.rank, p)
            posix_s[np.searchsorted(ranks, p_ranks)] = group_sums(inv_p, t[p], len(p_ranks))
    return _per_rank_table(ranks, mpiio_s, np.maximum(mpiio_s - posix_s, 0), posix_s)


def _rank_groups(rank: np.ndarray, rows: np.ndarray) -> tuple:
    """(the distinct ranks of `rank[rows]`, sorted; the group of each of those rows): `groups(rank[rows])`'s,
    from the groups of the ranks in trace order (their runs) when `rows` takes every row once."""
    if len(rows) == len(rank):
        first, inv = groups(rank)
        return rank[first], inv[rows]
    first, inv = groups(rank[rows])
    return rank[rows][first], inv


def _calls_started_in(m_rank, m_fid, m_start, p_rank, p_fid, p_start) -> tuple:
    """For each POSIX operation: (did it start inside an MPI-IO call, the index of that call): the last MPI-IO
    operation of the same rank and file that started before it (the last of those starting at the same time, as
    the as-of join takes it). The MPI-IO operations sorted by start."""
    files = np.unique(m_fid)
    m_key = m_rank * len(files) + np.searchsorted(files, m_fid)  # one number per (rank, file)
    p_key = _keys(files, p_rank, p_fid)
    n = len(m_start)
    top = max(int(np.abs(m_key).max()), int(np.abs(p_key).max())) + 1
    if top * (n + 1) >= (1 << 62) or not (np.isfinite(p_start).all() and np.isfinite(m_start).all()):
        return _calls_started_in_complex(m_key, m_start, p_key, p_start)
    # a call's position in time order stands for its start: each POSIX operation's key is that of the last call
    # starting at or before it, so one search of integers among (rank and file, position) finds its call
    before = np.searchsorted(m_start, p_start, "right") - 1
    m_at = m_key * n + np.arange(n)
    within = np.argsort(m_at)  # distinct keys: by rank and file, then start, then trace order
    at = np.searchsorted(m_at[within], p_key * n + before, "right") - 1
    return _found(m_key, p_key, within, at)


def _keys(files: np.ndarray, rank: np.ndarray, fid: np.ndarray) -> np.ndarray:
    """rank × len(files) + the file's index in `files` (-1 for a file not in it), once per run of the
    trace's rows of one rank and file."""
    heads = run_heads(rank, fid)
    if heads is not None:
        return np.repeat(_keys(files, rank[heads], fid[heads]), np.diff(np.append(heads, len(rank))))
    code = np.minimum(np.searchsorted(files, fid), len(files) - 1)
    return np.where(files[code] == fid, rank * len(files) + code, -1)


def _calls_started_in_complex(m_key, m_start, p_key, p_start) -> tuple:
    """`_calls_started_in` with (rank and file, start) as complex numbers, which numpy sorts by real part, then
    imaginary part (starts that are not finite numbers, or keys too large for one integer)."""
    within = np.argsort(m_key, kind="stable")  # by rank and file, then start, then trace order
    at = np.searchsorted((m_key + 1j * m_start)[within], p_key + 1j * p_start, "right") - 1
    return _found(m_key, p_key, within, at)


def _found(m_key, p_key, within, at) -> tuple:
    """(inside, call) from each POSIX operation's place `at` among the calls in `within` order: inside when
    that place is a call of its own rank and file."""
    call = within[np.maximum(at, 0)]
    return (at >= 0) & (m_key[call] == p_key), call


def _per_rank_table(rank, mpiio_s, overhead_s, posix_s) -> dict:
    """The per-rank table's columns, the most time above the file system first (ties: the lower rank)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(mpiio_s > 0, overhead_s / mpiio_s, 0.0)
    order = np.lexsort((rank, -overhead_s))
    return {"rank": rank[order], "mpiio_s": mpiio_s[order], "posix_s": posix_s[order],
            "overhead_s": overhead_s[order], "overhead_share": share[order]}


def collective_files(ctx) -> list:
    """Files with MPI-IO and POSIX records whose MPI-IO reads and writes are mostly collective."""
    if not ctx.has("MPI-IO") or not ctx.has("POSIX"):
        return []
    ids, _ = ctx.file_groups("MPI-IO")  # numpy per-file integer sums: a group-by costs more on a few records
    coll = ctx.per_file_total("MPI-IO", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES")
    indep = ctx.per_file_total("MPI-IO", *(f"MPIIO_{m}_{k}" for m in ("INDEP", "SPLIT", "NB")
                                           for k in ("READS", "WRITES")))
    return sorted(set(ids[(coll > 0) & (coll >= indep)].tolist()) & ctx.ids_in("POSIX"))


def _counter_table(ctx, files: list) -> dict:
    """The same table from the counters: per rank where records are per rank, one row (rank -1) for the
    shared records, over `files` (per-rank time sums, `group_sums`)."""
    m_rank, m_t = _rank_times(ctx, "MPI-IO", "MPIIO", files)
    first, inv = groups(m_rank)
    rank = m_rank[first]
    mpiio_s = group_sums(inv, m_t, len(rank))
    posix_s = np.zeros(len(rank))
    p_rank, p_t = _rank_times(ctx, "POSIX", "POSIX", files)
    if len(p_rank):
        first_p, inv_p = groups(p_rank)
        sums = group_sums(inv_p, p_t, len(first_p))
        at = np.minimum(np.searchsorted(p_rank[first_p], rank), len(first_p) - 1)
        found = p_rank[first_p][at] == rank  # a left join on rank
        posix_s[found] = sums[at[found]]
        # a file whose MPI-IO records Darshan reduced (rank -1) while its POSIX records stayed per rank (a partial
        # POSIX module is not reduced): the POSIX time of ranks without an MPI-IO row of their own is inside
        # the shared row's MPI-IO time, not nowhere
        shared = np.flatnonzero(rank < 0)
        if len(shared):
            matched = np.zeros(len(first_p), dtype=bool)
            matched[at[found]] = True
            posix_s[shared[0]] += float_sum(sums[~matched & (p_rank[first_p] >= 0)])
    posix_s = np.minimum(posix_s, mpiio_s)
    keep = mpiio_s > 0
    return _per_rank_table(rank[keep], mpiio_s[keep], (mpiio_s - posix_s)[keep], posix_s[keep])


def _rank_times(ctx, module: str, prefix: str, files: list) -> tuple:
    """(rank, read + write time) of the records of `module` on `files`, in record order."""
    mine = np.isin(ctx.column(module, "file_id"), np.asarray(files, dtype=np.uint64))
    t = ctx.column(module, f"{prefix}_F_READ_TIME") + ctx.column(module, f"{prefix}_F_WRITE_TIME")
    return ctx.column(module, "rank")[mine], t[mine]


def _table(ctx, files: list) -> tuple:
    """(per-rank table over `files` as numpy columns, source, partial)."""
    seg_m, seg_p = ctx.trace_mpiio, ctx.trace_posix
    if not seg_m.empty and not seg_p.empty:
        ids = np.asarray(files, dtype=np.uint64)
        traced = is_in(seg_m.file_id, ids) & is_in(seg_m.file_id, distinct(seg_p.file_id))
        if traced.any():
            partial = not (ctx.trace_complete("DXT_MPIIO") and ctx.trace_complete("DXT_POSIX"))
            # the POSIX operations on other files match no MPI-IO call of these: no need to leave them out
            return trace_overhead_by_rank(seg_m if traced.all() else seg_m.take(traced), seg_p), "dxt", partial
    return _counter_table(ctx, files), "counters", False


def overhead(ctx):
    """The per-rank table over the mostly-collective files and its totals (once a log), or None."""
    return ctx.memo("mpiio_overhead", lambda: _overhead(ctx))


def _overhead(ctx):
    if not ctx.has("MPI-IO") or not ctx.total("MPI-IO", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES"):
        return None  # no collective call at all (most logs): nothing to look at
    files = collective_files(ctx)
    if not files:
        return None
    table, source, partial = _table(ctx, files)
    if table is None or not len(table["rank"]):
        return None
    total_mpiio = float_sum(table["mpiio_s"])  # the table's column sums: a Series' bits
    total_posix = float_sum(table["posix_s"])
    share = (total_mpiio - total_posix) / total_mpiio if total_mpiio > 0 else 0.0
    top = np.lexsort((table["rank"], -table["mpiio_s"]))[0]  # the most MPI-IO time (ties: the lower rank)
    slowest = {k: v[top].item() for k, v in table.items()}
    per_rank = source == "dxt" or bool((table["rank"] >= 0).all())
    if per_rank:
        slow_mpiio, slow_over = slowest["mpiio_s"], slowest["overhead_s"]
    else:  # shared records: the average rank's part of the sums
        slow_mpiio, slow_over = total_mpiio / ctx.nprocs, (total_mpiio - total_posix) / ctx.nprocs
    return {"files": files, "table": table, "source": source, "partial": partial, "total_mpiio": total_mpiio,
            "total_posix": total_posix, "share": share, "slowest": slowest, "per_rank": per_rank,
            "slow_mpiio": slow_mpiio, "slow_over": slow_over}


def features(ctx) -> dict:
    """The overhead share, the MPI-IO time and the POSIX time inside it (all ranks), and the slowest rank's
    time above the file system (null: no mostly-collective file)."""
    m = overhead(ctx)
    keys = ("share", "mpiio_time", "posix_time", "slowest_rank_overhead", "saving")
    if m is None:
        return {P + k: None for k in keys}
    return {P + "share": m["share"], P + "mpiio_time": m["total_mpiio"], P + "posix_time": m["total_posix"],
            P + "slowest_rank_overhead": m["slow_over"], P + "saving": best_saving(ctx, m)}


def rec_inputs(ctx, m) -> dict:
    """What the recommendations are made from: the ranks calling MPI-IO, those reaching the file system
    (per rank only), the median MPI-IO request and the hosts."""
    table, per_rank = m["table"], m["per_rank"]
    out = {"mpiio_ranks": len(table["rank"]) if per_rank else ctx.nprocs, **_facts(ctx, m["source"])}
    if per_rank:
        out["ranks_with_posix_io"] = int((table["posix_s"] > 0).sum())
    return out


def best_saving(ctx, m) -> float | None:
    """The largest expected saving of its recommendations (each priced by its change, fixes.py)."""
    savings_ = [r.expected_saving for r in _recs(ctx, rec_inputs(ctx, m), m["files"]) if r.expected_saving is not None]
    return max(savings_) if savings_ else None


def measure(ctx) -> dict | None:
    """One log's features; None without a mostly-collective file (nothing to judge)."""
    return features(ctx) if overhead(ctx) is not None else None


def dtypes() -> dict:
    return {P + k: pl.Float64 for k in ("share", "mpiio_time", "posix_time", "slowest_rank_overhead", "saving")}


def rule(th) -> dict:
    share = pl.col(P + "share")
    found = ((share >= th.mpiio_overhead_min_share)
             & (pl.col(P + "slowest_rank_overhead") >= th.mpiio_overhead_min_seconds)).fill_null(False)
    level = (pl.when(share >= th.mpiio_overhead_critical_share).then(pl.lit("critical"))
             .when(share >= th.mpiio_overhead_warning_share).then(pl.lit("warning")).otherwise(pl.lit("info")))
    return {"severity": pl.when(found).then(level),
            "strong": (share >= th.mpiio_overhead_warning_share).fill_null(False) & found,
            "score": share, "share": share, "mpiio_time": pl.col(P + "mpiio_time"),
            "posix_time": pl.col(P + "posix_time")}


def title(v: dict, th) -> str:
    total, inside = v["mpiio_time"], v["posix_time"]
    return (f"MPI-IO above the file system: {fmt_pct(v['share'])} of the MPI-IO time ({fmt_time(total - inside)}"
            f" of {fmt_time(total)} over all ranks) is not spent in POSIX")


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, v) -> list:
    th = ctx.th
    m = overhead(ctx)
    severity, strong = v["severity"], v["strong"]
    files, table, source, partial = m["files"], m["table"], m["source"], m["partial"]
    total_mpiio, total_posix, share, slowest = m["total_mpiio"], m["total_posix"], m["share"], m["slowest"]
    per_rank, slow_mpiio, slow_over = m["per_rank"], m["slow_mpiio"], m["slow_over"]
    writers = int((table["posix_s"] > 0).sum()) if per_rank else None
    nranks = len(table["rank"]) if per_rank else ctx.nprocs
    facts = _facts(ctx, source)
    metrics = {"overhead_share": share, "mpiio_time_s": total_mpiio, "posix_time_inside_s": total_posix,
               "overhead_s": total_mpiio - total_posix, "slowest_rank_mpiio_time_s": slow_mpiio,
               "slowest_rank_overhead_s": slow_over,
               "slowest_rank_overhead_share": slow_over / slow_mpiio if slow_mpiio > 0 else 0.0,
               "mpiio_ranks": nranks, **facts}
    if per_rank:
        metrics["slowest_rank"] = int(slowest["rank"])
        metrics["max_rank_overhead_share"] = float(table["overhead_share"].max())
        metrics["min_rank_overhead_share"] = float(table["overhead_share"].min())
        metrics["ranks_with_posix_io"] = writers
    ranks = [r for r in table["rank"].tolist() if r >= 0][:MAX_RANKS]
    title_ = title(v, th)
    summary = _summary(ctx, metrics, table if per_rank else None)
    recs = _recs(ctx, metrics, files)
    metrics["expected_saving_s"] = max((r.expected_saving for r in recs if r.expected_saving is not None),
                                       default=0.0)
    window = ctx.trace_window(ctx.trace_mpiio) if source == "dxt" else ctx.counter_window("MPI-IO")
    return [Insight(CODE, severity, title_, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(_files(ctx, files)), time_window=window,
                             metrics=metrics),
                    recs, source=source, partial=partial, score=v["score"], demotable=not strong)]


def _summary(ctx, m: dict, table) -> str:
    """What the numbers say; `table` (per rank) is None for shared records."""
    writers, nranks = m.get("ranks_with_posix_io"), m["mpiio_ranks"]
    who = (f"{fmt_count(writers)} of {fmt_count(nranks)} ranks reach the file system" if table is not None
           else f"{fmt_count(nranks)} ranks (shared records: per-rank times unknown)")
    text = (f"The ranks spend {fmt_time(m['mpiio_time_s'])} in MPI-IO reads and writes but only "
            f"{fmt_time(m['posix_time_inside_s'])} in the POSIX operations inside them; {who}. The rest is ROMIO's "
            "own work: the two-phase exchange between ranks, synchronisation, and ranks waiting for the "
            "aggregators. " + (_slowest(ctx, m["slowest_rank"]) if table is not None else "The average rank")
            + f" spends {fmt_time(m['slowest_rank_overhead_s'])} of its {fmt_time(m['slowest_rank_mpiio_time_s'])} "
            "above the file system")
    if table is None:
        return text + "."
    text += (f"; per rank the share ranges from {fmt_pct(m['min_rank_overhead_share'])} to "
             f"{fmt_pct(m['max_rank_overhead_share'])}.")
    if writers and writers < nranks:
        text += f" Aggregators: {ctx.rank_labels(sorted(table['rank'][table['posix_s'] > 0].tolist()))}."
    return text


def _slowest(ctx, rank) -> str:
    """'The slowest rank (5)', or 'The slowest process (worker pid 3688)' when the log labels it otherwise."""
    said = ctx.rank_label(rank)
    return f"The slowest rank ({int(rank)})" if said == f"rank {int(rank)}" else f"The slowest process ({said})"


def _files(ctx, files: list) -> list:
    """`files`, the most MPI-IO time first."""
    mine = np.isin(ctx.column("MPI-IO", "file_id"), np.asarray(files, dtype=np.uint64))
    fid = ctx.column("MPI-IO", "file_id")[mine]
    t = (ctx.column("MPI-IO", "MPIIO_F_READ_TIME") + ctx.column("MPI-IO", "MPIIO_F_WRITE_TIME"))[mine]
    first, inv = groups(fid)
    per_file = group_sums(inv, t, len(first))
    used = np.flatnonzero(per_file > 0)
    return fid[first][used[np.argsort(-per_file[used], kind="stable")]].tolist()


def _facts(ctx, source) -> dict:
    """Collective and independent calls, the median MPI-IO request and the hosts: what the knobs depend on."""
    out = {"collective_ops": ctx.total("MPI-IO", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES"),
           "independent_ops": ctx.total("MPI-IO", "MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES")}
    if source == "dxt" and not ctx.trace_mpiio.empty:  # every traced operation is a read or a write
        out["mpiio_median_request_bytes"] = float(np.median(ctx.trace_mpiio.length))
    if ctx.hosts:
        out["hosts"] = ctx.hosts
    return out


def collective_buffer(request, nranks: int, writers) -> int | None:
    """A cb_buffer_size holding what one aggregator gathers per call (a power of two up to 256 MiB), or None
    when ROMIO's default (16 MiB) already holds it (or the request size is unknown)."""
    if not request:
        return None
    per_aggregator = int(request * max(nranks, 1) / max(writers or 1, 1))
    return min(256 * MiB, 1 << (per_aggregator - 1).bit_length()) if per_aggregator > 16 * MiB else None


def _recs(ctx, metrics: dict, files: list) -> list:
    """The knobs that move it: aggregator count and placement, the collective buffer, buffering on or off (and
    HDF5's independent transfers when HDF5 makes the collective calls), each priced (fixes.py)."""
    nranks = int(metrics["mpiio_ranks"])
    hosts = int(metrics.get("hosts") or 0)
    writers = metrics.get("ranks_with_posix_io")
    request = metrics.get("mpiio_median_request_bytes")
    write = ctx.total("MPI-IO", "MPIIO_BYTES_WRITTEN") >= ctx.total("MPI-IO", "MPIIO_BYTES_READ")
    cb = "romio_cb_write" if write else "romio_cb_read"
    op = "write" if write else "read"
    out, hints, prices = [], {}, []
    agg = None
    if not writers or writers < nranks:  # every rank an aggregator already: nothing to spread
        agg = nranks if not writers else min(nranks, max(2 * writers, hosts))
        per_host = max(1, nranks // hosts) if hosts else None
        hints["cb_nodes"] = str(agg)
        if per_host and agg > hosts:
            hints["cb_config_list"] = f"*:{per_host}"
        why = (f"Collective buffering funnels the data through {plural(writers, 'aggregator rank') if writers else 'a few aggregator ranks'}: the "
               f"others wait. cb_nodes={agg} spreads the file-system work" +
               (f"; cb_config_list=*:{per_host} allows {per_host} aggregators per node (ROMIO's default is one)"
                if "cb_config_list" in hints else "") + ". Measure: on one node more aggregators can also slow "
               "the exchange (iolens tune tries the values).")
        out.append(advice.mpi_hints_c(dict(hints), "More collective-buffering aggregators (cb_nodes, cb_config_list)",
                                      why))
        prices.append(fixes.exchange_rounds(ctx, files, op, writers, aggregators=agg))
    buf = collective_buffer(request, nranks, writers)
    if buf:
        hints["cb_buffer_size"] = str(buf)
        out.append(advice.mpi_hints_c({"cb_buffer_size": str(buf)}, f"A larger collective buffer "
                                      f"(cb_buffer_size={fmt_bytes(buf)})",
                                      "Each aggregator moves at most cb_buffer_size bytes per exchange round (16 MiB "
                                      "by default): a buffer as large as what one aggregator gathers per call means "
                                      "fewer rounds of exchange and synchronisation."))
        prices.append(fixes.exchange_rounds(ctx, files, op, writers, buffer=buf))
    large = request is not None and request >= ctx.th.large_request_bytes
    out.append(advice.mpi_hints_c({cb: "disable"}, f"Or turn collective buffering off ({cb}=disable)",
                                  ("The ranks' requests are large (" + fmt_bytes(request) + " median): each rank can "
                                   "write its own part directly, with no exchange at all." if large else
                                   "Each rank then issues its own requests with no exchange; with small interleaved "
                                   "requests this is usually slower: measure before keeping it.")))
    prices.append(fixes.cb_off(ctx, files, op))
    out.append(advice.romio_hints_file(hints or {cb: "disable"}))
    prices.append(fixes.exchange_rounds(ctx, files, op, writers, aggregators=agg, buffer=buf) if hints else prices[-1])
    if "hdf5" in ctx.kinds(files[:20]) and ctx.total("H5D", "H5D_USE_MPIIO_COLLECTIVE"):
        out.append(advice.hdf5_independent_transfer())
        prices.append(fixes.hdf5_independent(ctx))
    kinds = (["aggregators"] if agg else []) + (["cb_buffer"] if buf else []) + ["cb_off"]
    kinds.append("cb_off" if not hints else "aggregators" if agg else "cb_buffer")
    kinds += ["hdf5_independent"] * (len(out) - len(kinds))
    for r, price, kind in zip(out, prices, kinds):
        r.fix = r.fix or kind
        r.expected_saving, r.saving_basis = price.seconds, price.basis
        savings.say_if_slower(r, ctx)
    return out


FINDING = Finding(
    code=CODE,
    meaning="Most MPI-IO time is spent above the file system (two-phase exchange, waiting for aggregators).",
    key_metrics=("overhead_share",),
    thresholds=THRESHOLDS,
    reads=("large_request_bytes",),
    trigger=TRIGGER,
    source="dxt / counters",
    report=report,
    saving=its_own("each recommendation priced by the change it makes (fixes.py): collective buffering off removes "
                   "the collective calls' time and adds each rank's own requests; more aggregators and a larger "
                   "buffer remove exchange rounds and spread the aggregators' requests; HDF5 independent transfers "
                   "remove the collective H5Dwrite/H5Dread time"),
    saving_rule=lambda th: {None: pl.col(P + "saving")},
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title,
)
