"""Many logs: the fleet store (`iolens fleet build`) and its page (`iolens fleet report`). Needs `iolens[fleet]`."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from ..errors import LogError
from ..fleet import build as fleet_builder
from ..fleet import store as fleet_store
from ..fleet.anonymized import MARKER, PER_JOB_ANONYMIZED, own_key
from ..fleet.jobs import is_per_job
from ..fleet.scan import find_logs
from ..fleet.recompute import with_thresholds
from ..reader.anonymize import Tokens
from ..reader.folders import LOG_SUFFIX, LOG_SUFFIXES, count_other_traces, other_traces_text, walk
from ..views.html.fleet import write_fleet_report
from .anonymize import key_tokens
from .judge import as_thresholds

__all__ = ["PER_JOB_ANONYMIZED", "check_new_store_has_logs", "fleet_build", "fleet_report", "forget_new_key",
           "store_tokens"]


def check_new_store_has_logs(paths, store, group_by: str | None = None) -> None:
    """LogError (one line) when a store that does not exist yet would be made from PATHS that hold no Darshan log:
    a mistyped folder, or one of another tracer's traces, is said before an empty store (or a key) is written.
    An existing store is brought up to date as it is (finding nothing new is news then)."""
    if os.path.exists(store):
        return
    others = Counter()
    if not _holds_a_log(paths, LOG_SUFFIXES if group_by == "job" else (LOG_SUFFIX,), others):
        held = other_traces_text(others)
        kinds = "*.darshan, *.darshan_partial" if group_by == "job" else "*.darshan"
        raise LogError(f"no Darshan log ({kinds}) under {', '.join(map(str, paths))}"
                       + (f" (they hold {held}: the fleet reads Darshan logs)" if held else "")
                       + "; nothing written", str(store))


def _holds_a_log(paths, suffixes: tuple, others: Counter) -> bool:
    """Whether PATHS name a log: a folder's walk stops at its first (the build walks it again), a file, glob or
    list file is as the build finds it (LogError for a path that is not there); other tracers' traces met
    meanwhile are counted in `others`."""
    for path in map(str, paths):
        if not os.path.isdir(path):
            if find_logs([path], others):
                return True
            continue
        for _, _, files in walk(path):
            if any(f.endswith(suffixes) for f in files):
                return True
            count_other_traces(files, others)
    return False


def fleet_build(paths, store, **options) -> dict:
    """Bring the fleet store up to date with every log under `paths` (`fleet.build.build`'s options: diagnose,
    files, scheduler, workers, batch, progress, prune, thresholds, group_by, anonymize). `anonymize`: the Tokens
    every log is read anonymised with (`store_tokens`), the store keyed by token paths. Needs `iolens[fleet]`."""
    anonymize = options.get("anonymize")
    if isinstance(anonymize, Tokens):  # what a Dask task is given: plain values
        options["anonymize"] = (anonymize.key.secret, anonymize.keep_exe_name)
    return fleet_builder.build(paths, store, **options)


def store_tokens(store, key_file=None, keep_exe_name: bool = False) -> tuple:
    """(Tokens, key path, new?) of an anonymised build of `store`: `key_file`, else the key its first anonymised
    build wrote beside it (`STORE.key`), else a new one written there."""
    own = own_key(store) if key_file is None else None
    return key_tokens(store, own if own is not None else key_file, keep_exe_name)


def forget_new_key(store, key_path, tokens: Tokens) -> bool:
    """After a build that failed with a key it wrote (`store_tokens`' new key): the key, and the store's marker
    of it, removed when no row was written with them (a stray secret otherwise); kept when some batch was
    committed (the store's rows need it). True when removed."""
    if any(fleet_store.is_table(store, t) for t in ("jobs", "errors")):
        return False
    Path(key_path).unlink(missing_ok=True)
    marker = os.path.join(str(store), MARKER)
    try:
        with open(marker) as fh:
            ours = json.load(fh).get("key_fingerprint") == tokens.key.fingerprint()
    except (OSError, ValueError):
        ours = False
    if ours:
        os.unlink(marker)
    return True


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
