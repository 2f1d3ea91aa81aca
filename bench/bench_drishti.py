#!/usr/bin/env python3
"""Side-by-side: iolens diagnose and Drishti on every Darshan log under a directory.

For each log: which issues each tool raised (Drishti codes mapped onto iolens codes), where they disagree,
and the wall time per log. Drishti runs in its own virtualenv (it pins old pandas/pydarshan):

    python3 -m venv /work/venv-ref && /work/venv-ref/bin/pip install drishti-io darshan
    /work/venv/bin/python bench/bench_drishti.py --drishti /work/venv-ref/bin/drishti --markdown out.md

iolens is timed in-process (read + diagnose, nothing cached); Drishti as the command a user runs
(`drishti --csv`), so its time includes starting Python and importing pandas/pydarshan (measured
separately as `drishti --help` and reported).
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))

# Drishti 0.x insight codes (drishti/includes/config.py) with their severity in module.py
DRISHTI_SEVERITY = {
    "S01": "HIGH", "P01": "INFO", "P02": "INFO", "P03": "INFO", "P04": "INFO", "P05": "HIGH", "P06": "HIGH",
    "P07": "HIGH", "P08": "HIGH", "P09": "WARN", "P10": "WARN", "P11": "HIGH", "P12": "OK", "P13": "HIGH",
    "P14": "OK", "P15": "HIGH", "P16": "HIGH", "P17": "HIGH", "P18": "HIGH", "P19": "HIGH", "P21": "HIGH",
    "P22": "HIGH", "M01": "WARN", "M02": "HIGH", "M03": "HIGH", "M04": "OK", "M05": "OK", "M06": "WARN",
    "M07": "WARN", "M08": "OK", "M09": "HIGH", "M10": "OK",
}
# Drishti code -> the iolens code that judges the same thing (None: iolens has no such check, on purpose)
DRISHTI_TO_IOLENS = {
    "S01": "STDIO_HEAVY",
    "P05": "SMALL_IO", "P06": "SMALL_IO", "P15": "SMALL_IO", "P16": "SMALL_IO",
    "P07": None,  # memory (buffer) alignment: not a file-system problem iolens reports
    "P08": "MISALIGNED_IO",
    "P09": "REDUNDANT_READS", "P10": "REDUNDANT_WRITES",
    "P11": "RANDOM_ACCESS", "P13": "RANDOM_ACCESS",
    "P17": "METADATA_HEAVY",
    "P18": "RANK_IMBALANCE", "P19": "RANK_IMBALANCE", "P21": "RANK_IMBALANCE", "P22": "RANK_IMBALANCE",
    "M01": None,  # "does not use MPI-IO": not a problem by itself
    "M02": "NO_COLLECTIVE_IO", "M03": "NO_COLLECTIVE_IO",
    "M06": None, "M07": None,  # "could use non-blocking I/O": advice, not a diagnosis
    "M09": None,  # aggregators vs nodes from the hints (iolens: RANK_IMBALANCE when it matters)
}
# iolens codes Drishti cannot raise: they do not count as disagreements
IOLENS_ONLY = {"TRUNCATED_TRACE", "SERIALIZED_IO", "STRAGGLER", "COLLECTIVE_IO", "DATA_SIEVING", "HDF5_METADATA",
               "LUSTRE_STRIPING", "OST_IMBALANCE", "SLOW_OST", "FSYNC_HEAVY", "CHECK_FAILED"}


def run_iolens(path: Path) -> dict:
    import iolens
    from iolens.analysis.diagnosis import diagnose

    t = time.perf_counter()
    try:
        log = iolens.read(str(path))
        insights = diagnose(log)
    except Exception as exc:  # a log iolens refuses (e.g. a link file) is reported, not fatal
        return {"error": f"{type(exc).__name__}: {exc}"[:120], "seconds": time.perf_counter() - t}
    seconds = time.perf_counter() - t
    return {
        "issues": sorted({i.code for i in insights if i.severity in ("critical", "warning")}),
        "info": sorted({i.code for i in insights if i.severity in ("info", "ok")}),
        "severity": {i.code: i.severity for i in reversed(insights)},
        "seconds": seconds,
    }


def run_drishti(drishti: str, path: Path, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        try:
            p = subprocess.run([drishti, "--csv", "--export_dir", out, str(path)], capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s", "seconds": timeout}
        seconds = time.perf_counter() - t
        files = list(Path(out).glob("*.csv"))
        if p.returncode != 0 or not files:
            tail = (p.stderr or p.stdout).strip().splitlines()
            return {"error": (tail[-1] if tail else f"exit {p.returncode}")[:120], "seconds": seconds}
        with open(files[0]) as fh:
            row = next(csv.DictReader(fh))
    raised = sorted(c for c, v in row.items() if c in DRISHTI_SEVERITY and v.strip() == "True")
    issues = [c for c in raised if DRISHTI_SEVERITY[c] in ("HIGH", "WARN")]
    mapped = sorted({DRISHTI_TO_IOLENS[c] for c in issues if DRISHTI_TO_IOLENS.get(c)})
    return {"raw": issues, "ok": [c for c in raised if DRISHTI_SEVERITY[c] in ("OK", "INFO")],
            "issues": mapped, "seconds": seconds}


# an iolens insight that states the same finding more precisely than the Drishti code it stands for
COVERS = {"SERIALIZED_IO": "RANK_IMBALANCE",   # one rank doing the I/O alone is a (worse) rank imbalance
          "SLOW_OST": "RANK_IMBALANCE",        # the ranks on the slow OST are the slow ranks
          "DATA_SIEVING": "REDUNDANT_READS"}   # read-modify-write reads are re-reads of written data


def compare(io: dict, dr: dict) -> dict:
    if "error" in io or "error" in dr:
        return {"only_iolens": [], "only_drishti": [], "agree": None}
    b = set(dr["issues"])
    # a more specific iolens code satisfies the Drishti code it covers (never counts as "iolens only")
    a = (set(io["issues"]) | {COVERS[c] for c in io["issues"] if COVERS.get(c) in b}) - IOLENS_ONLY
    return {"only_iolens": sorted(a - b), "only_drishti": sorted(b - a), "agree": a == b}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=Path, default=DEFAULT_LOGS, help="directory searched for *.darshan (recursive)")
    ap.add_argument("--drishti", default=shutil.which("drishti") or "/work/venv-ref/bin/drishti",
                    help="the drishti executable (installed in its own virtualenv)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per log for Drishti")
    ap.add_argument("--markdown", type=Path, help="also write the table as Markdown to this file")
    ap.add_argument("--only", default="", help="only logs whose path contains this text")
    args = ap.parse_args(argv)
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} (1 min) before the run")

    logs = sorted(p for p in args.logs.rglob("*.darshan") if args.only in str(p))
    have_drishti = Path(args.drishti).exists() or shutil.which(args.drishti)
    if not have_drishti:
        print(f"Drishti not found at {args.drishti}: only iolens is run", file=sys.stderr)
    startup = None

    rows = []
    for path in logs:
        rel = str(path.relative_to(args.logs))
        io = run_iolens(path)
        dr = run_drishti(args.drishti, path, args.timeout) if have_drishti else {"error": "not run", "seconds": 0}
        rows.append((rel, io, dr, compare(io, dr)))
        c = rows[-1][3]
        print(f"{rel}: iolens {fmt(io)} ({io['seconds']:.2f} s) | drishti {fmt(dr)} ({dr['seconds']:.2f} s)"
              + ("" if c["agree"] in (True, None) else
                 f" | DIFFER only-iolens={c['only_iolens']} only-drishti={c['only_drishti']}"),
              file=sys.stderr, flush=True)

    # Drishti's fixed cost per log (Python start-up, pandas/pydarshan imports): its fastest run
    done = [dr["seconds"] for _, _, dr, _ in rows if "error" not in dr]
    startup = min(done) if done else None
    md = table(rows, startup)
    print(md)
    if args.markdown:
        args.markdown.write_text(md)
    return 0


def fmt(r: dict) -> str:
    if "error" in r:
        return f"ERROR ({r['error']})"
    return ", ".join(r["issues"]) or "—"


def table(rows, startup) -> str:
    out = ["| log | iolens (critical/warning) | Drishti (HIGH/WARN, as iolens codes) | Drishti raw codes | "
           "same? | iolens s | Drishti s |", "|---|---|---|---|---|---:|---:|"]
    agree = differ = errors = 0
    io_total = dr_total = 0.0
    for rel, io, dr, c in rows:
        io_total += io["seconds"]
        dr_total += dr["seconds"]
        if c["agree"] is None:
            same = "n/a"
            errors += 1
        elif c["agree"]:
            same = "yes"
            agree += 1
        else:
            same = ("**no**: " + "; ".join(filter(None, [
                "iolens only " + ", ".join(c["only_iolens"]) if c["only_iolens"] else "",
                "Drishti only " + ", ".join(c["only_drishti"]) if c["only_drishti"] else ""])))
            differ += 1
        raw = "ERROR" if "error" in dr else (", ".join(dr.get("raw", [])) or "—")
        out.append(f"| {rel} | {fmt(io)} | {fmt(dr)} | {raw} | {same} | {io['seconds']:.2f} | {dr['seconds']:.2f} |")
    out.append("")
    out.append(f"{len(rows)} logs: {agree} agree, {differ} differ, {errors} not comparable (a tool failed). "
               f"Total time: iolens {io_total:.1f} s, Drishti {dr_total:.1f} s"
               + (f" (Drishti's fixed cost per log — Python start-up and imports — is about {startup:.1f} s, "
                  "its fastest run)." if startup else "."))
    out.append("Equivalences used in the comparison: " + ", ".join(f"iolens {k} counts as {v}"
                                                                   for k, v in COVERS.items()) + ".")
    out.append("Codes iolens raises that Drishti has no check for (not counted as disagreements): "
               + ", ".join(sorted(IOLENS_ONLY)) + ".")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
