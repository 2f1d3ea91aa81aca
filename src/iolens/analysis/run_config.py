"""How runs were configured, and which of their files are the same file: what `compare` diffs besides time."""
from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl

from ..model import Log
from ..model.darshan import STD_STREAMS
from .access import file_patterns
from .runs import collective_share, data_files
from .summary import dxt_summary

# run-specific parts of a path: numbers (job ids, ranks, dates, steps); two runs' files match when their
# paths are equal once these are replaced
_VARIABLE = re.compile(r"\d+")
SIDECAR_SUFFIX = ".run.json"  # written by `iolens run` next to the log: the hints and environment it set


def path_pattern(name: str) -> str:
    return _VARIABLE.sub("#", name)


def match_files(names_per_run: list) -> dict:
    """Files matched across runs: by exact path, then by path pattern where that is unambiguous.

    Returns {"matched": [{"key", "names": [name or None per run]}], "unmatched": [{"run", "name"}]}."""
    n = len(names_per_run)
    sets = [set(names) - set(STD_STREAMS) for names in names_per_run]
    rows, used = [], [set() for _ in range(n)]
    for name in sorted(set.union(*sets) if sets else set()):
        if sum(name in s for s in sets) > 1:
            rows.append({"key": name, "names": [name if name in s else None for s in sets]})
            for i, s in enumerate(sets):
                if name in s:
                    used[i].add(name)
    by_pattern = {}
    for i, s in enumerate(sets):
        for name in s - used[i]:
            by_pattern.setdefault(path_pattern(name), [[] for _ in range(n)])[i].append(name)
    left = [[] for _ in range(n)]
    for pattern, per_run in sorted(by_pattern.items()):
        present = [names for names in per_run if names]
        if len(present) > 1 and all(len(names) <= 1 for names in per_run):
            rows.append({"key": pattern, "names": [names[0] if names else None for names in per_run]})
        else:
            for i, names in enumerate(per_run):
                left[i] += names
    rows += _only_files_per_directory(left)
    matched = {name for r in rows for name in r["names"] if name}
    unmatched = [{"run": i, "name": name} for i, names in enumerate(left) for name in sorted(names)
                 if name not in matched]
    return {"matched": sorted(rows, key=lambda r: r["key"]), "unmatched": unmatched}


def _only_files_per_directory(left: list) -> list:
    """The last resort: where a directory holds exactly one unmatched file in each run that has one there
    (a.dat in one run, b.dat in the other), those are the same file under another name."""
    by_dir = {}
    for i, names in enumerate(left):
        for name in names:
            by_dir.setdefault(name.rsplit("/", 1)[0] + "/*", [[] for _ in left])[i].append(name)
    return [{"key": key, "names": [names[0] if names else None for names in per_run]}
            for key, per_run in sorted(by_dir.items())
            if sum(bool(names) for names in per_run) > 1 and all(len(names) <= 1 for names in per_run)]


def file_keys(files: dict) -> list:
    """Per run: name -> the key its file is matched under (its own name when unmatched)."""
    n = len(files["matched"][0]["names"]) if files["matched"] else 0
    keys = [dict() for _ in range(max(n, 1 + max((u["run"] for u in files["unmatched"]), default=0)))]
    for row in files["matched"]:
        for i, name in enumerate(row["names"]):
            if name:
                keys[i][name] = row["key"]
    return keys


def patterns_by_layer(log: Log) -> dict:
    """{'posix': {name: pattern}, 'mpiio': {name: pattern}}: each file's access pattern as the diagnosis
    classifies it (`analysis.access.file_patterns`: consecutive, sequential, strided, rank-interleaved,
    random), at the file system (POSIX) and, where traced, at the MPI-IO layer."""
    out = {"posix": {}, "mpiio": {}}
    table = file_patterns(log).filter(~pl.col("name").is_in(list(STD_STREAMS)) & (pl.col("requests") > 0))
    for name, layer, pattern in table.select("name", "layer", "pattern").iter_rows():
        if name is not None and layer in out:
            out[layer][name] = pattern
    return out


def lustre_layouts(log: Log) -> dict:
    """name -> 'stripe_size × stripe_count on OSTs …' (first component) for files with a Lustre record."""
    lus = log.lustre
    if lus.is_empty():
        return {}
    names = dict(zip(log.files["file_id"].to_list(), log.files["name"].to_list()))
    first = lus.filter(pl.col("component") == 0).unique("file_id", keep="first", maintain_order=True)
    return {names.get(fid, str(fid)): {"stripe_size": int(size), "stripe_count": int(count),
                                       "osts": [int(o) for o in (osts or [])]}
            for fid, size, count, osts in first.select("file_id", "stripe_size", "stripe_count", "osts").iter_rows()}


def read_sidecar(path) -> dict:
    """What `iolens run` recorded next to the log (hints file, --env), or {}."""
    try:
        data = json.loads(Path(str(path) + SIDECAR_SUFFIX).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_knobs(side: dict) -> dict:
    """{knob: value} that `iolens run --set` applied; a knob the run could not apply says so in its value."""
    out = {}
    for k in side.get("knobs", []) if isinstance(side.get("knobs"), list) else []:
        if isinstance(k, dict) and k.get("name"):
            out[k["name"]] = str(k.get("value", "")) + ("" if k.get("applied", True) else " (not applied)")
    return out


def run_inputs(log: Log) -> set:
    """Files `iolens run` made the program read that are not the application's own I/O: the ROMIO hints
    file (MPI-IO reads it in MPI_File_open, so Darshan records it in the runs that have one)."""
    side = read_sidecar(log.path)
    return {f for f in (side.get("hints_file"), side.get("hints_read")) if isinstance(f, str) and f}


def _dxt_state(log: Log) -> str:
    if not log.has_dxt:
        return "off"
    return "on, truncated" if any(d["truncated"] for d in dxt_summary(log)) else "on"


def working_processes(log: Log) -> int:
    """The processes that do the job's work: every rank but the helpers a trace names (Python
    multiprocessing's resource tracker: a DFTracer trace keeps it as a process, a job of Darshan logs folds it
    into its helpers), so that one job under two tracers counts the same."""
    roles = log.processes["role"].cast(pl.String) if "role" in log.processes.columns else None
    helpers = int((roles == "helper").sum()) if roles is not None else 0
    return int(log.job["nprocs"]) - helpers


def run_config(log: Log) -> dict:
    job = log.job
    side = read_sidecar(log.path)
    share = collective_share(log)
    patterns = patterns_by_layer(log)
    return {
        "tracer": job.get("format", "darshan"),
        "nprocs": working_processes(log),
        "exe": job["exe"],
        "mpiio_hints": job["metadata"].get("h", ""),
        "romio_hints_file": side.get("hints", ""),
        "env": side.get("env", {}),
        "knobs": run_knobs(side),
        # the tracer: Darshan's version, or another tracer's name and version (dftracer 2.0.3)
        "darshan": (job["lib_version"] or f"log format {job['log_version']}") if job.get("format", "darshan") == "darshan"
        else f"{job['format']} {job['lib_version'] or ''}".strip(),
        "dxt": _dxt_state(log),
        "collective_share": None if share is None else round(share, 4),
        "files": data_files(log, run_inputs(log)),
        "patterns": patterns["posix"],
        "mpiio_patterns": patterns["mpiio"],
        "lustre": lustre_layouts(log),
    }


CONFIG_LABELS = {
    "nprocs": "processes", "exe": "command line", "mpiio_hints": "MPI-IO hints (log)",
    "romio_hints_file": "ROMIO hints (iolens run)", "env": "environment (iolens run)",
    "knobs": "knobs (iolens run --set)", "darshan": "Darshan",
    "dxt": "DXT trace", "collective_share": "collective MPI-IO share", "files": "files",
}


def config_diff(configs: list, files: dict) -> list:
    """One row per setting: its value in each run and whether it differs from the baseline's."""
    rows = []
    for key, label in CONFIG_LABELS.items():
        values = [c[key] for c in configs]
        if key == "darshan" and any(c.get("tracer", "darshan") != "darshan" for c in configs):
            # runs traced by different tools (a Darshan log and a DFTracer trace of one job): each named
            label = "tracer"
            values = [v if c.get("tracer", "darshan") != "darshan" else f"darshan {v}" for v, c in zip(values, configs)]
        rows.append(_row(key, label, values))
    for match in files["matched"]:
        names = match["names"]
        for what, field in (("access pattern", "patterns"), ("MPI-IO access pattern", "mpiio_patterns"),
                            ("Lustre layout", "lustre")):
            values = [c[field].get(n) if n else None for c, n in zip(configs, names)]
            if field == "mpiio_patterns" and all(v == c["patterns"].get(n) for v, c, n in zip(values, configs, names)
                                                 if v is not None):
                continue  # MPI-IO sees what the file system sees: one row says it
            if any(v is not None for v in values):
                rows.append(_row(f"{field}:{match['key']}", f"{what} of {match['key']}", values))
    return rows


def _row(key, label, values) -> dict:
    return {"key": key, "label": label, "values": values,
            "changed": [v != values[0] for v in values]}
