"""Benchmark `iolens compare` end to end on two 1.6 M-operation logs, and the comparison page's size,
beside the reference way to compare two runs today: reading both logs with PyDarshan (what darshan-diff
and scripts do) and differencing their counters.

    /work/venv/bin/python bench/bench_compare.py            # 3 repeats, median
    /work/venv/bin/python bench/bench_compare.py --repeats 1

Target (issue 9): under 4 s end to end for the terminal output.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
IOLENS = [sys.executable, "-m", "iolens.cli.main"]
PAIR = ["generated/scale_1p6M.darshan", "generated/scale_1p6M_default_cap.darshan"]

PYDARSHAN_DIFF = """
import sys, darshan
reports = [darshan.DarshanReport(p, read_all=True) for p in sys.argv[1:]]
frames = [r.records["POSIX"].to_df()["counters"].sum(numeric_only=True) for r in reports]
print((frames[1] - frames[0]).to_string()[:200])
"""


def timed(cmd: list) -> float:
    began = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed: {proc.stderr.strip()[-300:]}")
    return time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} (1 min) before the run")
    logs = [str(LOGS / p) for p in PAIR]
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "compare.html"
        rows = {
            "iolens compare (terminal)": IOLENS + ["compare", "-q", *logs],
            "iolens compare --json": IOLENS + ["compare", "--json", *logs],
            "iolens compare -o page.html": IOLENS + ["compare", "-q", "-o", str(page), *logs],
            "PyDarshan: read both + counter diff": [sys.executable, "-c", PYDARSHAN_DIFF, *logs],
        }
        times = {name: statistics.median(timed(cmd) for _ in range(args.repeats)) for name, cmd in rows.items()}
        size = page.stat().st_size
    ref = times["PyDarshan: read both + counter diff"]
    print(f"logs: {PAIR[0]} vs {PAIR[1]} (1.6 M + 0.8 M DXT operations), median of {args.repeats}\n")
    print("| what | seconds | vs PyDarshan |")
    print("|---|---|---|")
    for name, secs in times.items():
        print(f"| {name} | {secs:.2f} | {secs / ref:.2f}× |")
    print(f"\ncomparison page: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
