"""Bench: the fleet page with 100,000 jobs: time to write it, its size, load and brushing in Chromium.

    python bench/bench_fleet_page.py [--jobs 100000]

The jobs are the shared logs' rows (built once with `iolens fleet build`), repeated under distinct paths
with their times scaled by a random factor (0.5-2x) so the plot and the peer groups are not 800 copies of
the same points. The store is written under /tmp.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]
LOGS = Path(os.environ.get("IOLENS_LOGS", "/work/shared/logs"))


def main():
    from iolens.fleet import store as fleet_store
    from iolens.fleet.build import build
    import iolens

    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100_000)
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} (1 min) before the run")
    base = Path("/tmp/iolens-fleet-page")
    shutil.rmtree(base, ignore_errors=True)
    build([LOGS], base / "seed", scheduler="sync")
    seed = fleet_store.read(base / "seed", "jobs")
    reps = -(-args.jobs // seed.height)
    rng = np.random.default_rng(1)
    big = pl.concat([seed] * reps).head(args.jobs)
    k = pl.Series(rng.uniform(0.5, 2.0, big.height))
    big = big.with_columns(
        pl.format("/fleet/{}/{}", pl.int_range(pl.len()), pl.col("path").str.split("/").list.last()).alias("path"),
        *(pl.col(c) * k for c in ("io_time", "busy_io_time", "run_time")),
        (pl.col("bandwidth") / k), (pl.col("start_time") + pl.int_range(pl.len()) * 60.0))
    fleet_store.write_part(big, base / "big", "jobs", "part-bench-00000")
    t0 = time.perf_counter()
    info = iolens.fleet_report(base / "big", base / "fleet.html")
    t_write = time.perf_counter() - t0
    print(f"{big.height:,} jobs: page written in {t_write:.1f} s, {info['bytes'] / 2**20:.1f} MiB")

    from playwright.sync_api import sync_playwright
    from support.browser import LoadedPage, launch

    with sync_playwright() as p:
        browser = launch(p)
        page = LoadedPage(browser, base / "fleet.html")
        print(f"load to ready in Chromium: {page.load_seconds:.2f} s; console errors: {page.errors}")
        times = [page.js(f"() => {{ const t = performance.now(); window.iolens.brush('io_share', {lo}, 1.0); "
                         f"return performance.now() - t; }}") for lo in (0.2, 0.4, 0.6, 0.8, 0.0)]
        print(f"brush, timed in the page (select every job + redraw {min(len(big), 20000):,} lines + table): "
              f"median {sorted(times)[len(times) // 2]:.0f} ms, worst {max(times):.0f} ms; "
              f"selected {page.state()['selected']:,}; console errors: {page.errors}")
        browser.close()


if __name__ == "__main__":
    main()
