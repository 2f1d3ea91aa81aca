#!/usr/bin/env python3
"""Write tests/data/pairs/savings.tsv: one row per real before/after pair, the shared ones and ours.

Ours come from `bench/real/pairs.py --out RUNS` (RUNS/runs.tsv and every run's log): per series the run whose
slowest-rank I/O time is the median of its side is copied to tests/data/pairs/ under the pair's name, and, for
one series per program family, the repeat made right after the kept run, as a same-config noise pair. The
noise band of a pair is the median difference between two runs of its baseline's repeats (the spread, largest
minus smallest, beside it); a pair whose saving is within it is "no real change" whatever compare's rule says. The shared pairs are read where they are ($IOLENS_LOGS/pairs, pairs2). Every io_time and verdict is what
`iolens compare --json BASE OTHER` says of the two logs (tests/integration/diagnosis/test_savings_table.py
checks that this stays true).

    python bench/real/savings_table.py --runs RUNS [--logs $IOLENS_LOGS]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "pairs"
DEFAULT_LOGS = Path(os.environ.get("IOLENS_LOGS") or next(
    (p for p in (REPO.parent / "shared" / "logs", REPO.parent.parent / "shared" / "logs") if p.is_dir()),
    REPO.parent / "shared" / "logs"))  # /work/main or a worktree under /work/wt
COLUMNS = ("pair", "root", "base", "other", "ranks", "change", "applied", "codes", "fix", "base_io_time",
           "other_io_time", "saving", "noise", "spread", "noise_from", "verdict", "load")
# compare's default rule: a change counts past 1.5x and 10 ms (docs/compare.md); the band of a pair with no
# repeats of its own
RULE_RATIO, RULE_SECONDS = 1.5, 0.010

# the change each kind applies, and the diagnosis codes whose recommendation is that change
COLLECTIVE = ("NO_COLLECTIVE_IO",)
CB_OFF = ("COLLECTIVE_IO", "MPIIO_OVERHEAD")
ALIGN = ("MISALIGNED_IO",)
H5_FLUSH = ("HDF5_METADATA", "FSYNC_HEAVY")
H5_COLLMETA = ("HDF5_METADATA",)
FILL = ("SERIALIZED_IO", "REDUNDANT_WRITES", "RANK_IMBALANCE")
H5_INDEP = ("COLLECTIVE_IO", "MPIIO_OVERHEAD")
# the kind of change (Recommendation.fix, iolens.analysis.diagnosis.fixes) of the recommendations a pair's
# change applies, by pair ("": the recommendations that name no kind, e.g. aligning records)
FIX = {"small_indep2": "collective", "smallw4_shared": "collective", "collw4_cb": "cb_off",
       "h5meta2_flush": "sync_less", "h5meta2_collmeta": "coll_metadata", "fill4_shared": "overwrite",
       "smallw2": "collective", "smallw4": "collective", "smallw8": "collective", "ncw4": "cb_off",
       "h5flush2": "sync_less", "h5collmeta2": "coll_metadata", "h5fill4": "overwrite",
       "h5xfer4": "hdf5_independent", "fill4": "overwrite"}

# (pair, folder under IOLENS_LOGS, base, other, change, applied, codes): pairs/README.md, pairs2/README.md
SHARED = (
    ("small_indep2", "pairs", "small_indep", "small_coll",
     "30,000 small interleaved records per rank: independent -> collective (2,000 per call)",
     "program: MPI_File_write_at -> MPI_File_write_at_all; hints romio_cb_write=enable,cb_nodes=2",
     COLLECTIVE + ("SMALL_IO",)),
    ("shifted4", "pairs", "shifted", "aligned", "64 KiB writes 4,000 B past a boundary -> 4 MiB aligned writes",
     "program: request size and offset", ALIGN + ("SMALL_IO",)),
    ("repeat4", "pairs", "repeat_1", "repeat_2", "nothing (the same run twice)", "", ()),
    ("smallw4_shared", "pairs2", "smallw4_indep", "smallw4_coll",
     "10,000 small interleaved writes per rank: independent -> collective (2,000 per call, 2 aggregators)",
     "program: indep -> coll 2000; hints romio_cb_write=enable,cb_nodes=2,cb_config_list=*:2", COLLECTIVE),
    ("smallw4_shared_again", "pairs2", "smallw4_coll", "smallw4_coll_again", "nothing (the same run twice)",
     "", ()),
    ("collw4_cb", "pairs2", "collw4_cb", "collw4_nocb", "64 MiB in 1 MiB collective writes: cb on -> off",
     "hint romio_cb_write=disable", CB_OFF),
    ("h5meta2_flush", "pairs2", "h5meta2_flush", "h5meta2_noflush",
     "100 small HDF5 datasets: H5Fflush after each -> none", "program: flush flag", H5_FLUSH + ("SMALL_IO",)),
    ("h5meta2_collmeta", "pairs2", "h5meta2_noflush", "h5meta2_noflush_collmeta",
     "collective metadata reads/writes and 1 MiB metadata blocks", "program: H5Pset_all_coll_metadata_ops, "
     "H5Pset_coll_metadata_write, H5Pset_meta_block_size", H5_COLLMETA),
    ("fill4_shared", "pairs2", "fill4_fill", "fill4_nofill", "rank 0 pre-fills the shared file -> no fill",
     "program: fill flag", FILL),
    ("seqw4_shift512", "pairs2", "seqw4_shift512", "seqw4_aligned",
     "64 MiB per rank in 1 MiB requests shifted by 512 B -> aligned", "program: -s 512 -> none", ALIGN),
)

# series of bench/real/pairs.py: (base name, other name, change, applied, codes, keep a noise pair)
OURS = {
    "smallw2": ("indep", "coll", "10,000 small (1-4 KiB) interleaved writes per rank: independent -> "
                "collective (2,000 per call, ROMIO defaults)", "program: smallw indep -> coll 2000", COLLECTIVE,
                "base"),
    "smallw4": ("indep", "coll", "6,000 small interleaved writes per rank: independent -> collective",
                "program: smallw indep -> coll 2000", COLLECTIVE, ""),
    "smallw8": ("indep", "coll", "4,000 small interleaved writes per rank: independent -> collective",
                "program: smallw indep -> coll 2000", COLLECTIVE, "other"),
    "ncw4": ("cb", "nocb", "8 collective noncontiguous (vector view) writes of 1024 x 256 B per rank: "
                "collective buffering on (ROMIO default) -> off", "iolens run --set romio.romio_cb_write=disable",
                CB_OFF, "base"),
    "h5flush2": ("flush", "noflush", "100 small HDF5 datasets (2 KiB per rank each): H5Fflush after each -> "
                 "none", "program: h5_many_datasets -f -> none", H5_FLUSH + ("SMALL_IO",), ""),
    "h5collmeta2": ("meta", "collmeta", "100 small HDF5 datasets: independent metadata -> collective metadata "
                    "reads and writes", "iolens run --set hdf5.coll_metadata=on", H5_COLLMETA, "base"),
    "h5fill4": ("fill", "nofill", "50 HDF5 datasets of 512 KiB per rank: default fill -> H5D_FILL_TIME_NEVER",
                "iolens run --set hdf5.fill_time=never", FILL, "base"),
    "h5xfer4": ("coll", "indep", "20 small HDF5 datasets, 8 KiB per rank each: collective transfer -> "
                "independent", "iolens run --set hdf5.transfer=independent", H5_INDEP, ""),
    "seqw4": ("shift512", "aligned", "32 MiB per rank in 1 MiB requests shifted by 512 B -> aligned",
                    "program: seqwrite -s 512 -> none", ALIGN, "base"),
    "fill4": ("fill", "nofill", "rank 0 fills the 128 MiB shared file, then 32 MiB per rank -> no fill",
              "program: fill FILL 1 -> 0", FILL, "base"),
}


def compare(base: Path, other: Path) -> tuple:
    """(base io_time, other io_time, verdict) as `iolens compare --json` gives them."""
    done = subprocess.run(["iolens", "compare", "--json", str(base), str(other)], capture_output=True,
                          text=True, check=True)
    runs = json.loads(done.stdout)["runs"]
    return runs[0]["io_time"], runs[1]["io_time"], runs[1]["verdict"]["verdict"]


def rule_band(a: float, b: float) -> float:
    """The largest difference compare's default rule calls no real change between two times near a and b."""
    return max(RULE_SECONDS, (RULE_RATIO - 1) * min(a, b))


def noise_of(times: list) -> tuple:
    """(the typical difference between two identical runs: the median |a - b| over every two of the repeats,
    their spread: largest - smallest)."""
    diffs = [abs(a - b) for i, a in enumerate(times) for b in times[i + 1:]]
    return statistics.median(diffs), max(times) - min(times)


def row(pair, root, base, other, ranks, change, applied, codes, times, noise, noise_from, load,
        spread=None) -> dict:
    b, o, verdict = times
    saving = b - o
    if abs(saving) <= noise:
        verdict = "no real change"
    return {"pair": pair, "root": root, "base": base, "other": other, "ranks": ranks, "change": change,
            "applied": applied, "codes": ",".join(codes), "fix": FIX.get(pair, "") if codes else "",
            "base_io_time": f"{b:.6f}", "other_io_time": f"{o:.6f}",
            "saving": f"{saving:.6f}", "noise": f"{noise:.6f}", "spread": "" if spread is None else f"{spread:.6f}",
            "noise_from": noise_from, "verdict": verdict,
            "load": load}


def read_runs(runs_dir: Path) -> dict:
    """series -> side -> [run dicts] from pairs.py's runs.tsv."""
    out: dict = {}
    with open(runs_dir / "runs.tsv") as f:
        for line in f:
            series, side, rep, io_time, wall, load, command, knobs, output = line.rstrip("\n").split("\t")
            out.setdefault(series, {}).setdefault(side, []).append(
                {"repeat": int(rep), "io_time": float(io_time), "wall": float(wall), "load": float(load),
                 "command": command, "knobs": knobs, "output": output,
                 "log": runs_dir / series / f"{side}{rep}.darshan"})
    return out


def keep(log: Path, name: str) -> str:
    """Copy a run's log (and its iolens run sidecar, minus this machine's paths) into tests/data/pairs."""
    target = DATA / f"{name}.darshan"
    shutil.copyfile(log, target)
    sidecar = Path(str(log) + ".run.json")
    if sidecar.is_file():
        meta = json.loads(sidecar.read_text())
        meta["command"] = [Path(w).name if w.startswith("/") else w for w in meta.get("command", [])]
        meta["darshan_lib"] = Path(meta.get("darshan_lib", "")).name
        Path(str(target) + ".run.json").write_text(json.dumps(meta, indent=2) + "\n")
    return target.name


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, required=True, help="bench/real/pairs.py's --out")
    ap.add_argument("--logs", type=Path, default=DEFAULT_LOGS)
    args = ap.parse_args(argv)
    DATA.mkdir(parents=True, exist_ok=True)
    rows = []
    for pair, folder, base, other, change, applied, codes in SHARED:
        b, o = (f"{folder}/{n}.darshan" for n in (base, other))
        times = compare(args.logs / b, args.logs / o)
        rows.append(row(pair, "IOLENS_LOGS", b, o, "", change, applied, codes, times,
                        rule_band(times[0], times[1]), "compare rule (no repeats)", ""))
    runs = read_runs(args.runs)
    table_runs = []
    for series, (bname, oname, change, applied, codes, noise_side) in OURS.items():
        sides = runs[series]
        chosen, noise, loads = {}, {}, []
        for side in ("base", "other"):
            times = [r["io_time"] for r in sides[side]]
            med = statistics.median_low(times)
            chosen[side] = next(r for r in sides[side] if r["io_time"] == med)
            noise[side] = noise_of(times)
            loads += [r["load"] for r in sides[side]]
            for r in sides[side]:
                command = " ".join(Path(w).name if w.startswith("/") else w for w in r["command"].split())
                table_runs.append((series, side, r["repeat"], r["io_time"], r["wall"], r["load"], command,
                                   r["knobs"], r["output"], r is chosen[side]))
        names = {"base": f"{series}_{bname}", "other": f"{series}_{oname}"}
        kept = {side: keep(chosen[side]["log"], names[side]) for side in ("base", "other")}
        ranks = ""  # filled in from the logs below
        load = f"{min(loads):.1f}-{max(loads):.1f}"
        # the noise band: how much two runs of the baseline typically differ (runs.tsv keeps every run)
        n = len(sides["base"])
        times = compare(DATA / kept["base"], DATA / kept["other"])
        rows.append(row(series, "tests/data/pairs", kept["base"], kept["other"], ranks, change, applied, codes,
                        times, noise["base"][0], f"{n} base runs", load, noise["base"][1]))
        if noise_side:  # the kept run and the repeat made right after it (the same run twice, as a user would)
            runs_of = sorted(sides[noise_side], key=lambda r: r["repeat"])
            again = runs_of[(runs_of.index(chosen[noise_side]) + 1) % len(runs_of)]
            again_name = keep(again["log"], f"{names[noise_side]}_again")
            times = compare(DATA / kept[noise_side], DATA / again_name)
            rows.append(row(f"{series}_noise", "tests/data/pairs", kept[noise_side], again_name, ranks,
                            "nothing (the same run twice)", "", (), times, noise[noise_side][0],
                            f"{n} {noise_side} runs", load, noise[noise_side][1]))
    for r in rows:  # ranks from the logs themselves
        path = (args.logs if r["root"] == "IOLENS_LOGS" else DATA) / r["base"]
        r["ranks"] = str(_ranks(path))
    tmp = DATA / "savings.tsv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(DATA / "savings.tsv")
    with open(DATA / "runs.tsv", "w") as f:
        f.write("series\tside\trepeat\tio_time\twall\tload\tcommand\tknobs\toutput\tkept\n")
        order = list(OURS)  # as they were run: series by series, base and other interleaved
        for t in sorted(table_runs, key=lambda t: (order.index(t[0]), t[2], t[1] != "base")):
            f.write("\t".join(f"{v:.6f}" if isinstance(v, float) else str(v) for v in t) + "\n")
    print(f"{len(rows)} pairs -> {DATA / 'savings.tsv'}")
    return 0


def _ranks(path: Path) -> int:
    import iolens
    return int(iolens.read(str(path)).job["nprocs"])


if __name__ == "__main__":
    sys.exit(main())
