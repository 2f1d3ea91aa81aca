"""Bench: where a diagnosed `fleet build` spends its time per log, by rule code and by per-log check.

    python bench/bench_rule_features.py [--repeat 3] [--code SMALL_IO ...] [--check STRAGGLER ...]

On the fleet bench's corpus sources (every shared log < 2 MiB that PyDarshan reads, as `bench_fleet.py`
links them), each log read once; then, best of --repeat, on a fresh `Context` each time:
  * `log tables`: the `Log`'s file and counter tables, made from the reader's arrays;
  * `context`: making the log's `Context`;
  * `common`: the features every rule shares (`diagnosis.common.common_features`);
  * each rule finding's features (`RULES[code].features(ctx)`, every size-bin edge, as a fleet row), and the
    relations of the findings superseding one (`batch.feature_sources`, named "A supersedes B");
  * each finding without a rule, which the fleet still runs per log (`check:CODE`: `engine.run(finding, ctx)`);
  * `log_columns`: the whole diagnosed part of a fleet row (what `fleet build` times as "diagnosis");
  * `diagnose`: the per-log `diagnose(log)` (the rules evaluated on one-row frames, with their text).
A stage is timed after the stages before it on the same `Context`, as the fleet runs them (later stages reuse
what earlier ones memoised); `log_columns` and `diagnose` each start from a fresh `Log` of the same read.
Means in ms per log, apart for logs with and without a DXT trace. A speed change is judged by a run of this
script before and after it, back to back, with the machine's load printed beside them.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fleet import sources  # noqa: E402


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def time_log(log, th, repeat: int, codes, checks) -> dict:
    from iolens.analysis.diagnosis import FINDINGS, Context, diagnose
    from iolens.analysis.diagnosis.batch import feature_sources
    from iolens.analysis.diagnosis.common import common_features
    from iolens.analysis.diagnosis.engine import run
    from iolens.fleet.insights import log_columns
    from iolens.model import Log

    parts = [(name, features) for name, features, _ in feature_sources() if name.split(" ")[-1] in codes]

    def staged() -> dict:
        t = {}
        t0 = time.perf_counter()
        fresh = Log(log.raw)
        fresh.counters, fresh.files  # noqa: B018 - the tables every check reads, built once per log
        t["log tables"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ctx = Context(fresh, th)
        t["context"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        common_features(ctx)
        t["common"] = time.perf_counter() - t0
        for name, features in parts:
            t0 = time.perf_counter()
            try:
                features(ctx)
            except Exception:  # noqa: BLE001 - timed as the fleet runs it: a failing code still costs
                pass
            t[name] = time.perf_counter() - t0
        for code in checks:
            t0 = time.perf_counter()
            try:
                run(FINDINGS[code], ctx)
            except Exception:  # noqa: BLE001
                pass
            t["check:" + code] = time.perf_counter() - t0
        return t

    runs = [staged() for _ in range(repeat)]
    out = {k: min(r[k] for r in runs) for k in runs[0]}
    out["log_columns"] = best(lambda: log_columns(Log(log.raw), th), repeat)
    out["diagnose"] = best(lambda: diagnose(Log(log.raw), th), repeat)
    return out


def main() -> None:
    from iolens.analysis.diagnosis import FINDINGS, RULES, Thresholds
    from iolens.model import Log
    from iolens.reader.log import read_raw

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--code", action="append", help="only these rule findings' codes (default: all)")
    ap.add_argument("--check", action="append",
                    help="only these findings without a rule (codes; default: all, as the fleet runs them per log)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    codes = args.code or list(RULES)
    checks = args.check or [c for c in FINDINGS if c not in RULES]
    unknown = sorted(set(codes) - set(RULES)) + sorted(set(checks) - (set(FINDINGS) - set(RULES)))
    if unknown:
        sys.exit(f"bench_rule_features: not a rule finding / a finding without a rule: {', '.join(unknown)}")
    th = Thresholds({})
    logs = [Log(read_raw(str(p))) for p in sources()]
    results = {True: [], False: []}
    for log in logs:
        results[bool(log.has_dxt)].append(time_log(log, th, args.repeat, codes, checks))
    print(f"load average {os.getloadavg()[0]:.1f}; {len(logs)} logs; best of {args.repeat}; ms per log (mean)")
    keys = list(next(iter(results[True] or results[False])))
    width = max(map(len, keys)) + 2
    print(f"{'stage':<{width}}{'DXT':>10}{'no DXT':>10}{'all':>10}")
    for k in keys:
        cells = [statistics.mean(r[k] for r in results[h]) * 1e3 if results[h] else float("nan") for h in (True, False)]
        every = statistics.mean(r[k] for h in results for r in results[h]) * 1e3
        print(f"{k:<{width}}{cells[0]:>10.2f}{cells[1]:>10.2f}{every:>10.2f}")
    print(f"({len(results[True])} logs with DXT, {len(results[False])} without)")


if __name__ == "__main__":
    main()
