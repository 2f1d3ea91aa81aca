"""`iolens diagnose` on training jobs traced by the real DFTracer (bench/dftracer_workload.py under its preload
library and Python API): a loop that waits on a worker's small reads (DATALOADER_STALL), checkpoints that dominate
(CHECKPOINT_STALL), epochs that read the same shards again (EPOCH_REREAD), and a compute-bound job that gets no
warning at all, its small reads included. The shares the diagnosis prints are checked against the trace's own
spans, read here from `iolens.open(...).spans`; the checkpoint's bytes, writes and fsyncs against what the program
counted."""
from __future__ import annotations

import json

import polars as pl
import pytest

import iolens
from iolens.analysis.units import fmt_pct
from support.cli import run_iolens as run


def diagnose(path) -> dict:
    doc = json.loads(run("diagnose", "--json", path).stdout)
    return {i["code"]: i for i in doc["insights"]}


def main_spans(path) -> pl.DataFrame:
    """The main process's spans with their durations."""
    trace = iolens.open(path)
    main = trace.processes.filter(pl.col("role") == "main")["rank"].to_list()
    assert len(main) == 1
    return trace.spans.filter(pl.col("rank") == main[0]).with_columns(time=pl.col("end") - pl.col("start"))


def total(spans: pl.DataFrame, cat: str, name: str) -> float:
    return float(spans.filter((pl.col("cat") == cat) & (pl.col("name") == name))["time"].sum())


def test_a_loop_waiting_on_small_reads(workload):
    """One worker reads 32 shards in 64-byte calls while the loop computes 2 ms a step: the loop waits."""
    trace, truth = workload("--workers", 1, "--shards", 32, "--shard-kib", 256, "--read-bytes", 64,
                            "--compute-ms", 2)
    found = diagnose(trace)
    stall = found["DATALOADER_STALL"]
    assert stall["severity"] == "warning" and stall["source"] == "spans"
    spans = main_spans(trace)
    loop = total(spans, "pipeline", "epoch")
    fetch = spans.filter(pl.col("name") == "fetch").sort("start")
    waits, first = float(fetch["time"].sum()), float(fetch["time"][0])
    m = stall["evidence"]["metrics"]
    assert m["loop_time_s"] == pytest.approx(loop, rel=1e-4)
    assert m["data_wait_share"] == pytest.approx(waits / loop, rel=1e-4)
    assert m["stall_share"] == pytest.approx((waits - first) / loop, rel=1e-4)
    assert m["startup_wait_s"] == pytest.approx(first, rel=1e-4)
    assert f"waits for data {fmt_pct((waits - first) / loop)} of its time" in stall["title"]
    (pid, done), = truth["per_process"].items()
    assert (m["workers"], m["reads"], m["read_bytes"]) == (1, done["reads"], done["bytes_read"])
    assert m["worker_read_share"] > 0.5  # reading 64 bytes at a time is what the worker does
    titles = [r["title"] for r in stall["recommendations"]]
    assert any(t.startswith("Use ") and "data-loader workers instead of 1" in t for t in titles)
    assert any(t.startswith("Read in larger pieces") for t in titles)
    for r in stall["recommendations"]:
        assert 0 < r["expected_saving"] <= m["stall_s"] * (1 + 1e-6) and r["saving_basis"]
    assert {(p["role"], p["pid"]) for p in stall["processes"]} == {("main", truth["main_pid"]), ("worker", int(pid))}


def test_checkpoints_that_dominate(workload):
    """A 64 MiB checkpoint (4 MiB writes, then fsync) every 4 steps of 5 ms."""
    trace, truth = workload("--workers", 2, "--shards", 16, "--ckpt-every", 4, "--ckpt-mib", 64, "--compute-ms", 5)
    found = diagnose(trace)
    ckpt = found["CHECKPOINT_STALL"]
    spans = main_spans(trace)
    loop, capture = total(spans, "pipeline", "epoch"), total(spans, "checkpoint", "capture")
    m = ckpt["evidence"]["metrics"]
    assert m["checkpoint_share"] == pytest.approx(capture / loop, rel=1e-4)
    assert m["checkpoint_time_s"] == pytest.approx(capture, rel=1e-4)
    assert (m["checkpoints"], m["checkpoint_bytes"], m["write_calls"], m["fsyncs"]) == (
        4, truth["ckpt_bytes"], truth["ckpt_writes"], truth["ckpt_fsyncs"])
    assert f"stop the training loop {fmt_pct(capture / loop)} of its time" in ckpt["title"]
    # a warning when the share is structural or the seconds matter (docs/diagnosis.md), else info: on this
    # machine's disk, 256 MiB written and synced take most of the loop
    run_time = json.loads(run("info", "--json", trace).stdout)["job"]["run_time"]
    matters = capture >= 0.25 and capture >= 0.05 * run_time
    assert ckpt["severity"] == ("warning" if capture / loop >= 0.5 or matters else "info")
    titles = [r["title"] for r in ckpt["recommendations"]]
    assert titles[0] == "Checkpoint asynchronously" and "Checkpoint less often" in titles
    assert ckpt["recommendations"][0]["expected_saving"] == pytest.approx(m["checkpoint_io_s"], rel=1e-4)


def test_epochs_that_read_the_same_shards(workload):
    """Three epochs over 12 shards of 256 KiB, read 64 bytes at a time by one worker: the loop waits too."""
    trace, truth = workload("--workers", 1, "--shards", 12, "--shard-kib", 256, "--read-bytes", 64,
                            "--compute-ms", 2, "--epochs", 3)
    found = diagnose(trace)
    again = found["EPOCH_REREAD"]
    m = again["evidence"]["metrics"]
    shards = 12 * 256 * 1024
    assert (m["epochs"], m["dataset_bytes"], m["bytes_per_epoch"], m["reread_bytes"]) == (3, shards, shards,
                                                                                          2 * shards)
    assert m["reread_share"] == 1 and m["reread_files"] == 12
    assert found["DATALOADER_STALL"]["severity"] == "warning"
    assert again["severity"] == "warning"  # the loop waits in the epochs that re-read


def test_a_compute_bound_job_gets_no_warning(workload):
    """Two workers read 12 MiB in 4 KiB calls, twice, while the loop computes 150 ms a step: every batch is ready
    when the loop asks, even on a loaded machine (a worker reads a shard in a few ms). The small reads (SMALL_IO)
    and the re-reads are said, as info."""
    trace, truth = workload("--workers", 2, "--shards", 12, "--shard-kib", 1024, "--read-bytes", 4096,
                            "--compute-ms", 150, "--epochs", 2)
    found = diagnose(trace)
    assert [c for c, i in found.items() if i["severity"] in ("warning", "critical")] == []
    small = found["SMALL_IO"]  # info, saying why: the loop hides it, or (on a quick run) its fix saves too little
    assert "overlaps its compute" in small["summary"] or "under the noise of two identical runs" in small["summary"]
    assert found["EPOCH_REREAD"]["severity"] == "info"
    spans = main_spans(trace)
    fetch = spans.filter(pl.col("name") == "fetch").sort("start")
    loop = total(spans, "pipeline", "epoch")
    assert float(fetch["time"][1:].sum()) / loop < 0.05  # what the spans say: the loop does not wait


def test_the_shared_traces(dftracer_logs):
    """loader_gz: 3 checkpoints of 16 MiB; its first batch waits for the workers to start (info). loader_plain:
    two epochs over the same shards, hidden behind 20 ms steps."""
    gz = diagnose(dftracer_logs / "loader_gz")
    truth = json.loads((dftracer_logs / "loader_gz" / "truth.json").read_text())
    m = gz["CHECKPOINT_STALL"]["evidence"]["metrics"]
    assert (m["checkpoint_bytes"], m["write_calls"], m["fsyncs"]) == (truth["ckpt_bytes"], truth["ckpt_writes"],
                                                                     truth["ckpt_fsyncs"])
    spans = main_spans(dftracer_logs / "loader_gz")
    assert m["checkpoint_share"] == pytest.approx(total(spans, "checkpoint", "capture")
                                                  / total(spans, "pipeline", "epoch"), rel=1e-4)
    assert gz["DATALOADER_STALL"]["severity"] == "info" and "first batch" in gz["DATALOADER_STALL"]["title"]
    plain = diagnose(dftracer_logs / "loader_plain")
    assert plain["EPOCH_REREAD"]["severity"] == "info"
    assert plain["EPOCH_REREAD"]["evidence"]["metrics"]["reread_bytes"] == 12 * 256 * 1024
    assert not [c for c, i in plain.items() if i["severity"] in ("warning", "critical")]
