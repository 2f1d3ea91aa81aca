"""Time `iolens anonymize` of a DFTracer trace beside `iolens info` reading the same trace (the native reader),
on a trace of N events made from a shared trace's own lines (its largest file's events repeated, with new ids
and times; the metadata events once, as DFTracer writes them).

    python bench/bench_anonymize_dftracer.py [--events 1000000] [--logs ../shared/logs]

Prints the machine's load, each command's wall time (best of --repeat), events per second and the ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_trace(source: Path, out: Path, events: int) -> int:
    meta, calls = [], []
    for line in source.read_text().splitlines():
        line = line.strip().rstrip(",")
        if not line.startswith("{"):
            continue
        e = json.loads(line)
        (meta if e.get("ph") in (4, "M") else calls).append(e)
    span = max(e["ts"] + e.get("dur", 0) for e in calls) - min(e["ts"] for e in calls) + 1
    written = 0
    with open(out, "w") as fh:
        fh.write("[\n")
        for e in meta:
            fh.write(json.dumps(e, separators=(",", ":")) + "\n")
        rounds = 0
        while written < events:
            for e in calls:
                copy = dict(e, id=written + 1, ts=e["ts"] + rounds * span)
                fh.write(json.dumps(copy, separators=(",", ":")) + "\n")
                written += 1
                if written >= events:
                    break
            rounds += 1
    return written + len(meta)


def best(cmd: list, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--logs", type=Path, default=Path(os.environ.get("IOLENS_LOGS", "../shared/logs")))
    args = ap.parse_args()
    source = max((args.logs / "dftracer" / "loader_plain").glob("*-app.pfw"), key=lambda p: p.stat().st_size)
    iolens = str(Path(sys.executable).parent / "iolens")
    print(f"load average before: {os.getloadavg()[0]:.2f} (2-core machine)")
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace" / "trace-0123456789abcdef-app.pfw"
        trace.parent.mkdir()
        n = make_trace(source, trace, args.events)
        key = Path(tmp) / "k.key"
        key.write_text("ab" * 32 + "\n")
        print(f"trace: {n:,} events, {trace.stat().st_size / 2**20:.0f} MiB (from {source.name})")
        read = best([iolens, "info", str(trace.parent)], args.repeat)
        anon = best([iolens, "anonymize", str(trace.parent), "-o", str(Path(tmp) / "out"), "--key-file", str(key),
                     "--force", "-q"], args.repeat)
    print(f"iolens info (read):  {read:7.2f} s  {n / read:12,.0f} events/s")
    print(f"iolens anonymize:    {anon:7.2f} s  {n / anon:12,.0f} events/s  ({anon / read:.1f}x the read)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
