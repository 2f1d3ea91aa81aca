"""Many logs -> the fleet store, read in parallel on Dask.

The logs are cut into batches; one Dask task reads a batch and computes each job's features (and
diagnosis), and returns the batch's rows. The build commits each batch to the store as it arrives (one
transaction per table, see `store`), so memory is bounded by the batches in flight, not the corpus, and a
killed build loses at most the batches it had not committed.
"""
from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager

import polars as pl

from ..analysis.diagnosis import Thresholds
from ..errors import LogError, printable
from ..model import Log
from ..optional import require
from ..reader.log import read_raw
from . import store as fleet_store
from .anonymized import PER_JOB_ANONYMIZED, check_anonymized, label_of, read_raw_anonymized, tokens_of
from .columns import ERROR_SCHEMA, TIMING, column_dtype, typed_frame
from .features import DIAGNOSIS_REGIONS, FEATURE_REGIONS, FILE_ROW_REGIONS, file_rows, job_features
from .insights import log_columns, with_insights
from .jobs import build_jobs, check_grouping
from .scan import find_logs, log_key
from .scheduling import Cluster, Tally, batch_size, cores, worker_ticker

__all__ = ["build", "column_dtype", "cores", "find_logs", "log_key", "plan", "process_batch", "typed_frame"]


# --- one batch: the Dask task ----------------------------------------------------------------------
def process_batch(keys: list, diagnose: bool = True, files: bool = False, tick=None, thresholds=None,
                  anonymize=None) -> dict:
    """Read a batch of logs into its jobs/errors/files rows (frames, None when empty); counts and seconds
    per stage. `tick(n)` is called after each log with the number read so far. `thresholds`: the diagnosis's
    overrides {name: value}. `anonymize`: (key bytes, keep_exe_name): each log read as `iolens anonymize`
    writes it, its rows keyed by its token path (fleet/anonymized.py). Writes nothing: the build commits the
    batch to the store as one transaction."""
    with _one_reader_thread():
        return _process(keys, diagnose, files, tick, thresholds, anonymize)


@contextmanager
def _one_reader_thread():
    """Read each log on one thread: Dask runs one batch per core already, and for small logs a pool of
    inflating threads costs more than it saves (0.7 ms a log instead of 2 ms on 2 cores). A user's
    IOLENS_THREADS wins."""
    saved = os.environ.get("IOLENS_THREADS")
    os.environ["IOLENS_THREADS"] = saved or "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("IOLENS_THREADS", None)


def _process(keys: list, diagnose: bool, files: bool, tick, thresholds=None, anonymize=None) -> dict:
    th = Thresholds(thresholds or {})
    timing = dict.fromkeys(TIMING, 0.0)
    # the diagnosis reads the whole log (but its heatmap); the features alone need only a few of its regions
    regions = DIAGNOSIS_REGIONS if diagnose else FILE_ROW_REGIONS if files else FEATURE_REGIONS
    jobs, errors, file_table, labels = [], [], [], []
    tokens = tokens_of(anonymize)
    for n, (source, size, mtime) in enumerate(keys, 1):
        if tick is not None:
            tick(n - 1)
        t0 = time.perf_counter()
        path = printable(source) if tokens is None else label_of(source, tokens)  # what the store keys the log by
        labels.append(path)
        try:
            raw = read_raw(source, regions=regions) if tokens is None else read_raw_anonymized(source, path, tokens,
                                                                                              regions)
        except LogError as exc:
            errors.append({"path": path, "size": size, "mtime": mtime, "reason": exc.message})
            continue
        except Exception as exc:  # noqa: BLE001 - one bad log never stops a batch
            errors.append({"path": path, "size": size, "mtime": mtime, "reason": f"{type(exc).__name__}: {exc}"})
            continue
        t1 = time.perf_counter()
        try:
            row = {"size": size, "mtime": mtime, **job_features(raw, path), "diagnosed": diagnose}
        except Exception as exc:  # noqa: BLE001
            errors.append({"path": path, "size": size, "mtime": mtime,
                           "reason": f"features failed ({type(exc).__name__}: {exc})"})
            continue
        row["io_share_over_100"] = None if row.get("io_share") is None else row["io_share"] > 1
        if files:
            file_table.extend(file_rows(raw, path))
        t2 = time.perf_counter()
        if diagnose:
            row.update(log_columns(Log(raw), th))
        jobs.append(row)
        t3 = time.perf_counter()
        timing["read"] += t1 - t0
        timing["features"] += t2 - t1
        timing["diagnosis"] += t3 - t2
    t0 = time.perf_counter()
    table = typed_frame(jobs) if jobs else None
    if table is not None and diagnose:  # the rule codes, over the whole batch at once
        table = with_insights(table, th)[0]
    timing["diagnosis"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    frames = {
        "jobs": table,
        "errors": pl.DataFrame(errors, schema=ERROR_SCHEMA) if errors else None,
        # a log's file rows are replaced even when it now has none (files=False leaves them alone)
        "files": typed_frame(file_table) if file_table else None,
    }
    timing["parquet"] = time.perf_counter() - t0
    return {"logs": len(keys), "paths": labels, "frames": frames,
            "jobs": len(jobs), "errors": len(errors), "timing": timing}


# --- the whole build --------------------------------------------------------------------------------
def plan(paths, store, on_new=None, tokens=None) -> dict:
    """What a build does: `todo` keys to read (with whether the store holds an older row of the path),
    `skipped` logs already in the store as they are now, `gone` stored logs no longer on disk. `on_new()` is
    called as soon as some log is known to be new, before every log is stat'ed. With `tokens` (an anonymised
    build) the store keys logs by their token paths; a stored log not found under PATHS counts as gone."""
    others = Counter()
    found = find_logs(paths, others)
    known = fleet_store.known_keys(store)
    labels = {p: printable(p) if tokens is None else label_of(p, tokens) for p in found}
    if on_new is not None and any(labels[p] not in known for p in found):
        on_new()
    todo, skipped = [], 0
    for path in found:
        key = log_key(path)
        rows = known.get(labels[path])
        if rows == [key[1:]]:
            skipped += 1
        else:  # new, rewritten in place, or left in two rows by an older killed build: (re)read it
            todo.append((key, rows is not None))
    seen = set(labels.values())
    gone = sorted(p for p in known if p not in seen and (tokens is not None or not os.path.exists(p)))
    return {"todo": todo, "skipped": skipped, "gone": gone, "found": len(found),
            "other_traces": {kind: n for kind, n in others.items() if n}}


def build(paths, store, *, diagnose: bool = True, files: bool = False, scheduler=None, workers: int | None = None,
          batch: int | None = None, progress=None, prune: bool = False, thresholds=None,
          group_by: str | None = None, anonymize=None) -> dict:
    """Bring `store` up to date with every log under `paths`: new logs added, logs rewritten in place
    replaced, with `prune` rows of logs gone from disk dropped. `scheduler`: None (a local Dask cluster of
    `workers` processes), "sync"/"threads", a `distributed.Client`, or a scheduler address.
    `progress(done_logs, total_logs)` is called as logs are read. `thresholds`: the diagnosis's overrides
    {name: value} (the insight columns are evaluated with them). Each finished batch is committed at once
    (see `store`). Returns a summary. `group_by="job"`: one row per job instead (fleet/jobs.py). `anonymize`:
    (key bytes, keep_exe_name): every log read as `iolens anonymize` writes it, keyed by its token path."""
    tokens = tokens_of(anonymize)
    if tokens is not None and group_by == "job":
        raise LogError(PER_JOB_ANONYMIZED, str(store))
    if group_by == "job":
        return build_jobs(paths, store, diagnose=diagnose, files=files, scheduler=scheduler, workers=workers,
                          batch=batch, progress=progress, prune=prune, thresholds=thresholds)
    check_grouping(store, False)
    began = time.perf_counter()
    totals = {"added": 0, "errors": 0, "batches": 0, "timing": dict.fromkeys(TIMING, 0.0)}
    with fleet_store.Writer(store) as writer, Cluster(scheduler, workers) as cluster:
        check_anonymized(store, tokens)
        todo = plan(paths, store, on_new=cluster.start, tokens=tokens)
        if prune and todo["gone"]:
            writer.prune(todo["gone"])
        keys = todo["todo"]
        if keys:
            with cluster.ready() as (client, n_workers):
                size = batch or batch_size(len(keys), n_workers)
                batches = [keys[i:i + size] for i in range(0, len(keys), size)]
                for result, replace in _run(batches, client, scheduler, n_workers,
                                            (diagnose, files, thresholds, anonymize), progress):
                    writer.commit(result["paths"], result["frames"], replace=replace)
                    totals["added"] += result["jobs"]
                    totals["errors"] += result["errors"]
                    totals["batches"] += 1
                    for k in TIMING:
                        totals["timing"][k] += result["timing"][k]
        if keys or (prune and todo["gone"]):
            writer.compact()
            writer.vacuum()
    return {"store": str(store), "found": todo["found"], "skipped": todo["skipped"], "read": len(keys),
            "replaced": sum(r for _, r in keys), "added": totals["added"], "errors": totals["errors"],
            "pruned": len(todo["gone"]) if prune else 0, "parts": totals["batches"],
            "other_traces": todo["other_traces"],
            "seconds": time.perf_counter() - began, "timing": totals["timing"]}


def _run(batches, client, scheduler, workers, options, progress):
    """Yield (result, replace) for each batch as it finishes, in any order."""
    tally = Tally(progress, sum(len(b) for b in batches))
    replace = [any(r for _, r in b) for b in batches]
    keys = [[k for k, _ in b] for b in batches]
    if client is None:
        results = _run_here(keys, scheduler, workers, options, tally)
    else:
        results = _run_on_cluster(keys, client, options, tally)
    for index, result in results:
        tally(index, result["logs"])
        yield result, replace[index]


def _run_here(keys, scheduler, workers, options, tally):
    diagnose, files, thresholds, anonymize = options

    def one(index):
        return index, process_batch(keys[index], diagnose, files, tick=lambda n: tally(index, n),
                                    thresholds=thresholds, anonymize=anonymize)

    if scheduler == "threads":
        with ThreadPoolExecutor(workers) as pool:
            for future in as_completed([pool.submit(one, i) for i in range(len(keys))]):
                yield future.result()
    else:
        for index in range(len(keys)):
            yield one(index)


def _run_on_cluster(keys, client, options, tally):
    topic = "iolens-fleet-" + uuid.uuid4().hex
    client.subscribe_topic(topic, lambda event: tally(*event[1]))
    try:
        futures = [client.submit(_batch_task, i, b, options, topic, pure=False) for i, b in enumerate(keys)]
        for future in require("distributed").as_completed(futures):
            yield future.result()
            future.release()
    finally:
        client.unsubscribe_topic(topic)


def _batch_task(index: int, keys: list, options: tuple, topic: str) -> tuple:
    """The Dask task: one batch, with its progress sent to the client as worker events (at most 5 a
    second per worker)."""
    tick = worker_ticker(topic, index)
    diagnose, files, thresholds, anonymize = options
    return index, process_batch(keys, diagnose, files, tick, thresholds, anonymize)


