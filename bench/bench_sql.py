#!/usr/bin/env python
"""SQL speed: a group-by over 5.6 M DXT segments in `iolens sql` (DuckDB over iolens' tables) beside the same
question in PyDarshan + pandas, and what a query that touches only `files` costs.

The 5.6 M segments are several logs queried together (`iolens sql A B C D`: one `segments` table, a column `log`
naming each row's log): generated/scale_1p6M.darshan three times (1.6 M each) and
generated/scale_1p6M_default_cap.darshan (0.8 M). Each tool runs in its own fresh subprocess:

  (a) iolens: `open_target(logs)` and the `segments` table built and handed to DuckDB (the read: every log
      decoded, the tables stacked), then the query, the best of --repeat runs after one warm-up;
  (b) PyDarshan + pandas: per log `DarshanReport(read_all=False)`, `mod_read_all_dxt_records(mod,
      dtype="pandas")`, each record's write and read frames given `rank` and `op` columns, one `pandas.concat`
      (the read), then `groupby(["rank", "op"]).agg(...)` (the query), best of --repeat after one warm-up;
  (c) laziness, on scale_1p6M alone, each in a fresh process: `SELECT count(*) FROM files` (a read without
      the DXT regions) against `SELECT count(*) FROM segments` (the whole log), from `open_target` to the
      answer; and the same two as `iolens sql` commands, wall time from process start to exit.

The answers of (a) and (b) are checked equal (operations and bytes per rank and op; seconds to 1e-9).

    python bench/bench_sql.py --repeat 5
    python bench/bench_sql.py --repeat 5 --json /tmp/bench-sql.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
BIG = LOGS / "generated" / "scale_1p6M.darshan"
LOG_SET = [BIG, BIG, BIG, LOGS / "generated" / "scale_1p6M_default_cap.darshan"]
QUERY = ('SELECT rank, op, count(*) AS ops, sum(length) AS bytes, sum("end" - start) AS seconds '
         "FROM segments GROUP BY rank, op")


def _best(fn, repeat: int) -> tuple:
    fn()  # warm-up
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), sorted(times)[len(times) // 2], result


def task_iolens(repeat: int) -> dict:
    from iolens.pipeline.sources import open_target
    from iolens.views.sql import Engine

    start = time.perf_counter()
    engine = Engine(open_target([str(p) for p in LOG_SET]))
    engine.register(["segments"])
    read_s = time.perf_counter() - start
    rows = engine.source.table("segments").height
    best, median, result = _best(lambda: engine.query(QUERY).frame, repeat)
    answer = sorted([int(r), o, int(n), int(b), float(s)] for r, o, n, b, s in result.iter_rows())
    return {"read": read_s, "best": best, "median": median, "rows": rows, "answer": answer}


def task_pydarshan(repeat: int) -> dict:
    import pandas as pd
    from darshan.report import DarshanReport

    start = time.perf_counter()
    frames = []
    for path in LOG_SET:
        report = DarshanReport(str(path), read_all=False)
        for mod in ("DXT_POSIX", "DXT_MPIIO"):
            if mod not in report.modules:
                continue
            report.mod_read_all_dxt_records(mod, dtype="pandas")
            for rec in report.records[mod].to_df():
                for op in ("write", "read"):
                    df = rec[f"{op}_segments"]
                    if len(df):
                        frames.append(df.assign(rank=rec["rank"], op=op))
    segments = pd.concat(frames, ignore_index=True)
    read_s = time.perf_counter() - start

    def query():
        return (segments.assign(seconds=segments["end_time"] - segments["start_time"])
                .groupby(["rank", "op"], sort=False)
                .agg(ops=("length", "size"), bytes=("length", "sum"), seconds=("seconds", "sum")).reset_index())

    best, median, result = _best(query, repeat)
    answer = sorted([int(r.rank), r.op, int(r.ops), int(r.bytes), float(r.seconds)] for r in result.itertuples())
    return {"read": read_s, "best": best, "median": median, "rows": len(segments), "answer": answer}


def task_lazy(table: str) -> dict:
    from iolens.pipeline.sources import open_target
    from iolens.views.sql import Engine

    start = time.perf_counter()
    source = open_target([str(BIG)])
    engine = Engine(source)
    n = engine.query(f"SELECT count(*) FROM {table}").frame.item()
    return {"seconds": time.perf_counter() - start, "count": int(n), "reads": source.reads}


TASKS = {"iolens": task_iolens, "pydarshan": task_pydarshan}


def run_task(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--task", *args], capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"task {args} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def wall(cmd: list, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--task", nargs="+")
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    args = ap.parse_args(argv)
    if args.task:
        name, *rest = args.task
        print(json.dumps(task_lazy(rest[0]) if name == "lazy" else TASKS[name](args.repeat)))
        return 0
    load = os.getloadavg()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    io = run_task("iolens")
    pd_ = run_task("pydarshan")
    assert io["rows"] == pd_["rows"], (io["rows"], pd_["rows"])
    for a, b in zip(io["answer"], pd_["answer"]):
        assert a[:4] == b[:4] and math.isclose(a[4], b[4], rel_tol=1e-9), (a, b)
    assert len(io["answer"]) == len(pd_["answer"])
    print(f"{io['rows']:,} segments ({len(LOG_SET)} logs); query: {QUERY}")
    print(f"{'':22} {'read (s)':>9} {'query best (s)':>15} {'median':>8}")
    for name, r in (("iolens sql (DuckDB)", io), ("PyDarshan + pandas", pd_)):
        print(f"{name:22} {r['read']:9.2f} {r['best']:15.3f} {r['median']:8.3f}")
    print(f"query speed-up {pd_['best'] / io['best']:.1f}x; read speed-up {pd_['read'] / io['read']:.1f}x; "
          f"answers equal ({len(io['answer'])} groups)")
    files, segments = run_task("lazy", "files"), run_task("lazy", "segments")
    print(f"scale_1p6M, open to answer in a fresh process: files {files['seconds']:.3f} s (reads {files['reads']}), "
          f"segments {segments['seconds']:.3f} s (reads {segments['reads']})")
    iolens_exe = Path(sys.executable).with_name("iolens")
    cli = [str(iolens_exe)] if iolens_exe.exists() else [sys.executable, "-m", "iolens.cli.main"]
    cli_files = wall([*cli, "sql", str(BIG), "SELECT count(*) FROM files"])
    cli_segments = wall([*cli, "sql", str(BIG), "SELECT count(*) FROM segments"])
    print(f"`iolens sql scale_1p6M.darshan` wall, process start to exit: files {cli_files:.2f} s, "
          f"segments {cli_segments:.2f} s")
    load = os.getloadavg()
    print(f"load after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        for r in (io, pd_):
            r.pop("answer")
        args.json.write_text(json.dumps({"iolens": io, "pydarshan": pd_, "lazy_files": files,
                                         "lazy_segments": segments, "cli_files_s": cli_files,
                                         "cli_segments_s": cli_segments}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
