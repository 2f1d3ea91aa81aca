#!/usr/bin/env python3
"""Expected against measured saving on every real before/after pair of tests/data/pairs/savings.tsv.

Promised: what the base log's diagnosis says the recommendation the pair's change applies would save: among
the recommendations of the pair's codes, those making the pair's kind of change (the table's `fix`, their
`Recommendation.fix`; an empty kind: those naming none), the largest `expected_saving` (negative: the change
would cost time). "any rec" shows the largest over every recommendation of those codes, whatever its kind. Measured: the table's saving, the slowest rank's I/O time before minus after as `iolens compare --json`
measures it (`runs[].io_time`). A promise holds when it is within 1.5x of the measurement, or when both are
within the noise of two identical runs (the table's noise band); it is a false promise when it promises a
saving, however small, where the change measured a slowdown beyond noise. Issue 32's table (BENCHMARKS.md).

    python bench/bench_expected_saving.py [--logs DIR] [--sensitive] [--json]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "tests" / "data" / "pairs" / "savings.tsv"
DEFAULT_LOGS = Path(os.environ.get("IOLENS_LOGS") or next(
    (p for p in (REPO.parent / "shared" / "logs", REPO.parent.parent / "shared" / "logs") if p.is_dir()),
    REPO.parent / "shared" / "logs"))  # /work/main or a worktree under /work/wt
FACTOR = 1.5  # issue 32: a promise within 1.5x of the measurement


def read_table(path: Path = TABLE) -> list:
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def log_path(row: dict, logs: Path) -> tuple:
    root = logs if row["root"] == "IOLENS_LOGS" else REPO / row["root"]
    return root / row["base"], root / row["other"]


def promised(log, codes: list, thresholds=None, fix: str | None = None) -> tuple:
    """(largest expected saving among the recommendations of `codes` making change `fix` (None: any), the code
    it comes from, every code's). Negative savings (the change would cost time) count as they are."""
    from iolens.analysis.diagnosis import diagnose
    per_code: dict = {}
    for insight in diagnose(log, thresholds):
        if insight.code not in codes:
            continue
        savings = [r.expected_saving for r in insight.recommendations if r.expected_saving is not None
                   and (fix is None or r.fix.partition(":")[0] == fix)]
        if savings:
            per_code[insight.code] = max(per_code.get(insight.code, -float("inf")), max(savings))
    if not per_code:
        return 0.0, "", per_code
    code = max(per_code, key=per_code.get)
    return per_code[code], code, per_code


def judge(promise: float, measured: float, noise: float, codes=("?",)) -> str:
    """holds (within 1.5x, or both within noise, or no saving promised where the change was slower) / false
    promise (a saving promised, of any size, where the change measured a slowdown beyond noise) / off (anything
    else). A pair with no codes changes nothing: it only measures the noise."""
    if not codes:
        return "noise pair"
    if measured < -noise:  # slower: right only if no saving is promised (none, or a cost), however small
        return "FALSE PROMISE (slower)" if promise > 0 else "holds (no saving promised, slower)"
    if abs(promise) <= noise and abs(measured) <= noise:
        return "holds (both within noise)"
    if measured > 0 and promise > 0 and 1 / FACTOR <= promise / measured <= FACTOR:
        return "holds (within 1.5x)"
    return "off"


def evaluate(rows: list, logs: Path, thresholds=None) -> list:
    import iolens
    out = []
    for row in rows:
        base, _ = log_path(row, logs)
        codes = [c for c in row["codes"].split(",") if c]
        log = iolens.read(str(base))
        promise, code, per_code = promised(log, codes, thresholds, row.get("fix", ""))
        any_rec, _, _ = promised(log, codes, thresholds)
        measured, noise = float(row["saving"]), float(row["noise"])
        out.append({"pair": row["pair"], "ranks": int(row["ranks"]), "change": row["change"],
                    "fix": row.get("fix", ""), "any_rec": any_rec,
                    "codes": codes, "code": code, "per_code": per_code, "promised": promise,
                    "measured": measured, "noise": noise, "verdict": row["verdict"],
                    "ratio": promise / measured if measured and code else None,
                    "judgement": judge(promise, measured, noise, codes)})
    return out


def fmt_s(x: float) -> str:
    return f"{x * 1e3:+.0f} ms" if abs(x) < 1 else f"{x:+.2f} s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=Path, default=DEFAULT_LOGS, help="IOLENS_LOGS, where pairs/ and pairs2/ are")
    ap.add_argument("--table", type=Path, default=TABLE)
    ap.add_argument("--sensitive", action="store_true",
                    help="diagnose with diagnose_snapshot.py's near-zero thresholds (every check reports)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    thresholds = None
    if args.sensitive:
        sys.path.insert(0, str(REPO / "bench"))
        from diagnose_snapshot import SENSITIVE
        thresholds = SENSITIVE
    results = evaluate(read_table(args.table), args.logs, thresholds)
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
        return 0
    print(f"load average {os.getloadavg()[0]:.1f}; thresholds {'sensitive' if args.sensitive else 'default'}")
    print("| pair | ranks | change | codes | fix | promised (code) | any rec | measured | noise | ratio "
          "| verdict (measured) | promise |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        promise = f"{fmt_s(r['promised'])} ({r['code']})" if r["code"] else "none"
        any_rec = fmt_s(r["any_rec"]) if r["codes"] and r["code"] else "-"
        print(f"| {r['pair']} | {r['ranks']} | {r['change']} | {' '.join(r['codes']) or '-'} | {r['fix'] or '-'} | "
              f"{promise} | {any_rec} | {fmt_s(r['measured'])} | {r['noise'] * 1e3:.0f} ms | {ratio} | "
              f"{r['verdict']} | {r['judgement']} |")
    changes = [r for r in results if r["codes"]]
    held = sum(r["judgement"].startswith("holds") for r in changes)
    false = sum(r["judgement"].startswith("FALSE") for r in changes)
    print(f"\n{held} of {len(changes)} changes: the promise holds; {false} promise a saving where the change "
          f"was slower ({len(results) - len(changes)} noise pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
