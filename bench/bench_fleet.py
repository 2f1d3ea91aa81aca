"""Bench: `iolens fleet build` against PyDarshan's `job_stats` on the same corpus of ≥ 10,000 logs, one run.

    python bench/bench_fleet.py [--logs 10000] [--corpus /tmp/iolens-fleet-corpus] [--skip-diagnose] [--rounds 3]

The corpus is made under /tmp (never in the repo): symbolic links to the small shared logs (every log under
../shared/logs smaller than 2 MiB that PyDarshan reads), each under its own path in Darshan's YYYY/M/D
layout, so every link is a distinct log to both tools. The OS page cache holds the few real files: this
times parsing and computing, not the disk.

Timed, each from a cold start of its process, on the same corpus:
  * PyDarshan `python -m darshan job_stats --log_paths_file LIST` (its process pool, POSIX totals only);
  * `iolens fleet build LIST -o STORE --no-diagnose` (features only);
  * `iolens fleet build LIST -o STORE` (features and the diagnosis: the default).
job_stats is timed again right before each build (the machine's speed drifts over minutes: a ratio compares
runs close in time); `--rounds N` repeats every pair and prints the ratios' median.
Each iolens build also reports its per-log cost by stage (read, features, diagnosis, Parquet), summed over
workers, and its peak resident memory (largest worker).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
if not LOGS.is_dir():
    LOGS = Path("/work/shared/logs")
MAX_SIZE = 2 << 20


def sources() -> list:
    """Small real logs both tools read (PyDarshan is asked once per candidate, outside the timing)."""
    import darshan

    out = []
    for p in sorted(LOGS.glob("**/*.darshan")):
        if p.stat().st_size > MAX_SIZE:
            continue
        try:
            with darshan.DarshanReport(str(p), read_all=False) as r:
                if "POSIX" not in r.modules:
                    continue
        except Exception:  # noqa: BLE001 - a log PyDarshan cannot read is no use for a side-by-side timing
            continue
        out.append(p)
    return out


def make_corpus(root: Path, n: int, src: list) -> Path:
    if root.exists():
        shutil.rmtree(root)
    paths = []
    for i in range(n):
        p = src[i % len(src)]
        d = root / "2026" / str(1 + i // 2000) / str(1 + (i // 100) % 20)
        d.mkdir(parents=True, exist_ok=True)
        link = d / f"{i:06d}_{p.name}"
        link.symlink_to(p)
        paths.append(str(link))
    listing = root / "logs.txt"
    listing.write_text("\n".join(paths) + "\n")
    return listing


def timed(cmd: list, env=None) -> tuple:
    began = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    seconds = time.perf_counter() - began
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return seconds, r.stdout


def iolens_build(listing: Path, store: Path, n: int, extra: list) -> dict:
    if store.exists():
        shutil.rmtree(store)
    seconds, out = timed([sys.executable, "-m", "iolens.cli.main", "fleet", "build", str(listing), "-o", str(store),
                          "--json", *extra], env={"PYTHONPATH": str(REPO / "src")})
    summary = json.loads(out)
    assert summary["added"] + summary["errors"] == n, summary
    summary["wall"] = seconds
    return summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", type=int, default=10_000)
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/iolens-fleet-corpus"))
    ap.add_argument("--skip-diagnose", action="store_true", help="Skip the (slow) default build with diagnosis.")
    ap.add_argument("--rounds", type=int, default=1, help="Time each pair (job_stats, then a build) this many times.")
    args = ap.parse_args()
    src = sources()
    listing = make_corpus(args.corpus, args.logs, src)
    n = args.logs
    print(f"corpus: {n:,} links to {len(src)} small shared logs under {args.corpus} ({os.cpu_count()} cores); "
          f"load average {os.getloadavg()[0]:.1f}")

    runs = [("iolens fleet build --no-diagnose", ["--no-diagnose"])]
    if not args.skip_diagnose:
        runs.append(("iolens fleet build (diagnosis)", []))
    ratios = {label: [] for label, _ in runs}
    for round_ in range(1, args.rounds + 1):
        # each round times job_stats right before each build: the machine's speed drifts over minutes, so a
        # ratio is only fair between runs close in time
        if args.rounds > 1:
            print(f"round {round_} (load average {os.getloadavg()[0]:.1f})")
        for label, extra in runs:
            js, _ = timed([sys.executable, "-m", "darshan", "job_stats", "--log_paths_file", str(listing), "--csv"])
            print(f"  PyDarshan job_stats:              {js:7.1f} s  {n / js:7.0f} logs/s")
            s = iolens_build(listing, args.corpus.parent / (args.corpus.name + "-store"), n, extra)
            rate = n / s["wall"]
            ratios[label].append(rate / (n / js))
            per_log = {k: 1e3 * v / n for k, v in s["timing"].items()}
            stages = ", ".join(f"{k} {v:.2f}" for k, v in per_log.items())
            print(f"  {label}: {s['wall']:7.1f} s  {rate:7.0f} logs/s  = {rate / (n / js):5.2f}x job_stats"
                  f"  | per log (ms of worker time): {stages}; {s['parts']} parts, {s['errors']} errors")
    if args.rounds > 1:
        for label, r in ratios.items():
            print(f"{label}: x job_stats by round {', '.join(f'{v:.2f}' for v in r)}; median {statistics.median(r):.2f}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"largest child process of the run (PyDarshan included) resident memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
