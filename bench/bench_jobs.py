"""Grouping many logs into jobs reads only each log's header and job region (issue 21).

    python bench/bench_jobs.py --logs 10000 [--src DIR]

Makes N symlinked copies of the real logs of DIR (default: $IOLENS_LOGS/workflows or ../shared/logs/workflows, every log there) in a
temporary folder, each named as Darshan names logs but with its own job id and pid (so they make N / len(DIR)
jobs), then times `iolens.jobs.find_jobs(folder, counters=False)` (grouping only: headers and job regions)
and, for comparison, a tenth of them with the POSIX counters read too (what `iolens jobs` does).
"""
from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

from iolens.jobs import find_jobs


def make_copies(src: Path, n: int, dst: Path) -> None:
    logs = sorted(p for p in src.rglob("*") if p.is_file() and p.name.endswith((".darshan", ".darshan_partial")))
    logs = [p for p in logs if p.stat().st_size]  # the empty one only speaks through its name
    for i in range(n):
        log = logs[i % len(logs)]
        name = re.sub(r"_id\d+-\d+_", f"_id{1000 + i // len(logs)}-{10_000 + i}_", log.name)
        os.symlink(log.resolve(), dst / f"{i:06d}_{name}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", type=int, default=10_000)
    logs = os.environ.get("IOLENS_LOGS", Path(__file__).resolve().parents[1].parent / "shared" / "logs")
    ap.add_argument("--src", default=str(Path(logs) / "workflows"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        make_copies(Path(args.src), args.logs, Path(tmp))
        t0 = time.perf_counter()
        jobs = find_jobs([tmp], counters=False)
        grouping = time.perf_counter() - t0
        tenth = sorted(Path(tmp).iterdir())[: args.logs // 10]
        t0 = time.perf_counter()
        find_jobs(tenth, counters=True)
        counted = time.perf_counter() - t0
    print(f"{args.logs} logs -> {len(jobs)} jobs, {sum(len(j.steps) for j in jobs)} steps: grouping (headers and "
          f"job regions) {grouping:.2f} s ({args.logs / grouping:,.0f} logs/s); with POSIX counters, "
          f"{len(tenth)} logs {counted:.2f} s")


if __name__ == "__main__":
    main()
