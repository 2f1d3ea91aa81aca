"""Did a change help? Runs side by side: metrics, a verdict that does not call noise a change, and what
changed in the configuration and in the diagnosis.

    import iolens
    result = iolens.compare("before.darshan", "after.darshan")
    result["runs"][1]["verdict"]            # {"verdict": "faster", "speedup": 2.2, ...}

The structure is the `iolens compare --json` output, documented in docs/compare.md (SCHEMA_VERSION).

The noise rule: the measure is the slowest rank's I/O time (the job's I/O time, docs/measures.md), or, when
every run has a training loop (DFTracer traces with spans), the time the loop waits for I/O (`loop.io_wait`:
data after its start-up, checkpoints, its own I/O): I/O hidden behind compute costs the loop nothing. A run is
faster (slower) only when that time changed by more than a factor `noise_ratio` AND by more than
`noise_seconds` against the baseline. When several runs of the baseline configuration are given, the
baseline is their median and the factor is widened to the spread they show (largest / smallest).
"""
from __future__ import annotations

import os
import statistics

import polars as pl

from ..model import Log, read
from .diagnosis import diagnose
from .diagnosis.insight import HEALTHY, SEVERITY_RANK
from ..model.darshan import STD_STREAMS
from .run_config import config_diff, file_keys, match_files, run_config, run_inputs
from .runs import key_measures, run_metrics
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_time, plural

SCHEMA_VERSION = 1
NOISE_RATIO = 1.5  # short runs of one configuration differ by up to ~1.3× (../shared/logs/pairs repeat_*)
NOISE_SECONDS = 0.01
FASTER, SLOWER, SAME, BASELINE = "faster", "slower", "no real change", "baseline"
NOT_JUDGED = "not judged"  # runs traced by different tracers: each times calls its own way
# metrics whose ratio against the baseline is reported for every run
RATIO_KEYS = ("run_time", "io_time", "bytes_read", "bytes_written", "reads", "writes", "meta_time", "bandwidth")
# what a verdict measures, in words: compare's two measures and tune's wall time
MEASURE_WORDS = {"io_time": "slowest rank's I/O time", "loop_io_wait": "training loop's wait for I/O",
                 "wall": "wall time"}


def compare(*logs, labels=None, baseline_runs: int = 1, noise_ratio: float = NOISE_RATIO,
            noise_seconds: float = NOISE_SECONDS, progress=None) -> dict:
    """Compare runs (paths or `Log`s); the first `baseline_runs` are repeats of the baseline configuration."""
    if len(logs) < 2:
        raise ValueError("compare needs at least two logs")
    if not 1 <= baseline_runs < len(logs):
        raise ValueError(f"baseline_runs must be between 1 and {len(logs) - 1}")
    loaded = []
    for i, log in enumerate(logs):
        # a path is read; a Log or a RecorderTrace (the same interface) is used as it is
        loaded.append(read(log) if isinstance(log, (str, os.PathLike)) else log)
        if progress:
            progress((i + 1) / len(logs))
    labels = list(labels or [])
    labels += [_default_label(log.path) for log in loaded[len(labels):]]
    runs = [_run(log, label) for log, label in zip(loaded, labels)]
    base = runs[0]
    judged = [r["tracer"] == base["tracer"] for r in runs]  # the baseline's tracer's runs get verdicts
    measure = "loop_io_wait" if all(r["loop"] for r, j in zip(runs, judged) if j) else "io_time"
    rule = noise_rule([measured(r, measure) for r, j in zip(runs[:baseline_runs], judged) if j], noise_ratio,
                      noise_seconds, measure)
    for i, run in enumerate(runs):
        run["baseline"] = i < baseline_runs
        run["ratio"] = {k: _ratio(run[k], base[k]) for k in RATIO_KEYS}
        run["verdict"] = ({"verdict": BASELINE, "speedup": None, "factor": None, "reason": "baseline"} if i == 0 else
                          verdict(rule, measured(run, measure)) if judged[i] else
                          not_judged(base["tracer"], run["tracer"]))
    configs = [r.pop("config") for r in runs]
    files = match_files([r.pop("file_names") for r in runs])
    files["bytes"] = file_bytes_lineup(files["matched"], [r.pop("file_bytes") for r in runs])
    keys = file_keys(files)
    keys += [{} for _ in range(len(runs) - len(keys))]
    diagnoses = [r.pop("insights") for r in runs]
    return {
        "schema_version": SCHEMA_VERSION,
        "rule": rule,
        "warnings": _warnings(runs, configs),
        "runs": runs,
        "config": config_diff(configs, files),
        "insights": [insight_diff(diagnoses[0], d, runs[0]["counts"], r["counts"], keys[0], keys[i],
                                  (runs[0]["label"], r["label"]))
                     if i else None for i, (d, r) in enumerate(zip(diagnoses, runs))],
        "files": files,
    }


def _run(log: Log, label: str) -> dict:
    inputs = run_inputs(log)  # the hints file of one run is not a file the other runs lack
    return {"label": label, "path": log.path, "exe": log.job["exe"], "tracer": log.job.get("format", "darshan"),
            **run_metrics(log, inputs), "counts": key_measures(log), "config": run_config(log),
            "file_names": [n for n in log.files["name"].to_list() if n not in inputs], "file_bytes": file_bytes(log),
            "insights": diagnose(log)}


def file_bytes(log: Log) -> dict:
    """file name -> [bytes read, bytes written] at POSIX (its counters, every rank)."""
    table = log.counters.get("POSIX")
    if table is None or table.is_empty():
        return {}
    names = log.file_names()
    per = (table.group_by("file_id").agg(pl.col("POSIX_BYTES_READ").clip(lower_bound=0).sum(),
                                         pl.col("POSIX_BYTES_WRITTEN").clip(lower_bound=0).sum()))
    return {names[f]: [int(r), int(w)] for f, r, w in per.iter_rows() if f in names and (r or w)}


def file_bytes_lineup(matched: list, per_run: list) -> list:
    """For every file matched across the runs that moved data in one of them: its bytes read and written in each
    run (null where the run lacks it) and whether every run moved the same (`same`): two tracers of one job, or
    two runs of one program, line up file by file."""
    out = []
    for m in matched:
        values = [run.get(name) if name else None for run, name in zip(per_run, m["names"])]
        if not any(values):
            continue
        got = [v or [0, 0] for v in values]
        out.append({"key": m["key"], "bytes_read": [v[0] if v else None for v in values],
                    "bytes_written": [v[1] if v else None for v in values],
                    "same": all(v == got[0] for v in got)})
    return out


def _default_label(path: str) -> str:
    name = str(path).rsplit("/", 1)[-1]
    return name[:-len(".darshan")] if name.endswith(".darshan") else name


def _ratio(value, base):
    if value is None or base is None or not base:
        return None
    return value / base


def measured(run: dict, measure: str) -> float:
    """A run's value of the verdict's measure: `io_time`, or its loop's `io_wait` (`loop_io_wait`)."""
    return run["loop"]["io_wait"] if measure == "loop_io_wait" else run[measure]


def noise_rule(baseline_times: list, noise_ratio: float, noise_seconds: float, measure: str = "io_time") -> dict:
    """The band of the measure's values (MEASURE_WORDS) that counts as 'the same' as the baseline."""
    base = statistics.median(baseline_times)
    lo, hi = min(baseline_times), max(baseline_times)
    spread = hi / lo if lo > 0 else 1.0
    ratio = max(noise_ratio, spread)
    return {
        "measure": measure,
        "baseline": base,
        "baseline_runs": len(baseline_times),
        "baseline_spread": spread,
        "noise_ratio": ratio,
        "noise_seconds": noise_seconds,
        "text": (f"faster/slower only when the {MEASURE_WORDS[measure]} differs from the baseline's "
                 f"{'median ' if len(baseline_times) > 1 else ''}by more than {ratio:.2f}× and more than "
                 f"{noise_seconds * 1e3:g} ms" + (f" (the baseline's {len(baseline_times)} runs spread "
                                                  f"{spread:.2f}×)" if len(baseline_times) > 1 else "")),
    }


def verdict(rule: dict, io_time: float) -> dict:
    base = rule["baseline"]
    speedup = base / io_time if io_time > 0 else None
    beyond_seconds = abs(base - io_time) > rule["noise_seconds"]
    if speedup is not None and speedup > rule["noise_ratio"] and beyond_seconds:
        v = FASTER
    elif io_time > base * rule["noise_ratio"] and beyond_seconds:
        v = SLOWER
    else:
        v = SAME
    # how many times faster or slower, as people say it (None: no I/O in the baseline to divide by)
    factor = speedup if v == FASTER else (io_time / base if v == SLOWER and base > 0 else None)
    reason = (f"{MEASURE_WORDS[rule['measure']]} {base:.3g} s → {io_time:.3g} s" +
              (f" ({factor:.2f}× {v})" if factor else f" ({v})" if v != SAME else
               f", within the noise band ({rule['noise_ratio']:.2f}×, {rule['noise_seconds'] * 1e3:g} ms)"))
    return {"verdict": v, "speedup": speedup, "factor": factor, "reason": reason}


def not_judged(base_tracer: str, tracer: str) -> dict:
    """No verdict between runs of different tracers: a tracer's timings include its own overhead and cover
    the calls it sees (Darshan's every POSIX call of the process; DFTracer's those of its preload library and
    Python API), so a ratio of their I/O times measures the tracers, not a change."""
    reason = (f"traced by {tracer}, the baseline by {base_tracer}: each times calls its own way, so their I/O "
              "times are not compared (line them up; judge runs traced by the same tracer)")
    return {"verdict": NOT_JUDGED, "speedup": None, "factor": None, "reason": reason}


def _warnings(runs: list, configs: list) -> list:
    out = []
    if len({r["tracer"] for r in runs}) > 1:
        named = [r["tracer"] if r["label"] == r["tracer"] else f"{r['label']}: {r['tracer']}" for r in runs]
        out.append(f"different tracers ({', '.join(named)}): each times calls its own way, so no faster/slower "
                   "verdict between them")
    exes = {c["exe"].split(" ")[0].rsplit("/", 1)[-1] for c in configs if c["exe"]}  # unrecorded: no evidence
    if len(exes) > 1:
        out.append("different applications: " + ", ".join(f"{r['label']}: {c['exe'] or '?'}"
                                                          for r, c in zip(runs, configs)))
    if len({c["nprocs"] for c in configs}) > 1:
        out.append("different numbers of processes: " + ", ".join(f"{r['label']}: {c['nprocs']}"
                                                                 for r, c in zip(runs, configs)))
    return out


# --- the diagnosis, before and after ------------------------------------------------------------

# The headline number of each insight is the diagnosis' (`Insight.key_metric`); compare adds only what the
# diagnosis cannot know: key metric -> (how people say it, its unit, the run-level measure of the same
# quantity in `runs.key_measures` — used on the side where the insight is absent — or None: "not flagged").
KEY_METRICS = {
    "read_coverage": ("of the reads kept in the trace", "share", None),
    "write_coverage": ("of the writes kept in the trace", "share", None),
    "records": ("records lost", "count", None),
    "small_requests": ("small requests at POSIX", "count", "small_requests"),
    "misaligned_requests": ("misaligned requests", "count", "misaligned_requests"),
    "random_reads": ("random reads at POSIX", "count", "random_reads"),
    "random_writes": ("random writes at POSIX", "count", "random_writes"),
    "max_over_mean": ("busiest / mean", "ratio", None),
    "heaviest_rank_share": ("of the bytes on the heaviest rank", "share", None),
    "max_delay_s": ("last rank's delay", "seconds", None),
    "serial_share": ("of the I/O window with one rank alone", "share", None),
    "independent_writes": ("independent MPI-IO writes", "count", "independent_writes"),
    "independent_reads": ("independent MPI-IO reads", "count", "independent_reads"),
    "aggregators": ("aggregator ranks", "count", None),
    "estimated_aggregators": ("aggregator ranks (estimated)", "count", None),
    "collective_writes": ("collective MPI-IO writes", "count", "collective_writes"),
    "collective_reads": ("collective MPI-IO reads", "count", "collective_reads"),
    "overhead_share": ("of the MPI-IO time above the file system", "share", None),
    "unrequested_read_bytes": ("read but never requested", "bytes", "unrequested_read_bytes"),
    "metadata_time_share": ("of the time in metadata", "share", None),
    "small_metadata_writes": ("small metadata writes", "count", None),
    "largest_file_bytes": ("largest file on too few stripes", "bytes", None),
    "slowdown": ("slower per byte on the slow OST", "ratio", None),
    "tiny_files": ("tiny files", "count", None),
    "excess_bytes": ("moved more than once", "bytes", None),
    "fsyncs": ("fsync calls", "count", "fsyncs"),
    "stdio_bytes_share": ("of the bytes through stdio", "share", "stdio_bytes_share"),
    "stdio_time_share": ("of the I/O time in stdio", "share", None),
    "pairs": ("conflicting operation pairs", "count", None),
    # a traced training loop (DFTracer's spans): seconds of the loop
    "stall_s": ("of the training loop waiting for data", "seconds", None),
    "startup_wait_s": ("of the training loop waiting for its first batch", "seconds", None),
    "checkpoint_time_s": ("of the training loop in checkpoints", "seconds", None),
    "reread_bytes": ("read again by the later epochs", "bytes", None),
}
# where two codes share a metric name, what it counts for each
CODE_LABELS = {
    ("REDUNDANT_WRITES", "excess_bytes"): "written more than once",
    ("REDUNDANT_READS", "excess_bytes"): "read more than once",
    ("RANK_IMBALANCE", "max_over_mean"): "busiest rank / mean",
    ("OST_IMBALANCE", "max_over_mean"): "busiest OST / mean",
    ("HDF5_METADATA", "metadata_time_share"): "of the HDF5 time in metadata",
    ("METADATA_HEAVY", "metadata_time_share"): "of the I/O time in metadata",
}
# CHECK_FAILED has no metric (key_metric None): its number is how many checks failed, 0 where none did
CHECKS_FAILED = ("checks_failed", ("checks that failed", "count", "checks_failed"))


# codes the diagnosis reports once per operation kind: the metric naming the kind keeps a file's read and
# write insights apart
PER_KIND = {"RANDOM_ACCESS": ("random_reads", "random_writes"),
            "NO_COLLECTIVE_IO": ("independent_reads", "independent_writes"),
            "COLLECTIVE_IO": ("collective_reads", "collective_writes")}


def _keys(insights: list, file_key: dict) -> dict:
    """(code, file, kind) -> insight; an insight naming several files stands for each of them; files are
    named by the key they are matched under across runs; kind is '' but for the codes of PER_KIND."""
    out = {}
    for ins in insights:
        kind = next((k for k in PER_KIND.get(ins.code, ()) if k in ins.evidence.metrics), "")
        for f in ins.evidence.files or [""]:
            out.setdefault((ins.code, file_key.get(f, f), kind), ins)
    return out


def insight_diff(before: list, after: list, before_metrics: dict, after_metrics: dict,
                 before_files: dict | None = None, after_files: dict | None = None,
                 labels=("the baseline", "this run")) -> dict:
    """Insights resolved, new and still there, matched by code and file, each with its key number; an
    insight about files the other run does not have is neither resolved nor new: `file_in_one_run`."""
    b, a = _keys(before, before_files or {}), _keys(after, after_files or {})
    one_run = set()
    if before_files is not None and after_files is not None:
        one_run = ({id(i) for i in before if _files_only_here(i, before_files, after_files)} |
                   {id(i) for i in after if _files_only_here(i, after_files, before_files)})
    out = {"resolved": [], "new": [], "still": [], "file_in_one_run": []}
    seen = set()
    for key in list(b) + [k for k in a if k not in b]:
        status = "still" if key in b and key in a else "resolved" if key in b else "new"
        ins_b, ins_a = b.get(key), a.get(key)
        if (id(ins_b), id(ins_a)) in seen:
            continue  # the same insight(s) under another of their files: one row, under the first file
        seen.add((id(ins_b), id(ins_a)))
        if status != "still" and id(ins_b or ins_a) in one_run:
            row = _insight_row(key, ins_b, ins_a, before_metrics, after_metrics,
                               one_run=labels[0] if ins_b is not None else labels[1])
            row["side"] = "before" if ins_b is not None else "after"
            row["label"], row["tone"] = "one run", "neutral"
            out["file_in_one_run"].append(row)
        else:
            row = _insight_row(key, ins_b, ins_a, before_metrics, after_metrics)
            row["label"], row["tone"] = change(status, *row["severity"], row["code"])
            out[status].append(row)
    return out


PROBLEM = ("critical", "warning")


def change(status: str, before: str | None, after: str | None, code: str) -> tuple:
    """(label, tone) of one insight's change between two runs, as the terminal and the page say and colour it:
    tone 'good' (green), 'bad' (red), 'warn' (a problem still there) or 'neutral'. A problem resolved is good
    and a new one bad; a healthy finding (`Finding.healthy`: COLLECTIVE_IO) appearing is good and going bad; an
    info-level note coming or going is neither; a problem still there is 'worse' or 'better' when its severity
    moved."""
    healthy = code in HEALTHY
    if status == "new":
        return ("new", "good") if healthy else ("new", "bad") if after in PROBLEM else ("new note", "neutral")
    if status == "resolved":
        return ("lost", "bad") if healthy else ("resolved", "good") if before in PROBLEM else ("gone", "neutral")
    if healthy:
        return "still", "good"
    rank_b, rank_a = SEVERITY_RANK.get(before, 9), SEVERITY_RANK.get(after, 9)
    if rank_a < rank_b:
        return "worse", "bad"
    if rank_a > rank_b:
        return "better", "good"
    return "still", "warn" if after in PROBLEM else "neutral"


def _files_only_here(ins, own_keys: dict, other_keys: dict) -> bool:
    """True when every file the insight names is absent from the other run (matched files are compared
    by their match key); an insight about the run as a whole, or the standard streams, is never so."""
    files = ins.evidence.files
    if not files or any(f in STD_STREAMS for f in files):
        return False
    there = set(other_keys.values())
    return all(own_keys.get(f, f) not in there for f in files)


def _insight_row(key, ins_b, ins_a, before_metrics, after_metrics, one_run: str | None = None) -> dict:
    """One insight's row; `one_run` names the run that alone has the insight's file(s)."""
    code, file = key[:2]
    shown = ins_a or ins_b
    # one metric for both sides: the baseline's headline, else the other run's
    metric = next((i.key_metric for i in (ins_b, ins_a) if i is not None and i.key_metric), None)
    if metric is None and code == "CHECK_FAILED":
        metric = CHECKS_FAILED[0]
    what, unit, run_metric = CHECKS_FAILED[1] if metric == CHECKS_FAILED[0] else \
        KEY_METRICS.get(metric, (metric or "", "count", None))
    what = CODE_LABELS.get((code, metric), what)

    def value(ins, run_metrics):
        if ins is not None and metric == CHECKS_FAILED[0]:
            return 1
        if ins is not None and metric in ins.evidence.metrics:
            return ins.evidence.metrics[metric]
        if one_run is not None:
            return None  # the other run has no such file: its run-level counts say nothing about it
        measured = (0 if run_metric == CHECKS_FAILED[0] else run_metrics.get(run_metric)) if run_metric else None
        if ins is not None and measured is None:
            # the insight is there, headed by another of its code's metrics (aggregators measured or
            # estimated): its own headline, never "not flagged"
            return ins.evidence.metrics.get(ins.key_metric)
        return measured

    before, after = value(ins_b, before_metrics), value(ins_a, after_metrics)
    return {"code": code, "file": file, "title": shown.title,
            "severity": [ins_b.severity if ins_b else None, ins_a.severity if ins_a else None],
            "metric": metric, "what": what, "unit": unit, "before": before, "after": after,
            "summary": (one_run_line(code, what, before if ins_b else after, unit, one_run)
                        if one_run is not None else key_line(code, what, before, after, unit,
                                                 ins_a if code == "COLLECTIVE_IO" else None)),
            "time_window": [i.evidence.to_dict()["time_window"] if i else None for i in (ins_b, ins_a)],
            "ranks": [list(i.evidence.ranks[:8]) if i else [] for i in (ins_b, ins_a)]}


def fmt_key_value(value, unit: str) -> str:
    """A key number as people read it: 60,000 · 42% · 1.5 GiB · 7.6 s · 4.2×; None (no insight and no
    run-level measure) reads 'not flagged'."""
    if value is None:
        return "not flagged"
    if unit == "share":
        return fmt_pct(value)
    if unit == "bytes":
        return fmt_bytes(value)
    if unit == "seconds":
        return fmt_time(value)
    if unit == "ratio":
        return f"{value:.2f}×"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.3g}"
    return fmt_count(value)


def key_line(code, what, before, after, unit="count", collective=None) -> str:
    """'SMALL_IO: 60,000 → 0 small requests at POSIX'; a side with neither the insight nor a run-level
    measure reads 'not flagged'."""
    if collective is not None:
        m = collective.evidence.metrics
        op = "read" if "collective_reads" in m else "write"
        # COLLECTIVE_IO counts no aggregators where the file's independent requests are as many (docs/diagnosis.md)
        if "posix_requests" in m and "aggregators" in m:
            size = fmt_bytes(m.get("posix_median_request_bytes", 0))
            return (f"{code}: collective buffering now {op}s {int(m['posix_requests']):,} × {size} "
                    f"from {plural(int(m['aggregators']), 'aggregator')}")
    b, a = fmt_key_value(before, unit), fmt_key_value(after, unit)
    if after is None:  # the number goes with the side that has it
        return f"{code}: {b} {what} → {a}"
    return f"{code}: {b} → {a} {what}".rstrip()


def one_run_line(code, what, value, unit="count", run="one run") -> str:
    """'MISALIGNED_IO: 16,383 misaligned requests (file only in example)': no before and after to give."""
    number = "" if value is None else f" {fmt_key_value(value, unit)} {what}".rstrip()
    return f"{code}:{number} (file only in {run})"
