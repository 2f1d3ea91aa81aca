#!/usr/bin/env python3
"""How long `iolens diagnose` takes on a log of about 5 M traced operations (issue 8: under 3 s).

No real log that large is in ../shared/logs, so one is written by code: scale_1p6M (16 ranks, 1.6 M DXT_POSIX
operations) with its DXT records replicated onto new ranks (16 more per copy, `nprocs` raised to match)
until the trace holds at least --ops operations. Offsets, sizes and times are the real ones.

    /work/venv/bin/python bench/bench_diagnose.py                 # read, diagnose, file_patterns: best of 3
    /work/venv/bin/python bench/bench_diagnose.py --ops 5e6 --repeat 3 --keep /tmp/scale_5M.darshan  # reused if present

Prints the time of `iolens.read` and of `diagnose(log)` (each insight check included) separately, and the
diagnosis time per million operations.
"""
from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
DEFAULT_LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
NPROCS_OFFSET = 40  # int64 nprocs in the 3.41 job struct (../shared/docs/darshan-log-format.md §4)


def write_replicated(src: Path, dst: Path, ops: int) -> int:
    from support.dxt_writer import DxtRecord, dxt_records, set_dxt_records
    from support.logtools import read_parts, write_parts

    parts = read_parts(src)
    if parts.version < "3.41":
        raise SystemExit(f"{src}: expected a 3.41 log")
    bo = parts.byte_order
    nprocs = struct.unpack_from(bo + "q", parts.job, NPROCS_OFFSET)[0]
    base = dxt_records(parts, "DXT_POSIX")
    # each copy goes past the end of the previous one: more ranks writing more of the file, not re-writes
    span = max(s.offset + s.length for r in base for s in (*r.writes, *r.reads))
    records, total, copy = [], 0, 0
    while total < ops:
        for r in base:
            if total >= ops:
                break
            shift = copy * span
            records.append(DxtRecord(r.file_id, r.rank + copy * nprocs, r.shared, r.hostname,
                                     [s._replace(offset=s.offset + shift) for s in r.writes],
                                     [s._replace(offset=s.offset + shift) for s in r.reads]))
            total += len(r.writes) + len(r.reads)
        copy += 1
    set_dxt_records(parts, "DXT_POSIX", records)
    job = bytearray(parts.job)
    struct.pack_into(bo + "q", job, NPROCS_OFFSET, nprocs * copy)
    parts.job = bytes(job)
    write_parts(parts, dst)
    return total


def best(fn, repeat):
    """(best wall time, CPU time of that run, result): on a shared machine the CPU time of the process says
    more than the wall time about what a quiet machine would take."""
    runs, out = [], None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        runs.append((time.perf_counter() - t, time.process_time() - c))
    wall, cpu = min(runs)
    return wall, cpu, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=Path, default=DEFAULT_LOGS)
    ap.add_argument("--ops", type=float, default=5e6, help="traced operations in the written log")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="write the log here (kept) instead of a temporary file")
    args = ap.parse_args(argv)

    import iolens
    from iolens.analysis.access import file_patterns
    from iolens.analysis.diagnosis import diagnose

    with tempfile.TemporaryDirectory() as tmp:
        dst = args.keep or Path(tmp) / "scale_5M.darshan"
        if args.keep and args.keep.exists():
            print(f"reusing {dst} (delete it to write it again)", file=sys.stderr)
        else:
            t = time.perf_counter()
            n = write_replicated(args.logs / "generated" / "scale_1p6M.darshan", dst, int(args.ops))
            print(f"wrote {dst} ({dst.stat().st_size / 1e6:.1f} MB, {n:,} DXT operations) in "
                  f"{time.perf_counter() - t:.1f} s", file=sys.stderr)
        t_read, c_read, log = best(lambda: iolens.read(str(dst)), args.repeat)
        n = log.segments.height
        t_diag, c_diag, insights = best(lambda: diagnose(log), args.repeat)
        t_pat, c_pat, pats = best(lambda: file_patterns(log), args.repeat)
    print(f"operations: {n:,}  ranks: {log.job.get('nprocs')}  load average: {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    print(f"iolens.read:        wall {t_read:.2f} s  cpu {c_read:.2f} s  (best of {args.repeat})")
    print(f"diagnose(log):      wall {t_diag:.2f} s  cpu {c_diag:.2f} s  ({t_diag / (n / 1e6):.2f} s wall per M operations)")
    print(f"read + diagnose:    wall {t_read + t_diag:.2f} s  cpu {c_read + c_diag:.2f} s")
    print(f"file_patterns(log): wall {t_pat:.2f} s  cpu {c_pat:.2f} s")
    print("insights: " + ", ".join(f"{i.code}/{i.severity}" for i in insights))
    print("patterns: " + ", ".join(f"{r['layer']}:{r['pattern']}" for r in pats.iter_rows(named=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
