#!/usr/bin/env python
"""Reading speed and memory: iolens against the zlib floor and against PyDarshan's one-table DXT path.

For each log, in one run, each in its own fresh subprocess (so peak RSS is that task's alone):

  (a) iolens: `iolens.read(path)` and every table built (segments with OSTs, DXT records, counters,
      files): what `iolens info/export` pay after start-up;
  (b) the floor: plain single-threaded stdlib zlib inflating every compressed region of the file
      (all streams of the job, name and every module region; nothing parsed), one decompressobj per
      stream fed fixed-size chunks; the best of three chunk sizes (16, 64, 256 KiB) is the floor, since
      a finished stream hands back its unused input as a copy and the output buffer grows with the
      chunk (256 KiB alone costs 1.2-1.3x); zlib-ng (the Python package, if installed) is shown too;
  (c) PyDarshan: `DarshanReport(path, read_all=False)`, `mod_read_all_dxt_records(mod, dtype="pandas")`
      for DXT_POSIX and DXT_MPIIO, then `records[mod].to_df()` and one `pandas.concat` of every
      per-record read/write frame (its fastest path to one table; adding id/rank/op columns per frame,
      as iolens' table has them, or reading records as dicts, takes 1.5-4x longer);

then the wall time of `iolens info` on a small log and of `import darshan` alone. Times are the best of
--repeat runs inside each subprocess (after one warm-up for (a) and (b)), and with --rounds N the best of
N such subprocesses per task, run in turn (the machine is shared: load comes in bursts). Peak memory is
ru_maxrss of a separate single cold run in its own subprocess (the highest of the rounds; it includes
the interpreter and imports, for both tools: about 70 MB for numpy + polars, about 70 MB for pandas +
PyDarshan), and "+MB" is that peak minus the process's RSS after its imports. "table MB" is polars'
estimated size of iolens' segment table: iolens cannot peak below its import baseline plus that table.
PyDarshan is imported only in its own subprocesses.

    python bench/bench_read.py                # the two logs of issue #2
    python bench/bench_read.py --repeat 5 --rounds 3 --json out.json
    python bench/bench_read.py --repeat 5 LOG [LOG ...]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
DEFAULT_LOGS = [LOGS / "generated/scale_1p6M.darshan",
                *sorted((LOGS / "public/dxt-explorer-samples").glob("jeanbez_8_benchmark_parallel_*.darshan"))]
SMALL_LOG = LOGS / "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan"
TARGETS = {"floor_ratio": 1.5, "speedup": {"scale_1p6M": 10, "jeanbez_8": 20}, "memory_ratio": 0.5}


# --------------------------------------------------------------------------------------------------
# tasks (run in subprocesses)
# --------------------------------------------------------------------------------------------------
def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _best(fn, repeat: int, warmup: bool) -> tuple:
    if warmup:
        fn()
    times = []
    result = None
    for _ in range(repeat):
        result = None
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), sorted(times)[len(times) // 2], result


def task_iolens(path: str, repeat: int) -> dict:
    start = time.perf_counter()
    import iolens
    import polars as pl
    import_s = time.perf_counter() - start
    pl.DataFrame({"a": [1, 2]}).select(pl.col("a") + 1)  # polars' thread pool up: part of the baseline

    def run():
        log = iolens.read(path)
        log.segments, log.dxt_records, log.counters, log.files
        return log.segments.height

    if repeat == 0:  # memory: one cold run in a fresh process
        base = _peak_mb()
        log = iolens.read(path)
        log.segments, log.dxt_records, log.counters, log.files
        return {"rows": log.segments.height, "peak_mb": _peak_mb(), "base_mb": base,
                "table_mb": log.segments.estimated_size() / 2**20}
    best, median, rows = _best(run, repeat, warmup=True)
    return {"best": best, "median": median, "rows": rows, "import": import_s}


def _regions(data: bytes) -> list:
    """(offset, length) of every compressed region, from the header alone (format doc, section 2)."""
    version = data[:8].split(b"\0", 1)[0].decode()
    bo = "<" if struct.unpack_from("<q", data, 8)[0] == 6567223 else ">"
    size, nmods, maps = (1328, 64, 32) if version >= "3.41" else (360, 16, 24)
    spans = [struct.unpack_from(bo + "QQ", data, maps + 16 * i) for i in range(nmods + 1)]
    spans = [(o, n) for o, n in spans if n]
    job_end = min(o for o, _ in spans) if spans else len(data)
    return [(size, job_end - size), *spans], data[16]


FLOOR_CHUNKS = (1 << 14, 1 << 16, 1 << 18)


def task_floor(path: str, repeat: int, module: str) -> dict:
    import zlib

    if module == "zlib_ng":
        try:
            from zlib_ng import zlib_ng as zlib  # noqa: F811
        except ImportError:  # shown only when installed (pip install zlib-ng)
            return {"best": float("nan"), "median": float("nan"), "chunk": 0}
    data = Path(path).read_bytes()
    regions, compression = _regions(data)
    assert compression == 0, "the floor is defined for zlib logs"
    view = memoryview(data)

    def run(size):
        out = 0
        for off, n in regions:
            region, pos = view[off:off + n], 0
            while pos < n:  # one stream per rank, back to back
                d = zlib.decompressobj()
                while not d.eof:
                    chunk = region[pos:pos + size]
                    pos += len(chunk)
                    out += len(d.decompress(chunk))
                pos -= len(d.unused_data)
        return out

    by_chunk = {size: _best(lambda: run(size), repeat, warmup=True) for size in FLOOR_CHUNKS}
    size = min(by_chunk, key=lambda k: by_chunk[k][0])
    best, median, nbytes = by_chunk[size]
    return {"best": best, "median": median, "inflated_bytes": nbytes, "peak_mb": _peak_mb(), "chunk": size,
            "by_chunk": {str(k): v[0] for k, v in by_chunk.items()}}


def task_pydarshan(path: str, repeat: int) -> dict:
    start = time.perf_counter()
    import pandas as pd
    from darshan.report import DarshanReport
    import_s = time.perf_counter() - start

    def run():
        # PyDarshan's fastest one-table path: records read as pandas frames, to_df(), one concat
        report = DarshanReport(path, read_all=False)
        frames = []
        for mod in ("DXT_POSIX", "DXT_MPIIO"):
            if mod not in report.modules:
                continue
            report.mod_read_all_dxt_records(mod, dtype="pandas")
            for rec in report.records[mod].to_df():
                for op in ("write", "read"):
                    df = rec[f"{op}_segments"]
                    if len(df):
                        frames.append(df)
        return len(pd.concat(frames, ignore_index=True))

    if repeat == 0:
        base = _peak_mb()
        rows = run()
        return {"rows": rows, "peak_mb": _peak_mb(), "base_mb": base}
    best, median, rows = _best(run, repeat, warmup=False)
    return {"best": best, "median": median, "rows": rows, "import": import_s}


TASKS = {"iolens": task_iolens, "floor": lambda p, r: task_floor(p, r, "zlib"),
         "floor_ng": lambda p, r: task_floor(p, r, "zlib_ng"), "pydarshan": task_pydarshan}


# --------------------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------------------
def run_task(task: str, path: Path, repeat: int) -> dict:
    cmd = [sys.executable, __file__, "--task", task, "--repeat", str(repeat), str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"task {task} failed on {path}:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def wall(cmd: list, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return min(times)


def short(path: Path) -> str:
    name = path.name
    return "jeanbez_8" if name.startswith("jeanbez_8") else path.stem


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every task this many times (fresh processes, interleaved); best time, highest peak")
    ap.add_argument("--task", choices=TASKS)
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    args = ap.parse_args(argv)
    if args.task:
        print(json.dumps(TASKS[args.task](str(args.logs[0]), args.repeat)))
        return 0
    logs = args.logs or DEFAULT_LOGS
    results, ok = [], True
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
          f"IOLENS_THREADS={os.environ.get('IOLENS_THREADS', 'auto')}")
    for path in logs:
        row = {"log": short(path), "path": str(path), "size_mb": path.stat().st_size / 2**20}
        for _ in range(args.rounds):  # the tasks in turn, so that a burst of load hits all of them alike
            for task in ("floor", "floor_ng", "iolens", "pydarshan"):
                res = run_task(task, path, args.repeat)
                if task not in row or not res["best"] >= row[task]["best"]:
                    row[task] = {**row.get(task, {}), **res}
            for task in ("iolens", "pydarshan"):  # memory: the highest cold peak of the rounds
                res = run_task(task, path, 0)
                if "peak_mb" not in row[task] or res["peak_mb"] > row[task]["peak_mb"]:
                    row[task].update(res)
        results.append(row)
    header = (f"{'log':<12} {'MB':>5} {'segments':>9} {'zlib':>7} {'zlib-ng':>7} {'iolens':>7} "
              f"{'io/zlib':>7} {'PyDarshan':>9} {'speedup':>7} {'iolens MB':>9} {'PyD MB':>7} {'mem':>5} "
              f"{'io +MB':>7} {'PyD +MB':>7} {'+mem':>5} {'table MB':>8}")
    print(header)
    print("-" * len(header))
    for r in results:
        f, g, i, p = r["floor"], r["floor_ng"], r["iolens"], r["pydarshan"]
        ratio, speedup, mem = i["best"] / f["best"], p["best"] / i["best"], i["peak_mb"] / p["peak_mb"]
        inc_i, inc_p = i["peak_mb"] - i["base_mb"], p["peak_mb"] - p["base_mb"]
        r.update(floor_ratio=ratio, speedup=speedup, memory_ratio=mem, memory_increment_ratio=inc_i / inc_p)
        print(f"{r['log']:<12} {r['size_mb']:5.1f} {i['rows']:9,d} {f['best']:7.3f} {g['best']:7.3f} "
              f"{i['best']:7.3f} {ratio:7.2f} {p['best']:9.3f} {speedup:6.1f}x {i['peak_mb']:9.0f} "
              f"{p['peak_mb']:7.0f} {mem:5.2f} {inc_i:7.0f} {inc_p:7.0f} {inc_i / inc_p:5.2f} {i['table_mb']:8.0f}")
        assert i["rows"] == p["rows"], f"iolens {i['rows']} segments, PyDarshan {p['rows']}"
        want = TARGETS["speedup"].get(r["log"], 10)
        checks = [ratio <= TARGETS["floor_ratio"], speedup >= want, mem <= TARGETS["memory_ratio"]]
        ok &= all(checks)
        bound = (i["base_mb"] + i["table_mb"]) / p["peak_mb"]
        print(f"{'':12} targets: iolens <= {TARGETS['floor_ratio']}x zlib floor: {'ok' if checks[0] else 'MISSED'}; "
              f">= {want}x PyDarshan: {'ok' if checks[1] else 'MISSED'}; "
              f"memory <= {TARGETS['memory_ratio']}x: {'ok' if checks[2] else 'MISSED'} "
              f"(import baseline + table alone: {bound:.2f}x; increment {inc_i / inc_p:.2f}x); "
              f"floor chunk {f['chunk'] >> 10} KiB")
    iolens_exe = Path(sys.executable).with_name("iolens")
    cli = [str(iolens_exe)] if iolens_exe.exists() else [sys.executable, "-m", "iolens.cli.main"]
    info_s = wall([*cli, "info", str(SMALL_LOG)])
    import_iolens = wall([sys.executable, "-c", "import iolens"])
    import_darshan = wall([sys.executable, "-c", "import darshan.report"])
    print(f"\n`iolens info {SMALL_LOG.name}`: {info_s:.2f} s wall (process start to exit); "
          f"`import iolens`: {import_iolens:.2f} s; `import darshan.report`: {import_darshan:.2f} s")
    ok &= info_s < 1.0
    if args.json:
        args.json.write_text(json.dumps({"results": results, "info_s": info_s, "import_iolens_s": import_iolens,
                                         "import_darshan_s": import_darshan}, indent=2))
    print("all targets met" if ok else "some targets missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
