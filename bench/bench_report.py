"""Benchmark `iolens report`: end-to-end time, page size (and its growth), browser load and zoom, and
DXT Explorer on the same logs in the same run.

    /work/venv/bin/python bench/bench_report.py                 # everything (DXT Explorer takes long)
    /work/venv/bin/python bench/bench_report.py --no-dxt-explorer
    /work/venv/bin/python bench/bench_report.py --sections dxt --dxt-modes timeline
    DXT_EXPLORER=/work/venv-dxt/bin/dxt-explorer /work/venv/bin/python bench/bench_report.py --dxt-timeout 900

DXT Explorer (`pip install dxt-explorer darshan` in its own virtualenv) runs its plot scripts with the
`python3` found on PATH, so its virtualenv's bin directory is put first on PATH; it writes into its working
directory, so each run gets a fresh one. Results are printed as Markdown and written as JSON (--json).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
IOLENS = [sys.executable, "-m", "iolens.cli.main"]
SCALE = "generated/scale_1p6M.darshan"
GROWTH = ["public/pydarshan-examples/sample-dxt-simple.darshan",
          "public/darshan-logs/hdf5_diagonal_write_only/hdf5_diagonal_write_1_byte_dxt.darshan",
          "generated/collective_2phase.darshan", "generated/fill_rank0.darshan",
          "public/darshan-logs/nonmpi_dxt_anonymized/nonmpi_dxt_anonymized.darshan",
          "public/dxt-explorer-samples/jlbez_IO_test5.Linux_id1797024_12-1-78642-14680324743816948210_159.darshan",
          "generated/small_indep_shared.darshan",
          "public/dxt-explorer-samples/jeanbez_8_benchmark_parallel_id45195555_8-6-50011-11681279140261054765_1628283217.darshan",
          "generated/scale_1p6M_default_cap.darshan", SCALE]
DXT_EXPLORER_LOGS = ["public/darshan-logs/hdf5_diagonal_write_only/hdf5_diagonal_write_1_byte_dxt.darshan",
                     "public/darshan-logs/mpi_io_test_with_dxt/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan",
                     "public/pydarshan-examples/sample-dxt-simple.darshan",
                     "public/drishti-samples/jlbez_8a_benchmark_write_parallel_id1322696_8-21-14519-8141979180909667175_12.darshan",
                     "public/dxt-explorer-samples/jlbez_IO_test5.Linux_id1797024_12-1-78642-14680324743816948210_159.darshan"]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def run_iolens(log: Path, out: Path, tries: int = 2) -> float:
    for attempt in range(tries):
        began = time.perf_counter()
        proc = subprocess.run(IOLENS + ["report", str(log), "-o", str(out), "-q"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if proc.returncode == 0:
            return time.perf_counter() - began
        print(f"iolens report failed on {log} (try {attempt + 1}): {proc.stderr.strip()[-300:]}", file=sys.stderr)
    raise RuntimeError(f"iolens report failed on {log}")


def segments_of(log: Path) -> int:
    import iolens

    return iolens.read(log).segments.height


def bench_scale(repeat: int) -> dict:
    log = LOGS / SCALE
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scale.html"
        times = [run_iolens(log, out) for _ in range(repeat)]
        size = out.stat().st_size
    return {"log": SCALE, "ops": segments_of(log), "seconds": times, "median_s": statistics.median(times),
            "html_bytes": size}


def bench_growth() -> list:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rel in GROWTH:
            log = LOGS / rel
            if not log.exists():
                continue
            out = Path(tmp) / "page.html"
            seconds = run_iolens(log, out)
            rows.append({"log": rel, "ops": segments_of(log), "html_bytes": out.stat().st_size, "seconds": seconds})
    return rows


def bench_browser(repeat: int) -> dict:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scale.html"
        run_iolens(LOGS / SCALE, out)
        loads, zooms, deep = [], [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for _ in range(repeat):
                page = browser.new_page(viewport={"width": 1500, "height": 1000})
                began = time.perf_counter()
                page.goto(out.resolve().as_uri())
                page.evaluate("window.iolens.ready")
                loads.append(time.perf_counter() - began)
                for k in range(5):  # zoom windows over the whole trace: every view re-rendered
                    zooms.append(page.evaluate(
                        "([a, b]) => { const t = performance.now(); window.iolens.zoom(a, b); "
                        "return performance.now() - t; }", [0.1 + 0.2 * k, 4.5 + 0.1 * k]))
                deep.append(page.evaluate("() => { const t = performance.now(); window.iolens.zoom(2, 2.001, 0, 4); "
                                          "return performance.now() - t; }"))
                page.close()
            browser.close()
    return {"load_s": loads, "load_median_s": statistics.median(loads), "zoom_ms": zooms,
            "zoom_median_ms": statistics.median(zooms), "zoom_max_ms": max(zooms), "deep_zoom_ms": deep}


# DXT Explorer's default output is the operation timeline only; iolens report also has transfer, spatiality
# and I/O phase views, which DXT Explorer makes with these flags.
DXT_MODES = {"timeline": [], "same views": ["-t", "-s", "-i"]}


def run_dxt_explorer(exe: str, log: Path, timeout: float, flags=()) -> dict:
    env = dict(os.environ, PATH=str(Path(exe).parent) + os.pathsep + os.environ.get("PATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        try:
            proc = subprocess.run([exe, *flags, str(log)], cwd=tmp, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"seconds": None, "timeout": timeout}
        seconds = time.perf_counter() - began
        pages = list(Path(tmp).rglob("*.html"))
        failed = "ERROR" in proc.stderr or proc.returncode != 0
        return {"seconds": seconds, "html_files": len(pages), "html_bytes": sum(p.stat().st_size for p in pages),
                "ok": not failed, "error": proc.stderr.strip().splitlines()[-1] if failed and proc.stderr else ""}


def bench_dxt_explorer(exe: str, timeout: float, logs: list, modes: list) -> list:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rel in logs:
            log = LOGS / rel
            if not log.exists():
                continue
            out = Path(tmp) / "page.html"
            run_iolens(log, out)  # warm the page cache like DXT Explorer's first run warms its own
            for mode in modes:
                ref = run_dxt_explorer(exe, log, timeout, DXT_MODES[mode])
                ours = statistics.median(run_iolens(log, out) for _ in range(3))
                row = {"log": rel, "mode": mode, "ops": segments_of(log), "dxt_explorer": ref, "iolens_s": ours,
                       "iolens_html_bytes": out.stat().st_size}
                if ref.get("seconds"):
                    row["speedup"] = ref["seconds"] / ours
                elif ref.get("timeout"):
                    row["speedup_at_least"] = ref["timeout"] / ours
                rows.append(row)
                print(f"  {rel}: {json.dumps(row)}", file=sys.stderr, flush=True)
    return rows


def mib(n) -> str:
    return f"{n / 2**20:.2f} MiB"


def markdown(res: dict) -> str:
    lines = []
    if "scale" in res:
        s = res["scale"]
        lines += ["## `iolens report` on scale_1p6M (1.6 M operations)", "",
                  f"- end to end (subprocess, {len(s['seconds'])} runs): median **{s['median_s']:.2f} s** "
                  f"({', '.join(f'{t:.2f}' for t in s['seconds'])})",
                  f"- page: **{mib(s['html_bytes'])}** ({s['html_bytes'] / s['ops']:.2f} bytes per operation)", ""]
    if "browser" in res:
        b = res["browser"]
        lines += ["## Headless Chromium on the scale_1p6M page", "",
                  f"- load to interactive (timeline drawn from every operation): median **{b['load_median_s']:.2f} s** "
                  f"({', '.join(f'{t:.2f}' for t in b['load_s'])})",
                  f"- zoom re-render (timeline + transfer + spatiality, ~1.4 M ops in view): median "
                  f"**{b['zoom_median_ms']:.0f} ms**, max {b['zoom_max_ms']:.0f} ms",
                  f"- deep zoom (1 ms, 4 ranks, exact bars): {', '.join(f'{t:.0f} ms' for t in b['deep_zoom_ms'])}", ""]
    if "growth" in res:
        lines += ["## Page size against trace size", "", "| log | operations | page | bytes/op | time |",
                  "|---|---:|---:|---:|---:|"]
        for r in res["growth"]:
            per = f"{r['html_bytes'] / r['ops']:.1f}" if r["ops"] else "–"
            lines.append(f"| {Path(r['log']).name[:60]} | {r['ops']:,} | {mib(r['html_bytes'])} | {per} | {r['seconds']:.2f} s |")
        lines.append("")
    if "dxt_explorer" in res:
        lines += ["## DXT Explorer vs iolens, same logs, same run", "",
                  "| log | operations | DXT Explorer views | DXT Explorer | its output | iolens report | page | speed-up |",
                  "|---|---:|---|---:|---:|---:|---:|---:|"]
        for r in res["dxt_explorer"]:
            ref = r["dxt_explorer"]
            t = f"{ref['seconds']:.1f} s" if ref.get("seconds") else f"> {ref['timeout']:.0f} s (killed)"
            outp = f"{ref.get('html_files', 0)} HTML, {mib(ref.get('html_bytes', 0))}" if ref.get("seconds") else "–"
            if ref.get("seconds") and not ref.get("ok"):
                outp += f" (failed: {ref.get('error', '')[:60]})"
            speed = f"{r['speedup']:.0f}×" if "speedup" in r else f"> {r['speedup_at_least']:.0f}×"
            lines.append(f"| {Path(r['log']).name[:50]} | {r['ops']:,} | {r['mode']} | {t} | {outp} | {r['iolens_s']:.2f} s | "
                         f"{mib(r['iolens_html_bytes'])} | {speed} |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sections", nargs="*", default=["scale", "growth", "browser", "dxt"],
                    choices=["scale", "growth", "browser", "dxt"])
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--no-dxt-explorer", action="store_true")
    ap.add_argument("--dxt-modes", nargs="*", default=list(DXT_MODES), choices=list(DXT_MODES))
    ap.add_argument("--dxt-explorer", default=os.environ.get("DXT_EXPLORER", "/work/venv-dxt/bin/dxt-explorer"))
    ap.add_argument("--dxt-timeout", type=float, default=900)
    ap.add_argument("--dxt-logs", nargs="*", default=DXT_EXPLORER_LOGS)
    ap.add_argument("--json", type=Path, help="Also write the raw results here.")
    args = ap.parse_args()
    sections = set(args.sections) - ({"browser"} if args.no_browser else set()) - (
        {"dxt"} if args.no_dxt_explorer else set())
    res = {"machine": {"cpus": os.cpu_count(), "load_before": os.getloadavg()}}
    if "scale" in sections:
        res["scale"] = bench_scale(args.repeat)
    if "growth" in sections:
        res["growth"] = bench_growth()
    if "browser" in sections:
        res["browser"] = bench_browser(args.repeat)
    if "dxt" in sections:
        if Path(args.dxt_explorer).exists():
            res["dxt_explorer"] = bench_dxt_explorer(args.dxt_explorer, args.dxt_timeout, args.dxt_logs,
                                                     args.dxt_modes)
        else:
            res["dxt_explorer_missing"] = args.dxt_explorer
    print(markdown(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
