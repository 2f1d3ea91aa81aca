"""MPIIO_OVERHEAD: time spent in MPI-IO above the file system.

A collective call's time is the POSIX requests its aggregators issue plus everything ROMIO does around them:
the two-phase exchange of data between ranks, synchronisation, and ranks waiting for the aggregators. Per
rank, the share of its MPI-IO read/write time not spent in POSIX operations measures that. With DXT, each
rank's POSIX operations are matched to the MPI-IO operation they run inside (same rank and file, starting
within it); without it, the counters' MPI-IO and POSIX read/write times of the same files are compared.
Open, close, sync and set_view are left out: their waiting is not what the knobs below move. Only files
accessed mostly collectively count: independent MPI-IO above POSIX (data sieving, locks) is what DATA_SIEVING
and NO_COLLECTIVE_IO describe, and the collective-buffering knobs do not move it.
"""
from __future__ import annotations

import polars as pl

from . import recommendations as rec
from .context import MAX_RANKS, clip
from .insight import Evidence, Insight
from .rules import mpiio_overhead as rule, one_row
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_ranks, fmt_time

DATA_OPS = ("read", "write")
MiB = 1 << 20


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


def collective_files(ctx) -> list:
    """Files with MPI-IO and POSIX records whose MPI-IO reads and writes are mostly collective."""
    mpi = ctx.counters("MPI-IO")
    if mpi is None or not ctx.has("POSIX"):
        return []
    ids, _ = ctx.file_groups("MPI-IO")  # numpy per-file integer sums: a group-by costs more on a few records
    coll = ctx.per_file_total("MPI-IO", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES")
    indep = ctx.per_file_total("MPI-IO", *(f"MPIIO_{m}_{k}" for m in ("INDEP", "SPLIT", "NB")
                                           for k in ("READS", "WRITES")))
    return sorted(set(ids[(coll > 0) & (coll >= indep)].tolist()) & ctx.ids_in("POSIX"))


def _counter_table(ctx, files: list) -> pl.DataFrame | None:
    """The same table from the counters: per rank where records are per rank, one row (rank -1) for the
    shared records, over `files`."""
    mpi, posix = ctx.counters("MPI-IO"), ctx.counters("POSIX")
    both = pl.Series(files, dtype=pl.UInt64).implode()
    m = (mpi.filter(pl.col("file_id").is_in(both)).group_by("rank")
         .agg((clip("MPIIO_F_READ_TIME") + clip("MPIIO_F_WRITE_TIME")).sum().alias("mpiio_s")))
    p = (posix.filter(pl.col("file_id").is_in(both)).group_by("rank")
         .agg((clip("POSIX_F_READ_TIME") + clip("POSIX_F_WRITE_TIME")).sum().alias("posix_s")))
    t = m.join(p, on="rank", how="left").with_columns(pl.col("posix_s").fill_null(0.0))
    t = t.with_columns(pl.min_horizontal("posix_s", "mpiio_s").alias("posix_s"))
    return (t.with_columns((pl.col("mpiio_s") - pl.col("posix_s")).alias("overhead_s"))
            .with_columns(pl.when(pl.col("mpiio_s") > 0).then(pl.col("overhead_s") / pl.col("mpiio_s"))
                          .otherwise(0.0).alias("overhead_share"))
            .filter(pl.col("mpiio_s") > 0).sort(["overhead_s", "rank"], descending=[True, False]))


def _table(ctx, files: list) -> tuple:
    """(per-rank table over `files`, source, partial)."""
    seg_m, seg_p = ctx.seg_mpiio, ctx.seg_posix
    if not seg_m.is_empty() and not seg_p.is_empty():
        ids = pl.Series(files, dtype=pl.UInt64).implode()
        traced = seg_m.filter(pl.col("file_id").is_in(ids) & pl.col("file_id").is_in(seg_p["file_id"].unique().implode()))
        if not traced.is_empty():
            partial = not (ctx.trace_complete("DXT_MPIIO") and ctx.trace_complete("DXT_POSIX"))
            return overhead_by_rank(traced, seg_p.filter(pl.col("file_id").is_in(ids))), "dxt", partial
    return _counter_table(ctx, files), "counters", False


def measure(ctx):
    """The per-rank table over the mostly-collective files and its totals (once a log), or None."""
    return ctx.memo("mpiio_overhead", lambda: _measure(ctx))


def _measure(ctx):
    if ctx.counters("MPI-IO") is None or not ctx.total("MPI-IO", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES"):
        return None  # no collective call at all (most logs): nothing to look at
    files = collective_files(ctx)
    if not files:
        return None
    table, source, partial = _table(ctx, files)
    if table is None or table.is_empty():
        return None
    total_mpiio = float(table["mpiio_s"].sum())
    total_posix = float(table["posix_s"].sum())
    share = (total_mpiio - total_posix) / total_mpiio if total_mpiio > 0 else 0.0
    slowest = table.sort(["mpiio_s", "rank"], descending=[True, False]).row(0, named=True)
    per_rank = source == "dxt" or bool((table["rank"] >= 0).all())
    if per_rank:
        slow_mpiio, slow_over = slowest["mpiio_s"], slowest["overhead_s"]
    else:  # shared records: the average rank's part of the sums
        slow_mpiio, slow_over = total_mpiio / ctx.nprocs, (total_mpiio - total_posix) / ctx.nprocs
    return {"files": files, "table": table, "source": source, "partial": partial, "total_mpiio": total_mpiio,
            "total_posix": total_posix, "share": share, "slowest": slowest, "per_rank": per_rank,
            "slow_mpiio": slow_mpiio, "slow_over": slow_over}


def check(ctx) -> list:
    th = ctx.th
    m = measure(ctx)
    if m is None:
        return []
    # the rule decides (rules/mpiio_overhead.py, shared with the fleet)
    v = one_row(rule.features(ctx), rule.rule(th), "MPIIO_OVERHEAD")
    if v["severity"] is None:
        return []
    severity, strong = v["severity"], v["strong"]
    files, table, source, partial = m["files"], m["table"], m["source"], m["partial"]
    total_mpiio, total_posix, share, slowest = m["total_mpiio"], m["total_posix"], m["share"], m["slowest"]
    per_rank, slow_mpiio, slow_over = m["per_rank"], m["slow_mpiio"], m["slow_over"]
    writers = int((table["posix_s"] > 0).sum()) if per_rank else None
    nranks = table.height if per_rank else ctx.nprocs
    facts = _facts(ctx, source)
    # the best a knob can do here: every rank's share of the POSIX work done directly, nothing above it
    floor = total_posix / max(nranks, 1)
    saving = max(slow_mpiio - floor, 0.0)
    metrics = {"overhead_share": share, "mpiio_time_s": total_mpiio, "posix_time_inside_s": total_posix,
               "overhead_s": total_mpiio - total_posix, "slowest_rank_mpiio_time_s": slow_mpiio,
               "slowest_rank_overhead_s": slow_over,
               "slowest_rank_overhead_share": slow_over / slow_mpiio if slow_mpiio > 0 else 0.0,
               "mpiio_ranks": nranks, "expected_saving_s": saving, **facts}
    if per_rank:
        metrics["slowest_rank"] = int(slowest["rank"])
        metrics["max_rank_overhead_share"] = float(table["overhead_share"].max())
        metrics["min_rank_overhead_share"] = float(table["overhead_share"].min())
        metrics["ranks_with_posix_io"] = writers
    ranks = [int(r) for r in table["rank"].to_list() if r >= 0][:MAX_RANKS]
    title = rule.title(v, th)
    summary = _summary(metrics, table if per_rank else None)
    recs = _recs(ctx, metrics, saving, slow_mpiio, floor)
    window = ctx.seg_window(ctx.seg_mpiio) if source == "dxt" else ctx.counter_window("MPI-IO")
    return [Insight("MPIIO_OVERHEAD", severity, title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(_files(ctx, files)), time_window=window,
                             metrics=metrics),
                    recs, source=source, partial=partial, score=v["score"], demotable=not strong)]


def _summary(m: dict, table) -> str:
    """What the numbers say; `table` (per rank) is None for shared records."""
    writers, nranks = m.get("ranks_with_posix_io"), m["mpiio_ranks"]
    who = (f"{fmt_count(writers)} of {fmt_count(nranks)} ranks reach the file system" if table is not None
           else f"{fmt_count(nranks)} ranks (shared records: per-rank times unknown)")
    text = (f"The ranks spend {fmt_time(m['mpiio_time_s'])} in MPI-IO reads and writes but only "
            f"{fmt_time(m['posix_time_inside_s'])} in the POSIX operations inside them; {who}. The rest is ROMIO's "
            "own work: the two-phase exchange between ranks, synchronisation, and ranks waiting for the "
            "aggregators. " + (f"The slowest rank ({m['slowest_rank']})" if table is not None else "The average rank")
            + f" spends {fmt_time(m['slowest_rank_overhead_s'])} of its {fmt_time(m['slowest_rank_mpiio_time_s'])} "
            "above the file system")
    if table is None:
        return text + "."
    text += (f"; per rank the share ranges from {fmt_pct(m['min_rank_overhead_share'])} to "
             f"{fmt_pct(m['max_rank_overhead_share'])}.")
    if writers and writers < nranks:
        text += f" Aggregators: {fmt_ranks(table.filter(pl.col('posix_s') > 0)['rank'].sort().to_list())}."
    return text


def _files(ctx, files: list) -> list:
    """`files`, the most MPI-IO time first."""
    mpi = ctx.counters("MPI-IO").filter(pl.col("file_id").is_in(pl.Series(files, dtype=pl.UInt64).implode()))
    t = (mpi.group_by("file_id").agg((clip("MPIIO_F_READ_TIME") + clip("MPIIO_F_WRITE_TIME")).sum().alias("t"))
         .filter(pl.col("t") > 0).sort("t", descending=True))
    return t["file_id"].to_list()


def _facts(ctx, source) -> dict:
    """Collective and independent calls, the median MPI-IO request and the hosts: what the knobs depend on."""
    out = {"collective_ops": ctx.total("MPI-IO", "MPIIO_COLL_READS", "MPIIO_COLL_WRITES"),
           "independent_ops": ctx.total("MPI-IO", "MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES")}
    if source == "dxt":
        m = ctx.seg_mpiio.filter(pl.col("op").is_in(DATA_OPS))
        if not m.is_empty():
            out["mpiio_median_request_bytes"] = float(m["length"].median())
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


def _recs(ctx, metrics: dict, saving: float, slow_mpiio: float, floor: float) -> list:
    """The knobs that move it: aggregator count and placement, the collective buffer, buffering on or off."""
    nranks = int(metrics["mpiio_ranks"])
    hosts = int(metrics.get("hosts") or 0)
    writers = metrics.get("ranks_with_posix_io")
    request = metrics.get("mpiio_median_request_bytes")
    write = ctx.total("MPI-IO", "MPIIO_BYTES_WRITTEN") >= ctx.total("MPI-IO", "MPIIO_BYTES_READ")
    cb = "romio_cb_write" if write else "romio_cb_read"
    out, hints = [], {}
    if not writers or writers < nranks:  # every rank an aggregator already: nothing to spread
        agg = nranks if not writers else min(nranks, max(2 * writers, hosts))
        per_host = max(1, nranks // hosts) if hosts else None
        hints["cb_nodes"] = str(agg)
        if per_host and agg > hosts:
            hints["cb_config_list"] = f"*:{per_host}"
        why = (f"Collective buffering funnels the data through {writers or 'a few'} aggregator rank(s): the "
               f"others wait. cb_nodes={agg} spreads the file-system work" +
               (f"; cb_config_list=*:{per_host} allows {per_host} aggregators per node (ROMIO's default is one)"
                if "cb_config_list" in hints else "") + ". Measure: on one node more aggregators can also slow "
               "the exchange (iolens tune tries the values).")
        out.append(rec.mpi_hints_c(dict(hints), "More collective-buffering aggregators (cb_nodes, cb_config_list)",
                                   why))
    buf = collective_buffer(request, nranks, writers)
    if buf:
        hints["cb_buffer_size"] = str(buf)
        out.append(rec.mpi_hints_c({"cb_buffer_size": str(buf)}, f"A larger collective buffer "
                                   f"(cb_buffer_size={fmt_bytes(buf)})",
                                   "Each aggregator moves at most cb_buffer_size bytes per exchange round (16 MiB "
                                   "by default): a buffer as large as what one aggregator gathers per call means "
                                   "fewer rounds of exchange and synchronisation."))
    large = request is not None and request >= ctx.th.large_request_bytes
    out.append(rec.mpi_hints_c({cb: "disable"}, f"Or turn collective buffering off ({cb}=disable)",
                               ("The ranks' requests are large (" + fmt_bytes(request) + " median): each rank can "
                                "write its own part directly, with no exchange at all." if large else
                                "Each rank then issues its own requests with no exchange; with small interleaved "
                                "requests this is usually slower: measure before keeping it.")))
    out.append(rec.romio_hints_file(hints or {cb: "disable"}))
    basis = (f"the slowest rank's MPI-IO time here ({fmt_time(slow_mpiio)}) minus its share of the POSIX time "
             f"inside MPI-IO ({fmt_time(floor)}: the total over {nranks} ranks): an upper bound, what is left if "
             "nothing remained above the file system")
    for r in out:
        r.expected_saving, r.saving_basis = saving, basis
    return out
