"""EPOCH_REREAD: every epoch reads the same bytes from the file system again (a trace with spans: DFTracer).

Judged per log from the data reads (analysis/loop.py: a worker's reads inside its production spans) and the
epoch each serves (the enclosing span's `epoch`, else the loop's epoch windows): the bytes of each file read
again in a later epoch, at most what the file's earlier epochs read (the distinct bytes: the union of the byte
ranges read, where the offsets are known). A warning when the loop waits for its data in the later epochs (the
re-reads cost it time); info when those reads are hidden behind compute (they cost the file system only).
"""
from __future__ import annotations

import polars as pl

from ...loop import merged
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time, plural
from . import _loop

CODE = "EPOCH_REREAD"
MiB = 1 << 20
THRESHOLDS = (
    Threshold("epoch_reread_share", 0.5, "share",
              "EPOCH_REREAD: at least this share of the bytes the later epochs read was read by an earlier epoch "
              "..."),
    Threshold("epoch_reread_min_bytes", 1 * MiB, "bytes", "... and at least this many bytes are read again."),
)


def report(ctx, _=None) -> list:
    loop = ctx.loop
    if loop is None:
        return []
    reads = loop.epoch_reads.filter(pl.col("epoch").is_not_null())
    if reads.is_empty() or reads["epoch"].n_unique() < 2:
        return []
    first_epoch = int(reads["epoch"].min())
    per = reads.group_by("file_id", "epoch").agg(pl.col("bytes").sum(), (pl.col("end") - pl.col("start")).sum()
                                                 .alias("read_time"), pl.len().alias("reads"))
    distinct = _distinct_bytes(reads)
    per = (per.join(distinct, on="file_id", how="left")
           .with_columns(first=pl.col("epoch").min().over("file_id")))
    later = per.filter(pl.col("epoch") > first_epoch)
    again = later.filter(pl.col("epoch") > pl.col("first")).with_columns(
        reread=pl.min_horizontal("bytes", "distinct"))
    later_bytes = int(later["bytes"].sum() or 0)
    reread = int(again["reread"].sum() or 0)
    share = reread / later_bytes if later_bytes else 0.0
    if share < ctx.th.epoch_reread_share or reread < ctx.th.epoch_reread_min_bytes:
        return []
    epochs = per["epoch"].n_unique()
    per_epoch = per.group_by("epoch").agg(pl.col("bytes").sum()).sort("epoch")
    dataset = int(distinct["distinct"].sum())
    reread_time = float(again.select(pl.col("read_time") * pl.col("reread") / pl.col("bytes").clip(lower_bound=1))
                        .sum().item() or 0.0)
    stall, later_loop = _later_stall(loop, first_epoch)
    stall_share = stall / later_loop if later_loop > 0 else 0.0
    # judged as DATALOADER_STALL judges the loop's waits: their share of the whole loop
    waits = _loop.severity(ctx, stall, stall / loop.summary["loop_time"] if loop.summary["loop_time"] > 0 else 0.0,
                           ctx.th.dataloader_stall_share)
    level = "warning" if waits == "warning" else "info"
    files = again.group_by("file_id").agg(pl.col("reread").sum()).sort(["reread", "file_id"], descending=[True, False])
    mean_epoch = float(per_epoch["bytes"].mean())
    metrics = {"epochs": epochs, "bytes_per_epoch": mean_epoch, "dataset_bytes": dataset, "reread_bytes": reread,
               "reread_share": share, "reread_files": files.height, "reread_read_s": reread_time,
               "later_stall_s": stall, "later_stall_share": stall_share}
    title = (f"Every epoch reads the data again: {fmt_bytes(reread)} re-read over {epochs} epochs "
             f"({fmt_pct(share)} of the later epochs' reads)")
    summary = (f"The job reads {fmt_bytes(mean_epoch)} an epoch over {epochs} epochs, from a data set of "
               f"{fmt_bytes(dataset)} in {plural(distinct.height, 'file')}; {fmt_bytes(reread)} of the "
               f"{fmt_bytes(later_bytes)} read by the epochs after the first ({fmt_pct(share)}) were read before, "
               f"from {plural(files.height, 'file')}, taking the readers {fmt_time(reread_time)}.")
    if level == "warning":
        summary += (f" The training loop waits for its data {fmt_time(stall)} in those epochs "
                    f"({fmt_pct(stall_share)} of their time): reading them from memory or local storage would "
                    "shorten the wait.")
    else:
        summary += (f" The training loop waits {fmt_time(stall)} for its data in those epochs "
                    f"({fmt_pct(stall_share)} of their time): the re-reads are hidden behind compute and cost the "
                    "file system, not this job's time.")
    saved = min(stall, reread_time)
    rec = _loop.with_saving(Recommendation(
        "Keep the data set after the first epoch",
        f"The data set ({fmt_bytes(dataset)}) is read whole every epoch. Cache it after the first epoch: in "
        "memory where it fits (tf.data `dataset.cache()`, a caching Dataset), or copy it once to node-local "
        "storage (local NVMe, /dev/shm) and read it from there; the shared file system then serves it once.",
        "# copy the shards to node-local storage once, read them from there every epoch\n"
        "local = shutil.copytree(data_dir, '/dev/shm/dataset', dirs_exist_ok=True)\n"
        "dataset = ShardDataset(local)", "python"),
        saved, f"the loop's waits in the later epochs ({fmt_time(stall)}), at most the time spent re-reading "
               f"({fmt_time(reread_time)})")
    return [Insight(CODE, level, title, summary,
                    Evidence(ranks=sorted(set(reads["rank"].to_list())), files=ctx.names_of(files["file_id"].to_list()),
                             time_window=(float(reads["start"].min()), float(reads["end"].max())), metrics=metrics),
                    [rec], source="spans", partial=bool(ctx.log.job.get("partial")), score=share,
                    demotable=False)]


def _distinct_bytes(reads: pl.DataFrame) -> pl.DataFrame:
    """file_id, distinct: the bytes of each file read at least once (the union of the byte ranges read; where an
    offset is not known, the most one epoch read of it)."""
    known = reads.filter(pl.col("offset").is_not_null())
    unknown = reads.filter(pl.col("offset").is_null())["file_id"].unique()
    ranges = known.select(pl.col("file_id").alias("rank"), pl.col("offset").cast(pl.Float64).alias("start"),
                          (pl.col("offset") + pl.col("bytes")).cast(pl.Float64).alias("end"))
    union = (merged(ranges).group_by("rank").agg((pl.col("end") - pl.col("start")).sum().cast(pl.Int64)
                                                        .alias("distinct"))
             .rename({"rank": "file_id"}))
    most = (reads.filter(pl.col("file_id").is_in(unknown.implode()))
            .group_by("file_id", "epoch").agg(pl.col("bytes").sum())
            .group_by("file_id").agg(pl.col("bytes").max().alias("distinct")))
    return pl.concat([union.filter(~pl.col("file_id").is_in(unknown.implode())), most])


def _later_stall(loop, first_epoch: int) -> tuple:
    """(the loop's waits after its first batch in the epochs after the first, those epochs' time)."""
    waits = loop.waits.filter((pl.col("epoch") > first_epoch) & (pl.col("kind") != "startup"))
    epochs = loop.epochs.filter(pl.col("epoch") > first_epoch)
    return float(waits["time"].sum() or 0.0), float((epochs["end"] - epochs["start"]).sum() or 0.0)


FINDING = Finding(
    code=CODE,
    meaning="Every epoch reads the same data from the file system again (a trace with spans, DFTracer).",
    key_metrics=("reread_bytes",),
    thresholds=THRESHOLDS,
    reads=("dataloader_stall_share",),
    trigger="(spans) over two epochs or more, at least `epoch_reread_share` of the bytes the later epochs read (and "
            "at least `epoch_reread_min_bytes`) were read by an earlier one; a warning when the loop waits for "
            "its data in the later epochs (as DATALOADER_STALL judges a wait), else info.",
    source="spans",
    report=report,
    saving=_loop.SAVING,
)
