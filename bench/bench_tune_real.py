#!/usr/bin/env python3
"""Runs `iolens tune` needs to find the best configuration of bench/real's programs, for two iolens trees.

For each program whose best knob is known (its setting several-fold faster: bench/real/README.md), each tree
(e.g. main's and this branch's `src/`) and each sampler seed, a study runs under the real Darshan runtime:

    iolens tune --budget B --repeats 2 --seed S -o DIR -q --json -- mpiexec -n 4 PROGRAM ARGS

and the bench reads its trials: **runs needed** = the position (baseline runs included) of the first run that
sets the decisive knob to its best value; whether the study's confirmed best sets it; the verdict.

    IOLENS_DARSHAN_LIB=/path/to/libdarshan.so python bench/bench_tune_real.py --bin BIN \\
        --tree before=/work/main/src --tree after=src [--seeds 0 1 2] [--budget 10] [PROGRAM...]

The machine's load average is printed before every study (timings on a shared machine vary with it).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

SCRATCH = Path(os.environ.get("TUNE_SCRATCH", "/tmp/iolens-tune-real"))
# name: (ranks, program and arguments (FILE: the data file), the decisive knob, its best value)
PROGRAMS = {
    "ncw4": (4, ["noncontig_write", "FILE", "-c", "8"], "romio.romio_cb_write", "disable"),
    "h5xfer4": (4, ["h5_many_datasets", "FILE", "-d", "20", "-e", "1024"], "hdf5.transfer", "independent"),
}


def study(tree: Path, bin_dir: Path, name: str, seed: int, budget: int, out: Path) -> dict:
    ranks, prog, knob, best = PROGRAMS[name]
    data = SCRATCH / f"{name}.dat"
    command = ["mpiexec", "-n", str(ranks), str(bin_dir / prog[0])] + [str(data) if w == "FILE" else w
                                                                        for w in prog[1:]]
    if out.exists():
        shutil.rmtree(out)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    load = os.getloadavg()[0]
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "import sys; from iolens.cli.main import main; sys.exit(main())", "tune", "--budget", str(budget), "--repeats", "2",
                           "--seed", str(seed), "-o", str(out), "-q", "--json", "--", *command],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} seed {seed} ({tree}): tune failed: {done.stderr.strip()[-400:]}")
    result = json.loads(done.stdout)
    trials = pl.read_parquet(out / "trials.parquet").sort("trial")
    hit = [i + 1 for i, v in enumerate(trials[knob].to_list() if knob in trials.columns else [])
           if v is not None and str(v) == best]
    first = trials.filter(pl.col("role") == "search").head(1)
    return {"program": name, "tree": str(tree), "seed": seed, "load": load, "minutes": (time.monotonic() - began) / 60,
            "runs": len(trials), "runs_needed": hit[0] if hit else None,
            "first_search": first["chosen_by"].to_list()[0] if first.height else None,
            "best_sets_it": str((result.get("best") or {}).get("config", {}).get(knob)) == best,
            "verdict": (result.get("verdict") or {}).get("verdict"),
            "baseline": result["baseline"]["median"], "best": (result.get("best") or {}).get("median")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="*", default=list(PROGRAMS))
    ap.add_argument("--bin", type=Path, required=True, help="bench/real's programs, built (bench/real/build.sh)")
    ap.add_argument("--tree", action="append", required=True, help="LABEL=PATH of an iolens src/ to run")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--budget", type=int, default=10)
    ap.add_argument("--out", type=Path, default=SCRATCH / "studies")
    args = ap.parse_args()
    SCRATCH.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.programs:
        for seed in args.seeds:
            for spec in args.tree:  # interleaved: the trees see the same load
                label, _, path = spec.partition("=")
                r = study(Path(path).resolve(), args.bin, name, seed, args.budget, args.out / f"{name}-{label}-{seed}")
                r["tree"] = label
                rows.append(r)
                print(json.dumps(r), flush=True)
    print("\n| program | tree | seed | load | runs needed | first search run | best sets it | verdict | "
          "baseline → best |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        best = f"{r['baseline']:.3g} s → {r['best']:.3g} s" if r["best"] is not None else "-"
        print(f"| {r['program']} | {r['tree']} | {r['seed']} | {r['load']:.1f} | {r['runs_needed'] or '-'} of "
              f"{r['runs']} | {r['first_search']} | {'yes' if r['best_sets_it'] else 'no'} | {r['verdict']} | {best} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
