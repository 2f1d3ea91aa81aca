"""Benchmark `iolens tune`'s own cost: per run, beyond the command; and the model over 10^5 configurations.

    python bench/bench_tune.py              # a 20-run study and 5 model repeats
    python bench/bench_tune.py --runs 12

1. Cost per run beyond the command: a study of `--runs` runs of a command that does nothing (`true`) under
   the test stand-in of libdarshan.so (tests/support/darshan_stand_in.py: it copies a real 8-rank log where Darshan
   writes), timed in-process: (the whole `iolens.tune(...)` call − the runs' own wall times) / runs.
   The runs' wall time covers process start, the preload and moving the log (what `iolens run` costs too);
   the rest is tune: study storage, reading each log and measuring it, the model, the page.
2. Model fit + prediction: the issue's 13,440-configuration space (14 alignments × 10 stripe counts ×
   8 stripe sizes × 12 cb_nodes) and a 363,000-configuration one (predicted over a 10^5 sample): basis,
   grid, least squares on 30 runs and the choice of the next configuration.

Targets (issue 17): ≤ 0.3 s per run; ≤ 1 s for fit + prediction over 10^5 configurations.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
sys.path.insert(0, str(REPO / "tests"))


def stand_in(work: Path) -> Path:
    from support.darshan_stand_in import build_stand_in

    return build_stand_in(work)


def cost_per_run(runs: int) -> dict:
    import optuna  # noqa: F401  (imports are paid once per study, not per run: not counted)

    import iolens
    import iolens.analysis.diagnosis  # noqa: F401
    import iolens.views.html.tune  # noqa: F401

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["IOLENS_DARSHAN_LIB"] = str(stand_in(work))
        os.environ["IOLENS_TEST_LOG"] = str(LOGS / "generated" / "collective_2phase.darshan")
        (work / "space.toml").write_text("[romio]\ncb_nodes = [1, 2, 4, 8]\ncb_buffer_size = "
                                         "{min = \"1MiB\", max = \"64MiB\"}\n[env]\nX = [\"a\", \"b\"]\n")
        began = time.perf_counter()
        result = iolens.tune(["true"], budget=runs, space=str(work / "space.toml"), output=str(work / "study"))
        total = time.perf_counter() - began
        import polars as pl

        walls = pl.read_parquet(work / "study" / "trials.parquet")["wall"].sum()
    return {"runs": result["runs"], "total": total, "command": walls, "per_run": (total - walls) / result["runs"]}


def model_time(sizes: list, repeats: int) -> list:
    from iolens.tune import model, space

    out = []
    for knobs in sizes:
        sp = space.Space([space.Dimension(n, v) for n, v in knobs])
        times = []
        for r in range(repeats):
            began = time.perf_counter()
            grid = sp.grid()
            basis = model.Basis.of(sp, bytes_moved=1 << 34)
            rng = np.random.default_rng(r)
            tried = grid[rng.choice(len(grid), 30, replace=False)]
            y = rng.uniform(1, 10, 30)
            fitted = model.fit(basis, tried, y)
            model.choose(fitted, basis, grid, [len(k.values) for k in sp.knobs],
                         {tuple(map(int, t)) for t in tried}, float(y.min()))
            times.append(time.perf_counter() - began)
        out.append({"size": sp.size, "predicted": len(grid), "median": statistics.median(times), "max": max(times)})
    return out


ISSUE_SPACE = [("arg.ALIGN", [1 << k for k in range(10, 24)]),
               ("romio.striping_factor", [1, 2, 4, 8, 16, 24, 32, 48, 64, 96]),
               ("romio.striping_unit", [1 << k for k in range(16, 24)]),
               ("romio.cb_nodes", [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16])]
LARGE_SPACE = [("romio.cb_nodes", list(range(1, 101))), ("romio.cb_buffer_size", [1 << k for k in range(16, 27)]),
               ("romio.striping_factor", [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]),
               ("romio.striping_unit", [1 << k for k in range(16, 27)]), ("env.X", ["a", "b", "c"])]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), cores: {os.cpu_count()}")
    c = cost_per_run(args.runs)
    print(f"tune's own cost per run: {c['per_run']:.3f} s  ({c['runs']} runs; whole study {c['total']:.2f} s, "
          f"of which the runs {c['command']:.2f} s)")
    for m in model_time([ISSUE_SPACE, LARGE_SPACE], args.repeats):
        print(f"model fit + prediction: {m['size']:,} configurations, {m['predicted']:,} predicted: "
              f"median {m['median']:.3f} s, max {m['max']:.3f} s ({args.repeats} repeats)")
    assert math.isfinite(c["per_run"])


if __name__ == "__main__":
    main()
