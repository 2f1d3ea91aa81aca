"""The pipeline: read → diagnose → render, one path for every consumer (the CLI, a notebook, an agent's server).

    log = iolens.open("run.darshan")      # a Darshan log, a Recorder folder, or a folder/list of one job's logs
    insights = iolens.diagnose(log)       # [dict], most severe first, as `iolens diagnose --json` prints them
    iolens.report(log, "run.html")        # the explorer page, with the diagnosis computed here
    iolens.compare("base.darshan", "tuned.darshan")
    iolens.describe_jobs(["run/"])        # what `iolens jobs --json` prints
    iolens.fleet_build(["logs/"], "store"); iolens.fleet_report("store", "fleet.html")
    iolens.tune(["mpiexec", "-n", "8", "./app"], budget=12)

Every log `open` returns satisfies the Log contract (model/contract.py); nothing here or below asks which kind of
log it holds. A log assembled from several processes' logs (`provenance.processes`: a job) is judged step by
step, each finding naming its step and processes; any other log is one step. The views render what this module
computed: no view runs the diagnosis.
"""
from __future__ import annotations

import dataclasses
import os
import time
from concurrent.futures import ThreadPoolExecutor

from .analysis.compare import NOISE_RATIO, NOISE_SECONDS
from .analysis.compare import compare as compare_runs
from .analysis.diagnosis import Thresholds
from .analysis.diagnosis import diagnose as run_checks
from .analysis.diagnosis.insight import SCHEMA_VERSION
from .analysis.summary import job_measures, job_summary
from .errors import LogError
from .fleet import build as fleet_builder
from .fleet import store as fleet_store
from .fleet.jobs import is_per_job
from .fleet.recompute import with_thresholds
from .jobs import describe, diagnose_job, expand, find_jobs, load_job
from .model import TraceLog, read
from .reader.recorder import is_recorder_trace
from .tune import Events, Options
from .tune import tune as run_study
from .views.export import export as export_tables
from .views.html import DEFAULT_MAX_OPS, PAGE_TABLES, Filters, page_payload, write_page
from .views.html.compare import write_compare
from .views.html.fleet import write_fleet_report
from .views.html.tune import write_tune_page

__all__ = ["as_thresholds", "compare", "compare_page", "describe_jobs", "diagnose", "diagnose_json", "export", "fleet_build",
           "fleet_report", "open", "page_insights", "report", "summary", "tune"]


# --- read ------------------------------------------------------------------------------------------
def open(target, progress=None, what: str = "this") -> TraceLog:  # noqa: A001 - iolens.open, as a file is opened
    """The log a target holds: a Darshan log, a Recorder trace folder, or a folder (or several paths) of one
    job's logs merged into one (each process's ranks renumbered, its times on the job's clock). A folder
    without any log is read as a trace folder, so that its error says what it is not. `progress(fraction)` is
    called while one log is read. LogError (one line) when it cannot be read, or holds no job or several
    (`what` names the command in that message)."""
    paths = [os.fspath(target)] if isinstance(target, (str, os.PathLike)) else [os.fspath(p) for p in target]
    if not paths:
        raise LogError("no log given")
    one = paths[0]
    if len(paths) == 1 and (not os.path.isdir(one) or is_recorder_trace(one) or not expand(paths)):
        return read(one, progress)
    return load_job(paths, what)


# --- diagnose --------------------------------------------------------------------------------------
def as_thresholds(values=None) -> Thresholds:
    """A `Thresholds` from overrides {name: value} (or one already made)."""
    return values if isinstance(values, Thresholds) else Thresholds(values or {})


def by_step(log: TraceLog, judge) -> list:
    """`judge(log)`'s insights (dicts), step by step for a log assembled from several processes' logs (steps
    ran one after another: cross-rank checks across them would compare unrelated processes), each naming its
    step, processes and report rows; a single trace is one step, judged as it is."""
    if not log.provenance.processes:
        return judge(log)
    return diagnose_job(log, judge)


def diagnose(log: TraceLog, thresholds=None) -> list:
    """Every insight in `log` as the dicts `iolens diagnose --json` prints (docs/diagnosis.md), most severe
    first. `thresholds`: a `Thresholds` or overrides {name: value}."""
    th = as_thresholds(thresholds)
    return by_step(log, lambda part: [i.to_dict() for i in run_checks(part, th)])


def diagnose_json(log: TraceLog, thresholds=None, name: str | None = None) -> dict:
    """What `iolens diagnose --json` prints: {log, schema_version, measures, insights} (and, for a job, `job`:
    its id and processes)."""
    out = {"log": name or log.path, "schema_version": SCHEMA_VERSION, "measures": None,
           "insights": diagnose(log, thresholds)}
    procs = log.provenance.processes
    if procs:
        out["job"] = {"job_id": log.provenance.job_id, "processes": list(procs)}
    out["measures"] = job_measures(log)
    return out


def page_insights(log: TraceLog, thresholds=None) -> list:
    """The report page's insights: the diagnosis, or one info insight saying why it failed (a failing diagnosis
    must not cost the user the page)."""
    th = as_thresholds(thresholds)

    def judge(part):
        try:
            return [i.to_dict() for i in run_checks(part, th)]
        except Exception as exc:  # noqa: BLE001 - the page is still worth having
            return [{"code": "diagnosis-error", "severity": "info", "title": f"Diagnosis failed: {exc}",
                     "evidence": {}, "recommendations": []}]
    return by_step(log, judge)


def summary(log: TraceLog) -> dict:
    """What `iolens info --json` prints."""
    return job_summary(log)


# --- render ----------------------------------------------------------------------------------------
def report(log: TraceLog, out, *, filters: Filters | None = None, max_ops: int | None = None, insights=None,
           thresholds=None) -> dict:
    """Write the offline explorer page of `log` to `out`; the diagnosis (`page_insights`, unless `insights` are
    given) runs on a second thread while the page's data is built (both spend most of their time in
    polars/numpy, which release the GIL). Returns {path, bytes, ops, total_ops, cut_at}."""
    t0 = time.perf_counter()
    for table in PAGE_TABLES:
        getattr(log, table)  # built once, before the two threads share the log
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(page_insights, log, thresholds) if insights is None else None
        meta, blob = page_payload(log, log.segments, filters or Filters(), max_ops or DEFAULT_MAX_OPS)
        meta["insights"] = pending.result() if pending is not None else list(insights)
    meta["timing"] = {"payload_s": time.perf_counter() - t0}
    return write_page(meta, blob, out)


def export(log: TraceLog, out_dir, fmt: str = "parquet", filters: Filters | None = None, on_table=None) -> list:
    """Write `job.json` and every table with rows (the source's own tables too) as Parquet or CSV files."""
    return export_tables(log, out_dir, fmt, on_table=on_table, filters=filters or Filters())


# --- compare ---------------------------------------------------------------------------------------
def compare(*runs, labels=None, baseline_runs: int = 1, noise_ratio: float = NOISE_RATIO,
            noise_seconds: float = NOISE_SECONDS, output=None) -> dict:
    """Compare runs (paths, opened as `open` does, or logs), the first `baseline_runs` being the baseline:
    what `iolens compare --json` prints. `output`: also write the comparison page there."""
    logs = [open(r, what="compare") if isinstance(r, (str, os.PathLike)) else r for r in runs]
    result = compare_runs(*logs, labels=labels, baseline_runs=baseline_runs, noise_ratio=noise_ratio,
                          noise_seconds=noise_seconds)
    if output is not None:
        compare_page(result, logs, output)
    return result


def compare_page(result: dict, logs: list, output) -> dict:
    """The offline comparison page of `compare`'s result and its runs' logs."""
    return write_compare(result, logs, output)


# --- many logs ---------------------------------------------------------------------------------------
def describe_jobs(paths, progress=None) -> dict:
    """The jobs, steps and processes the logs under `paths` (files, folders, globs) hold, and the data flowing
    between steps: what `iolens jobs --json` prints. Unreadable logs are listed; LogError when the only log
    given cannot be read."""
    unreadable: list = []
    found = find_jobs(paths, progress=progress, unreadable=unreadable)
    if not found and len(unreadable) == 1:
        raise LogError(unreadable[0][1], unreadable[0][0])
    return describe(found, unreadable)


def fleet_build(paths, store, **options) -> dict:
    """Bring the fleet store up to date with every log under `paths` (`fleet.build.build`'s options: diagnose,
    files, scheduler, workers, batch, progress, prune, thresholds, group_by). Needs `iolens[fleet]`."""
    return fleet_builder.build(paths, store, **options)


PER_JOB_THRESHOLDS = ("a per-job store (--group-by job) keeps its diagnosis as built (a job's steps are judged "
                      "one by one, not by the stored rules): rebuild it with `iolens fleet build --group-by job "
                      "-t NAME=VALUE` into a new store")


def fleet_report(store, out, thresholds=None) -> dict:
    """Write the fleet page over `store`; with `thresholds` (a `Thresholds` or overrides) the rule codes'
    insight columns are recomputed from the stored features first, without reading a log. Returns {path, jobs,
    bytes, rules (what was recomputed, or None), insights}."""
    th = None if thresholds is None else as_thresholds(thresholds)
    if th is not None and is_per_job(store):
        raise LogError(PER_JOB_THRESHOLDS, str(store))
    store = fleet_store.check_store(store)
    try:
        jobs = fleet_store.read(store, "jobs")
        if jobs.is_empty():
            raise LogError("the store holds no readable job (see its errors table)", str(store))
        note = None
        if th is not None:
            jobs, note = with_thresholds(jobs, th)
        return write_fleet_report(jobs, fleet_store.read(store, "errors"), out, note)
    except ValueError as exc:  # a threshold the stored features cannot answer (rules.RuleError)
        raise LogError(str(exc), str(store)) from None


# --- tune --------------------------------------------------------------------------------------------
def tune(command, options: Options | None = None, events: Events | None = None, **option_values) -> dict:
    """Tune `command`'s runtime knobs (`iolens tune`): options as `iolens.tune.Options` (or its fields as
    keywords), `events` for progress; the study page is written to the study folder. Returns what
    `iolens tune --json` prints. Needs `iolens[tune]`."""
    options = options or Options(**option_values)
    events = events or Events()
    if events.page is None:
        events = dataclasses.replace(events, page=write_tune_page)
    return run_study(list(command), options, events)
