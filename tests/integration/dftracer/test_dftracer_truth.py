"""Real DFTracer traces read by iolens against what the traced program counted itself (truth.json): per
process and per shard file, the read calls (with the last read, 0 bytes at end of file) and bytes; the
checkpoint bytes, writes and fsyncs; and the same job traced by Darshan agreeing on bytes per file."""
from __future__ import annotations

import json
from collections import Counter

import polars as pl
import pytest

import iolens
from iolens.analysis.spans import enclosing_spans

SHARD = r"/shard_\d+\.rec$"


def shard_reads(trace) -> pl.DataFrame:
    """pid, file (base name), reads, bytes of every read call on a shard file."""
    calls = trace.calls.join(trace.processes.select("rank", "pid"), on="rank")
    return (calls.filter(pl.col("path").str.contains(SHARD) & pl.col("func").is_in(["read", "pread64", "readv"]))
            .with_columns(file=pl.col("path").str.split("/").list.last()))


def check_against_truth(trace, truth: dict) -> None:
    reads = shard_reads(trace)
    per_process = reads.group_by("pid").agg(pl.len().alias("reads"), pl.col("bytes").sum().alias("bytes"))
    got = {pid: (n, b) for pid, n, b in per_process.iter_rows()}
    want = {int(pid): (p["reads"], p["bytes_read"]) for pid, p in truth["per_process"].items()}
    assert got == want
    for pid, p in truth["per_process"].items():
        mine = reads.filter(pl.col("pid") == int(pid))
        # each shard as often as the program opened it, and its reads and bytes: the process's share per opening
        times = Counter(p["files"])
        assert Counter(dict(mine.filter(pl.col("bytes") == 0).group_by("file").len().iter_rows())) == times
        per_open_reads, per_open_bytes = p["reads"] // len(p["files"]), p["bytes_read"] // len(p["files"])
        per_file = mine.group_by("file").agg(pl.len(), pl.col("bytes").sum())
        assert {f: (n, b) for f, n, b in per_file.iter_rows()} == {
            f: (k * per_open_reads, k * per_open_bytes) for f, k in times.items()}
        # every read at the offset the file position says: one after the other from 0, each opening
        assert mine["offset_source"].unique().to_list() == ["followed"]
    main = trace.processes.filter(pl.col("pid") == truth["main_pid"])
    assert main.select("rank", "role").row(0) == (0, "main")
    ckpt = trace.calls.filter(pl.col("path").str.contains("/ckpt_"))
    writes = ckpt.filter(pl.col("func") == "write")
    assert (writes.height, writes["bytes"].sum(), ckpt.filter(pl.col("func") == "fsync").height) == (
        truth["ckpt_writes"], truth["ckpt_bytes"], truth["ckpt_fsyncs"])
    assert (ckpt["rank"].unique().to_list() or [0]) == [0]  # the main process writes them


@pytest.mark.parametrize("folder", ["loader_gz", "loader_plain"])
def test_shared_traces_equal_the_programs_counts(dftracer_logs, folder):
    path = dftracer_logs / folder
    trace = iolens.read(str(path))
    check_against_truth(trace, json.loads((path / "truth.json").read_text()))
    assert not trace.partial


@pytest.mark.parametrize("folder", ["loader_gz", "loader_plain"])
def test_shared_traces_segments_and_counters_agree_with_the_calls(dftracer_logs, folder):
    trace = iolens.read(str(dftracer_logs / folder))
    reads = shard_reads(trace)
    seg = trace.segments.join(trace.files, on="file_id").filter(pl.col("name").str.contains(SHARD))
    assert (seg.height, seg["length"].sum()) == (reads.height, reads["bytes"].sum())
    posix = trace.counters["POSIX"].join(trace.files, on="file_id").filter(pl.col("name").str.contains(SHARD))
    assert (posix["POSIX_READS"].sum(), posix["POSIX_BYTES_READ"].sum()) == (reads.height, reads["bytes"].sum())


def test_the_main_loop_and_the_workers_spans(dftracer_logs):
    path = dftracer_logs / "loader_gz"
    truth = json.loads((path / "truth.json").read_text())
    trace = iolens.read(str(path))
    spans = trace.spans.join(trace.processes.select("rank", "pid", "role"), on="rank")
    main = spans.filter(pl.col("pid") == truth["main_pid"])
    kinds = dict(main.group_by(pl.format("{}/{}", "cat", "name")).len().iter_rows())
    assert kinds == {"pipeline/epoch": 1, "dataloader/fetch": truth["steps"], "compute/step": truth["steps"],
                     "checkpoint/capture": truth["ckpt_fsyncs"]}
    steps = main.filter(pl.col("name") == "step").sort("start")
    assert steps["step"].to_list() == list(range(truth["steps"])) and steps["epoch"].unique().to_list() == [0]
    epoch = main.filter(pl.col("name") == "epoch").row(0, named=True)
    assert set(main.filter(pl.col("depth") == 1)["parent"].to_list()) == {epoch["span_id"]}
    # each checkpoint's writes and fsync happen inside a capture span of the main process
    captures = main.filter(pl.col("name") == "capture").select("start", "end").rows()
    ckpt = trace.calls.filter(pl.col("path").str.contains("/ckpt_"))
    assert all(any(s <= c < e for s, e in captures) for c in ckpt["start"].to_list())
    # a worker reads its shards inside its own fetch spans
    for pid in truth["per_process"]:
        fetch = spans.filter((pl.col("pid") == int(pid)) & (pl.col("name") == "fetch")).select("start", "end").rows()
        mine = shard_reads(trace).filter(pl.col("pid") == int(pid))
        assert fetch and all(any(s <= t <= e for s, e in fetch) for t in mine["start"].to_list())
        assert spans.filter(pl.col("pid") == int(pid))["role"].unique().to_list() == ["worker"]


def test_dftracer_and_darshan_agree_on_bytes_per_file(dftracer_logs):
    """The same job under DFTracer (loader_gz) and under Darshan (loader_gz_darshan, one log per process)."""
    dft = iolens.read(str(dftracer_logs / "loader_gz"))

    def per_file(log) -> dict:
        c = log.counters["POSIX"].join(log.files.select("file_id", "name"), on="file_id")
        c = c.filter(pl.col("name").str.contains(r"/shard_\d+\.rec$|/ckpt_\d+\.pt$"))
        return {n: (r, w) for n, r, w in c.group_by("name").agg(pl.col("POSIX_BYTES_READ").sum(),
                                                                 pl.col("POSIX_BYTES_WRITTEN").sum()).iter_rows()}

    darshan: dict = {}
    for log in sorted((dftracer_logs / "loader_gz_darshan").glob("*.darshan")):
        for name, (r, w) in per_file(iolens.read(str(log))).items():
            old = darshan.get(name, (0, 0))
            darshan[name] = (old[0] + r, old[1] + w)
    mine = per_file(dft)
    assert len(mine) == 24 + 3 and mine == darshan


def test_a_traced_training_loop_equals_its_own_counts(workload):
    trace_dir, truth = workload("--shards", 6, "--shard-kib", 64, "--workers", 2, "--read-bytes", 4096,
                                "--epochs", 2, "--ckpt-every", 3, "--ckpt-mib", 8, "--compute-ms", 1)
    trace = iolens.read(str(trace_dir))
    check_against_truth(trace, truth)
    epochs = trace.spans.filter(pl.col("name") == "fetch").group_by("epoch").len().sort("epoch")
    assert epochs["epoch"].to_list() == [0, 1]


def test_an_uncompressed_traced_run_reads_the_same(workload):
    trace_dir, truth = workload("--shards", 4, "--shard-kib", 32, "--workers", 1, "--read-bytes", 1000,
                                gzip=False)
    assert all(p.suffix == ".pfw" for p in trace_dir.iterdir())
    check_against_truth(iolens.read(str(trace_dir)), truth)


def test_each_shard_read_lies_in_a_fetch_span_of_its_epoch(dftracer_logs):
    """What a training-loop finding joins: each worker read to the span above it (loader_plain: 2 epochs, every
    shard read once in each)."""
    path = dftracer_logs / "loader_plain"
    truth = json.loads((path / "truth.json").read_text())
    trace = iolens.read(str(path))
    reads = shard_reads(trace)
    span_of = enclosing_spans(reads, trace.spans)
    above = reads.with_columns(span_of).join(trace.spans.select("span_id", "name", "epoch"), on="span_id", how="left")
    assert above["name"].unique().to_list() == ["fetch"]
    per_epoch = above.group_by("epoch").agg(pl.col("bytes").sum(), pl.col("file").n_unique()).sort("epoch")
    (pid, p), = truth["per_process"].items()
    shards = len(set(p["files"]))
    assert per_epoch.rows() == [(0, p["bytes_read"] // 2, shards), (1, p["bytes_read"] // 2, shards)]
    segs = trace.segments.join(trace.files, on="file_id").filter(pl.col("name").str.contains(SHARD))
    assert enclosing_spans(segs, trace.spans, thread="pthread_id").null_count() == 0
    # the main process's own reads (its imports) lie in no span of a worker
    main_calls = trace.calls.filter(pl.col("rank") == 0)
    inside = enclosing_spans(main_calls, trace.spans.filter(pl.col("rank") != 0))
    assert inside.null_count() == main_calls.height
