"""STRAGGLER: a few ranks finish their I/O much later than the rest (DXT).

Judged per log from the trace: ranks whose I/O ends long after the median rank's, and which are either still
busy with I/O for most of the delay (slow) or do most of their own bytes after the median rank finished (late:
started late).
"""
from __future__ import annotations

import numpy as np

from ...segments import Segments, group_sums, groups, is_in, median, per_group_at
from ....model.darshan import DXT_MODULES
from ..context import MAX_RANKS
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..savings import upper_bound
from ..units import fmt_pct, fmt_time
from ._ranks import files_by_bytes, meanwhile

CODE = "STRAGGLER"
THRESHOLDS = (
    Threshold("straggler_min_delay", 0.05, "seconds",
              "STRAGGLER: a rank's I/O ends at least this long after the median rank's (only against timer "
              "jitter: the share below decides) ..."),
    Threshold("straggler_min_delay_share", 0.33, "share", "... and at least this share of the I/O window."),
)


def report(ctx, _=None) -> list:
    """Ranks whose I/O ends long after the median rank's: the rank(s) everyone waits for. Only peers are
    compared (`Context.peers`): one program's ranks, else the processes of one role (a loader's workers), of
    which the others are not said to wait.

    Late by `max(straggler_min_delay, straggler_min_delay_share × I/O window)` (and a `min_runtime_share` of
    the run), at most a quarter of the ranks, and either still busy with I/O for most of the delay (slow) or
    doing most of their own bytes after the median rank finished (late: started late). A rank that only
    writes one record at the end is neither.
    """
    seg = ctx.trace_app
    if seg.empty:
        return []
    if ctx.peers is None:  # one program's ranks: all compared
        return _judge(ctx, seg, ctx.rank_groups(seg), None)
    out = []
    for peers in ctx.peers:  # a loader's workers against each other, never main against them
        if len(peers) < MIN_RANKS:
            continue
        mine = seg.take(is_in(seg.rank, peers.ranks))
        if not mine.empty:
            out += _judge(ctx, mine, groups(mine.rank), peers)
    return out


MIN_RANKS = 4  # ranks (or processes of one role) with I/O to compare


def _judge(ctx, seg: Segments, rank_groups: tuple, peers) -> list:
    """The insight of the ranks of `seg` (all of one log's, or those of one `Peers`) ending long after the
    median one, or none."""
    th = ctx.th
    rank_ids, first, last, nbytes = _rank_spans(seg, rank_groups)
    if len(rank_ids) < MIN_RANKS:
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
    waits = peers is None or peers.synchronised  # MPI ranks wait for a late one; a loader's workers need not
    metrics = {"stragglers": n_stragglers, "ranks_with_io": n_ranks, "max_delay_s": worst,
               "median_end_s": median_end, "io_window_s": window, "max_delay_share": worst / window if window else 0,
               "straggler_start_delay_s": first_late - median_first,
               "straggler_busy_s": most_busy}
    if waits:
        metrics["idle_rank_time_s"] = worst * waiting
    if peers is not None:
        metrics["peers"] = len(peers)  # the processes compared (its role: the title's noun)
    noun = "ranks" if peers is None else ctx.peers_noun(ranks[0])
    who = ctx.rank_labels(ranks)
    title = (f"{who[:1].upper()}{who[1:]} finish{'es' if len(ranks) == 1 else ''} I/O up to {fmt_time(worst)} "
             + ("after the others" if peers is None else f"after the other {noun}"))
    summary = (f"Half of the {n_ranks} {noun} with I/O are done by {median_end:.2f} s, but {ctx.rank_labels(ranks)} "
               f"keep{'s' if len(ranks) == 1 else ''} doing I/O until {last_late:.2f} s "
               f"({fmt_pct(worst / window)} of the I/O window later).")
    if all_slow:
        summary += (" It is" if n_stragglers == 1 else " They are") + \
            " busy with I/O for most of that time: slow, not just late."
    else:
        one = n_stragglers == 1
        summary += (f" {'Its' if one else 'Their'} own I/O is short ({fmt_time(most_busy)} after the "
                    f"others finished): {'it starts' if one else 'they start'} it "
                    f"{fmt_time(max(first_late - median_first, 0.0))} after the median "
                    f"{'rank' if peers is None else 'one'} — late, not slow (compute, a sleep or a wait before the "
                    "I/O).")
    if waits:
        summary += (f" The other {waiting} {noun} wait about {fmt_time(worst)} each ({fmt_time(worst * waiting)} of "
                    "rank time).")
        summary += meanwhile(ctx, metrics)
    else:  # not MPI ranks of one program: nothing says the others wait for it
        summary += (f" The other {waiting} {noun} are done up to {fmt_time(worst)} earlier. They are not "
                    "synchronised with it: whether it delays the job shows in the program's time without data "
                    "(DATALOADER_STALL), not here.")
    if partial:
        summary += " The trace is truncated: ranks whose trace stopped early are not judged."
    recs = [_advice(ctx, all_slow, who, n_stragglers == 1)] if waits else [_unsynchronised_advice(noun, all_slow)]
    return [Insight(CODE, "warning", title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(files), time_window=(median_end, last_late),
                             metrics=metrics),
                    recs, source="dxt", partial=partial, score=worst / window if window else 0)]


def _unsynchronised_advice(noun: str, all_slow: bool) -> Recommendation:
    """Processes of one role that do not wait for each other (a loader's workers): even out their work."""
    return Recommendation(
        f"Find out why these {noun} are slow" if all_slow else f"Find out why these {noun} start late",
        "Check whether they read more or larger files than the others (see RANK_IMBALANCE), issue smaller "
        "requests, or do more work between their reads; dealing the files out by size (or letting idle "
        "processes take the next file) evens out the processes' I/O.", "", "text")


def _advice(ctx, all_slow: bool, who: str, one: bool) -> Recommendation:
    """Slow ranks: what makes their I/O long; late ones (their own I/O short): what they do before it."""
    if not all_slow:
        return Recommendation(
            f"Find out why {who} start{'s' if one else ''} late",
            f"{'Its' if one else 'Their'} own I/O is short: the delay comes before it. Look at what "
            f"{'it does' if one else 'they do'} before {'its' if one else 'their'} first I/O (more compute than "
            "the others, a sleep, a wait for a message, a lock or input) and even out that work, or let the other "
            "ranks go on without waiting for the late one where the program allows it.", "", "text")
    return Recommendation(
        "Find out why these ranks are slow",
        "Check whether the late ranks have more data (see RANK_IMBALANCE), share a node or OST with other "
        "heavy I/O (node placement, OST_IMBALANCE), issue smaller requests than the rest, or do more work "
        "before their I/O. " + ("Collective I/O evens out the file-system load across ranks; overlapping the "
                                "late rank's work with the others' I/O hides the wait." if ctx.has_layer("mpiio")
                                else "Overlapping the late rank's work with the others' I/O hides the wait."),
        "", "text")


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


FINDING = Finding(
    code=CODE,
    meaning="A few ranks finish their I/O much later than the rest.",
    key_metrics=("max_delay_s",),
    thresholds=THRESHOLDS,
    trigger="(DXT) at most a quarter of the ranks end their I/O at least `max(straggler_min_delay, "
            "straggler_min_delay_share × I/O window, min_runtime_share × run)` after the median rank, and either "
            "are busy with I/O for most of that delay (*slow*) or do at least half of their own bytes after the "
            "median rank finished (*late*: they start late; a rank writing one record at the end is neither). "
            "Names them, the delay, whether late or slow, and the rank time the others wait. Only peers are "
            "compared: one program's ranks, else the processes of one role of a step (a loader's workers; "
            "at least 4 with I/O), of which the others are not said to wait.",
    source="dxt",
    report=report,
    saving=upper_bound("max_delay_s"),
)
