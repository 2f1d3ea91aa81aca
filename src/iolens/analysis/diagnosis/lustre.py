"""LUSTRE_STRIPING and OST_IMBALANCE: how the files are laid out over Lustre OSTs."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import polars as pl

from . import recommendations as rec
from .context import clip
from .insight import Evidence, Insight
from .units import fmt_bytes, fmt_time


def _layouts(ctx) -> pl.DataFrame:
    return ctx.memo("lustre_layouts", lambda: _layouts_of(ctx))


def _layouts_of(ctx) -> pl.DataFrame:
    lus = ctx.log.lustre
    if lus.is_empty():
        return lus
    return (lus.filter(pl.col("stripe_size") > 0).sort(["file_id", "component"])
            .unique(["file_id"], keep="first", maintain_order=True))


def _file_sizes(ctx) -> pl.DataFrame:
    """file_id -> extent (highest byte + 1), bytes moved, ranks, from the POSIX counters."""
    return ctx.memo("posix_file_sizes", lambda: _file_sizes_of(ctx))


def _file_sizes_of(ctx) -> pl.DataFrame:
    p = ctx.counters("POSIX")
    if p is None:
        return pl.DataFrame(schema={"file_id": pl.UInt64, "extent": pl.Int64, "bytes": pl.Int64, "nranks": pl.Int64})
    return p.group_by("file_id").agg(
        (pl.max_horizontal(pl.col("POSIX_MAX_BYTE_WRITTEN"), pl.col("POSIX_MAX_BYTE_READ")).max() + 1)
        .clip(lower_bound=0).alias("extent"),
        (clip("POSIX_BYTES_READ") + clip("POSIX_BYTES_WRITTEN")).sum().alias("bytes"),
    ).join(ctx.ranks_on_file("POSIX"), on="file_id", how="left")


def _any_file_reaches(ctx, size) -> bool:
    """Does the POSIX extent (highest byte + 1, as `_file_sizes`) of any file reach `size`? In integers,
    without the per-file table: most logs have no file that large."""
    if ctx.counters("POSIX") is None:
        return False
    top = max(ctx.per_file_max("POSIX", "POSIX_MAX_BYTE_WRITTEN").max(initial=-1),
              ctx.per_file_max("POSIX", "POSIX_MAX_BYTE_READ").max(initial=-1))
    return top + 1 >= size


def check_striping(ctx) -> list:
    th = ctx.th
    lay = _layouts(ctx)
    if lay.is_empty() or not _any_file_reaches(ctx, th.lustre_large_file_bytes):
        return []
    j = lay.join(_file_sizes(ctx), on="file_id", how="inner")
    mpi_ranks = ctx.ranks_on_file("MPI-IO").rename({"nranks": "mpi_nranks"})
    j = j.join(mpi_ranks, on="file_id", how="left").with_columns(
        pl.max_horizontal(pl.col("nranks").fill_null(0), pl.col("mpi_nranks").fill_null(0)).alias("nranks"))
    if not ctx.seg.is_empty():
        dxt_ranks = ctx.seg.group_by("file_id").agg(pl.col("rank").n_unique().cast(pl.Int64).alias("dxt_ranks"))
        j = j.join(dxt_ranks, on="file_id", how="left").with_columns(
            pl.max_horizontal("nranks", pl.col("dxt_ranks").fill_null(0)).alias("nranks"))
    bad = j.filter((pl.col("extent") >= th.lustre_large_file_bytes) & (pl.col("nranks") >= 2)
                   & (pl.col("stripe_count") <= 1)).sort("extent", descending=True)
    if bad.is_empty():
        return []
    top = bad.row(0, named=True)
    fids = bad["file_id"].to_list()
    size, writers, name = int(top["extent"]), int(top["nranks"]), ctx.name(top["file_id"])
    request = _dominant_request(ctx, top["file_id"])
    count = rec.stripe_count_for(size, writers)
    stripe = rec.stripe_size_for(request)
    metrics = {"files": len(fids), "largest_file_bytes": size, "ranks_on_file": writers,
               "stripe_count": int(top["stripe_count"]), "stripe_size": int(top["stripe_size"]),
               "recommended_stripe_count": count, "recommended_stripe_size": stripe,
               "bytes_on_single_stripe_files": int(bad["bytes"].sum())}
    if request:
        metrics["dominant_request_bytes"] = request
    title = (f"{len(fids)} large shared file(s) on a single Lustre stripe (largest {fmt_bytes(size)}, "
             f"{writers} ranks)")
    summary = (f"{name} is {fmt_bytes(size)}, accessed by {writers} ranks, but striped over one OST: all its "
               "traffic goes through one storage server, and ROMIO uses one collective-buffering aggregator "
               "per stripe by default.")
    recs = [rec.lustre_setstripe(name, count, stripe,
                                 f"{count} stripes ≈ one OST per 4 GiB of the {fmt_bytes(size)} file (at least 4, "
                                 f"at most 64 and at most the {writers} ranks)"
                                 + (f"; {stripe >> 20} MiB stripes match its {fmt_bytes(request)} requests."
                                    if request and stripe > (1 << 20) else "; 1 MiB stripes (the default)."))]
    if ctx.counters("MPI-IO") is not None:
        recs.append(rec.mpi_hints_c({"striping_factor": str(count), "striping_unit": str(stripe)},
                                    "Or set the striping when MPI-IO creates the file",
                                    "ROMIO applies these hints only when it creates the file (delete the old "
                                    "file first)."))
    return [Insight("LUSTRE_STRIPING", "warning", title, summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=ctx.counter_window("POSIX", fids[:1]),
                             metrics=metrics),
                    recs, source="counters", partial=False, score=size / (1 << 30))]


def _dominant_request(ctx, fid):
    seg = ctx.seg_posix
    if not seg.is_empty():
        s = seg.filter(pl.col("file_id") == fid)
        if s.height:
            return int(s["length"].median())
    p = ctx.counters("POSIX")
    if p is not None and "POSIX_ACCESS1_ACCESS" in p.columns:
        r = p.filter(pl.col("file_id") == fid)
        if r.height:
            v = int(r["POSIX_ACCESS1_ACCESS"].max())
            return v if v > 0 else None
    return None


def check_ost_imbalance(ctx) -> list:
    th = ctx.th
    lay = _layouts(ctx)
    if lay.is_empty():
        return []
    per_ost = defaultdict(float)
    files_on = defaultdict(list)
    source = "counters"
    seg = ctx.seg_posix
    if not seg.is_empty() and "osts" in seg.columns and ctx.trace_complete("DXT_POSIX"):
        s = seg.filter(pl.col("osts").is_not_null() & (pl.col("osts").list.len() > 0))
        if s.height:
            source = "dxt"
            e = (s.select("file_id", "osts", (pl.col("length") / pl.col("osts").list.len()).alias("b"))
                 .explode("osts").group_by(["osts", "file_id"]).agg(pl.col("b").sum()))
            for ost, fid, b in e.iter_rows():
                per_ost[int(ost)] += b
                files_on[int(ost)].append((b, fid))
    if source == "counters" and ctx.total("POSIX", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN") < 0.99 * th.ost_min_bytes:
        return []  # the OSTs' bytes below add up to the files' bytes: the total cannot reach ost_min_bytes
    if source == "counters":
        j = lay.join(_file_sizes(ctx), on="file_id", how="inner").filter(pl.col("bytes") > 0)
        for fid, size, count, osts, extent, nbytes in j.select(
                "file_id", "stripe_size", "stripe_count", "osts", "extent", "bytes").iter_rows():
            osts = list(osts or [])
            if not osts:
                continue
            stripes = max(1, -(-max(int(extent), 1) // int(size)))
            c = len(osts)
            share = np.full(c, stripes // c, dtype=float)
            share[: stripes % c] += 1
            share /= share.sum()
            for ost, f in zip(osts, share):
                if f > 0:
                    per_ost[int(ost)] += nbytes * f
                    files_on[int(ost)].append((nbytes * f, fid))
    if len(per_ost) < 2:
        return []
    vals = np.array(list(per_ost.values()))
    total, mean, top = vals.sum(), vals.mean(), vals.max()
    if total < th.ost_min_bytes or mean <= 0 or top / mean < th.ost_imbalance_ratio:
        return []
    heaviest = max(per_ost, key=per_ost.get)
    heavy_osts = sorted((o for o in per_ost if per_ost[o] >= th.ost_imbalance_ratio * mean),
                        key=lambda o: -per_ost[o])
    fids = [f for _, f in sorted(files_on[heaviest], key=lambda x: -x[0])]
    metrics = {"osts_used": len(per_ost), "heaviest_ost": heaviest, "heaviest_ost_bytes": top,
               "mean_ost_bytes": mean, "max_over_mean": top / mean, "heaviest_ost_share": top / total,
               "overloaded_osts": len(heavy_osts), "lustre_bytes": total}
    title = (f"OST {heaviest} moves {top / mean:.1f}× the mean OST's bytes ({fmt_bytes(top)} of "
             f"{fmt_bytes(total)} over {len(per_ost)} OSTs)")
    summary = (f"The job's Lustre traffic is uneven across the {len(per_ost)} OSTs it uses: "
               f"{len(heavy_osts)} OST(s) (" + ", ".join(map(str, heavy_osts[:8])) + ") carry at least "
               f"{th.ost_imbalance_ratio:g}× the mean, so the slowest server sets the pace. "
               f"{len(fids)} file(s) have data on OST {heaviest}.")
    big = max((int(x) for x in (lay["stripe_count"].max(),)), default=1)
    recs = [rec.Recommendation(
        "Spread the data over more OSTs",
        "Stripe the large files over several OSTs so their bytes spread evenly, and let Lustre choose the "
        "starting OST (do not pass -i/--stripe-index). For many single-stripe files, keep -c 1 but make sure "
        "files are created by different ranks over time so the allocator can round-robin them.",
        f"lfs setstripe -c {max(4, big)} -S 1M <output-dir>\nlfs df -h <mount>   # check OST fullness: "
        "full OSTs are skipped by the allocator", "shell")]
    return [Insight("OST_IMBALANCE", "warning", title, summary,
                    Evidence(ranks=[], files=ctx.names_of(fids), time_window=None, metrics=metrics),
                    recs, source=source, partial=False, score=top / mean)]


def check_slow_ost(ctx) -> list:
    """SLOW_OST: files on one OST take far longer per byte than the same kind of files on the other OSTs."""
    th = ctx.th
    lay = _layouts(ctx)
    p = ctx.counters("POSIX")
    if lay.is_empty() or p is None:
        return []
    # at least 4 OSTs each with a record of >= 1 MiB taking time: count such records first (same arithmetic)
    b = ctx.column("POSIX", "POSIX_BYTES_READ") + ctx.column("POSIX", "POSIX_BYTES_WRITTEN")
    t = ctx.column("POSIX", "POSIX_F_READ_TIME") + ctx.column("POSIX", "POSIX_F_WRITE_TIME")
    if int(((b >= (1 << 20)) & (t > 0)).sum()) < 4:
        return []
    single = lay.filter(pl.col("stripe_count") == 1).select("file_id", pl.col("osts").list.first().alias("ost"))
    rec_ = (p.with_columns((clip("POSIX_BYTES_READ") + clip("POSIX_BYTES_WRITTEN")).alias("b"),
                           (clip("POSIX_F_READ_TIME") + clip("POSIX_F_WRITE_TIME")).alias("t"))
            .select("file_id", "rank", "b", "t").join(single, on="file_id", how="inner")
            .filter((pl.col("b") >= (1 << 20)) & (pl.col("t") > 0) & pl.col("ost").is_not_null())
            .with_columns((pl.col("t") / (pl.col("b") / (1 << 30))).alias("s_per_gib")))
    if rec_.is_empty():
        return []
    per = rec_.group_by("ost").agg(pl.col("s_per_gib").median().alias("med"), pl.len().alias("files"),
                                   pl.col("t").max().alias("tmax"), pl.col("b").sum().alias("bytes"))
    if per.height < 4:
        return []
    slow = []
    for ost, med, files, tmax, nbytes in per.iter_rows():
        others = per.filter(pl.col("ost") != ost)["med"].median()
        if others and files >= th.slow_ost_min_files and med / others >= th.slow_ost_ratio:
            slow.append((ost, med / others, med, others, files, tmax, nbytes))
    if not slow:
        return []
    slow.sort(key=lambda x: -x[1])
    ost, ratio, med, others, files, tmax, nbytes = slow[0]
    if not ctx.matters(tmax):
        return []
    slow_ids = [s[0] for s in slow]
    on = rec_.filter(pl.col("ost").is_in(slow_ids)).sort("t", descending=True)
    ranks = [r for r in on["rank"].unique(maintain_order=True).to_list() if r >= 0][:32]
    metrics = {"ost": ost, "slowdown": ratio, "seconds_per_gib": med, "typical_seconds_per_gib": others,
               "files_on_ost": files, "bytes_on_ost": nbytes, "slowest_file_time_s": tmax,
               "slow_osts": len(slow), "osts_compared": per.height}
    title = (f"OST {ost} is {ratio:.0f}× slower than the others: its {files} single-stripe files take "
             f"{med:.0f} s/GiB against {others:.1f} s/GiB elsewhere")
    summary = (f"Comparing single-stripe files of the job, those on OST {ost}"
               + (f" (and {len(slow) - 1} more OST(s): " + ", ".join(str(s[0]) for s in slow[1:6]) + ")"
                  if len(slow) > 1 else "")
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
    return [Insight("SLOW_OST", "warning", title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(on["file_id"].unique(maintain_order=True).to_list()),
                             time_window=None, metrics=metrics),
                    recs, source="counters", partial=False, score=ratio)]
