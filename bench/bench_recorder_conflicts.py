#!/usr/bin/env python3
"""Time of the CONFLICT check on a Recorder trace: the sweep on its segments, then each pair classified per
consistency model from every call (analysis/consistency.py), in the diagnosis and in export's table.

No real trace with many conflicts is in ../shared/logs/recorder, so one is written (tests/support/recordertools.py,
Recorder 2.4's layout): RANKS ranks, ITER iterations of `pwrite` of 4 KiB at offset (k // 2) * 4 KiB, `fsync`
and `MPI_Barrier`: every two ranks' writes of one iteration conflict unsynchronised, and those of iterations
k and k + 1 conflict across a fsync + barrier (synchronised under POSIX and commit).

    IOLENS_LOGS=/work/shared/logs python bench/bench_recorder_conflicts.py --ranks 4 --iterations 10000
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
PATH = "/scratch/bench/shared.dat"


def rank_calls(rank: int, iterations: int) -> list:
    out = []
    for k in range(iterations):
        t = k * 1e-3 + rank * 2e-4
        out += [("pwrite", 0, [PATH, "%p", "4096", str((k // 2) * 4096)], t, t + 1e-4),
                ("fsync", 0, [PATH], k * 1e-3 + 9e-4, k * 1e-3 + 9.2e-4),
                ("MPI_Barrier", 0, ["MPI_COMM_WORLD"], k * 1e-3 + 9.5e-4, k * 1e-3 + 9.9e-4)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=10_000)
    args = ap.parse_args()
    from support.recordertools import write_trace

    import iolens
    from iolens.analysis.conflicts import log_conflicts
    from iolens.analysis.diagnosis import conflicts as check
    from iolens.analysis.diagnosis.context import Context
    from iolens.analysis.diagnosis.thresholds import Thresholds

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_trace(Path(tmp) / "t", LOGS / "recorder" / "shared_header",
                             [rank_calls(r, args.iterations) for r in range(args.ranks)])
        t0 = time.perf_counter()
        trace = iolens.read(folder)
        calls, segments = trace.calls, trace.segments
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        posix, pairs, _ = log_conflicts(trace)
        t_all = time.perf_counter() - t0
        t0 = time.perf_counter()
        posix, bare, _ = log_conflicts(type("Bare", (), {"segments": segments})())  # the sweep alone
        t_sweep = time.perf_counter() - t0
        t0 = time.perf_counter()
        insights = check.check(Context(trace, Thresholds()))
        t_check = time.perf_counter() - t0
    classified = pairs.filter(pl.col("synchronised_POSIX").is_not_null()).height
    print(f"load {os.getloadavg()[0]:.1f}; {args.ranks} ranks, {calls.height:,} calls, {segments.height:,} segments")
    print(f"read (calls + segments)          {t_read:7.2f} s")
    print(f"sweep alone                      {t_sweep:7.2f} s   {bare.height:,} pairs")
    print(f"sweep + per-model classification {t_all:7.2f} s   {classified:,} pairs classified "
          f"({(t_all - t_sweep) / max(classified, 1) * 1e6:.0f} µs each)")
    print(f"CONFLICT check (diagnosis)       {t_check:7.2f} s   {len(insights)} insights: "
          + ", ".join(f"{i.severity} {i.evidence.metrics['pairs']:,}" for i in insights))


if __name__ == "__main__":
    main()
