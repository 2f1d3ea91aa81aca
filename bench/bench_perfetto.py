"""Benchmark `iolens export --format perfetto|chrome-json` and the CONFLICT sweep.

    /work/venv/bin/python bench/bench_perfetto.py

1. Export of scale_1p6M (1.6 M operations) end to end (a fresh `iolens export` process: read, lay out,
   write), for both formats, with the file sizes; beside it the `perfetto` package's TraceProtoBuilder
   building the same slices (one Python message per packet) on the first 100,000 operations, extrapolated.
2. The conflict sweep (`find_conflicts` + `conflict_ranges`) on generated 5 M-operation segment tables: 64
   ranks in 1 KiB slots with no overlap, and the same with 10% of the writes spilling into the next rank's slot
   (≈500,000 cross-rank pairs), and on the POSIX segments of scale_1p6M.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
SCALE = LOGS / "generated/scale_1p6M.darshan"


def export_times() -> list:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, suffix in (("perfetto", ".pftrace"), ("chrome-json", ".json")):
            out = Path(tmp) / f"t{suffix}"
            began, cpu = time.perf_counter(), _children_cpu()
            subprocess.run([sys.executable, "-m", "iolens.cli.main", "export", str(SCALE), "-o", str(out),
                            "--format", fmt, "-q"], check=True, capture_output=True)
            rows.append((fmt, time.perf_counter() - began, _children_cpu() - cpu, out.stat().st_size))
    return rows


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def builder_time(n: int = 100_000) -> float:
    """Seconds the perfetto package's TraceProtoBuilder takes for n slices (begin + end packets, same args)."""
    import iolens
    from perfetto.trace_builder.proto_builder import TraceProtoBuilder

    seg = iolens.read(str(SCALE)).segments.head(n)
    began = time.perf_counter()
    builder = TraceProtoBuilder()
    for rank, op, offset, length, start, end in seg.select("rank", "op", "offset", "length", "start", "end").iter_rows():
        p = builder.add_packet()
        p.timestamp = round(start * 1e9)
        p.trusted_packet_sequence_id = 1
        p.track_event.type = 1
        p.track_event.track_uuid = rank + 100
        p.track_event.name = op
        for name, value in (("offset", offset), ("length", length)):
            a = p.track_event.debug_annotations.add()
            a.name, a.int_value = name, value
        a = p.track_event.debug_annotations.add()
        a.name, a.string_value = "file", "/scratch/file"
        p = builder.add_packet()
        p.timestamp = round(end * 1e9)
        p.trusted_packet_sequence_id = 1
        p.track_event.type = 2
        p.track_event.track_uuid = rank + 100
    builder.serialize()
    return time.perf_counter() - began


def generated_segments(n: int, spill: float, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    ranks = 64
    slot = np.arange(n, dtype=np.int64)
    rank = slot % ranks
    offset = slot * 1024 + (3 << 30)  # above 2 GiB: 64-bit offsets
    length = np.full(n, 1024, dtype=np.int64)
    length[rng.random(n) < spill] += 512  # spills into the next rank's slot
    start = (slot // ranks) * 1e-4 + rng.random(n) * 5e-5
    return pl.DataFrame({"file_id": pl.Series(np.ones(n, dtype=np.uint64)), "rank": rank,
                         "op": pl.Series(np.where(rng.random(n) < 0.8, "write", "read"), dtype=pl.Enum(["write", "read"])),
                         "offset": offset, "length": length, "start": start, "end": start + 4e-5})


def conflict_times() -> list:
    import iolens
    from iolens.analysis.conflicts import conflict_ranges, find_conflicts

    cases = [("generated 5 M ops, no overlap", generated_segments(5_000_000, 0.0)),
             ("generated 5 M ops, 10% spill", generated_segments(5_000_000, 0.1)),
             ("scale_1p6M POSIX segments", iolens.read(str(SCALE)).segments.filter(pl.col("module") == "DXT_POSIX"))]
    rows = []
    for name, seg in cases:
        began, cpu = time.perf_counter(), time.process_time()
        pairs = find_conflicts(seg)
        ranges = conflict_ranges(pairs)
        rows.append((name, seg.height, pairs.height, ranges.height, time.perf_counter() - began,
                     time.process_time() - cpu))
    return rows


def main() -> None:
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(CPU seconds include every thread of the process)\n")
    print("| export of scale_1p6M (1.6 M ops) | wall s (end to end) | CPU s | size |")
    print("|---|---|---|---|")
    for fmt, seconds, cpu, size in export_times():
        print(f"| iolens export --format {fmt} | {seconds:.2f} | {cpu:.2f} | {size / 2**20:.0f} MiB |")
    n = 100_000
    b = builder_time(n)
    print(f"| perfetto TraceProtoBuilder, first {n:,} ops (slices only) | {b:.2f} (≈{b * 16:.0f} for 1.6 M) | — | — |")
    print()
    print("| conflict sweep | operations | cross-rank pairs | merged ranges | wall s | CPU s |")
    print("|---|---|---|---|---|---|")
    for name, n_ops, pairs, ranges, seconds, cpu in conflict_times():
        print(f"| {name} | {n_ops:,} | {pairs:,} | {ranges:,} | {seconds:.2f} | {cpu:.2f} |")


if __name__ == "__main__":
    main()
