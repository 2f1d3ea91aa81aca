#!/usr/bin/env python3
"""Expected against measured saving on the shared before/after pairs (../shared/logs/pairs, README there).

Expected: what the base log's diagnosis says its recommendations save (`expected_saving`, the largest of each
insight's recommendations). Measured: the change of the slowest rank's I/O time from the base log to the
other (`run_metrics(log)["io_time"]`, the measure `iolens compare` and `iolens tune` judge by). The insights
the pair's change addresses are marked (*): their expectation is the one to hold against the measurement.

    /work/venvs/NAME/bin/python bench/bench_expected_saving.py [--logs DIR]
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_LOGS = Path(os.environ.get("IOLENS_LOGS") or REPO.parent.parent / "shared" / "logs")

# (base, other, what changed, the insights that change addresses): from pairs/README.md
PAIRS = (
    ("small_indep", "small_coll", "independent small writes -> collective with cb_nodes=2",
     ("NO_COLLECTIVE_IO", "SMALL_IO")),
    ("shifted", "aligned", "64 KiB writes 4,000 B past a boundary -> 4 MiB aligned writes",
     ("MISALIGNED_IO", "SMALL_IO")),
    ("repeat_1", "repeat_2", "nothing (same program twice)", ()),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=Path, default=DEFAULT_LOGS)
    args = ap.parse_args(argv)
    import iolens
    from iolens.analysis.diagnosis import diagnose
    from iolens.analysis.runs import run_metrics

    warnings.simplefilter("ignore")
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'base -> other':28} {'insight':18} {'expected':>10} {'measured':>10}  change")
    for base, other, change, addressed in PAIRS:
        b = iolens.read(str(args.logs / "pairs" / f"{base}.darshan"))
        o = iolens.read(str(args.logs / "pairs" / f"{other}.darshan"))
        measured = run_metrics(b)["io_time"] - run_metrics(o)["io_time"]
        rows = []
        for i in diagnose(b):
            savings = [r.expected_saving for r in i.recommendations if r.expected_saving is not None]
            if savings:
                rows.append((i.code, max(savings)))
        expected = max((s for c, s in rows if c in addressed), default=0.0)
        label = f"{base} -> {other}"
        print(f"{label:28} {'(addressed)':18} {expected * 1e3:8.1f}ms {measured * 1e3:8.1f}ms  {change}")
        for code, s in rows:
            mark = "*" if code in addressed else " "
            print(f"{'':28} {mark}{code:17} {s * 1e3:8.1f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
