"""DATALOADER_STALL: the training loop waits for its data (a trace with spans: DFTracer).

Judged per log from the loop's spans (analysis/loop.py): the share of the loop's time spent waiting for a batch
(its `dataloader`/`fetch` spans, or the gaps between two compute spans while a worker's read is in flight)
after its first batch. The first batch waits for the workers to start: said apart, and only info. The workers'
time per batch against the loop's own time per step says whether more workers, a deeper prefetch queue or
larger reads would help; each recommendation carries the seconds of the loop it would save on this run.
"""
from __future__ import annotations

import math

import polars as pl

from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time, short_name
from . import _loop

CODE = "DATALOADER_STALL"
THRESHOLDS = (
    Threshold("dataloader_stall_share", 0.1, "share",
              "DATALOADER_STALL: the training loop waits for data at least this share of its time after its first "
              "batch (and the seconds matter for the run, or the share is `strong_share`: else info)."),
    Threshold("dataloader_read_share", 0.3, "share",
              "DATALOADER_STALL: reads are at least this share of the workers' busy time for larger reads to be "
              "advised."),
)
MAX_NAMED = 3


def report(ctx, _=None) -> list:
    loop = ctx.loop
    if loop is None:
        return []
    s = loop.summary
    if s["loop_time"] <= 0 or not s["waits"]:
        return []
    stall = s["steady_wait"] + s["respawn_wait"]
    share = stall / s["loop_time"]
    level = _loop.severity(ctx, stall, share, ctx.th.dataloader_stall_share)
    if level is None:
        return _startup_only(ctx, loop, s)
    m = _model(ctx, loop, s)
    metrics = _metrics(loop, s, m)
    who = _loop.loop_who(ctx, loop)
    waited = int((loop.waits.filter(pl.col("kind") != "startup")["time"] >= max(1e-3, 0.1 * m["c"])).sum())
    title = (f"The training loop waits for data {fmt_pct(share)} of its time "
             f"({fmt_time(stall)} of {fmt_time(s['loop_time'])})")
    summary = (f"The training loop ({who}) waits for its next batch in {fmt_count(waited)} of its "
               f"{fmt_count(s['steps'])} steps: {fmt_time(stall)} of its {fmt_time(s['loop_time'])}"
               f" ({fmt_pct(share)})")
    if s["startup_wait"] > 0:
        summary += (f", besides {fmt_time(s['startup_wait'])} ({fmt_pct(s['startup_wait'] / s['loop_time'])}) "
                    "for its first batch while the workers start")
    if s["respawn_wait"] > 0:
        summary += (f"; {fmt_time(s['respawn_wait'])} of it at the start of later epochs, while new workers "
                    "start")
    summary += ". " + _supply(ctx, loop, m) + _slowest(ctx, loop, m)
    recs = _recommendations(ctx, loop, s, m)
    ranks = list(loop.ranks) + m["workers"]["rank"].to_list()
    return [Insight(CODE, level, title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(loop.files["file_id"].to_list()),
                             time_window=(float(loop.windows["start"].min()), float(loop.windows["end"].max())),
                             metrics=metrics),
                    recs, source="spans", partial=bool(ctx.log.job.get("partial")), score=share, demotable=False)]


def _model(ctx, loop, s: dict) -> dict:
    """The loop's supply and demand per step: `c` the loop's own time per step (what is not waiting or
    checkpointing), `p` a worker's time per batch, `n` the workers; per step the loop waits max(0, p/n − c)."""
    workers = loop.workers.filter(~pl.col("rank").is_in(loop.ranks))
    own_loads = loop.workers.filter(pl.col("rank").is_in(loop.ranks))
    steps = max(int(s["steps"]), 1)
    c = max(s["loop_time"] - s["wait_time"] - s["checkpoint_time"], 0.0) / steps
    n = workers.height
    producing = workers if n else own_loads
    busy = float(producing["busy"].sum() or 0.0)
    batches = int(producing["batches"].fill_null(0).sum() or 0) or steps
    p = busy / batches if batches else 0.0
    reads = loop.data_reads.filter(pl.col("rank").is_in(producing["rank"].implode()))
    read_time = float(producing["read_time"].sum() or 0.0)
    calls_time = float(producing["read_calls_time"].sum() or 0.0)
    steady = int((loop.waits["kind"] == "steady").sum())
    return {"c": c, "p": p, "n": n, "workers": workers, "busy": busy, "batches": batches, "reads": reads,
            "read_time": read_time, "read_calls_time": calls_time, "read_share": read_time / busy if busy > 0 else 0.0, "steady_steps": steady}


def _wait(p: float, n: int, c: float) -> float:
    """The loop's wait per step when `n` workers each take `p` per batch and the loop `c` per step (n 0: the loop
    loads its batches itself)."""
    return p if n <= 0 else max(p / n - c, 0.0)


def _metrics(loop, s: dict, m: dict) -> dict:
    reads = m["reads"]
    nreads, nbytes = reads.height, int(reads["bytes"].sum() or 0)
    out = {"stall_s": s["steady_wait"] + s["respawn_wait"], "stall_share": (s["steady_wait"] + s["respawn_wait"])
           / s["loop_time"], "data_wait_s": s["wait_time"], "data_wait_share": s["wait_time"] / s["loop_time"],
           "startup_wait_s": s["startup_wait"], "respawn_wait_s": s["respawn_wait"], "loop_time_s": s["loop_time"],
           "steps": s["steps"], "workers": m["n"], "step_time_s": m["c"], "batch_time_s": m["p"],
           "worker_busy_s": m["busy"], "worker_read_s": m["read_time"], "worker_read_share": m["read_share"],
           "read_calls_s": m["read_calls_time"],
           "reads": nreads, "read_bytes": nbytes, "files": loop.files.height}
    if nreads:
        out["mean_read_bytes"] = nbytes / nreads
    return out


def _supply(ctx, loop, m: dict) -> str:
    c, p, n = m["c"], m["p"], m["n"]
    if n == 0:
        text = (f"The loop loads its batches itself ({fmt_time(p)} a batch) and computes for {fmt_time(c)} a step: "
                "no worker process makes batches ahead of it.")
    else:
        text = (f"Its own work takes {fmt_time(c)} a step, while a batch takes {'its one worker' if n == 1 else f'one of its {fmt_count(n)} workers'} "
                f"{fmt_time(p)}: together one batch every {fmt_time(p / n)}"
                + (", slower than the loop uses them." if p / n > c else
                   ", as fast as the loop uses them on average: the waits are bursts."))
    if m["busy"] > 0:
        reads = m["reads"]
        mean = float(reads["bytes"].mean() or 0) if reads.height else 0.0
        text += (f" Reading is {fmt_pct(m['read_share'])} of the {'workers' if n else 'loading'}' busy time "
                 f"({fmt_count(reads.height)} reads of {fmt_bytes(mean)} on average, {fmt_time(m['read_calls_time'])}"
                 " of it in the read calls themselves)"
                 + (": reading dominates." if m["read_share"] >= 0.5 else
                    ": the workers' own processing (decoding, transforms) dominates."))
    return text


def _slowest(ctx, loop, m: dict) -> str:
    text = ""
    w = m["workers"].filter(pl.col("batches").fill_null(0) > 0)
    if w.height > 1:
        w = w.with_columns(per=pl.col("busy") / pl.col("batches")).sort("per", descending=True)
        top = w.row(0, named=True)
        median = float(w["per"].median())
        if top["per"] >= 1.5 * median:
            text += (f" The slowest worker, {top['label']}, takes {fmt_time(top['per'])} a batch "
                     f"({top['per'] / median:.1f}× the median worker).")
    files = loop.files.filter(pl.col("read_time") > 0)
    if files.height > 1:
        named = ", ".join(f"{short_name(f['path'] or '?')} ({fmt_time(f['read_time'])} for {fmt_bytes(f['bytes'])})"
                          for f in files.head(MAX_NAMED).iter_rows(named=True))
        text += f" Slowest files to read: {named}."
    return text


def _recommendations(ctx, loop, s: dict, m: dict) -> list:
    c, p, n = m["c"], m["p"], m["n"]
    steady, steps = s["steady_wait"], m["steady_steps"]
    recs = []
    now = _wait(p, n, c)
    if now > 0 and c > 0:
        need = max(n + 1, math.ceil(p / c))
        saved = min(steady, steps * (now - _wait(p, need, c)))
        recs.append(_loop.with_saving(Recommendation(
            f"Use {need} data-loader workers" + (f" instead of {n}" if n else ""),
            f"A batch takes a worker {fmt_time(p)} and the loop uses one every {fmt_time(c)}: it takes "
            f"⌈{fmt_time(p)} / {fmt_time(c)}⌉ = {need} workers to keep ahead of it (if the node has the cores "
            "and memory; each worker holds its prefetched batches). PyTorch: `num_workers`; tf.data: "
            "`num_parallel_calls`.",
            f"loader = DataLoader(dataset, batch_size=B, num_workers={need},\n"
            f"                    prefetch_factor=2, persistent_workers=True, pin_memory=True)", "python"),
            saved, f"{fmt_count(steps)} steps × (the wait per step now, {fmt_time(p)}/{max(n, 1)} − "
                   f"{fmt_time(c)} = {fmt_time(now)}, less with {need} workers, "
                   f"{fmt_time(_wait(p, need, c))}), at most the waits measured ({fmt_time(steady)})"))
    elif steady > 0 and n > 0:
        recs.append(_loop.with_saving(Recommendation(
            "Prefetch more batches per worker",
            f"On average the workers keep up (one batch every {fmt_time(p / n)}, the loop uses one every "
            f"{fmt_time(c)}), yet the loop waits: the batches come in bursts. A deeper queue absorbs them. "
            "PyTorch: `prefetch_factor` (batches each worker keeps ready, 2 by default); tf.data: "
            "`dataset.prefetch(tf.data.AUTOTUNE)`.",
            f"loader = DataLoader(dataset, batch_size=B, num_workers={n}, prefetch_factor=8,\n"
            "                    persistent_workers=True)", "python"),
            steady, f"an upper bound: all of the waits after the first batch ({fmt_time(steady)}), which a queue "
                    "deep enough to cover the bursts removes"))
    larger = _larger_reads(ctx, loop, s, m, now)
    if larger is not None:
        recs.append(larger)
    if s["respawn_wait"] > 0:
        recs.append(_loop.with_saving(Recommendation(
            "Keep the workers between epochs",
            f"New workers start at the beginning of later epochs and the loop waits "
            f"{fmt_time(s['respawn_wait'])} for their first batches. Persistent workers start once.",
            "loader = DataLoader(dataset, batch_size=B, num_workers=N, persistent_workers=True)", "python"),
            s["respawn_wait"], f"the loop's waits for the first batch of each later epoch "
                               f"({fmt_time(s['respawn_wait'])}): persistent workers remove them"))
    return recs


def _larger_reads(ctx, loop, s: dict, m: dict, now: float):
    """Larger reads (whole records, or 1 MiB and more) when reads are a good share of the workers' time."""
    reads, busy = m["reads"], m["busy"]
    if reads.is_empty() or busy <= 0 or m["read_share"] < ctx.th.dataloader_read_share:
        return None
    target = int(ctx.th.large_request_bytes)
    mean = float(reads["bytes"].mean() or 0)
    if mean >= target:
        return None
    per_file = reads.group_by("file_id").agg(pl.col("bytes").sum())
    after = int(per_file.select((pl.col("bytes") + target - 1) // target + 1).sum().item())  # + the EOF read
    cost = _loop.per_call_cost(reads, m["read_time"])
    fewer = max(reads.height - after, 0)
    saved_busy = min(fewer * cost, m["read_time"])
    if saved_busy <= 0:
        return None
    p2 = m["p"] * (1 - saved_busy / busy)
    steady, steps = s["steady_wait"], m["steady_steps"]
    if now > 0:
        saved = min(steady, steps * (now - _wait(p2, m["n"], m["c"])))
        basis = (f"{fmt_count(fewer)} fewer reads × {fmt_time(cost)} a call (the time reading less the bytes at "
                 "the fastest read's rate, per call) "
                 f"= {fmt_time(saved_busy)} less of the workers' {fmt_time(busy)}: a batch in {fmt_time(p2)} "
                 f"instead of {fmt_time(m['p'])}, so the loop waits {fmt_time(_wait(p2, m['n'], m['c']))} a step "
                 f"instead of {fmt_time(now)} ({fmt_count(steps)} steps, at most the waits measured)")
    else:
        saved = steady * saved_busy / busy
        basis = (f"the waits after the first batch ({fmt_time(steady)}) × the share of the workers' time the "
                 f"fewer reads remove ({fmt_count(fewer)} × {fmt_time(cost)} a call = {fmt_pct(saved_busy / busy)})")
    return _loop.with_saving(Recommendation(
        f"Read in larger pieces ({fmt_bytes(target)} or whole records)",
        f"The workers read {fmt_count(reads.height)} times, {fmt_bytes(mean)} on average: every call pays its fixed "
        f"cost ({fmt_time(cost)} here). Read each shard or record in one call (or buffered, "
        f"`open(path, 'rb', buffering={target})`), or pack small samples into larger records "
        "(TFRecord, WebDataset tar shards).",
        f"with open(path, 'rb', buffering={target}) as f:\n    data = f.read()   # one large read per record",
        "python"), saved, basis)


def _startup_only(ctx, loop, s: dict) -> list:
    """Only the first batch waits long: said as info (the workers starting), with nothing to save after it."""
    share = s["startup_wait"] / s["loop_time"]
    if share < ctx.th.dataloader_stall_share or s["startup_wait"] <= 0:
        return []
    who = _loop.loop_who(ctx, loop)
    summary = (f"The training loop ({who}) waits {fmt_time(s['startup_wait'])} for its first batch "
               f"({fmt_pct(share)} of its {fmt_time(s['loop_time'])}), while its data loader's workers start; "
               f"after that it waits {fmt_time(s['steady_wait'])} in all "
               f"({fmt_pct(s['steady_wait'] / s['loop_time'])}): the data keeps up.")
    rec = Recommendation(
        "Start the data loader's workers early",
        "A longer run makes this start-up a smaller share. Start the workers before the model's own set-up (create "
        "the DataLoader and its iterator first), keep them for the whole run (`persistent_workers=True`), and "
        "start them with `fork` or `forkserver` where the framework allows: a `spawn`ed worker imports the "
        "program again.", "", "text")
    rec.saving_basis = ("not estimated: the first batch's wait is the workers' start-up, which only overlapping it "
                        "with the program's own set-up hides")
    metrics = {"stall_s": s["steady_wait"] + s["respawn_wait"],
               "stall_share": (s["steady_wait"] + s["respawn_wait"]) / s["loop_time"],
               "data_wait_s": s["wait_time"], "data_wait_share": s["wait_time"] / s["loop_time"],
               "startup_wait_s": s["startup_wait"], "startup_wait_share": share, "loop_time_s": s["loop_time"],
               "steps": s["steps"]}
    return [Insight(CODE, "info", f"The training loop waits {fmt_time(s['startup_wait'])} for its first batch "
                                  f"({fmt_pct(share)} of its time)", summary,
                    Evidence(ranks=list(loop.ranks), files=[], metrics=metrics,
                             time_window=(float(loop.waits["start"].min()), float(loop.waits["end"].min()))),
                    [rec], source="spans", partial=bool(ctx.log.job.get("partial")), score=share, demotable=False)]


FINDING = Finding(
    code=CODE,
    meaning="The training loop waits for its data loader (a trace with spans, DFTracer).",
    key_metrics=("stall_s", "startup_wait_s"),
    thresholds=THRESHOLDS,
    reads=("large_request_bytes",),
    trigger="(spans) the training loop waits for a batch (`dataloader`/`fetch` spans, or gaps between compute "
            "spans while a worker reads) at least `dataloader_stall_share` of its time after its first batch; "
            "a warning when the share is `strong_share` or the seconds matter for the run, else info. A long "
            "first batch alone (the workers starting) is info.",
    source="spans",
    report=report,
    saving=_loop.SAVING,
)
