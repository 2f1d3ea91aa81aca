"""RANK_IMBALANCE, STRAGGLER, SERIALIZED_IO: how the I/O is spread over ranks and over time."""
from __future__ import annotations

import numpy as np
import polars as pl

from ...model.darshan import DXT_MODULES
from ..measures import busy_runs
from ..segments import MODULE_CODES, Segments, float_sum, group_sums, groups, is_in, median, per_group_at
from . import recommendations as rec
from .context import MAX_RANKS
from .rules import one_row, rank_imbalance
from .rules.common import RUN_TIME, common_features
from .insight import Evidence, Insight
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_ranks, fmt_time

MIN_EXCESS_FSYNCS = rank_imbalance.MIN_EXCESS_FSYNCS
SLOWER_RATIO = rank_imbalance.SLOWER_RATIO
ANGLES = rank_imbalance.ANGLES
ANGLE_METRIC = {"bytes": "volume", "operations": "operations", "time": "time", "fsyncs": "fsync"}
LAYERS = rank_imbalance.LAYERS
rank_loads = rank_imbalance.rank_loads
alone_time = rank_imbalance.alone_time


def mpiio_meta_time_per_rank(ctx) -> float | None:
    """The mean MPI-IO metadata time (open, close, sync, set_view: where ranks wait for each other in
    collective file calls) per rank, from the counters."""
    if not ctx.has("MPI-IO") or not ctx.records["MPI-IO"].has("MPIIO_F_META_TIME"):
        return None
    return float_sum(ctx.column("MPI-IO", "MPIIO_F_META_TIME")) / ctx.nprocs


# --- RANK_IMBALANCE -------------------------------------------------------------------------------
def _imbalanced_angles(ctx, loads) -> dict:
    """angle -> (max over mean, heaviest rank) for the angles the rule finds imbalanced
    (`rank_imbalance.imbalanced`)."""
    values = {RUN_TIME: ctx.run_time, **rank_imbalance.angle_features(loads)}
    least = rank_imbalance.matters_from(ctx.th)
    judged = one_row(values, {a: e for a, e in rank_imbalance.imbalanced(ctx.th, least).items()})
    return {a: (values[rank_imbalance.P + f"{a}_ratio"], values[rank_imbalance.P + f"{a}_top_ranks"][0])
            for a in ANGLES if judged[a]}


def check_imbalance(ctx) -> list:
    # the rule decides (rules/rank_imbalance.py, shared with the fleet)
    if ctx.nprocs < 2:
        return []
    judged = one_row({**common_features(ctx), **rank_imbalance.features(ctx)}, rank_imbalance.rule(ctx.th),
                     "RANK_IMBALANCE")
    candidates = rank_imbalance.aggregator_candidates(ctx)
    out = [_bottleneck(ctx, c) for c, ok in zip(candidates, judged["aggregators"] or []) if ok]
    if judged["spread"] is None:
        return out
    loads, source, partial = rank_loads(ctx)
    out.append(_spread(ctx, judged, loads, source, partial))
    return out


def _spread(ctx, judged: dict, loads: dict, source: str, partial: bool) -> Insight:
    """The insight of an imbalanced angle (`judged["kind"]`): the heaviest rank against the mean."""
    th = ctx.th
    kind, ratio = judged["kind"], judged["ratio"]
    angles = {a for a in ANGLES if judged[f"found_{a}"]}
    t, b, ops, arr = loads["time"], loads["bytes"], loads["operations"], loads[kind]
    heavy = int(arr.argmax())
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
    title = rank_imbalance.title(judged, th)
    parts = [f"moves {fmt_bytes(b[heavy])} ({float(b[heavy]) / max(float(b.mean()), 1e-300):.1f}× the mean of "
             f"{fmt_bytes(b.mean())})" if b.mean() > 0 else None,
             f"issues {fmt_count(ops[heavy])} I/O operations ({float(ops[heavy]) / float(ops.mean()):.1f}× the mean)"
             if ops.mean() > 0 else None,
             f"spends {fmt_time(t[heavy])} in I/O (mean {fmt_time(t.mean())})",
             f"calls fsync {fmt_count(loads['fsyncs'][heavy])} times (mean {loads['fsyncs'].mean():.1f})"
             if loads["fsyncs"].sum() > 0 else None]
    summary = (f"Rank {heavy} " + ", ".join(x for x in parts if x) + f" over {ctx.nprocs} ranks"
               + (f"; it carries {fmt_pct(share)} of all I/O {kind}." if kind != "time" else "."))
    end = loads["end"]
    if end is not None and np.isfinite(end[heavy]):
        late = float(end[heavy] - np.nanmedian(end))
        metrics["heaviest_rank_end_delay_s"] = late
        if late > 0:
            summary += f" It finishes its I/O {fmt_time(late)} after the median rank."
    summary += _meanwhile(ctx, metrics)
    if source == "counters" and any(ctx.has(m) and (ctx.column(m, "rank") < 0).any() for m, _ in LAYERS):
        summary += (" Files shared by all ranks only record their slowest and fastest rank: the other "
                    "ranks' shares are estimated as even.")
    if judged["spread"] == "info":
        # more bytes or operations, but no more time: rank 0 writing small metadata, or cached I/O
        summary += (f" Its I/O time is within {fmt_pct(SLOWER_RATIO - 1)} of the mean, so the others do not wait "
                    "for it on this run.")
    elif kind != "time" and not ctx.matters(excess_t):
        summary += (f" On this run the others wait at most {fmt_time(max(excess_t, 0.0))} for it, but the "
                    f"imbalance is structural: at scale rank {heavy}'s share of the work stays {ratio:.1f}× the mean.")
    window = None
    files = []
    if not ctx.trace_app.empty:
        mine = ctx.trace_app.take(ctx.trace_app.rank == heavy)
        window = ctx.trace_window(mine)
        files = files_by_bytes(mine)
    recs = [rec.Recommendation(
        "Spread the I/O over all ranks",
        f"Give every rank a similar share of the data to write/read (rank {heavy} does "
        f"{ratio:.1f}× the average), or use collective MPI-IO so the library balances the file-system "
        "requests over its aggregators.",
        "/* each rank writes its own part, all at once */\n"
        "MPI_File_write_at_all(fh, my_offset, my_buf, my_count, MPI_BYTE, MPI_STATUS_IGNORE);", "c")]
    if "fsyncs" in angles:
        recs.append(rec.fewer_fsync())
    return Insight("RANK_IMBALANCE", judged["spread"], title, summary,
                   Evidence(ranks=heavy_ranks, files=ctx.names_of(files), time_window=window, metrics=metrics),
                   recs, source=source, partial=partial, score=ratio)


def _meanwhile(ctx, metrics: dict) -> str:
    """What the other ranks do while they wait: their MPI-IO metadata time (close, collectives)."""
    meta = mpiio_meta_time_per_rank(ctx)
    if not meta:
        return ""
    metrics["mean_rank_mpiio_meta_time_s"] = meta
    return (f" Meanwhile the ranks spend {fmt_time(meta)} each on average in MPI-IO metadata calls (open, close, "
            "sync, set_view): waiting for a late rank inside MPI_File_close or a collective file call shows up "
            "there; waiting in MPI_Barrier or in compute is not recorded by Darshan.")


def _bottleneck(ctx, c: dict) -> Insight:
    """The insight of a collectively accessed shared file whose file-system I/O all goes through (nearly)
    one rank (`rank_imbalance.aggregator_candidates`, one the rule finds)."""
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
        posix = ctx.records["POSIX"]  # the largest offset written or read, as recorded (-1: none)
        extent = int(np.maximum(posix.raw("POSIX_MAX_BYTE_WRITTEN")[rows], posix.raw("POSIX_MAX_BYTE_READ")[rows])
                     .max()) + 1
        count = rec.stripe_count_for(extent if extent > 0 else fb, nranks)  # same rule as LUSTRE_STRIPING
        recs.append(rec.lustre_setstripe(name, count, 1 << 20,
                                         f"A wider stripe lets ROMIO use {count} aggregators in parallel."))
    recs.append(rec.more_aggregators(nodes, stripe_count, nranks))
    return Insight("RANK_IMBALANCE", "warning", title, summary,
                   Evidence(ranks=[top_rank], files=[name], time_window=ctx.counter_window("POSIX", [fid]),
                            metrics=metrics),
                   recs, source="counters" if c["from_counters"] else "dxt", partial=False, score=share * 10)


# --- STRAGGLER ------------------------------------------------------------------------------------
def check_straggler(ctx) -> list:
    """Ranks whose I/O ends long after the median rank's: the rank(s) everyone waits for.

    Late by `max(straggler_min_delay, straggler_min_delay_share × I/O window)` (and a `min_runtime_share` of
    the run), at most a quarter of the ranks, and either still busy with I/O for most of the delay (slow) or
    doing most of their own bytes after the median rank finished (late: started late). A rank that only
    writes one record at the end is neither.
    """
    th = ctx.th
    seg = ctx.trace_app
    if seg.empty:
        return []
    rank_ids, first, last, nbytes = _rank_spans(seg, ctx.rank_groups(seg))
    if len(rank_ids) < 4:
        return []
    t0, t1 = float(first.min()), float(last.max())
    window = t1 - t0
    median_end = float(median(last))  # polars' median: the same bits as before
    median_first = float(median(first))
    need = max(th.straggler_min_delay, th.straggler_min_delay_share * window,
               min(th.min_runtime_share * ctx.run_time, th.min_stake_seconds) if ctx.run_time > 0 else 0.0)
    late = last - median_end >= need
    n_late = int(late.sum())
    if n_late == 0 or n_late > 0.25 * len(rank_ids):
        return []  # most logs: no more work
    # per late rank: its time busy after the median rank's end, and its bytes then
    after = is_in(seg.rank, rank_ids[late]) & (seg.end > median_end)
    ar = seg.rank[after]
    at_first, at = groups(ar)
    busy = np.zeros(len(rank_ids))
    bytes_after = np.zeros(len(rank_ids), dtype=np.int64)
    if len(ar):
        into = np.searchsorted(rank_ids, ar[at_first])
        busy[into] = group_sums(at, seg.end[after] - np.maximum(seg.start[after], median_end), len(at_first))
        per_rank = np.zeros(len(at_first), dtype=np.int64)  # integers: exact in any order
        np.add.at(per_rank, at, seg.length[after])
        bytes_after[into] = per_rank
    delay = last - median_end
    slow = (busy >= th.straggler_min_delay) & (busy >= 0.5 * delay)
    started_late = (nbytes > 0) & (bytes_after >= 0.5 * nbytes)
    keep = np.flatnonzero(late & (slow | started_late))
    if not len(keep):
        return []
    keep = keep[np.argsort(-delay[keep], kind="stable")]  # the latest first (the lowest rank among equals)
    ranks = rank_ids[keep][:MAX_RANKS].tolist()
    worst = float(delay[keep[0]])
    n_ranks, n_stragglers = len(rank_ids), len(keep)
    waiting = n_ranks - n_stragglers
    partial = any(ctx.trace_truncated(m) for m in DXT_MODULES)
    files = files_by_bytes(seg.take(is_in(seg.rank, rank_ids[keep]) & (seg.end > median_end)))
    first_late = float(first[keep].min())
    last_late = float(last[keep].max())
    most_busy = float(busy[keep].max())
    all_slow = bool(slow[keep].all())
    metrics = {"stragglers": n_stragglers, "ranks_with_io": n_ranks, "max_delay_s": worst,
               "median_end_s": median_end, "io_window_s": window, "max_delay_share": worst / window if window else 0,
               "straggler_start_delay_s": first_late - median_first,
               "straggler_busy_s": most_busy, "idle_rank_time_s": worst * waiting}
    title = f"{fmt_ranks(ranks)} finish{'es' if len(ranks) == 1 else ''} I/O up to {fmt_time(worst)} after the others"
    summary = (f"Half of the {n_ranks} ranks with I/O are done by {median_end:.2f} s, but {fmt_ranks(ranks)} "
               f"keep{'s' if len(ranks) == 1 else ''} doing I/O until {last_late:.2f} s "
               f"({fmt_pct(worst / window)} of the I/O window later).")
    if all_slow:
        summary += (" It is" if n_stragglers == 1 else " They are") + \
            " busy with I/O for most of that time: slow, not just late."
    else:
        one = n_stragglers == 1
        summary += (f" {'Its' if one else 'Their'} own I/O is short ({fmt_time(most_busy)} after the "
                    f"others finished): {'it starts' if one else 'they start'} it "
                    f"{fmt_time(max(first_late - median_first, 0.0))} after the median rank — late, not slow "
                    "(compute, a sleep or a wait before the I/O).")
    summary += (f" The other {waiting} ranks wait about {fmt_time(worst)} each ({fmt_time(worst * waiting)} of "
                "rank time).")
    summary += _meanwhile(ctx, metrics)
    if partial:
        summary += " The trace is truncated: ranks whose trace stopped early are not judged."
    recs = [rec.Recommendation(
        "Find out why these ranks are slow" if all_slow else "Find out why these ranks start late",
        "Check whether the late ranks have more data (see RANK_IMBALANCE), share a node or OST with other "
        "heavy I/O (node placement, OST_IMBALANCE), issue smaller requests than the rest, or do more work "
        "before their I/O. Collective I/O evens out the file-system load across ranks; overlapping the "
        "late rank's work with the others' I/O hides the wait.", "", "text")]
    return [Insight("STRAGGLER", "warning", title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(files), time_window=(median_end, last_late),
                             metrics=metrics),
                    recs, source="dxt", partial=partial, score=worst / window if window else 0)]


def _rank_spans(seg: Segments, rank_groups: tuple) -> tuple:
    """Per rank with traced I/O (ascending): its first start, last end and bytes, as numpy arrays, from
    `groups(seg.rank)` (np.unique(seg.rank, return_inverse=True): `Context.rank_groups`)."""
    head, at = rank_groups
    ranks = seg.rank[head]
    first, last = np.full(len(ranks), np.inf), np.full(len(ranks), -np.inf)
    per_group_at(np.minimum, first, at, seg.start)  # once per run of a rank's operations
    per_group_at(np.maximum, last, at, seg.end)
    nbytes = np.zeros(len(ranks), dtype=np.int64)  # integers: summed exactly in any order
    per_group_at(np.add, nbytes, at, seg.length)
    return ranks, first, last, nbytes


def files_by_bytes(seg: Segments) -> list:
    """The file ids of some traced operations, the most bytes first (the lowest id among equals)."""
    first, inv = groups(seg.file_id)
    nbytes = np.zeros(len(first), dtype=np.int64)  # integers: summed exactly in any order
    np.add.at(nbytes, inv, seg.length)
    return seg.file_id[first][np.lexsort((seg.file_id[first], -nbytes))].tolist()


# --- SERIALIZED_IO --------------------------------------------------------------------------------
def busy_intervals(seg: pl.DataFrame, gap: float) -> pl.DataFrame:
    """Per rank, its operations merged into busy intervals (gaps shorter than `gap` bridged)."""
    return busy_runs(seg, "rank", gap)


def check_serialized(ctx) -> list:
    th = ctx.th
    alone = rank_imbalance.serial_alone(ctx)  # shared with RANK_IMBALANCE's rule, which it deduplicates
    if alone is None:
        return []
    seg, rank, secs, first, last, window = (alone[k] for k in ("seg", "rank", "secs", "first", "last", "window"))
    share = secs / window
    if share < th.serialized_min_share or not ctx.matters(secs):
        return []
    ranks, at = np.unique(seg.rank, return_inverse=True)
    ranks_io = len(ranks)
    starts = np.full(len(ranks), np.inf)
    np.minimum.at(starts, at, seg.start)
    later = int(((ranks != rank) & (starts >= first)).sum())  # the other ranks whose I/O starts after
    mine = seg.take((seg.rank == rank) & (seg.start < last) & (seg.end > first))
    mpiio = mine.module == MODULE_CODES["DXT_MPIIO"]
    app = mine.take(mpiio) if mpiio.any() else mine  # the application's layer where it was traced
    nbytes = int(app.length.sum())
    files = files_by_bytes(app)
    kinds = ctx.kinds(files)
    total_bytes = int(ctx.trace_app.length.sum())
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
