"""Bench: re-evaluating the rule codes over 10^6 jobs' stored features (`fleet report -t`, issue #20 item 3).

    python bench/bench_fleet_rules.py [--jobs 1000000] [--store]

The jobs are the shared logs' rows of a diagnosed store (built once in-process), repeated under distinct paths
up to --jobs. Timed: `fleet.insights.with_insights` (every rule code's insight column, the headline merged with
the per-log one, the insight count, titles for the 50 top jobs) under the default thresholds and under a share,
a count and a size threshold. With --store the rows are also written to a Delta table under /tmp and the
timing includes reading it back (`fleet_store.read`, every column, as `fleet report` does). Prints wall
seconds and the load average.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src")]
LOGS = Path(os.environ.get("IOLENS_LOGS", "/work/shared/logs"))
SETTINGS = ({}, {"small_min_share": "30%"}, {"small_min_ops": "50"}, {"small_request_bytes": "64KiB"},
            {"small_request_bytes": "1MiB", "min_io_time_share": "5%"})


def main():
    from iolens.analysis.diagnosis import Thresholds
    from iolens.fleet import store as fleet_store
    from iolens.fleet.build import build
    from iolens.fleet.recompute import with_thresholds

    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--store", action="store_true", help="also write a Delta store and time reading it")
    args = ap.parse_args()
    base = Path("/tmp/iolens-fleet-rules")
    shutil.rmtree(base, ignore_errors=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build([LOGS], base / "seed", scheduler="sync")
    seed = fleet_store.read(base / "seed", "jobs")
    reps = -(-args.jobs // seed.height)
    big = pl.concat([seed] * reps).head(args.jobs).with_columns(
        pl.format("/fleet/{}/{}", pl.int_range(pl.len()), pl.col("path").str.split("/").list.last()).alias("path")
    ).rechunk()  # as a store read gives it (not thousands of chunks per column)
    print(f"{big.height:,} jobs x {big.width} columns ({big.estimated_size() / 2**30:.2f} GiB in memory)")
    if args.store:
        from deltalake import write_deltalake
        write_deltalake(str(base / "big" / "jobs"), big.to_arrow(), mode="overwrite")
    for setting in SETTINGS:
        th = Thresholds(setting)
        t0 = time.perf_counter()
        jobs = fleet_store.read(base / "big", "jobs") if args.store else big
        t1 = time.perf_counter()
        out, note = with_thresholds(jobs, th)
        t2 = time.perf_counter()
        found = {c: int(out[f"insight_{c}"].is_not_null().sum()) for c in note["recomputed"]
                 if c.startswith("insight_") for c in [c[len("insight_"):]]}
        label = " ".join(f"-t {k}={v}" for k, v in setting.items()) or "(defaults)"
        read = f"read {t1 - t0:.1f} s + " if args.store else ""
        print(f"{label:55s} {read}re-evaluate {t2 - t1:.2f} s; found {found}; stale {note['stale']}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
