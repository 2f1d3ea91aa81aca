"""CHECKPOINT_STALL: checkpoints block the training loop (a trace with spans: DFTracer).

Judged per log from the loop's `checkpoint` spans (capture: analysis/loop.py) and the calls inside them: the share
of the loop's time spent checkpointing, the cost and bandwidth of one checkpoint, its writes and fsyncs. Each
recommendation carries the seconds of the loop it would save on this run, from the calls inside the checkpoints.
"""
from __future__ import annotations

import polars as pl

from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time, plural
from . import _loop

CODE = "CHECKPOINT_STALL"
THRESHOLDS = (
    Threshold("checkpoint_stall_share", 0.1, "share",
              "CHECKPOINT_STALL: the training loop spends at least this share of its time in checkpoints (and the "
              "seconds matter for the run, or the share is `strong_share`: else info)."),
)
SYNC_FUNCS = ("fsync", "fdatasync", "fsync64")


def report(ctx, _=None) -> list:
    loop = ctx.loop
    if loop is None:
        return []
    s = loop.summary
    ckpt = loop.checkpoints
    if s["loop_time"] <= 0 or ckpt.is_empty():
        return []
    total = float(ckpt["time"].sum())
    share = total / s["loop_time"]
    level = _loop.severity(ctx, total, share, ctx.th.checkpoint_stall_share)
    if level is None:
        return []
    n = ckpt.height
    nbytes, writes, syncs = int(ckpt["bytes"].sum()), int(ckpt["writes"].sum()), int(ckpt["fsyncs"].sum())
    write_time, sync_time = float(ckpt["write_time"].sum()), float(ckpt["fsync_time"].sum())
    io_time = float(ckpt["io_time"].sum())
    worst = ckpt.sort("time", descending=True).row(0, named=True)
    bandwidth = nbytes / total if total > 0 else 0.0
    metrics = {"checkpoint_time_s": total, "checkpoint_share": share, "checkpoints": n,
               "per_checkpoint_s": total / n, "max_checkpoint_s": worst["time"], "checkpoint_bytes": nbytes,
               "bytes_per_checkpoint": nbytes / n, "write_calls": writes, "fsyncs": syncs,
               "write_time_s": write_time, "fsync_time_s": sync_time, "checkpoint_io_s": io_time,
               "checkpoint_bytes_per_s": bandwidth, "loop_time_s": s["loop_time"]}
    if writes:
        metrics["mean_write_bytes"] = nbytes / writes
    who = _loop.loop_who(ctx, loop)
    title = (f"Checkpoints stop the training loop {fmt_pct(share)} of its time ({plural(n, 'checkpoint')}, "
             f"{fmt_time(total / n)} each)")
    summary = (f"The training loop ({who}) spends {fmt_time(total)} of its {fmt_time(s['loop_time'])} "
               f"({fmt_pct(share)}) in {plural(n, 'checkpoint')}: {fmt_time(total / n)} each on average, the longest "
               f"{fmt_time(worst['time'])}")
    if worst["step"] is not None:
        summary += f" (step {worst['step']})"
    unsized = int(ckpt["unsized"].sum())
    if unsized and not writes:  # calls without their arguments (DFTracer without metadata): no bytes to say
        metrics["write_calls_unsized"] = unsized
        summary += (f". Each makes {plural(unsized / n, 'write call', shown=f'{unsized / n:.3g}')}, whose sizes "
                    "the trace does not hold, and "
                    f"{plural(syncs / n, 'fsync', shown=f'{syncs / n:.3g}')}")
    else:
        summary += (f". Each writes {fmt_bytes(nbytes / n)} in "
                    f"{plural(writes / n, 'write call', shown=f'{writes / n:.3g}')}"
                    + (f" of {fmt_bytes(nbytes / writes)}" if writes else "")
                    + f" and {plural(syncs / n, 'fsync', shown=f'{syncs / n:.3g}')}: {fmt_bytes(bandwidth)}/s over the checkpoint's time")
    summary += (". Writing takes "
                f"{fmt_time(write_time)} ({fmt_pct(write_time / total)}), fsync {fmt_time(sync_time)} "
                f"({fmt_pct(sync_time / total)}); the rest, {fmt_time(max(total - io_time, 0.0))}, is the "
                "program's own work (serialising the state).")
    files = _ckpt_writes(loop, ckpt)["file_id"].unique(maintain_order=True).to_list()
    return [Insight(CODE, level, title, summary,
                    Evidence(ranks=list(loop.ranks), files=ctx.names_of(files),
                             time_window=(float(ckpt["start"].min()), float(ckpt["end"].max())), metrics=metrics),
                    _recommendations(ctx, loop, ckpt, metrics), source="spans",
                    partial=bool(ctx.log.job.get("partial")), score=share, demotable=False)]


def _recommendations(ctx, loop, ckpt: pl.DataFrame, m: dict) -> list:
    n, total, io_time = m["checkpoints"], m["checkpoint_time_s"], m["checkpoint_io_s"]
    nbytes, writes, syncs, sync_time = m["checkpoint_bytes"], m["write_calls"], m["fsyncs"], m["fsync_time_s"]
    recs = [_loop.with_saving(Recommendation(
        "Checkpoint asynchronously",
        "Copy the state to host memory in the loop and write it from a background thread or process while "
        "training goes on (the loop then only pays the copy). PyTorch: `torch.distributed.checkpoint.async_save`; "
        "Lightning: `AsyncCheckpointIO`; DeepSpeed / Megatron: their asynchronous checkpoint engines.",
        "import torch.distributed.checkpoint as dcp\n"
        "future = dcp.async_save(model.state_dict(), checkpoint_id=path)   # returns at once\n"
        "# ... keep training; before the next checkpoint: future.result()", "python"),
        io_time, f"the checkpoints' I/O calls ({fmt_time(io_time)} of their {fmt_time(total)}) move out of the loop; "
                 "the serialisation stays in it")]
    fastest = _fastest_write(loop, ckpt)
    if fastest > 0 and nbytes:
        local = nbytes / fastest
        saved = max(io_time - local, 0.0)
        recs.append(_loop.with_saving(Recommendation(
            "Stage checkpoints on node-local storage",
            "Write the checkpoint to node-local storage (local NVMe, /dev/shm) without fsync, then copy it to "
            "the shared file system in the background and keep the last good copy there; a restart reads the "
            "shared copy.", "", "text"),
            saved, f"the checkpoints' I/O ({fmt_time(io_time)}) less their bytes ({fmt_bytes(nbytes)}) at the "
                   f"fastest write of this trace ({fmt_bytes(fastest)}/s: memory speed), "
                   f"{fmt_time(local)}"))
    if syncs and sync_time >= 0.1 * total:
        if syncs > n:
            saved = sync_time * (syncs - n) / syncs
            title, detail = "Sync once per checkpoint", (
                f"The checkpoints call fsync {syncs} times for {plural(n, 'checkpoint')}; one fsync after the last write "
                "of each makes it as durable.")
            basis = f"the fsync time ({fmt_time(sync_time)}) × the {syncs - n} of {syncs} fsyncs removed"
        else:
            saved = sync_time
            title, detail = "Sync in the background", (
                f"fsync is {fmt_pct(sync_time / total)} of the checkpoints' time: it waits until the data is on "
                "the storage. Sync from the background writer (or only the checkpoint you keep), and let the loop "
                "go on after the writes.")
            basis = f"all of the fsync time inside the checkpoints ({fmt_time(sync_time)}) leaves the loop"
        recs.append(_loop.with_saving(Recommendation(title, detail, "", "text"), saved, basis))
    if writes and m.get("mean_write_bytes", 0) < ctx.th.large_request_bytes:
        target = int(ctx.th.large_request_bytes)
        cost = _loop.per_call_cost(_ckpt_writes(loop, ckpt))
        fewer = max(writes - (nbytes + target - 1) // target, 0)
        recs.append(_loop.with_saving(Recommendation(
            f"Write checkpoints in larger pieces ({fmt_bytes(target)} or more)",
            f"Each checkpoint writes {writes / n:.3g} times, {fmt_bytes(m['mean_write_bytes'])} on average: "
            "serialise the state into one buffer and write it in a few large calls (`torch.save` to an "
            "`io.BytesIO`, then one write).",
            "buf = io.BytesIO()\ntorch.save(state, buf)\nwith open(path, 'wb') as f:\n    f.write(buf.getbuffer())",
            "python"),
            fewer * cost, f"{fmt_count(fewer)} fewer write calls × {fmt_time(cost)} a call (the writes' time less "
                          "their bytes at the fastest write's rate, per call)"))
    recs.append(_loop.with_saving(Recommendation(
        "Checkpoint less often",
        f"{plural(n, 'checkpoint')} in {fmt_time(m['loop_time_s'])} of training: checkpoint every other time (twice the "
        "interval) if the work you could lose in a failure allows it.", "", "text"),
        total / 2, f"half of the checkpoints' time ({fmt_time(total)})"))
    return recs


def _ckpt_writes(loop, ckpt: pl.DataFrame) -> pl.DataFrame:
    """The loop's write calls inside its checkpoints."""
    writes = loop.calls.filter(pl.col("rank").is_in(loop.ranks) & pl.col("func").str.contains("write")
                               & pl.col("bytes").is_not_null())
    if writes.is_empty():
        return writes
    held = (writes.sort("start")
            .join_asof(ckpt.select("rank", pl.col("start").alias("_s"), pl.col("end").alias("_e")).sort("_s"),
                       left_on="start", right_on="_s", by="rank", strategy="backward", check_sortedness=False))
    return held.filter(pl.col("end") <= pl.col("_e")).drop("_s", "_e")


def _fastest_write(loop, ckpt: pl.DataFrame) -> float:
    """Bytes per second of the fastest checkpoint write of at least 64 KiB (memory speed, before the sync)."""
    w = _ckpt_writes(loop, ckpt).filter((pl.col("bytes") >= 65536) & (pl.col("end") > pl.col("start")))
    if w.is_empty():
        return 0.0
    return float(w.select((pl.col("bytes") / (pl.col("end") - pl.col("start"))).max()).item())


FINDING = Finding(
    code=CODE,
    meaning="Checkpoints block the training loop (a trace with spans, DFTracer).",
    key_metrics=("checkpoint_time_s",),
    thresholds=THRESHOLDS,
    reads=("large_request_bytes",),
    trigger="(spans) the training loop spends at least `checkpoint_stall_share` of its time in its `checkpoint` "
            "spans (capture); a warning when the share is `strong_share` or the seconds matter for the run, "
            "else info.",
    source="spans",
    report=report,
    saving=_loop.SAVING,
)
