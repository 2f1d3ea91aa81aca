"""RANK_IMBALANCE and STRAGGLER on DFTracer traces compare peers only (docs/diagnosis.md, "Peers"): the loader's
workers among themselves, never the training loop's main process (its checkpoints are CHECKPOINT_STALL's) against
them, and they never say the other processes wait, since workers are not MPI ranks synchronised at the end of
their I/O. A worker much slower than the others is still found (bench/dftracer_workload.py with a slow worker)."""
from __future__ import annotations

import json
import re

import polars as pl

import iolens
from support.cli import run_iolens as run

PEER_CODES = ("RANK_IMBALANCE", "STRAGGLER")
# thresholds at which the checks report nearly anything: they must still never compare main with workers
EAGER = ("-t", "imbalance_ratio=1.1", "-t", "imbalance_min_bytes=1", "-t", "straggler_min_delay=0.001",
         "-t", "straggler_min_delay_share=0.01", "-t", "min_runtime_share=0", "-t", "min_io_time_share=0")


def says_others_wait(text: str) -> bool:
    """'The other 3 ranks wait about 489 ms each', 'the others wait at most ...', '... do not wait for it'."""
    return bool(re.search(r"\bwait(s|ing)? (about|at most|for (it|them))", text))


def insights(path, *options) -> list:
    return json.loads(run("diagnose", "--json", *options, path).stdout)["insights"]


def roles(path) -> dict:
    return dict(iolens.open(path).processes.select("rank", "role").iter_rows())


def test_loader_gz_does_not_compare_main_with_its_workers(dftracer_logs):
    trace = dftracer_logs / "loader_gz"
    role = roles(trace)
    main = [r for r, x in role.items() if x == "main"]
    for options in ((), EAGER):
        found = insights(trace, *options)
        assert "CHECKPOINT_STALL" in {i["code"] for i in found}  # main's checkpoints: judged there
        for i in found:
            if i["code"] not in PEER_CODES:
                continue
            assert not set(i["evidence"]["ranks"]) & set(main), (options, i["title"])
            assert {role[r] for r in i["evidence"]["ranks"]} == {"worker"}, i["title"]
            assert "main pid" not in i["title"] and "worker processes" in i["title"], i["title"]
            assert not says_others_wait(i["summary"]), i["summary"]
            assert i["evidence"]["metrics"]["peers"] == 3  # the trace's three workers
    assert not [i for i in insights(trace) if i["code"] in PEER_CODES and i["severity"] != "info"]


def test_a_slow_worker_is_found_among_the_workers(workload):
    """Four workers each get every fourth shard (dealt in turn); the first reads in 32-byte calls, the others in
    64 KiB: the slow worker issues about 400 times the others' reads for the same bytes and ends its I/O last."""
    trace, truth = workload("--workers", 4, "--shards", 16, "--shard-kib", 256, "--read-bytes", 65536,
                            "--slow-worker-read-bytes", 32, "--compute-ms", 2)
    per = truth["per_process"]
    assert len(per) == 4
    slow = max(per, key=lambda pid: per[pid]["reads"])
    assert per[slow]["reads"] > 100 * min(p["reads"] for p in per.values())
    procs = iolens.open(trace).processes
    slow_rank = procs.filter(pl.col("pid") == int(slow))["rank"].item()
    found = {i["code"]: i for i in insights(trace, "--all")}
    imbalance = found["RANK_IMBALANCE"]
    assert imbalance["evidence"]["ranks"][0] == slow_rank
    assert imbalance["title"].startswith("I/O operations uneven across worker processes: "
                                         f"worker pid {slow} carries up to")
    m = imbalance["evidence"]["metrics"]
    assert m["peers"] == 4
    assert m["heaviest_rank_operations"] == per[slow]["reads"]  # what the program counted
    assert 3.5 < m["max_over_mean"] <= 4.0  # 4 workers: the slow one's reads over their mean
    if "STRAGGLER" in found:  # late by enough of the workers' I/O window on this run: named alone
        assert found["STRAGGLER"]["evidence"]["ranks"] == [slow_rank]
        assert not says_others_wait(found["STRAGGLER"]["summary"])
