"""Reading a DFTracer trace: iolens beside DFTracer's own tools, in one run.

    python bench/bench_dftracer.py --trace /tmp/dftbig/trace            # a trace made before
    python bench/bench_dftracer.py --make-trace /tmp/dftbig --reads 10000000   # trace a real run first

--make-trace runs bench/dftracer_workload.py under the real DFTracer (its preload library and Python API, the
`dftracer` package) with 4 loader workers reading 64-byte requests: about `--reads` POSIX events, gzip'd.

Timed, each on its own fresh copy of the trace (DFTracer's tools write their indexes beside the trace files):
  - iolens: `iolens.read(trace)` then the `calls`, `segments` and `spans` tables (a fresh process per run,
    best of --repeat); the counters (what `iolens info` adds) timed apart;
  - `dftracer_event_count` (dftracer-utils, C++: index the gzip files and count the valid events);
  - DFAnalyzer (`dfanalyzer trace_path=...`, Dask LocalCluster of 2 workers): its own "Read trace & stats"
    step and the whole command;
  - WisIO (`wisio +analyzer=dftracer ... percentile=0.9`): the whole command.
Tools not found (--dfanalyzer, --wisio, --event-count: paths to their commands) are reported as such.
Prints a Markdown table (and --json FILE), with the machine's load average before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

IOLENS_RUN = r"""
import json, resource, sys, time
import iolens
t0 = time.perf_counter(); c0 = resource.getrusage(resource.RUSAGE_SELF)
trace = iolens.read(sys.argv[1])
tr = time.perf_counter(); cr = resource.getrusage(resource.RUSAGE_SELF)
calls, segments, spans = trace.calls, trace.segments, trace.spans
t1 = time.perf_counter(); c1 = resource.getrusage(resource.RUSAGE_SELF)
counters = trace.counters
t2 = time.perf_counter(); c2 = resource.getrusage(resource.RUSAGE_SELF)
cpu = lambda a, b: (b.ru_utime + b.ru_stime) - (a.ru_utime + a.ru_stime)
print(json.dumps({"read_only_s": tr - t0, "read_only_cpu_s": cpu(c0, cr), "read_s": t1 - t0,
                  "read_cpu_s": cpu(c0, c1), "counters_s": t2 - t1,
                  "counters_cpu_s": cpu(c1, c2),
                  "calls": calls.height, "segments": segments.height, "spans": spans.height,
                  "processes": trace.processes.height, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def fresh_copy(trace: Path, work: Path, name: str) -> Path:
    dest = work / name
    shutil.copytree(trace, dest)
    return dest


def make_trace(out: Path, reads: int) -> Path:
    """Trace bench/dftracer_workload.py under the real DFTracer: 4 workers, 64-byte reads of 16 MiB shards."""
    import dftracer

    preload = Path(dftracer.__file__).parent / "lib64" / "libdftracer_preload.so"
    shard_kib, read_bytes, workers = 16384, 64, 4
    shards = max(workers, round(reads / (shard_kib * 1024 / read_bytes)))
    trace = out / "trace"
    shutil.rmtree(trace, ignore_errors=True)
    trace.mkdir(parents=True)
    env = {**os.environ, "DFTRACER_ENABLE": "1", "DFTRACER_INC_METADATA": "1", "DFTRACER_INIT": "PRELOAD",
           "DFTRACER_DATA_DIR": "all", "DFTRACER_LOG_FILE": str(trace / "trace"), "LD_PRELOAD": str(preload)}
    cmd = [sys.executable, str(REPO / "bench" / "dftracer_workload.py"), str(out / "data"), str(out / "ckpt"),
           "--shards", str(shards), "--shard-kib", str(shard_kib), "--workers", str(workers),
           "--read-bytes", str(read_bytes), "--ckpt-every", "10", "--ckpt-mib", "64", "--compute-ms", "2"]
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    (out / "truth.json").write_text(done.stdout)
    print(f"traced {shards} shards in {time.perf_counter() - started:.0f} s into {trace}", file=sys.stderr)
    return trace


def time_iolens(trace: Path, repeat: int) -> dict:
    runs = []
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", IOLENS_RUN, str(trace)], env=env, capture_output=True, text=True,
                             check=True)
        runs.append(json.loads(out.stdout))
    best = min(runs, key=lambda r: r["read_s"])
    best["runs_read_s"] = [round(r["read_s"], 2) for r in runs]
    return best


def time_command(cmd: list, timeout: float, env=None) -> dict:
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"wall_s": None, "error": f"did not finish in {timeout:.0f} s"}
    wall = time.perf_counter() - started
    out = {"wall_s": wall, "exit": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-4000:]}
    if done.returncode:
        out["error"] = (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]
    return out


def event_count(tool: str, trace: Path, work: Path, timeout: float) -> dict:
    copy = fresh_copy(trace, work, "event_count")
    got = time_command([tool, "-d", str(copy), "--index-dir", str(work / "event_count_index")], timeout)
    numbers = re.findall(r"\d[\d,]*", got.get("stdout", ""))
    got["events"] = numbers[-1] if numbers else None
    return got


def dfanalyzer(tool: str, trace: Path, work: Path, timeout: float) -> dict:
    copy = fresh_copy(trace, work, "dfanalyzer")
    env = {**os.environ, "USER": os.environ.get("USER", "bench")}  # its config reads $USER
    got = time_command([tool, f"trace_path={copy}", "cluster.n_workers=2", f"hydra.run.dir={work / 'dfa_out'}"],
                       timeout, env)
    text = got.get("stdout", "") + got.get("stderr", "")
    step = re.search(r"Read trace & stats \(([\d.]+)s\)", text)
    got["read_step_s"] = float(step.group(1)) if step else None
    # what it says it read (its summary table)
    for key, label in (("events", "Trace Count"), ("processes", "Total Processes")):
        hit = re.search(label + r"\s*│[^│]*│\s*([\d,]+)", text)
        got[key] = int(hit.group(1).replace(",", "")) if hit else None
    return got


def wisio(tool: str, trace: Path, work: Path, timeout: float) -> dict:
    copy = fresh_copy(trace, work, "wisio")
    env = {**os.environ, "USER": os.environ.get("USER", "bench")}
    return time_command([tool, "+analyzer=dftracer", f"trace_path={copy}", "cluster.n_workers=2", "percentile=0.9",
                         f"hydra.run.dir={work / 'wisio_out'}"], timeout, env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, help="a DFTracer trace folder")
    ap.add_argument("--make-trace", type=Path, help="trace bench/dftracer_workload.py into this folder first")
    ap.add_argument("--reads", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    beside = Path(sys.executable).parent / "dftracer_event_count"  # (not a version manager's shim)
    ap.add_argument("--event-count", default=str(beside) if beside.exists() else shutil.which("dftracer_event_count"))
    ap.add_argument("--dfanalyzer", default=shutil.which("dfanalyzer"))
    ap.add_argument("--wisio", default=shutil.which("wisio"))
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    trace = make_trace(a.make_trace, a.reads) if a.make_trace else a.trace
    if trace is None:
        ap.error("give --trace or --make-trace")
    size = sum(p.stat().st_size for p in trace.iterdir() if p.is_file())
    result = {"trace": str(trace), "trace_bytes": size, "cores": os.cpu_count(), "load_before": load()}
    with tempfile.TemporaryDirectory(prefix="bench-dftracer-") as tmp:
        work = Path(tmp)
        result["iolens"] = time_iolens(fresh_copy(trace, work, "iolens"), a.repeat)
        result["event_count"] = event_count(a.event_count, trace, work, a.timeout) if a.event_count else None
        result["dfanalyzer"] = dfanalyzer(a.dfanalyzer, trace, work, a.timeout) if a.dfanalyzer else None
        result["wisio"] = wisio(a.wisio, trace, work, a.timeout) if a.wisio else None
    result["load_after"] = load()
    if a.json:
        a.json.write_text(json.dumps(result, indent=2))
    print(report(result))


def report(r: dict) -> str:
    io = r["iolens"]
    rows = [f"| iolens `iolens.read` alone | {io['read_only_s']:.2f} s (CPU {io['read_only_cpu_s']:.2f} s) | |",
            f"| iolens `read` + calls, segments, spans | {io['read_s']:.2f} s (CPU {io['read_cpu_s']:.2f} s; runs "
            f"{', '.join(map(str, io['runs_read_s']))}) | {io['calls']:,} calls, {io['segments']:,} segments, "
            f"{io['spans']:,} spans, {io['processes']} processes; peak {io['peak_mb']:.0f} MB |",
            f"| iolens counters (what `info` adds) | {io['counters_s']:.2f} s (CPU {io['counters_cpu_s']:.2f} s) | |"]

    def tool(label, got, extra=""):
        if got is None:
            return f"| {label} | not installed | |"
        if got.get("wall_s") is None or got.get("error"):
            return f"| {label} | {got.get('error')} | |"
        return f"| {label} | {got['wall_s']:.2f} s | {extra} |"

    ec = r["event_count"]
    rows.append(tool("`dftracer_event_count` (index + count)", ec, f"{ec.get('events')} events" if ec else ""))
    dfa = r["dfanalyzer"]
    step = dfa.get("read_step_s") if dfa else None
    said = f"; it reports {dfa['events']:,} events of {dfa['processes']} processes" if dfa and dfa.get("events") else ""
    rows.append(tool("DFAnalyzer, whole command", dfa,
                     (f"its 'Read trace & stats' step: {step:.2f} s" if step else "") + said))
    rows.append(tool("WisIO, whole command", r["wisio"]))
    head = (f"trace {r['trace']} ({r['trace_bytes'] / 2**20:.0f} MiB on disk); {r['cores']} cores; load average "
            f"(1, 5, 15 min) before: {r['load_before']}, after: {r['load_after']}\n\n"
            "| tool | time | what |\n|---|---:|---|")
    return head + "\n" + "\n".join(rows)


if __name__ == "__main__":
    main()
