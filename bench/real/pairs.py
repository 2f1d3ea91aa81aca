#!/usr/bin/env python3
"""Make before/after pairs under a real Darshan runtime: one change each, runs interleaved, median kept.

For each series (a program, a rank count, a base configuration and one change) it runs the two configurations
REPEATS times each, interleaved (A B A B ...), each through `iolens run`, with the shared file pre-created in
the page cache right before every run; then measures every run with `iolens compare --json` (the slowest
rank's I/O time, `runs[].io_time`) and keeps, per side, the run whose time is the median. It writes
OUT/SERIES/{base,other}N.darshan (every run) and OUT/runs.tsv (one line per run: series, side, repeat,
io_time, wall time, load average before the run, the program's last line).

    bench/real/build.sh BIN
    IOLENS_DARSHAN_LIB=/path/to/libdarshan.so python bench/real/pairs.py --bin BIN --out DIR [SERIES...]

Series names and what they change are in SERIES below; tests/data/pairs/README.md says which runs were kept.
Timings on a shared machine vary with its load: the load average is recorded before every run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

MiB = 1 << 20
SCRATCH = Path(os.environ.get("PAIRS_SCRATCH", "/tmp/iolens-pairs-scratch"))

# name: (ranks, program and arguments (FILE = the data file), base (extra args, knobs), other (extra args,
#        knobs), bytes to pre-create (0: the program deletes or truncates the file itself))
# "knobs" are `iolens run --set` knobs; extra args are the program's own switches.
SERIES = {
    "smallw2": (2, ["smallw", "FILE", "10000"], (["indep"], {}), (["coll", "2000"], {}), 2 * 10000 * 4096),
    "smallw4": (4, ["smallw", "FILE", "6000"], (["indep"], {}), (["coll", "2000"], {}), 4 * 6000 * 4096),
    "smallw8": (8, ["smallw", "FILE", "4000"], (["indep"], {}), (["coll", "2000"], {}), 8 * 4000 * 4096),
    "ncw4": (4, ["noncontig_write", "FILE", "-c", "8"], ([], {}), ([], {"romio.romio_cb_write": "disable"}), 0),
    "h5flush2": (2, ["h5_many_datasets", "FILE", "-d", "100", "-e", "256", "-t", "indep"], (["-f"], {}),
                 ([], {}), 0),
    "h5collmeta2": (2, ["h5_many_datasets", "FILE", "-d", "100", "-e", "256", "-t", "indep"], ([], {}),
                    ([], {"hdf5.coll_metadata": "on"}), 0),
    "h5fill4": (4, ["h5_many_datasets", "FILE", "-d", "50", "-e", "65536", "-t", "indep"], ([], {}),
                ([], {"hdf5.fill_time": "never"}), 0),
    "h5xfer4": (4, ["h5_many_datasets", "FILE", "-d", "20", "-e", "1024"], ([], {}),
                ([], {"hdf5.transfer": "independent"}), 0),
    "seqw4": (4, ["seqwrite", "FILE", "32", "1048576"], (["-s", "512"], {}), ([], {}), 4 * 32 * MiB + MiB),
    "fill4": (4, ["fill", "FILE", "32", "1", "1024"], ([], {}), ([], {}), 4 * 32 * MiB),
}
# fill4's change is the program's FILL argument: 1 -> 0 (see command())
DATA_FILE = {"h5flush2": "m.h5", "h5collmeta2": "m.h5", "h5fill4": "m.h5", "h5xfer4": "m.h5"}


def command(bin_dir: Path, name: str, side: str) -> tuple:
    """(the command line, the knobs) of one side of a series."""
    ranks, prog, base, other, _ = SERIES[name]
    extra, knobs = base if side == "base" else other
    data = SCRATCH / DATA_FILE.get(name, "w.dat")
    words = [str(data) if w == "FILE" else w for w in prog]
    if name == "fill4" and side == "other":
        words[3] = "0"
    words += extra
    return ["mpiexec", "-n", str(ranks), str(bin_dir / words[0]), *words[1:]], knobs


def precreate(path: Path, size: int) -> None:
    """The data file at its size, written now so its pages are in the page cache (no first-touch allocation
    inside the measured run)."""
    if size <= 0:
        return
    chunk = b"\0" * (4 * MiB)
    with open(path, "wb") as f:
        left = size
        while left > 0:
            f.write(chunk[:min(left, len(chunk))])
            left -= len(chunk)


def run_one(bin_dir: Path, out: Path, name: str, side: str, i: int) -> dict:
    cmd, knobs = command(bin_dir, name, side)
    precreate(SCRATCH / DATA_FILE.get(name, "w.dat"), SERIES[name][4])
    log = out / name / f"{side}{i}.darshan"
    log.parent.mkdir(parents=True, exist_ok=True)
    sets = [a for k, v in knobs.items() for a in ("--set", f"{k}={v}")]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(["iolens", "run", "-q", "-o", str(log), *sets, "--", *cmd],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0 or not log.is_file():
        sys.exit(f"pairs: {name} {side}{i} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    last = [ln for ln in done.stdout.splitlines() if ln.strip() and not ln.startswith("log:")]
    return {"series": name, "side": side, "repeat": i, "log": str(log), "wall": wall, "load": load,
            "command": " ".join(cmd[3:]), "knobs": " ".join(f"{k}={v}" for k, v in knobs.items()),
            "output": last[-1] if last else ""}


def io_times(logs: list) -> list:
    """Each log's slowest-rank I/O time as `iolens compare --json` measures it."""
    done = subprocess.run(["iolens", "compare", "--json", *logs], capture_output=True, text=True, check=True)
    return [r["io_time"] for r in json.loads(done.stdout)["runs"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", type=Path, required=True, help="where bench/real/build.sh put the programs")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("series", nargs="*", help=f"default: all of {', '.join(SERIES)}")
    args = ap.parse_args(argv)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    table = args.out / "runs.tsv"
    for name in args.series or list(SERIES):
        print(f"{name}: uptime {os.getloadavg()}", flush=True)
        runs = [run_one(args.bin.resolve(), args.out, name, side, i)
                for i in range(1, args.repeats + 1) for side in ("base", "other")]
        for run, t in zip(runs, io_times([r["log"] for r in runs])):
            run["io_time"] = t
        with open(table, "a") as f:
            for r in runs:
                f.write("\t".join(str(r[k]) for k in ("series", "side", "repeat", "io_time", "wall", "load",
                                                      "command", "knobs", "output")) + "\n")
        for side in ("base", "other"):
            times = [r["io_time"] for r in runs if r["side"] == side]
            med = statistics.median_low(times)
            print(f"  {side}: " + " ".join(f"{t:.4f}" for t in times) + f"  median {med:.4f} "
                  f"(run {times.index(med) + 1}), spread {max(times) - min(times):.4f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
