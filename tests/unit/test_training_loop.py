"""The training loop of a trace with spans (analysis/loop.py) and its findings (DATALOADER_STALL, CHECKPOINT_STALL,
EPOCH_REREAD, and the engine's demotion of I/O hidden behind compute) on hand-built span and call tables: a main
process whose loop waits for batches, computes and checkpoints, and workers whose fetch spans hold their reads."""
from __future__ import annotations

import pytest
import polars as pl

from iolens.analysis.diagnosis import Thresholds
from iolens.analysis.diagnosis.context import Context, RankWords
from iolens.analysis.diagnosis.engine import _demote_if_io_is_hidden
from iolens.analysis.diagnosis.findings import checkpoint_stall, dataloader_stall, epoch_reread
from iolens.analysis.diagnosis.insight import Evidence, Insight
from iolens.analysis.loop import Loop, merged, span_kind

KiB, MiB = 1 << 10, 1 << 20
SPAN_COLUMNS = ("rank", "tid", "cat", "name", "start", "end", "epoch", "step")


def training(steps=20, epochs=1, compute=0.005, wait=0.0001, startup=0.1, workers=1, reads=8, read_bytes=16 * KiB,
             read_time=1e-4, ckpt_every=0, ckpt_time=0.0, ckpt_writes=4, ckpt_bytes=16 * MiB, fsync_time=0.0,
             respawn=False, wait_cat="dataloader", wait_name="fetch", loop_spans=True):
    """(processes, spans, calls) of a job: main (rank 0) runs `epochs` of `steps`; a step waits for its batch (its
    first `startup`, then `wait`), computes, and every `ckpt_every` steps checkpoints (`ckpt_writes` writes of
    `ckpt_bytes` in all, then one fsync of `fsync_time`). Worker k (ranks 1..workers) reads step s's shard (`reads`
    reads of `read_bytes`, then the 0-byte read at its end) in a fetch span ending as the main's fetch ends.
    `respawn`: a new worker (the last rank) starts at each later epoch and its first batch waits `startup` too."""
    spans, calls = [], []
    t, step = 0.0, 0
    starts = []
    for e in range(epochs):
        e0 = t
        if e and respawn:
            starts.append(e0)
        for s in range(steps):
            w = startup if (step == 0 or (respawn and s == 0)) else wait
            if loop_spans:
                spans.append((0, 0, wait_cat, wait_name, t, t + w, e, step))
            t += w
            k = 1 + step % workers
            read_start = t - reads * read_time - read_time - 1e-6
            spans.append((k, k, "dataloader", "fetch", read_start, t - 1e-6, e, step))
            shard = f"/data/shard_{s:04d}.rec"
            for i in range(reads + 1):
                rs = read_start + i * read_time
                calls.append((k, k, "read", hash(shard) % 10**9, shard, rs, rs + read_time * 0.9,
                              read_bytes if i < reads else 0, i * read_bytes))
            spans.append((0, 0, "compute", "step", t, t + compute, e, step))
            t += compute
            step += 1
            if ckpt_every and step % ckpt_every == 0:
                path = f"/ckpt/ckpt_{step:05d}.pt"
                spans.append((0, 0, "checkpoint", "capture", t, t + ckpt_time, e, step))
                each = (ckpt_time - fsync_time) / (ckpt_writes + 1)
                for i in range(ckpt_writes):
                    ws = t + i * each
                    calls.append((0, 0, "write", hash(path) % 10**9, path, ws, ws + each,
                                  ckpt_bytes // ckpt_writes, i * (ckpt_bytes // ckpt_writes)))
                calls.append((0, 0, "fsync", hash(path) % 10**9, path, t + ckpt_time - fsync_time,
                              t + ckpt_time - 1e-6, None, None))
                t += ckpt_time
        spans.append((0, 0, "pipeline", "epoch", e0, t, e, None))
    nproc = 1 + workers + (1 if respawn else 0)
    processes = pl.DataFrame({
        "rank": list(range(nproc)), "role": ["main"] + ["worker"] * (nproc - 1),
        "label": ["main pid 100"] + [f"worker pid {101 + r}" for r in range(nproc - 1)],
        "start": [0.0] + [0.05] * workers + (starts[:1] if respawn else [])})
    span_frame = (pl.DataFrame(spans, schema=dict(zip(SPAN_COLUMNS, (pl.Int64, pl.Int64, pl.String, pl.String,
                                                                     pl.Float64, pl.Float64, pl.Int64, pl.Int64))),
                               orient="row")
                  .sort("rank", "start").with_columns(span_id=pl.int_range(pl.len(), dtype=pl.Int64)))
    epoch_ids = span_frame.filter(pl.col("cat") == "pipeline").select("epoch", pl.col("span_id").alias("_p"))
    span_frame = (span_frame.join(epoch_ids, on="epoch", how="left")
                  .with_columns(parent=pl.when((pl.col("rank") == 0) & (pl.col("cat") != "pipeline"))
                                .then(pl.col("_p")), depth=pl.lit(0, pl.Int32)).drop("_p").sort("span_id"))
    call_frame = pl.DataFrame(calls, schema={"rank": pl.Int64, "tid": pl.Int64, "func": pl.String,
                                             "file_id": pl.UInt64, "path": pl.String, "start": pl.Float64,
                                             "end": pl.Float64, "bytes": pl.Int64, "offset": pl.Int64}, orient="row")
    return processes, span_frame, call_frame


class _Trace:
    """What the loop reads of a DFTracer trace: its processes, spans, calls and job."""

    def __init__(self, processes, spans, calls):
        self.processes, self.spans, self.calls = processes, spans, calls
        run = max(float(spans["end"].max() or 0.0), float(calls["end"].max() or 0.0))
        self.job = {"run_time": run, "partial": False}
        self._labels = dict(processes.select("rank", "label").iter_rows())

    def label(self, rank):
        return self._labels[int(rank)]


class _Ctx(RankWords):
    """What the loop's findings read of a log's Context."""
    matters = Context.matters
    ranks_noun = "processes"

    def __init__(self, trace, **thresholds):
        self.log = trace
        self.th = Thresholds(thresholds)
        self.run_time = trace.job["run_time"]
        self.loop = Loop.of(trace)

    def label_of(self, rank):
        return self.log.label(rank)

    def names_of(self, file_ids, limit=10):
        names = dict(self.log.calls.select("file_id", "path").iter_rows())
        return [names[f] for f in list(file_ids)[:limit]]


def ctx_of(**job):
    return _Ctx(_Trace(*training(**job)))


def codes(ctx) -> dict:
    out = {}
    for module in (dataloader_stall, checkpoint_stall, epoch_reread):
        for i in module.FINDING.report(ctx, None):
            out[i.code] = i
    return out


# --- the loop's tables ------------------------------------------------------------------------
@pytest.mark.parametrize("cat, name, role, kind", [
    ("dataloader", "fetch", "main", "wait"),
    ("dataloader", "fetch.iter", "main", "wait"),  # dft_ai.dataloader.fetch.iter: the wait for the next item
    ("dataloader", "fetch.block", "main", None),  # ... and the loop's body between two items: no wait
    ("dataloader", "fetch", "worker", "produce"),
    ("data", "item", "worker", "produce"),
    ("compute", "forward", "main", "compute"),
    ("checkpoint", "capture", "main", "checkpoint"),
    ("checkpoint", "restart", "main", None),
    ("pipeline", "epoch", "main", "pipeline"),
    ("comm", "all_reduce", "main", None),
    ("MyApp", "fetch_batch", "main", "wait"),  # a fetch by name in any category
    ("dataloader", "dataloader.init", "main", None),  # dft_ai's `init`: a set-up, no wait
    # DLIO's own spans (dlio_benchmark: `Profile(MODULE_...)`, common/constants.py; names Class.method)
    ("data_loader", "loop.iter", "main", "wait"),  # dlp.iter(...) (dft_fn.iter): the wait for the next batch
    ("data_loader", "loop.yield", "main", None),  # ... and the loop's body (DFTracer 1.0.x and 2.x dft_fn.iter)
    ("data_loader", "TorchDataLoader.read", "main", None),  # the loader's set-up in the loop's process: no wait
    ("data_loader", "TorchDataset.__getitem__", "worker", "produce"),
    ("data_loader", "TorchDataset.worker_init", "worker", None),
    ("reader", "NPZReader.read_index", "worker", "produce"),
    ("ai_framework", "TorchFramework.compute", "main", "compute"),
    ("ai_framework", "TorchFramework.get_loader", "main", None),
    ("checkpoint", "PyTorchCheckpointing.save_checkpoint", "main", "checkpoint"),
    ("checkpoint", "PyTorchCheckpointing.__init__", "main", None),  # allocates the model: no checkpoint
    ("checkpoint", "checkpoint.init", "main", None),  # dft_ai.checkpoint.init (DLIO's checkpointing __init__)
    ("checkpoint", "PyTorchCheckpointing.get_tensor_core", "main", None),
    ("checkpoint", "PyTorchCheckpointing.load_checkpoint", "main", None),  # a restart
    ("pipeline", "epoch.block", "main", "pipeline"),  # dft_ai.pipeline.epoch.iter(..., include_iter=False)
    ("dlio_benchmark", "DLIOBenchmark._train", "main", "pipeline"),
    ("dlio_benchmark", "DLIOBenchmark.run", "main", None),
])
def test_span_kinds(cat, name, role, kind):
    frame = pl.DataFrame({"cat": [cat], "name": [name], "role": [role]})
    assert frame.select(span_kind(pl.col("role"))).item() == kind


def test_merged_is_the_union_per_group():
    iv = pl.DataFrame({"rank": [0, 0, 0, 1], "start": [0.0, 0.5, 2.0, 0.0], "end": [1.0, 1.5, 3.0, 1.0],
                       "epoch": [None, 7, 8, 9]})
    out = merged(iv, keep=("epoch",))
    assert out.rows() == [(0, 0.0, 1.5, 7), (0, 2.0, 3.0, 8), (1, 0.0, 1.0, 9)]


def test_waits_and_summary_match_the_spans():
    procs, spans, calls = training(steps=10, wait=0.02, startup=0.3, compute=0.005)
    loop = Loop(procs, spans, calls)
    s = loop.summary
    main = spans.filter(pl.col("rank") == 0)
    fetch = main.filter(pl.col("name") == "fetch")
    assert s["loop_time"] == pytest.approx(float((main.filter(pl.col("cat") == "pipeline")
                                                   .select(pl.col("end") - pl.col("start")).sum().item())))
    assert s["wait_time"] == pytest.approx(float((fetch["end"] - fetch["start"]).sum()))
    assert s["startup_wait"] == pytest.approx(0.3) and s["steady_wait"] == pytest.approx(9 * 0.02)
    assert s["compute_time"] == pytest.approx(10 * 0.005) and s["steps"] == 10
    assert loop.waits["kind"].to_list() == ["startup"] + ["steady"] * 9
    w = loop.workers.row(0, named=True)
    assert (w["rank"], w["batches"], w["reads"], w["bytes"]) == (1, 10, 90, 10 * 8 * 16 * KiB)


def test_parents_unknown_the_computing_process_runs_the_loop():
    """DFTracer without metadata: no process's parent is known, every process a root ("main"); the loop is the
    process that computes, the others its workers (their fetches production, not the loop's waits)."""
    procs, spans, calls = training(steps=10, wait=0.02, startup=0.3, compute=0.005)
    unknown = procs.with_columns(role=pl.lit("main"), ppid=pl.lit(None, pl.Int64))
    loop, known = Loop(unknown, spans, calls), Loop(procs.with_columns(ppid=pl.lit(1, pl.Int64)), spans, calls)
    assert loop.ranks == known.ranks == [0]
    assert loop.summary == known.summary
    assert loop.workers.select("rank", "batches").rows() == [(1, 10)]


def test_waits_from_gaps_without_fetch_spans():
    """No wait spans: the loop waits between two compute spans while a worker's read is in flight."""
    procs, spans, calls = training(steps=6, wait=0.02, startup=0.02, loop_spans=False)
    loop = Loop(procs, spans, calls)
    assert loop.waits.height == 5  # the gaps between 6 compute spans, each with the next batch's reads in it
    assert loop.summary["wait_time"] == pytest.approx(5 * 0.02, rel=0.05)


def test_respawned_workers():
    procs, spans, calls = training(steps=5, epochs=3, wait=0.001, startup=0.4, respawn=True)
    loop = Loop(procs, spans, calls)
    assert loop.waits["kind"].to_list() == (["startup"] + ["steady"] * 4 + ["respawn"] + ["steady"] * 4
                                            + ["steady"] * 5)  # (one new worker: the first later epoch only)


def test_no_spans_no_loop():
    procs, spans, calls = training()
    assert Loop.of(_Trace(procs, spans.clear(), calls)) is None
    assert Loop.of(_Trace(procs, spans.filter(pl.col("rank") > 0), calls)) is None  # workers only: no loop


# --- the findings -----------------------------------------------------------------------------
@pytest.mark.parametrize("job, expected", [
    # the loop waits 20 ms a step for batches a worker makes in 27 ms, computing 5 ms
    (dict(steps=40, wait=0.02, compute=0.005, reads=256, read_bytes=64, read_time=1e-4),
     {"DATALOADER_STALL": "warning"}),
    # compute-bound: every batch is there when the loop asks
    (dict(steps=40, wait=0.0001, compute=0.05, startup=0.5), {"DATALOADER_STALL": "info"}),  # (its start-up)
    (dict(steps=40, wait=0.0001, compute=0.05, startup=0.01), {}),
    # checkpoints: 5 of 200 ms in a 1.3 s loop
    (dict(steps=40, wait=0.0001, compute=0.005, startup=0.01, ckpt_every=8, ckpt_time=0.2, fsync_time=0.1),
     {"CHECKPOINT_STALL": "warning"}),
    (dict(steps=40, wait=0.0001, compute=0.05, startup=0.01, ckpt_every=20, ckpt_time=0.05),
     {}),  # 100 ms of checkpoints in a 2.1 s loop: 5%
    # epochs re-read their shards: hidden behind compute (info), or while the loop waits (warning)
    (dict(steps=16, epochs=3, wait=0.0001, compute=0.05, startup=0.01, reads=16, read_bytes=64 * KiB),
     {"EPOCH_REREAD": "info"}),
    (dict(steps=16, epochs=3, wait=0.05, compute=0.005, startup=0.01, reads=16, read_bytes=64 * KiB),
     {"EPOCH_REREAD": "warning", "DATALOADER_STALL": "warning"}),
])
def test_findings(job, expected):
    found = codes(ctx_of(**job))
    assert {c: i.severity for c, i in found.items()} == expected


def test_dataloader_stall_numbers():
    ctx = ctx_of(steps=40, wait=0.021, compute=0.005, reads=256, read_bytes=64, read_time=1e-4, workers=1)
    i = codes(ctx)["DATALOADER_STALL"]
    m = i.evidence.metrics
    s = ctx.loop.summary
    assert m["stall_s"] == pytest.approx(39 * 0.021) and m["startup_wait_s"] == pytest.approx(0.1)
    assert m["stall_share"] == pytest.approx(39 * 0.021 / s["loop_time"])
    assert m["step_time_s"] == pytest.approx(0.005, rel=0.01)  # the loop's own time a step
    assert m["batch_time_s"] == pytest.approx(257 * 1e-4, rel=0.01)  # a worker's fetch span
    assert m["worker_read_share"] > 0.9
    assert f"{round(m['stall_share'] * 100)}% of its time" in i.title
    titles = [r.title for r in i.recommendations]
    assert titles[0] == "Use 6 data-loader workers instead of 1"  # ⌈25.7 ms / 5 ms⌉
    assert titles[1].startswith("Read in larger pieces")
    for r in i.recommendations:
        assert 0 < r.expected_saving <= m["stall_s"] + 1e-9 and r.saving_basis


def test_prefetch_when_the_workers_keep_up_on_average():
    """Four workers make a batch every 6.7 ms and the loop uses one every 10 ms, yet it waits: bursts."""
    ctx = ctx_of(steps=40, wait=0.012, compute=0.01, reads=256, read_bytes=4 * KiB, read_time=1e-4, workers=4)
    i = codes(ctx)["DATALOADER_STALL"]
    assert i.recommendations[0].title == "Prefetch more batches per worker"
    assert i.recommendations[0].expected_saving == pytest.approx(39 * 0.012)


def test_persistent_workers_for_respawns():
    ctx = ctx_of(steps=5, epochs=3, wait=0.001, compute=0.005, startup=0.4, respawn=True)
    i = codes(ctx)["DATALOADER_STALL"]
    rec = [r for r in i.recommendations if r.title == "Keep the workers between epochs"]
    assert rec and rec[0].expected_saving == pytest.approx(0.4)
    assert i.evidence.metrics["respawn_wait_s"] == pytest.approx(0.4)


def test_checkpoint_stall_numbers():
    ctx = ctx_of(steps=40, wait=0.0001, compute=0.005, startup=0.01, ckpt_every=8, ckpt_time=0.2, fsync_time=0.1,
                 ckpt_writes=4, ckpt_bytes=16 * MiB)
    i = codes(ctx)["CHECKPOINT_STALL"]
    m = i.evidence.metrics
    assert (m["checkpoints"], m["checkpoint_bytes"], m["write_calls"], m["fsyncs"]) == (5, 80 * MiB, 20, 5)
    assert m["checkpoint_time_s"] == pytest.approx(1.0)
    assert m["checkpoint_share"] == pytest.approx(1.0 / ctx.loop.summary["loop_time"])
    assert m["fsync_time_s"] == pytest.approx(5 * (0.1 - 1e-6))
    assert m["checkpoint_bytes_per_s"] == pytest.approx(80 * MiB / 1.0)
    by_title = {r.title: r.expected_saving for r in i.recommendations}
    assert by_title["Checkpoint asynchronously"] == pytest.approx(m["checkpoint_io_s"])
    assert by_title["Sync in the background"] == pytest.approx(m["fsync_time_s"])
    assert by_title["Checkpoint less often"] == pytest.approx(0.5)
    assert "Write checkpoints in larger pieces (1 MiB or more)" not in by_title  # 4 MiB writes


def test_epoch_reread_numbers():
    ctx = ctx_of(steps=16, epochs=3, wait=0.0001, compute=0.05, startup=0.01, reads=16, read_bytes=64 * KiB)
    i = codes(ctx)["EPOCH_REREAD"]
    m = i.evidence.metrics
    assert (m["epochs"], m["dataset_bytes"], m["reread_bytes"]) == (3, 16 * MiB, 32 * MiB)
    assert m["bytes_per_epoch"] == 16 * MiB and m["reread_share"] == 1.0 and m["reread_files"] == 16


# --- I/O hidden behind compute -----------------------------------------------------------------
def _io_warning(strong=True):
    return Insight("SMALL_IO", "warning", "t", "s", Evidence(), [], source="dxt", demotable=not strong)


@pytest.mark.parametrize("job, demoted", [
    (dict(steps=40, wait=0.0001, compute=0.05), True),  # compute-bound: the loop never waits after start-up
    (dict(steps=40, wait=0.02, compute=0.005), False),  # the loop waits for data
    (dict(steps=40, wait=0.0001, compute=0.005, ckpt_every=8, ckpt_time=0.2), False),  # ... for checkpoints
])
def test_io_hidden_behind_compute(job, demoted):
    ctx = ctx_of(**job)
    found = [_io_warning(strong=True), _io_warning(strong=False),
             Insight("CONFLICT", "warning", "t", "s", Evidence(), [], source="dxt", demotable=False)]
    _demote_if_io_is_hidden(ctx, found)
    assert [i.severity for i in found] == (["info", "info", "warning"] if demoted else ["warning"] * 3)
    if demoted:
        assert "overlaps its compute" in found[0].summary


def test_checkpoint_writes_without_sizes():
    """DFTracer without metadata: write calls with neither size nor return value count as unsized writes (their
    time is still writing), not as no writes."""
    procs, spans, calls = training(steps=8, ckpt_every=4, ckpt_time=0.05, ckpt_writes=4)
    sized = Loop(procs, spans, calls.with_columns(ret=pl.col("bytes"))).checkpoints
    bare = Loop(procs, spans, calls.with_columns(bytes=pl.lit(None, pl.Int64), ret=pl.lit(None, pl.Int64))).checkpoints
    assert sized["unsized"].to_list() == [0, 0] and sized["writes"].to_list() == [4, 4]
    assert bare["unsized"].to_list() == [4, 4] and bare["writes"].to_list() == [0, 0]
    assert bare["write_time"].to_list() == pytest.approx(sized["write_time"].to_list())
