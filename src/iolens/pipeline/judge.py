"""Judging: the diagnosis of a log, step by step for a log assembled from several processes' logs."""
from __future__ import annotations

from ..analysis.diagnosis import Thresholds
from ..analysis.diagnosis import diagnose as run_checks
from ..analysis.diagnosis.findings import truncated_trace
from ..analysis.diagnosis.insight import SCHEMA_VERSION
from ..analysis.summary import is_empty, job_measures, skipped_io, unfinished_processes
from ..jobs import diagnose_job
from ..model import TraceLog

__all__ = ["as_thresholds", "by_step", "diagnose", "diagnose_json", "page_insights", "partial_titles", "unseen"]


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
    its id and processes; for a log with modules iolens skipped, `skipped`; for an empty log, `empty`)."""
    out = {"log": name or log.path, "schema_version": SCHEMA_VERSION, "measures": None,
           "insights": diagnose(log, thresholds)}
    procs = log.provenance.processes
    if procs:
        out["job"] = {"job_id": log.provenance.job_id, "processes": list(procs)}
    out["measures"] = job_measures(log)
    out.update(unseen(log))
    return out


def unseen(log: TraceLog) -> dict:
    """What a diagnosis could not look at, as `diagnose --json` adds it (only when there is some):
    `skipped`, the I/O of the modules iolens does not model (`analysis.summary.skipped_io`), and
    `empty: true` for a log that holds no record at all."""
    out = {}
    skipped = skipped_io(log.modules)
    if skipped:
        out["skipped"] = skipped
    if is_empty(log.modules):
        out["empty"] = True
    return out


def partial_titles(log: TraceLog) -> list:
    """What `log` holds only in part, as the diagnosis's TRUNCATED_TRACE titles word it (its modules flagged
    partial, its processes whose log is unfinished), without judging the trace: for `iolens sql`."""
    return truncated_trace.partial_titles(log.modules, log.partial_cause, unfinished_processes(log))


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
