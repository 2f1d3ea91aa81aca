"""RANK_IMBALANCE, STRAGGLER, SERIALIZED_IO: how the I/O is spread over ranks and over time."""
from __future__ import annotations

import numpy as np
import polars as pl

from ...model.darshan import COUNTER_PREFIX, DXT_MODULES
from ..measures import busy_runs
from . import recommendations as rec
from .context import MAX_RANKS, clip
from .insight import Evidence, Insight
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_ranks, fmt_time

# (module, counter prefix) of the layers a rank's load is read at, the application's first
LAYERS = tuple((m, COUNTER_PREFIX[m]) for m in ("MPI-IO", "POSIX", "STDIO"))


# --- per-rank load at the layer the application calls ---------------------------------------------
ANGLES = ("bytes", "operations", "time", "fsyncs")
ANGLE_METRIC = {"bytes": "volume", "operations": "operations", "time": "time", "fsyncs": "fsync"}
MIN_EXCESS_FSYNCS = 10
SLOWER_RATIO = 1.25  # a rank with more bytes/operations matters when its I/O time is at least this × the mean  # a few more fsyncs on one rank (closing its own files) is not an imbalance


def rank_loads(ctx):
    """Per rank 0..nprocs-1 at the application's layer: {"time", "bytes", "operations", "fsyncs": array,
    "end": array or None}, source, partial.

    MPI-IO for files opened with MPI-IO, POSIX for the other files, plus STDIO. From the trace when it is
    complete; from the counters otherwise, where a shared (reduced) record gives its slowest and fastest rank
    their recorded share and spreads the rest evenly. fsyncs come from the POSIX counters of each rank's own
    records (a shared record does not say which rank synced); `end` (the end of a rank's last traced I/O)
    only from the trace.
    """
    n = ctx.nprocs
    complete = all(ctx.trace_complete(m) for m in DXT_MODULES if m in ctx.dxt and ctx.dxt[m]["segments"])
    seg = ctx.seg_app
    fsyncs = _fsyncs(ctx)
    if not seg.is_empty() and complete:
        per = seg.group_by("rank").agg((pl.col("end") - pl.col("start")).sum().alias("t"),
                                       pl.col("length").sum().alias("b"), pl.len().alias("n"),
                                       pl.col("end").max().alias("e"))
        t, b, ops, end = np.zeros(n), np.zeros(n), np.zeros(n), np.full(n, np.nan)
        r = per["rank"].to_numpy()
        ok = (r >= 0) & (r < n)
        t[r[ok]] += per["t"].to_numpy()[ok]
        b[r[ok]] += per["b"].to_numpy()[ok]
        ops[r[ok]] += per["n"].to_numpy()[ok]
        end[r[ok]] = per["e"].to_numpy()[ok]
        st, sb, so, _ = _counter_loads(ctx, ("STDIO",))
        loads = {"time": t + st, "bytes": b + sb, "operations": ops + so, "fsyncs": fsyncs, "end": end}
        return loads, "dxt", False
    t, b, ops, any_rows = _counter_loads(ctx, ("MPI-IO", "POSIX", "STDIO"))
    if not any_rows:
        return None
    return {"time": t, "bytes": b, "operations": ops, "fsyncs": fsyncs, "end": None}, "counters", False


def _fsyncs(ctx):
    out = np.zeros(ctx.nprocs)
    df = ctx.counters("POSIX")
    if df is None or "POSIX_FSYNCS" not in df.columns:
        return out
    own = ctx.own_records("POSIX")
    if own.any():
        syncs = ctx.column("POSIX", "POSIX_FSYNCS")
        if "POSIX_FDSYNCS" in df.columns:
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
        df = ctx.counters(module)
        if df is None:
            continue
        fid = ctx.column(module, "file_id")
        keep = np.ones(len(fid), dtype=bool)
        if module == "POSIX":
            keep &= ~np.isin(fid, np.fromiter(ctx.ids_in("MPI-IO"), dtype=np.uint64))
        if module != "STDIO":
            keep &= ~np.isin(fid, np.fromiter(ctx.std_ids, dtype=np.uint64))
        if not keep.any():
            continue
        any_rows = True
        count = ([f"{p}_INDEP_READS", f"{p}_INDEP_WRITES", f"{p}_COLL_READS", f"{p}_COLL_WRITES"]
                 if module == "MPI-IO" else [f"{p}_READS", f"{p}_WRITES"])
        col = ctx.column
        # element-wise, in the order polars' expressions added them: the same floats
        rt = col(module, f"{p}_F_READ_TIME") + col(module, f"{p}_F_WRITE_TIME") + col(module, f"{p}_F_META_TIME")
        rb = col(module, f"{p}_BYTES_READ") + col(module, f"{p}_BYTES_WRITTEN")
        rn = sum(col(module, c) for c in count if c in df.columns)
        rank = col(module, "rank")
        own = keep & ctx.own_records(module)
        if own.any():
            np.add.at(t, rank[own], rt[own])
            np.add.at(b, rank[own], rb[own])
            np.add.at(ops, rank[own], rn[own])
        shared = keep & (rank < 0)
        if shared.any():
            for row, rt_, rb_, rn_ in zip(df.filter(pl.Series(shared)).iter_rows(named=True), rt[shared],
                                          rb[shared], rn[shared]):
                _spread(t, float(rt_), row.get(f"{p}_SLOWEST_RANK"), row.get(f"{p}_F_SLOWEST_RANK_TIME"),
                        row.get(f"{p}_FASTEST_RANK"), row.get(f"{p}_F_FASTEST_RANK_TIME"))
                _spread(b, int(rb_), row.get(f"{p}_SLOWEST_RANK"), row.get(f"{p}_SLOWEST_RANK_BYTES"),
                        row.get(f"{p}_FASTEST_RANK"), row.get(f"{p}_FASTEST_RANK_BYTES"))
                ops += int(rn_) / n
    return t, b, ops, any_rows


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


def mpiio_meta_time_per_rank(ctx) -> float | None:
    """The mean MPI-IO metadata time (open, close, sync, set_view: where ranks wait for each other in
    collective file calls) per rank, from the counters."""
    df = ctx.counters("MPI-IO")
    if df is None or "MPIIO_F_META_TIME" not in df.columns:
        return None
    return float(df.select(clip("MPIIO_F_META_TIME").sum()).item() or 0.0) / ctx.nprocs


# --- RANK_IMBALANCE -------------------------------------------------------------------------------
def _imbalanced_angles(ctx, loads) -> dict:
    """angle -> (max over mean, heaviest rank) for the angles where the busiest rank carries at least
    `imbalance_ratio` × the mean and the excess is large enough to matter: bytes or operations by volume
    (`imbalance_min_bytes`, `small_min_ops`), fsyncs by count, time when the wait matters for this run."""
    th = ctx.th
    out = {}
    for angle in ANGLES:
        arr = loads[angle]
        mean, top = float(arr.mean()), float(arr.max())
        if mean <= 0 or top / mean < th.imbalance_ratio:
            continue
        heavy = int(arr.argmax())
        excess = top - mean
        big = {"bytes": excess >= th.imbalance_min_bytes, "operations": excess >= th.small_min_ops,
               "fsyncs": excess >= MIN_EXCESS_FSYNCS,
               "time": ctx.matters(float(loads["time"][heavy] - loads["time"].mean()))}[angle]
        if big:
            out[angle] = (top / mean, heavy)
    return out


def check_imbalance(ctx) -> list:
    if ctx.nprocs < 2:
        return []
    out = _aggregator_bottleneck(ctx)
    named = {r for i in out for r in i.evidence.ranks}
    got = rank_loads(ctx)
    if got is None:
        return out
    loads, source, partial = got
    th = ctx.th
    angles = _imbalanced_angles(ctx, loads)
    if not angles:
        return out
    kind = max(angles, key=lambda a: angles[a][0])
    ratio, heavy = angles[kind]
    if heavy in named:
        return out
    t, b, ops, arr = loads["time"], loads["bytes"], loads["operations"], loads[kind]
    mean, top = float(arr.mean()), float(arr.max())
    order = np.argsort(-arr, kind="stable")
    heavy_ranks = [int(r) for r in order[:MAX_RANKS] if arr[r] >= th.imbalance_ratio * mean]
    excess_t = float(t[heavy] - t.mean())
    share = top / arr.sum()
    metrics = {"max_over_mean": ratio, f"max_rank_{kind}": top, f"mean_rank_{kind}": mean,
               "heaviest_rank": heavy, "heaviest_rank_share": share,
               "heaviest_rank_time_s": float(t[heavy]), "heaviest_rank_bytes": float(b[heavy]),
               "heaviest_rank_operations": float(ops[heavy]),
               "mean_rank_time_s": float(t.mean()), "mean_rank_bytes": float(b.mean()),
               "ranks_with_io": int((arr > 0).sum()), "job_ranks": ctx.nprocs,
               "excess_time_s": excess_t}
    for angle in ANGLES:
        m = float(loads[angle].mean())
        if m > 0:  # the heaviest rank against the mean from every angle (no "bytes" in a ratio's name)
            metrics[f"{ANGLE_METRIC[angle]}_max_over_mean"] = float(loads[angle][heavy]) / m
    noun = {"bytes": "bytes", "operations": "operations", "time": "time", "fsyncs": "fsyncs"}
    title = (f"I/O {noun[kind]} uneven across ranks: {fmt_ranks(heavy_ranks[:4])} "
             f"{'carries' if len(heavy_ranks) == 1 else 'carry'} up to {ratio:.1f}× the mean")
    parts = [f"moves {fmt_bytes(b[heavy])} ({float(b[heavy]) / max(float(b.mean()), 1e-300):.1f}× the mean of "
             f"{fmt_bytes(b.mean())})" if b.mean() > 0 else None,
             f"issues {fmt_count(ops[heavy])} I/O operations ({float(ops[heavy]) / float(ops.mean()):.1f}× the mean)"
             if ops.mean() > 0 else None,
             f"spends {fmt_time(t[heavy])} in I/O (mean {fmt_time(t.mean())})",
             f"calls fsync {fmt_count(loads['fsyncs'][heavy])} times (mean {loads['fsyncs'].mean():.1f})"
             if loads["fsyncs"].sum() > 0 else None]
    summary = (f"Rank {heavy} " + ", ".join(x for x in parts if x) + f" over {ctx.nprocs} ranks"
               + (f"; it carries {fmt_pct(share)} of all I/O {noun[kind]}." if kind != "time" else "."))
    end = loads["end"]
    if end is not None and np.isfinite(end[heavy]):
        late = float(end[heavy] - np.nanmedian(end))
        metrics["heaviest_rank_end_delay_s"] = late
        if late > 0:
            summary += f" It finishes its I/O {fmt_time(late)} after the median rank."
    summary += _meanwhile(ctx, metrics)
    if source == "counters" and any(ctx.counters(m) is not None and
                                    (ctx.counters(m)["rank"] < 0).any() for m, _ in LAYERS):
        summary += (" Files shared by all ranks only record their slowest and fastest rank: the other "
                    "ranks' shares are estimated as even.")
    severity = "warning"
    time_ratio = float(t[heavy]) / float(t.mean()) if t.mean() > 0 else 0.0
    if kind != "time" and time_ratio < SLOWER_RATIO:
        # more bytes or operations, but no more time: rank 0 writing small metadata, or cached I/O
        severity = "info"
        summary += (f" Its I/O time is within {fmt_pct(SLOWER_RATIO - 1)} of the mean, so the others do not wait "
                    "for it on this run.")
    elif kind != "time" and not ctx.matters(excess_t):
        summary += (f" On this run the others wait at most {fmt_time(max(excess_t, 0.0))} for it, but the "
                    f"imbalance is structural: at scale rank {heavy}'s share of the work stays {ratio:.1f}× the mean.")
    window = None
    files = []
    if not ctx.seg_app.is_empty():
        mine = ctx.seg_app.filter(pl.col("rank") == heavy)
        window = ctx.seg_window(mine)
        files = (mine.group_by("file_id").agg(pl.col("length").sum())
                 .sort(["length", "file_id"], descending=[True, False])["file_id"].to_list())
    recs = [rec.Recommendation(
        "Spread the I/O over all ranks",
        f"Give every rank a similar share of the data to write/read (rank {heavy} does "
        f"{ratio:.1f}× the average), or use collective MPI-IO so the library balances the file-system "
        "requests over its aggregators.",
        "/* each rank writes its own part, all at once */\n"
        "MPI_File_write_at_all(fh, my_offset, my_buf, my_count, MPI_BYTE, MPI_STATUS_IGNORE);", "c")]
    if "fsyncs" in angles:
        recs.append(rec.fewer_fsync())
    out.append(Insight("RANK_IMBALANCE", severity, title, summary,
                       Evidence(ranks=heavy_ranks, files=ctx.names_of(files), time_window=window, metrics=metrics),
                       recs, source=source, partial=partial, score=ratio))
    return out


def _meanwhile(ctx, metrics: dict) -> str:
    """What the other ranks do while they wait: their MPI-IO metadata time (close, collectives)."""
    meta = mpiio_meta_time_per_rank(ctx)
    if not meta:
        return ""
    metrics["mean_rank_mpiio_meta_time_s"] = meta
    return (f" Meanwhile the ranks spend {fmt_time(meta)} each on average in MPI-IO metadata calls (open, close, "
            "sync, set_view): waiting for a late rank inside MPI_File_close or a collective file call shows up "
            "there; waiting in MPI_Barrier or in compute is not recorded by Darshan.")


def _aggregator_bottleneck(ctx) -> list:
    """Collectively accessed shared files whose file-system I/O all goes through (nearly) one rank."""
    mpi, posix = ctx.counters("MPI-IO"), ctx.counters("POSIX")
    if mpi is None or posix is None or not ctx.total("MPI-IO", "MPIIO_COLL_WRITES", "MPIIO_COLL_READS"):
        return []  # no collective request at all (integer total): nothing below can match
    th = ctx.th
    coll = mpi.group_by("file_id").agg((clip("MPIIO_COLL_WRITES") + clip("MPIIO_COLL_READS")).sum().alias("coll"),
                                       clip("MPIIO_COLL_OPENS").sum().alias("coll_opens"))
    coll = coll.filter(pl.col("coll") > 0).join(ctx.ranks_on_file("MPI-IO"), on="file_id")
    out = []
    seg = ctx.seg_posix
    for row in coll.iter_rows(named=True):
        fid, nranks = row["file_id"], row["nranks"]
        p = posix.filter(pl.col("file_id") == fid)
        if p.is_empty() or nranks < 2:
            continue
        fb = (p.select((clip("POSIX_BYTES_READ") + clip("POSIX_BYTES_WRITTEN")).sum()).item() or 0)
        if fb <= 0:
            continue
        if not seg.is_empty() and ctx.trace_complete("DXT_POSIX") and fid in set(seg["file_id"].unique().to_list()):
            per = (seg.filter(pl.col("file_id") == fid).group_by("rank")
                   .agg(pl.col("length").sum().alias("b"), (pl.col("end") - pl.col("start")).sum().alias("t"))
                   .sort(["b", "rank"], descending=[True, False]))
            aggregators = per.height
            nodes = ctx.hosts
            if not nodes or aggregators >= nodes:
                continue
            top_rank, top_b, top_t = per.row(0)
            source = "dxt"
        else:
            shared = p.filter(pl.col("rank") < 0)
            if shared.is_empty() or nranks < th.single_aggregator_min_ranks:
                continue
            r = shared.row(0, named=True)
            top_rank, top_b, top_t = r["POSIX_SLOWEST_RANK"], r["POSIX_SLOWEST_RANK_BYTES"], r["POSIX_F_SLOWEST_RANK_TIME"]
            if top_rank is None or top_rank < 0 or top_b is None or top_b < (2 / 3) * fb:
                continue
            aggregators, nodes, source = 1, None, "counters"
        if not ctx.matters(top_t):
            continue
        name = ctx.name(fid)
        share = top_b / fb
        metrics = {"aggregators": aggregators, "ranks_on_file": nranks, "heaviest_rank": top_rank,
                   "heaviest_rank_bytes": top_b, "heaviest_rank_share": share, "heaviest_rank_time_s": top_t,
                   "file_bytes": fb}
        if nodes:
            metrics["nodes"] = nodes
        lus = ctx.log.lustre.filter(pl.col("file_id") == fid) if not ctx.log.lustre.is_empty() else None
        stripe_count = int(lus["stripe_count"].max()) if lus is not None and lus.height else None
        if stripe_count:
            metrics["stripe_count"] = stripe_count
        title = (f"Rank {top_rank} does {fmt_pct(share)} of the file-system I/O of a file {nranks} ranks "
                 f"write collectively")
        summary = (f"{name} is accessed with collective MPI-IO by {nranks} ranks, but at the POSIX layer rank "
                   f"{top_rank} moves {fmt_bytes(top_b)} of {fmt_bytes(fb)} ({fmt_pct(share)}) in "
                   f"{fmt_time(top_t)}: collective buffering uses {'only one aggregator' if aggregators == 1 else f'{aggregators} aggregators'}"
                   + (f" for {nodes} nodes" if nodes else "") + ", and every other rank waits for it inside the "
                   "collective calls.")
        if stripe_count == 1:
            summary += (" The file has a single Lustre stripe, and ROMIO's Lustre driver uses at most one "
                        "aggregator per stripe by default.")
        recs = []
        if stripe_count is not None and stripe_count <= 4:
            extent = p.select((pl.max_horizontal(pl.col("POSIX_MAX_BYTE_WRITTEN"), pl.col("POSIX_MAX_BYTE_READ")).max()
                               + 1)).item() or 0
            count = rec.stripe_count_for(extent if extent > 0 else fb, nranks)  # same rule as LUSTRE_STRIPING
            recs.append(rec.lustre_setstripe(name, count, 1 << 20,
                                             f"A wider stripe lets ROMIO use {count} aggregators in parallel."))
        recs.append(rec.more_aggregators(nodes, stripe_count, nranks))
        out.append(Insight("RANK_IMBALANCE", "warning", title, summary,
                           Evidence(ranks=[top_rank], files=[name], time_window=ctx.counter_window("POSIX", [fid]),
                                    metrics=metrics),
                           recs, source=source, partial=False, score=share * 10))
    return out


# --- STRAGGLER ------------------------------------------------------------------------------------
def check_straggler(ctx) -> list:
    """Ranks whose I/O ends long after the median rank's: the rank(s) everyone waits for.

    Late by `max(straggler_min_delay, straggler_min_delay_share × I/O window)` (and a `min_runtime_share` of
    the run), at most a quarter of the ranks, and either still busy with I/O for most of the delay (slow) or
    doing most of their own bytes after the median rank finished (late: started late). A rank that only
    writes one record at the end is neither.
    """
    th = ctx.th
    seg = ctx.seg_app
    if seg.is_empty():
        return []
    per = seg.group_by("rank").agg(pl.col("start").min().alias("first"), pl.col("end").max().alias("last"),
                                   pl.col("length").sum().alias("bytes"))
    if per.height < 4:
        return []
    t0, t1 = float(per["first"].min()), float(per["last"].max())
    window = t1 - t0
    median_end = float(per["last"].median())
    median_first = float(per["first"].median())
    need = max(th.straggler_min_delay, th.straggler_min_delay_share * window,
               min(th.min_runtime_share * ctx.run_time, th.min_stake_seconds) if ctx.run_time > 0 else 0.0)
    late = per.filter(pl.col("last") - median_end >= need)
    if late.is_empty() or late.height > 0.25 * per.height:
        return []
    after = (seg.filter(pl.col("rank").is_in(late["rank"].implode()) & (pl.col("end") > median_end))
             .group_by("rank").agg((pl.col("end") - pl.max_horizontal(pl.col("start"), pl.lit(median_end))).sum()
                                   .alias("busy"), pl.col("length").sum().alias("bytes_after")))
    late = (late.join(after, on="rank", how="left").with_columns(pl.col("busy", "bytes_after").fill_null(0))
            .with_columns((pl.col("last") - median_end).alias("delay")))
    slow = (pl.col("busy") >= th.straggler_min_delay) & (pl.col("busy") >= 0.5 * pl.col("delay"))
    started_late = (pl.col("bytes") > 0) & (pl.col("bytes_after") >= 0.5 * pl.col("bytes"))
    late = late.filter(slow | started_late).with_columns(slow.alias("slow")).sort("delay", descending=True)
    if late.is_empty():
        return []
    ranks = late["rank"].head(MAX_RANKS).to_list()
    worst = float(late["delay"][0])
    waiting = per.height - late.height
    partial = any(ctx.trace_truncated(m) for m in DXT_MODULES)
    files = (seg.filter(pl.col("rank").is_in(late["rank"].implode()) & (pl.col("end") > median_end))
             .group_by("file_id").agg(pl.col("length").sum()).sort(["length", "file_id"], descending=[True, False])["file_id"].to_list())
    first_late = float(late["first"].min())
    metrics = {"stragglers": late.height, "ranks_with_io": per.height, "max_delay_s": worst,
               "median_end_s": median_end, "io_window_s": window, "max_delay_share": worst / window if window else 0,
               "straggler_start_delay_s": first_late - median_first,
               "straggler_busy_s": float(late["busy"].max()), "idle_rank_time_s": worst * waiting}
    title = f"{fmt_ranks(ranks)} finish{'es' if len(ranks) == 1 else ''} I/O up to {fmt_time(worst)} after the others"
    summary = (f"Half of the {per.height} ranks with I/O are done by {median_end:.2f} s, but {fmt_ranks(ranks)} "
               f"keep{'s' if len(ranks) == 1 else ''} doing I/O until {float(late['last'].max()):.2f} s "
               f"({fmt_pct(worst / window)} of the I/O window later).")
    if bool(late["slow"].all()):
        summary += (" It is" if late.height == 1 else " They are") + \
            " busy with I/O for most of that time: slow, not just late."
    else:
        one = late.height == 1
        summary += (f" {'Its' if one else 'Their'} own I/O is short ({fmt_time(float(late['busy'].max()))} after the "
                    f"others finished): {'it starts' if one else 'they start'} it "
                    f"{fmt_time(max(first_late - median_first, 0.0))} after the median rank — late, not slow "
                    "(compute, a sleep or a wait before the I/O).")
    summary += (f" The other {waiting} ranks wait about {fmt_time(worst)} each ({fmt_time(worst * waiting)} of "
                "rank time).")
    summary += _meanwhile(ctx, metrics)
    if partial:
        summary += " The trace is truncated: ranks whose trace stopped early are not judged."
    recs = [rec.Recommendation(
        "Find out why these ranks are slow" if bool(late["slow"].all()) else "Find out why these ranks start late",
        "Check whether the late ranks have more data (see RANK_IMBALANCE), share a node or OST with other "
        "heavy I/O (node placement, OST_IMBALANCE), issue smaller requests than the rest, or do more work "
        "before their I/O. Collective I/O evens out the file-system load across ranks; overlapping the "
        "late rank's work with the others' I/O hides the wait.", "", "text")]
    return [Insight("STRAGGLER", "warning", title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(files), time_window=(median_end, float(late["last"].max())),
                             metrics=metrics),
                    recs, source="dxt", partial=partial, score=worst / window if window else 0)]


# --- SERIALIZED_IO --------------------------------------------------------------------------------
def busy_intervals(seg: pl.DataFrame, gap: float) -> pl.DataFrame:
    """Per rank, its operations merged into busy intervals (gaps shorter than `gap` bridged)."""
    return busy_runs(seg, "rank", gap)


def alone_time(intervals: pl.DataFrame) -> pl.DataFrame:
    """Per rank: the time during which it is the only rank busy, plus the first/last moment of that."""
    ev = pl.concat([
        intervals.select(pl.col("start").alias("t"), pl.lit(1, dtype=pl.Int64).alias("d"), pl.col("rank").alias("r")),
        intervals.select(pl.col("end").alias("t"), pl.lit(-1, dtype=pl.Int64).alias("d"),
                         (-pl.col("rank")).alias("r")),
    ]).sort(["t", "d"])
    ev = ev.with_columns(pl.col("d").cum_sum().alias("active"), pl.col("r").cum_sum().alias("who"),
                         (pl.col("t").shift(-1) - pl.col("t")).fill_null(0.0).alias("dt"))
    one = ev.filter((pl.col("active") == 1) & (pl.col("dt") > 0))
    return one.group_by(pl.col("who").alias("rank")).agg(
        pl.col("dt").sum().alias("alone"), pl.col("t").min().alias("first"),
        (pl.col("t") + pl.col("dt")).max().alias("last"))


def check_serialized(ctx) -> list:
    th = ctx.th
    if ctx.nprocs < 2:
        return []
    seg = ctx.seg
    std = pl.Series(sorted(ctx.std_ids), dtype=pl.UInt64).implode()
    if seg["file_id"].is_in(std).any():  # a Series test first: most traces have no standard stream
        seg = seg.filter(~pl.col("file_id").is_in(std))
    if seg.is_empty():
        return []
    iv = busy_intervals(seg, th.serialized_gap)
    t0, t1 = float(iv["start"].min()), float(iv["end"].max())
    window = t1 - t0
    if window <= 0:
        return []
    alone = alone_time(iv).sort("alone", descending=True)
    if alone.is_empty():
        return []
    rank, secs, first, last = alone.row(0)
    share = secs / window
    if share < th.serialized_min_share or not ctx.matters(secs):
        return []
    ranks_io = seg["rank"].n_unique()
    later = (seg.filter(pl.col("rank") != rank).group_by("rank").agg(pl.col("start").min())
             .filter(pl.col("start") >= first)).height
    mine = seg.filter((pl.col("rank") == rank) & (pl.col("start") < last) & (pl.col("end") > first))
    app = mine.filter(pl.col("module") == "DXT_MPIIO") if (mine["module"] == "DXT_MPIIO").any() else mine
    nbytes = int(app["length"].sum() or 0)
    files = app.group_by("file_id").agg(pl.col("length").sum()).sort(["length", "file_id"], descending=[True, False])["file_id"].to_list()
    kinds = ctx.kinds(files)
    total_bytes = int(ctx.seg_app["length"].sum() or 0)
    metrics = {"serial_share": share, "serial_time_s": secs, "io_window_s": window, "serial_rank": rank,
               "bytes_while_alone": nbytes, "bytes_share_while_alone": nbytes / total_bytes if total_bytes else 0,
               "ranks_with_io": ranks_io, "ranks_starting_after": later, "job_ranks": ctx.nprocs}
    title = (f"Serialized I/O: rank {rank} does I/O alone for {fmt_pct(share)} of the I/O window "
             f"({fmt_time(secs)})")
    summary = (f"From {first:.2f} s to {last:.2f} s only rank {rank} is doing I/O ({fmt_bytes(nbytes)} on "
               f"{len(files)} file(s)); {later} other rank(s) start their I/O only after that, so they most "
               "likely wait for it.")
    recs = []
    if "netcdf" in kinds or "pnetcdf" in kinds:
        recs.append(rec.netcdf_no_fill())
    if "hdf5" in kinds:
        recs.append(rec.hdf5_no_fill())
    if not recs:
        recs.append(rec.netcdf_no_fill())
        recs.append(rec.hdf5_no_fill())
        recs[0].detail = "If this is a NetCDF file being pre-filled by one rank: " + recs[0].detail
        recs[1].detail = "If this is an HDF5 dataset being pre-filled: " + recs[1].detail
    recs.append(rec.parallel_write("mpiio"))
    partial = any(ctx.trace_truncated(m) for m in DXT_MODULES)
    return [Insight("SERIALIZED_IO", "critical" if share >= 0.8 else "warning", title, summary,
                    Evidence(ranks=[rank], files=ctx.names_of(files), time_window=(first, last), metrics=metrics),
                    recs, source="dxt", partial=partial, score=share)]
