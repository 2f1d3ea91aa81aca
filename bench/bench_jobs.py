"""Grouping many logs into jobs reads only each log's header and job region (issue 21).

    python bench/bench_jobs.py --logs 10000 [--src DIR]

Makes N copies of the real logs of DIR (default: $IOLENS_LOGS/workflows or ../shared/logs/workflows, every log
there) in a temporary folder, each copy of DIR's set carrying its own job id (in the job region, recompressed, and
in the file name), so they make N / len(DIR) jobs, then times `iolens.jobs.find_jobs(folder, counters=False)`
(grouping only: headers and job regions), `find_jobs(folder)` (the POSIX counters too: what `iolens jobs` does),
and the `iolens jobs --json` command on the whole folder.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from iolens.jobs import find_jobs
from iolens.reader.header import job_region, parse_header


def make_copies(src: Path, n: int, dst: Path) -> None:
    logs = sorted(p for p in src.rglob("*") if p.is_file() and p.name.endswith((".darshan", ".darshan_partial")))
    logs = [p for p in logs if p.stat().st_size]  # the empty one only speaks through its name
    data = [p.read_bytes() for p in logs]
    for i in range(n):
        k, jobid = i % len(logs), 1000 + i // len(logs)
        name = re.sub(r"_id\d+-", f"_id{jobid}-", logs[k].name)
        (dst / f"{i:06d}_{name}").write_bytes(with_job_id(data[k], jobid))


def with_job_id(data: bytes, jobid: int) -> bytes:
    """The log with another job id: its job region inflated, changed, deflated again, and the header's region
    offsets moved by the change of length (a header left as zeros, in an unfinished log, stays zeros)."""
    size = 1328  # log format 3.41 (Darshan 3.4+)
    if not any(data[:size]):
        start, end = size, size + _stream_length(data, size)
    else:
        header = parse_header(data, len(data))
        start, region = header.size, job_region(header, len(data))
        end = region.offset + region.length
    job = bytearray(zlib.decompress(data[start:end]))
    struct.pack_into("<q", job, 48, jobid)  # uid, start, start ns, end, end ns, nprocs, jobid
    packed = zlib.compress(bytes(job))
    head = bytearray(data[:start])
    if any(data[:size]):
        delta = len(packed) - (end - start)
        for slot in range(65):  # the name region's map, then 64 modules' (offset, length)
            off, length = struct.unpack_from("<QQ", head, 32 + 16 * slot)
            if length:
                struct.pack_into("<Q", head, 32 + 16 * slot, off + delta)
    return bytes(head) + packed + data[end:]


def _stream_length(data: bytes, start: int) -> int:
    d = zlib.decompressobj()
    d.decompress(data[start:])
    return len(data) - start - len(d.unused_data)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", type=int, default=10_000)
    logs = os.environ.get("IOLENS_LOGS", Path(__file__).resolve().parents[1].parent / "shared" / "logs")
    ap.add_argument("--src", default=str(Path(logs) / "workflows"))
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} (1 min) before the run")
    with tempfile.TemporaryDirectory() as tmp:
        make_copies(Path(args.src), args.logs, Path(tmp))
        t0 = time.perf_counter()
        jobs = find_jobs([tmp], counters=False)
        grouping = time.perf_counter() - t0
        t0 = time.perf_counter()
        find_jobs([tmp])
        counted = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = subprocess.run([str(Path(sys.executable).with_name("iolens")), "jobs", "--json", tmp], capture_output=True, check=True)
        command = time.perf_counter() - t0
    listed = json.loads(out.stdout)["jobs"]
    print(f"{args.logs} logs -> {len(jobs)} jobs, {sum(len(j.steps) for j in jobs)} steps: grouping (headers and "
          f"job regions) {grouping:.2f} s ({args.logs / grouping:,.0f} logs/s); with POSIX counters "
          f"{counted:.2f} s; `iolens jobs --json` {command:.2f} s ({len(listed)} jobs)")

if __name__ == "__main__":
    main()
