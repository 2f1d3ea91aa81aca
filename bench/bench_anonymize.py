#!/usr/bin/env python3
"""Time `iolens anonymize` beside `darshan-convert --obfuscate` (darshan-util 3.4.7), log by log and over the corpus.

    python bench/bench_anonymize.py --repeat 3
    python bench/bench_anonymize.py --darshan-util /work/ext/darshan/bin --repeat 3 --json /tmp/bench-anon.json

For each log: the wall time of one `iolens anonymize LOG -o OUT --key-file K` process (start-up included), the
time of the anonymisation alone inside one process (read, rewrite, compress, write: best of --repeat), and the
wall time of one `darshan-convert --obfuscate --key 42 LOG OUT` process, with both outputs' sizes. Then the whole
corpus (every finished `*.darshan` under --logs): one `iolens anonymize FOLDER -o OUT` process against one
darshan-convert process per log. The machine's load average is printed with the table: the machine is shared.

What the two tools do differs (docs/anonymize.md): darshan-convert replaces names by a 32-bit hash of the
path and keeps record ids, mount points and DXT host names; iolens replaces each path component, mount point
and host name by a keyed token and recomputes every record id. Both inflate and compress every region.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS") or REPO.parent.parent / "shared" / "logs")
IOLENS = [sys.executable, "-m", "iolens.cli.main"]
CASES = [
    ("scale_1p6M (16 ranks, DXT 1.6 M segments)", "generated/scale_1p6M.darshan"),
    ("jeanbez_8 (1,024 ranks, DXT)", "public/dxt-explorer-samples/"
     "jeanbez_8_benchmark_parallel_id45195555_8-6-50011-11681279140261054765_1628283217.darshan"),
    ("mpi-io-test 3.4.7 (small, LUSTRE, HEATMAP)", "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan"),
    ("mpi-io-test ppc64 3.1.6 (big-endian, 3.10)", "public/darshan-logs/release_logs/mpi-io-test-ppc64-3.1.6.darshan"),
]


def wall(cmd: list, env=None) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{r.stderr}")
    return took


def best(fn, repeat: int) -> float:
    return min(fn() for _ in range(repeat))


def in_process(path: Path, out: Path, repeat: int) -> float:
    from iolens.reader.anonymize import Key, Tokens, write_anonymized

    def once():
        t = time.perf_counter()
        write_anonymized(path, out, Tokens(Key(b"b" * 32)), force=True)
        return time.perf_counter() - t

    return best(once, repeat)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=Path, default=LOGS)
    ap.add_argument("--darshan-util", type=Path, default=Path(os.environ.get("IOLENS_DARSHAN_UTIL",
                                                                            "/work/ext/darshan/bin")))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    convert = args.darshan_util / "darshan-convert"
    if not convert.is_file():
        convert = shutil.which("darshan-convert")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rows, load0 = [], os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        key = tmp / "k.key"
        key.write_text("ab" * 32)
        for label, rel in CASES:
            path = args.logs / rel
            out_i, out_d = tmp / "i.darshan", tmp / "d.darshan"
            row = {"log": label, "bytes": path.stat().st_size}
            row["iolens_cli"] = best(lambda: wall(IOLENS + ["anonymize", path, "-o", out_i, "--key-file", key,
                                                            "--force"], env), args.repeat)
            row["iolens_in_process"] = in_process(path, out_i, args.repeat)
            row["iolens_bytes"] = out_i.stat().st_size
            if convert:
                row["convert"] = best(lambda: wall([convert, "--obfuscate", "--key", "42", path, out_d]),
                                      args.repeat)
                row["convert_bytes"] = out_d.stat().st_size
            rows.append(row)
        logs = sorted(p for p in args.logs.rglob("*.darshan") if p.is_file())
        corpus = {"logs": len(logs), "bytes": sum(p.stat().st_size for p in logs)}
        folder = tmp / "corpus"
        corpus["iolens_cli"] = wall(IOLENS + ["anonymize", *logs, "-o", folder, "--key-file", key, "-q"], env)
        if convert:
            t = time.perf_counter()
            for i, p in enumerate(logs):
                subprocess.run([convert, "--obfuscate", "--key", "42", p, tmp / f"c{i}.darshan"],
                               capture_output=True)
            corpus["convert"] = time.perf_counter() - t
    load1 = os.getloadavg()
    print(f"load average {load0[0]:.2f} at the start, {load1[0]:.2f} at the end; best of {args.repeat}")
    print("| log | MB | iolens anonymize (process) | iolens (in process) | darshan-convert --obfuscate | "
          "output MB iolens / convert |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        conv = f"{r['convert']:.2f} s" if "convert" in r else "-"
        sizes = f"{r['iolens_bytes'] / 1e6:.2f} / " + (f"{r['convert_bytes'] / 1e6:.2f}" if "convert" in r else "-")
        print(f"| {r['log']} | {r['bytes'] / 1e6:.2f} | {r['iolens_cli']:.2f} s | {r['iolens_in_process']:.2f} s | "
              f"{conv} | {sizes} |")
    conv = f"{corpus['convert']:.1f} s" if "convert" in corpus else "-"
    print(f"| corpus: {corpus['logs']} logs | {corpus['bytes'] / 1e6:.1f} | {corpus['iolens_cli']:.1f} s (one "
          f"process) | | {conv} (one process per log) | |")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "corpus": corpus, "load": [load0, load1]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
