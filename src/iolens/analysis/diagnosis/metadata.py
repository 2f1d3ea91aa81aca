"""METADATA_HEAVY: opens, stats and seeks take a large share of the I/O time, or many files are tiny."""
from __future__ import annotations

import numpy as np
import polars as pl

from . import recommendations as rec
from .context import MAX_RANKS, clip
from .insight import Evidence, Insight
from .rules import metadata_heavy, one_row
from .rules.common import common_features
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_time


def _cannot_find(row, th) -> bool:
    """The time part is below its share or does not matter (`matters`), and too few tiny files: the rule
    cannot find it, so no query is run."""
    meta, data, tiny = (row["metadata_heavy_" + n] for n in ("meta_time", "data_time", "tiny_files"))
    worst = row["metadata_heavy_max_rank_meta_time"]
    small = meta / (meta + data) < th.metadata_min_share or worst < th.min_stake_floor
    return small and (tiny is None or tiny < th.tiny_files_min)


def check(ctx) -> list:
    # the rule decides (rules/metadata_heavy.py, shared with the fleet)
    th = ctx.th
    row, per_rank = metadata_heavy.measure(ctx)
    meta, data = row["metadata_heavy_meta_time"], row["metadata_heavy_data_time"]
    if meta + data <= 0:  # no POSIX/STDIO time to judge
        return []
    if _cannot_find(row, th):
        return []
    judged = one_row({**common_features(ctx), **row}, metadata_heavy.rule(th))
    if judged["severity"] is None:
        return []
    counts = {"opens": 0, "stats": 0, "seeks": 0}
    files_meta = []
    for module, p in (("POSIX", "POSIX"), ("STDIO", "STDIO")):
        df = ctx.counters(module)
        if df is None:
            continue
        counts["opens"] += ctx.total(module, f"{p}_OPENS")
        counts["seeks"] += ctx.total(module, f"{p}_SEEKS")
        if module == "POSIX":
            counts["stats"] += ctx.total(module, "POSIX_STATS")
        files_meta.append(df.select("file_id", pl.Series("_m", ctx.column(module, f"{p}_F_META_TIME"))))
    out = []
    share = judged["share"]
    worst_rank = int(per_rank.argmax())
    worst = float(per_rank[worst_rank])
    if judged["by_time"]:
        fm = (pl.concat([f.group_by("file_id").agg(pl.col("_m").sum()) for f in files_meta])
              .group_by("file_id").agg(pl.col("_m").sum()).sort(["_m", "file_id"], descending=[True, False]))
        order = np.argsort(-per_rank, kind="stable")
        ranks = [int(r) for r in order[:MAX_RANKS] if per_rank[r] >= 0.5 * worst and per_rank[r] > 0]
        metrics = {"metadata_time_s": meta, "data_time_s": data, "metadata_time_share": share,
                   "max_rank_metadata_time_s": worst, "max_rank_metadata_runtime_share":
                   worst / ctx.run_time if ctx.run_time else 0, **counts}
        title = metadata_heavy.title(judged, th)
        severity = judged["severity"]
        summary = (f"Opens, closes, stats, seeks and syncs take {fmt_time(meta)} summed over ranks against "
                   f"{fmt_time(data)} of reads and writes ({fmt_count(counts['opens'])} opens, "
                   f"{fmt_count(counts['stats'])} stats, {fmt_count(counts['seeks'])} seeks); rank {worst_rank} "
                   f"alone spends {fmt_time(worst)}"
                   + (f" ({fmt_pct(worst / ctx.run_time)} of the run)." if ctx.run_time else "."))
        if severity == "info":
            # a serial rank cannot spend longer than the run in open/stat/seek: its threads overlap, or the
            # opens block (named pipes, sockets, locks) - not a file-system metadata cost
            summary += (" That is more than the run time itself: the rank's threads overlap or the opens block "
                        "waiting (named pipes/FIFOs, sockets, lock files), so this is not file-system metadata "
                        "cost; look at what these files are.")
        out.append(Insight("METADATA_HEAVY", severity, title, summary,
                           Evidence(ranks=ranks, files=ctx.names_of(fm["file_id"].to_list()), time_window=None,
                                    metrics=metrics),
                           rec.metadata_fixes(False), source="counters", partial=False, score=judged["score"]))
    if judged["by_tiny_files"]:  # many tiny files
        f = ctx.counters("POSIX").group_by("file_id").agg(
            (pl.max_horizontal(pl.col("POSIX_MAX_BYTE_WRITTEN"), pl.col("POSIX_MAX_BYTE_READ")).max() + 1)
            .clip(lower_bound=0).alias("extent"),
            (clip("POSIX_BYTES_READ") + clip("POSIX_BYTES_WRITTEN")).sum().alias("bytes"))
        f = f.filter(pl.col("bytes") > 0)
        tiny = f.filter(pl.col("extent") <= th.tiny_file_bytes)
        metrics = {"tiny_files": tiny.height, "files_with_data": f.height,
                   "tiny_file_share": tiny.height / f.height, "tiny_file_bytes": int(tiny["bytes"].sum()),
                   "tiny_file_limit_bytes": int(th.tiny_file_bytes)}
        if out:
            out[0].evidence.metrics.update(metrics)
            out[0].summary += (f" Also, {fmt_count(tiny.height)} of the {fmt_count(f.height)} files with data "
                               f"are at most {fmt_bytes(th.tiny_file_bytes)}.")
            out[0].recommendations = rec.metadata_fixes(True)
        else:
            out.append(Insight(
                "METADATA_HEAVY", judged["severity"], metadata_heavy.title(judged, th),
                f"The job reads or writes {fmt_count(tiny.height)} files of at most "
                f"{fmt_bytes(th.tiny_file_bytes)} ({fmt_bytes(tiny['bytes'].sum())} in all): every one costs "
                "metadata-server operations (create/open/close) that dwarf the data moved.",
                Evidence(ranks=[], files=ctx.names_of(tiny["file_id"].to_list()), time_window=None,
                         metrics=metrics),
                rec.metadata_fixes(True), source="counters", partial=False, score=judged["score"]))
    return out
