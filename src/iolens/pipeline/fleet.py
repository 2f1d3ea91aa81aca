"""Many logs: the fleet store (`iolens fleet build`) and its page (`iolens fleet report`). Needs `iolens[fleet]`."""
from __future__ import annotations

from ..errors import LogError
from ..fleet import build as fleet_builder
from ..fleet import store as fleet_store
from ..fleet.jobs import is_per_job
from ..fleet.recompute import with_thresholds
from ..views.html.fleet import write_fleet_report
from .judge import as_thresholds

__all__ = ["fleet_build", "fleet_report"]


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
