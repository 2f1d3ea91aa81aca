#!/usr/bin/env python3
"""Dump `iolens diagnose --json` of every shared log to a folder, and time `diagnose(log)` per log.

A guard for speed work on the diagnosis: run it on the unchanged code as the reference, then after each change,
and diff the folders. The JSON is what `iolens diagnose --json LOG` prints (same dict, same `json.dumps`
arguments), computed in-process so that the whole corpus takes seconds, not a process start per log.

    /work/venv/bin/python bench/diagnose_snapshot.py /tmp/diag-ref                 # reference, before a change
    /work/venv/bin/python bench/diagnose_snapshot.py /tmp/diag-new --diff /tmp/diag-ref
    /work/venv/bin/python bench/diagnose_snapshot.py /tmp/diag-new --skip-large --repeat 5   # per-log timing
    IOLENS_THREADS=1 /work/venv/bin/python bench/diagnose_snapshot.py /tmp/diag-new --skip-large --fresh --repeat 5
    /work/venv/bin/python bench/diagnose_snapshot.py /tmp/diag-ref-s --sensitive    # every check reports

A difference is printed and makes the exit status 1 unless it is one the unchanged code also shows between two
runs (polars' hash seeds vary): the order of tied ranks or files, which tied ranks or files made a cut-off
evidence list, and OST_IMBALANCE's `lustre_bytes` (a float sum over OSTs met in group-by order, printed as an
integer or rounded depending on its last bits). Those are counted apart.

Logs: every `*.darshan` under --logs (public/, generated/, generated2/, pairs/), every Recorder trace folder
under recorder/, and every folder of dftracer/ and workflows/ as `iolens.open` reads it (a DFTracer trace, or one
job's Darshan logs merged: where processes of several roles are compared, or not). Prints the per-log diagnosis time (best of --repeat, read excluded) over the small logs
(< 2 MiB, as in the fleet corpus) and the slowest logs.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_LOGS = Path(os.environ.get("IOLENS_LOGS") or next(
    (p for p in (REPO.parent / "shared" / "logs", REPO.parent.parent / "shared" / "logs") if p.is_dir()),
    REPO.parent / "shared" / "logs"))  # from /work/main or from a worktree under /work/wt
SMALL_BYTES = 2 << 20
# --sensitive: thresholds so low that nearly every check reports and builds its evidence, so that the
# comparison covers the code paths that default thresholds leave quiet on these logs
SENSITIVE = {"small_min_ops": 1, "small_min_share": 0.01, "misaligned_min_ops": 1, "misaligned_min_share": 0.01,
             "misaligned_min_bytes": 1, "random_min_ops": 1, "random_min_share": 0.01, "imbalance_ratio": 1.1,
             "imbalance_min_bytes": 1, "single_aggregator_min_ranks": 2, "straggler_min_delay": 0.001,
             "straggler_min_delay_share": 0.01, "serialized_min_share": 0.2, "no_collective_min_ops": 1,
             "no_collective_min_share": 0.01, "no_collective_min_ops_per_rank": 1, "sieving_min_share": 0.01,
             "sieving_min_bytes": 1, "hdf5_meta_min_share": 0.01, "lustre_large_file_bytes": 1,
             "ost_imbalance_ratio": 1.1, "ost_min_bytes": 1, "slow_ost_ratio": 1.1, "slow_ost_min_files": 1,
             "metadata_min_share": 0.01, "tiny_files_min": 1, "tiny_files_min_share": 0.01, "redundant_ratio": 1.01,
             "redundant_min_bytes": 1, "fsync_min_count": 1, "fsync_per_write": 0.001, "stdio_min_share": 0.01,
             "stdio_min_bytes": 1, "min_stake_floor": 0.0, "min_runtime_share": 0.0, "min_io_time_share": 0.0}


def sensitive() -> dict:
    """SENSITIVE, less the thresholds of findings this tree does not have (a tree before one was added)."""
    from iolens.analysis.diagnosis import DEFINITIONS

    known = {t.name for t in DEFINITIONS}
    return {k: v for k, v in SENSITIVE.items() if k in known}


def shared_logs(root: Path) -> list:
    logs = sorted(p for p in root.rglob("*.darshan") if p.is_file())
    rec = root / "recorder"
    if rec.is_dir():
        logs += sorted(p for p in rec.iterdir() if (p / "recorder.mt").is_file())
    for jobs in ("dftracer", "workflows"):  # DFTracer traces and job folders (iolens.open)
        if (root / jobs).is_dir():
            logs += sorted(p for p in (root / jobs).iterdir() if p.is_dir())
    return logs


def snapshot_name(root: Path, path: Path) -> str:
    return str(path.relative_to(root)).replace(os.sep, "__") + ".json"


def diagnose_json(log, label: str, thresholds=None) -> str:
    """The text `iolens diagnose --json` prints for `log` (cli/diagnose.py + cli/common.emit_json)."""
    from iolens.analysis.diagnosis import diagnose
    from iolens.analysis.diagnosis.insight import SCHEMA_VERSION
    from iolens.cli.common import _default

    insights = [i.to_dict() for i in diagnose(log, thresholds)]
    return json.dumps({"log": label, "schema_version": SCHEMA_VERSION, "insights": insights}, indent=2,
                      default=_default, allow_nan=False)


UNSTABLE_KEYS = ("lustre_bytes",)


def canonical(value, truncated: bool = False):
    """`value` with every list of scalars sorted: the diagnosis lists tied ranks and files in the order a
    polars group-by or sort met them, which varies between runs of the same code (hash seeds). With
    `truncated`, evidence lists of ranks and files become their length (when ties straddle the cut at
    MAX_RANKS/MAX_FILES even the members vary between two runs of unchanged code) and UNSTABLE_KEYS go."""
    if isinstance(value, dict):
        return {k: (len(v) if truncated and k in ("ranks", "files") and isinstance(v, list)
                    else canonical(v, truncated)) for k, v in value.items()
                if not (truncated and k in UNSTABLE_KEYS)}
    if isinstance(value, list):
        items = [canonical(v, truncated) for v in value]
        if all(isinstance(v, (int, float, str)) for v in items):
            return sorted(items, key=lambda v: (str(type(v)), v))
        return items
    return value


def best_time(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        runs.append(time.process_time() - t)
    return min(runs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for one JSON file per log")
    ap.add_argument("--logs", type=Path, default=DEFAULT_LOGS)
    ap.add_argument("--diff", type=Path, help="reference folder: print every difference, exit 1 if any")
    ap.add_argument("--repeat", type=int, default=1, help="time diagnose(log) as the best of this many runs")
    ap.add_argument("--fresh", action="store_true",
                    help="time read + diagnose of a freshly read log (what `iolens fleet build` pays per log) "
                         "instead of diagnose(log) on a log whose tables are already built")
    ap.add_argument("--sensitive", action="store_true", help="diagnose with near-zero thresholds (SENSITIVE)")
    ap.add_argument("--skip-large", action="store_true", help="only logs under 2 MiB (and the Recorder traces)")
    args = ap.parse_args(argv)

    import iolens
    from iolens.analysis.diagnosis import diagnose
    from iolens.errors import LogError

    warnings.simplefilter("ignore")
    args.out.mkdir(parents=True, exist_ok=True)
    small_ms, all_ms, differ, order_only, ties_cut, failed = [], [], [], [], [], []
    small_dxt, small_counters = [], []
    for path in shared_logs(args.logs):
        small = path.is_dir() or path.stat().st_size < SMALL_BYTES
        if args.skip_large and not small:
            continue
        name = snapshot_name(args.logs, path)
        try:
            log = iolens.open(str(path)) if path.is_dir() else iolens.read(str(path))
        except LogError as exc:  # logs the reader refuses (documented in the folders' READMEs)
            text = json.dumps({"log": str(path.relative_to(args.logs)), "error": str(exc)})
        else:
            thresholds = sensitive() if args.sensitive else None
            text = diagnose_json(log, str(path.relative_to(args.logs)), thresholds)
            if args.fresh:
                ms = 1000 * best_time(lambda: diagnose(iolens.open(str(path)), thresholds), args.repeat)
            else:
                ms = 1000 * best_time(lambda: diagnose(log, thresholds), args.repeat)
            all_ms.append((ms, name))
            if small:
                small_ms.append(ms)
                (small_dxt if log.has_dxt else small_counters).append(ms)
        (args.out / name).write_text(text + "\n")
        if args.diff:
            ref = args.diff / name
            if not ref.exists():
                failed.append(name)
            elif ref.read_text() != text + "\n":
                before, after = json.loads(ref.read_text()), json.loads(text)
                if canonical(before) == canonical(after):
                    order_only.append(name)
                    continue
                if canonical(before, True) == canonical(after, True):
                    ties_cut.append(name)
                    continue
                differ.append(name)
                sys.stdout.writelines(difflib.unified_diff(ref.read_text().splitlines(True),
                                                           (text + "\n").splitlines(True), str(ref), name, n=1))
    what = "read + diagnose" if args.fresh else "diagnose(log)"
    print(f"{len(all_ms)} logs diagnosed; {len(small_ms)} small (< 2 MiB or Recorder): {what} CPU "
          f"mean {statistics.mean(small_ms):.2f} ms, median {statistics.median(small_ms):.2f} ms, "
          f"total {sum(small_ms) / 1000:.2f} s (best of {args.repeat}); load average {os.getloadavg()[0]:.1f}")
    print(f"  of which {len(small_counters)} without a DXT trace: mean {statistics.mean(small_counters):.2f} ms, "
          f"median {statistics.median(small_counters):.2f} ms; {len(small_dxt)} with one: mean "
          f"{statistics.mean(small_dxt):.2f} ms, median {statistics.median(small_dxt):.2f} ms")
    print("slowest: " + ", ".join(f"{n[:-5]} {ms:.0f} ms" for ms, n in sorted(all_ms, reverse=True)[:5]))
    if args.diff:
        print(f"differences from {args.diff}: {len(differ)} logs" + (f" ({', '.join(differ[:10])}{' ...' if len(differ) > 10 else ''})" if differ else "")
              + f"; {len(order_only)} more differ only in the order of tied ranks/files, {len(ties_cut)} only in which"
              " tied ranks/files made the evidence list or in UNSTABLE_KEYS" + (f" ({', '.join(ties_cut)})" if ties_cut else "")
              + (f"; missing from the reference: {', '.join(failed)}" if failed else ""))
        return 1 if differ or failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
