"""LUSTRE_STRIPING and OST_IMBALANCE: how the files are laid out over Lustre OSTs."""
from __future__ import annotations

import numpy as np

from . import recommendations as rec
from .insight import Evidence, Insight
from .rules import lustre_striping, one_row, ost_imbalance, slow_ost
from .rules.common import common_features
from .units import fmt_bytes, fmt_time


def check_striping(ctx) -> list:
    # the rule decides (rules/lustre_striping.py, shared with the fleet)
    th = ctx.th
    row = lustre_striping.features(ctx)
    extents = row[lustre_striping.P + "extents"]
    if extents is None or extents[0] < int(th.lustre_large_file_bytes):  # none large: the rule cannot find it
        return []
    judged = one_row({**common_features(ctx), **row}, lustre_striping.rule(th))
    if judged["severity"] is None:
        return []
    c = lustre_striping.candidates(ctx)
    bad = c.take(np.flatnonzero(c.extent >= th.lustre_large_file_bytes))
    fids = bad.file_id.tolist()
    size, writers, name = judged["largest"], judged["ranks"], ctx.name(fids[0])
    request = _dominant_request(ctx, fids[0])
    count = rec.stripe_count_for(size, writers)
    stripe = rec.stripe_size_for(request)
    metrics = {"files": len(fids), "largest_file_bytes": size, "ranks_on_file": writers,
               "stripe_count": int(bad.stripe_count[0]), "stripe_size": int(bad.stripe_size[0]),
               "recommended_stripe_count": count, "recommended_stripe_size": stripe,
               "bytes_on_single_stripe_files": int(bad.bytes.sum())}
    if request:
        metrics["dominant_request_bytes"] = request
    title = lustre_striping.title(judged, th)
    summary = (f"{name} is {fmt_bytes(size)}, accessed by {writers} ranks, but striped over one OST: all its "
               "traffic goes through one storage server, and ROMIO uses one collective-buffering aggregator "
               "per stripe by default.")
    recs = [rec.lustre_setstripe(name, count, stripe,
                                 f"{count} stripes ≈ one OST per 4 GiB of the {fmt_bytes(size)} file (at least 4, "
                                 f"at most 64 and at most the {writers} ranks)"
                                 + (f"; {stripe >> 20} MiB stripes match its {fmt_bytes(request)} requests."
                                    if request and stripe > (1 << 20) else "; 1 MiB stripes (the default)."))]
    if ctx.has("MPI-IO"):
        recs.append(rec.mpi_hints_c({"striping_factor": str(count), "striping_unit": str(stripe)},
                                    "Or set the striping when MPI-IO creates the file",
                                    "ROMIO applies these hints only when it creates the file (delete the old "
                                    "file first)."))
    return [Insight("LUSTRE_STRIPING", judged["severity"], title, summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=ctx.counter_window("POSIX", fids[:1]),
                             metrics=metrics),
                    recs, source="counters", partial=False, score=judged["score"])]


def _dominant_request(ctx, fid):
    """The median traced POSIX request on file `fid`, else its most common request size from the counters."""
    seg = ctx.trace_posix
    mine = seg.file_id == fid
    if mine.any():
        return int(np.median(seg.length[mine]))
    if ctx.has("POSIX") and ctx.records["POSIX"].has("POSIX_ACCESS1_ACCESS"):
        on = ctx.column("POSIX", "file_id") == fid
        if on.any():
            v = int(ctx.column("POSIX", "POSIX_ACCESS1_ACCESS")[on].max())  # clipped at 0: -1 is none too
            return v if v > 0 else None
    return None


def check_ost_imbalance(ctx) -> list:
    # the rule decides (rules/ost_imbalance.py, shared with the fleet), LUSTRE_STRIPING's deduplication included
    th = ctx.th
    row, per_ost, fids, source = ost_imbalance.measure(ctx)
    if row[ost_imbalance.P + "osts"] is None:  # fewer than two OSTs: nothing to judge
        return []
    total, mean, top = (row[ost_imbalance.P + n] for n in ("bytes", "mean_bytes", "max_bytes"))
    if total < th.ost_min_bytes or not mean > 0 or top / mean < th.ost_imbalance_ratio:
        return []  # even enough: the rule cannot find it, no query
    judged = one_row({**common_features(ctx), **row}, ost_imbalance.rule(th))
    if judged["severity"] is None:
        return []
    total, mean, top, heaviest = judged["bytes"], judged["mean_bytes"], judged["max_bytes"], judged["heaviest"]
    heavy_osts = sorted((o for o in per_ost if per_ost[o] >= th.ost_imbalance_ratio * mean),
                        key=lambda o: -per_ost[o])
    metrics = {"osts_used": len(per_ost), "heaviest_ost": heaviest, "heaviest_ost_bytes": top,
               "mean_ost_bytes": mean, "max_over_mean": top / mean, "heaviest_ost_share": top / total,
               "overloaded_osts": len(heavy_osts), "lustre_bytes": total}
    title = ost_imbalance.title(judged, th)
    summary = (f"The job's Lustre traffic is uneven across the {len(per_ost)} OSTs it uses: "
               f"{len(heavy_osts)} OST(s) (" + ", ".join(map(str, heavy_osts[:8])) + ") carry at least "
               f"{th.ost_imbalance_ratio:g}× the mean, so the slowest server sets the pace. "
               f"{len(fids)} file(s) have data on OST {heaviest}.")
    big = int(lustre_striping.layouts(ctx).stripe_count.max())
    recs = [rec.Recommendation(
        "Spread the data over more OSTs",
        "Stripe the large files over several OSTs so their bytes spread evenly, and let Lustre choose the "
        "starting OST (do not pass -i/--stripe-index). For many single-stripe files, keep -c 1 but make sure "
        "files are created by different ranks over time so the allocator can round-robin them.",
        f"lfs setstripe -c {max(4, big)} -S 1M <output-dir>\nlfs df -h <mount>   # check OST fullness: "
        "full OSTs are skipped by the allocator", "shell")]
    return [Insight("OST_IMBALANCE", judged["severity"], title, summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=None, metrics=metrics),
                    recs, source=source, partial=False, score=judged["score"])]


def check_slow_ost(ctx) -> list:
    """SLOW_OST: files on one OST take far longer per byte than the same kind of files on the other OSTs."""
    # the rule decides (rules/slow_ost.py, shared with the fleet)
    th = ctx.th
    rec_ = slow_ost.records(ctx)
    per = slow_ost.per_ost(rec_)
    entries = slow_ost.osts(per)
    if not entries:  # fewer than four OSTs to compare: nothing to judge
        return []
    if not any(e["files"] >= th.slow_ost_min_files and e["ratio"] >= th.slow_ost_ratio for e in entries):
        return []  # no OST passes the rule's thresholds: no query
    judged = one_row({**common_features(ctx), slow_ost.P + "osts": entries or None}, slow_ost.rule(th))
    if judged["severity"] is None:
        return []
    slow_ids = judged["slow_osts"]
    top = judged["top"]
    ost, ratio, med, others = top["ost"], top["ratio"], top["seconds_per_gib"], top["typical_seconds_per_gib"]
    files, tmax, nbytes = top["files"], top["slowest_time"], top["bytes"]
    on = np.flatnonzero(np.isin(rec_.ost, slow_ids))
    on = on[np.argsort(-rec_.t[on], kind="stable")]  # slowest first
    ranks = [r for r in _first_seen(rec_.rank[on]) if r >= 0][:32]
    metrics = {"ost": ost, "slowdown": ratio, "seconds_per_gib": med, "typical_seconds_per_gib": others,
               "files_on_ost": files, "bytes_on_ost": nbytes, "slowest_file_time_s": tmax,
               "slow_osts": len(slow_ids), "osts_compared": per.height}
    title = slow_ost.title(judged, th)
    summary = (f"Comparing single-stripe files of the job, those on OST {ost}"
               + (f" (and {len(slow_ids) - 1} more OST(s): " + ", ".join(str(s) for s in slow_ids[1:6]) + ")"
                  if len(slow_ids) > 1 else "")
               + f" need {ratio:.0f}× the time per byte of files on the other {per.height - 1} OSTs. The ranks "
               f"using them finish up to {fmt_time(tmax)} late: the storage server, not the application, is the "
               "bottleneck.")
    recs = [rec.Recommendation(
        "Report the OST and avoid it for now",
        f"Tell your site's storage administrators that OST {ost} (index {ost}) is slow (possibly failing, "
        "rebuilding or overloaded). Until it is fixed, create files on other OSTs, or stripe them over several "
        "OSTs so one slow server holds up only part of each file.",
        f"lfs df -h <mount>                      # is OST {ost} full or degraded?\n"
        f"lfs setstripe -c 4 -S 1M <output-dir>  # spread each file over several OSTs", "shell")]
    return [Insight("SLOW_OST", judged["severity"], title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(_first_seen(rec_.file_id[on])),
                             time_window=None, metrics=metrics),
                    recs, source="counters", partial=False, score=judged["score"])]


def _first_seen(values: np.ndarray) -> list:
    """The distinct values in the order first met."""
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)].tolist()
