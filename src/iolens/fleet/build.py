"""Many logs -> the fleet store, read in parallel on Dask.

The logs are cut into batches; one Dask task reads a batch and computes each job's features (and
diagnosis), and returns the batch's rows. The build commits each batch to the store as it arrives (one
transaction per table, see `store`), so memory is bounded by the batches in flight, not the corpus, and a
killed build loses at most the batches it had not committed.
"""
from __future__ import annotations

import fnmatch
import glob
import os
import threading
import time
import uuid
from contextlib import contextmanager

import polars as pl

from ..errors import LogError
from ..optional import require
from . import store as fleet_store
from .features import DIAGNOSIS_REGIONS, FEATURE_REGIONS, FILE_ROW_REGIONS, file_rows, job_features

LOG_SUFFIX = ".darshan"
LIST_SUFFIXES = (".txt", ".list", ".lst")
STRING_COLS = {"path", "exe", "app", "log_version", "lib_version", "headline", "headline_severity",
               "headline_title", "diagnosis_error"}  # the rule features and per_log_* columns: insights.dtypes
BOOL_COLS = {"diagnosed", "partial", "has_dxt", "dxt_truncated", "uses_hdf5", "uses_pnetcdf", "shared",
             "io_share_over_100"}
INT_SUFFIXES = ("_bytes_read", "_bytes_written", "_reads", "_writes", "_meta_ops", "_files", "_min", "_max",
                "_ranks")
INT_COLS = {"size", "mtime", "uid", "jobid", "nprocs", "files", "shared_files", "unique_files", "bytes",
            "bytes_read", "bytes_written", "dxt_segments", "insights"}
TIMING = ("read", "features", "diagnosis", "parquet")
ERROR_SCHEMA = {"path": pl.String, "size": pl.Int64, "mtime": pl.Int64, "reason": pl.String}


# --- finding logs ------------------------------------------------------------------------------------
def find_logs(paths) -> list:
    """Every log named by PATHS: directories walked (any depth, e.g. Darshan's YYYY/M/D layout), globs
    expanded, list files (.txt/.list: one path a line) read; other files taken as logs. Sorted, unique."""
    found = []
    for arg in paths:
        arg = str(arg)
        if glob.has_magic(arg):
            for hit in sorted(glob.glob(arg, recursive=True)):
                found.extend(_walk(hit) if os.path.isdir(hit) else [hit])
        elif os.path.isdir(arg):
            found.extend(_walk(arg))
        elif arg.endswith(LIST_SUFFIXES) and os.path.isfile(arg):
            with open(arg, encoding="utf-8", errors="replace") as fh:
                found.extend(line.strip() for line in fh if line.strip() and not line.startswith("#"))
        elif os.path.exists(arg):
            found.append(arg)
        else:
            raise LogError("no such file, directory or matching log", arg)
    return sorted({os.path.abspath(p) for p in found})


def _walk(top: str) -> list:
    out = []
    for root, dirs, files in os.walk(top, followlinks=True):
        dirs.sort()
        out.extend(os.path.join(root, f) for f in fnmatch.filter(files, "*" + LOG_SUFFIX))
    return out


def log_key(path: str) -> tuple:
    """(path, size, mtime in ns): a log is new to the store when this key is not in it."""
    try:
        st = os.stat(path)
        return (path, int(st.st_size), int(st.st_mtime_ns))
    except OSError:
        return (path, -1, -1)


# --- one batch: the Dask task ----------------------------------------------------------------------
def process_batch(keys: list, diagnose: bool = True, files: bool = False, tick=None, thresholds=None) -> dict:
    """Read a batch of logs into its jobs/errors/files rows (frames, None when empty); counts and seconds
    per stage. `tick(n)` is called after each log with the number read so far. `thresholds`: the diagnosis's
    overrides {name: value}. Writes nothing: the build commits the batch to the store as one transaction."""
    with _one_reader_thread():
        return _process(keys, diagnose, files, tick, thresholds)


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


def _process(keys: list, diagnose: bool, files: bool, tick, thresholds=None) -> dict:
    from ..analysis.diagnosis import Thresholds
    from ..model import Log
    from .insights import log_columns, with_insights

    th = Thresholds(thresholds or {})
    from ..reader.log import read_raw

    timing = dict.fromkeys(TIMING, 0.0)
    # the diagnosis reads the whole log (but its heatmap); the features alone need only a few of its regions
    regions = DIAGNOSIS_REGIONS if diagnose else FILE_ROW_REGIONS if files else FEATURE_REGIONS
    jobs, errors, file_table = [], [], []
    for n, (path, size, mtime) in enumerate(keys, 1):
        if tick is not None:
            tick(n - 1)
        t0 = time.perf_counter()
        try:
            raw = read_raw(path, regions=regions)
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
    return {"logs": len(keys), "paths": [k[0] for k in keys], "frames": frames,
            "jobs": len(jobs), "errors": len(errors), "timing": timing}


def column_dtype(name: str):
    if name in _rule_dtypes():
        return _rule_dtypes()[name]
    if name in STRING_COLS or name.startswith("insight_") or name == "file":
        return pl.String
    if name in BOOL_COLS:
        return pl.Boolean
    if name in INT_COLS or name.endswith(INT_SUFFIXES):
        return pl.Int64
    return pl.Float64


def _rule_dtypes() -> dict:
    global _RULE_DTYPES
    if _RULE_DTYPES is None:
        from .insights import dtypes
        _RULE_DTYPES = dtypes()
    return _RULE_DTYPES


_RULE_DTYPES = None


def typed_frame(rows: list) -> pl.DataFrame:
    """Rows -> a frame with the same types in every part, whatever values a batch happens to hold."""
    names = list(dict.fromkeys(k for r in rows for k in r))
    return pl.DataFrame(rows, schema={n: column_dtype(n) for n in names}, strict=False)


# --- the whole build --------------------------------------------------------------------------------
def plan(paths, store, on_new=None) -> dict:
    """What a build does: `todo` keys to read (with whether the store holds an older row of the path),
    `skipped` logs already in the store as they are now, `gone` stored logs no longer on disk. `on_new()` is
    called as soon as some log is known to be new, before every log is stat'ed."""
    found = find_logs(paths)
    known = fleet_store.known_keys(store)
    if on_new is not None and any(p not in known for p in found):
        on_new()
    todo, skipped = [], 0
    for path in found:
        key = log_key(path)
        rows = known.get(path)
        if rows == [key[1:]]:
            skipped += 1
        else:  # new, rewritten in place, or left in two rows by an older killed build: (re)read it
            todo.append((key, rows is not None))
    seen = set(found)
    gone = sorted(p for p in known if p not in seen and not os.path.exists(p))
    return {"todo": todo, "skipped": skipped, "gone": gone, "found": len(found)}


def batch_size(n: int, workers: int, most: int = 500) -> int:
    """Enough batches to keep every worker busy, few enough that task and commit overhead stays small; at
    most `most` logs per batch (bounds a worker's memory and what a killed build loses)."""
    return max(1, min(most, -(-n // max(4 * workers, 1))))


def build(paths, store, *, diagnose: bool = True, files: bool = False, scheduler=None, workers: int | None = None,
          batch: int | None = None, progress=None, prune: bool = False, thresholds=None,
          group_by: str | None = None) -> dict:
    """Bring `store` up to date with every log under `paths`: new logs added, logs rewritten in place
    replaced, with `prune` rows of logs gone from disk dropped. `scheduler`: None (a local Dask cluster of
    `workers` processes), "sync"/"threads", a `distributed.Client`, or a scheduler address.
    `progress(done_logs, total_logs)` is called as logs are read. `thresholds`: the diagnosis's overrides
    {name: value} (the insight columns are evaluated with them). Each finished batch is committed at once
    (see `store`). Returns a summary. `group_by="job"`: one row per job instead (fleet/jobs.py)."""
    from .jobs import build_jobs, check_grouping

    if group_by == "job":
        return build_jobs(paths, store, diagnose=diagnose, files=files, scheduler=scheduler, workers=workers,
                          batch=batch, progress=progress, prune=prune, thresholds=thresholds)
    check_grouping(store, False)
    began = time.perf_counter()
    totals = {"added": 0, "errors": 0, "batches": 0, "timing": dict.fromkeys(TIMING, 0.0)}
    with fleet_store.Writer(store) as writer, _Cluster(scheduler, workers) as cluster:
        todo = plan(paths, store, on_new=cluster.start)
        if prune and todo["gone"]:
            writer.prune(todo["gone"])
        keys = todo["todo"]
        if keys:
            with cluster.ready() as (client, n_workers):
                size = batch or batch_size(len(keys), n_workers)
                batches = [keys[i:i + size] for i in range(0, len(keys), size)]
                for result, replace in _run(batches, client, scheduler, n_workers, (diagnose, files, thresholds),
                                              progress):
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
            "seconds": time.perf_counter() - began, "timing": totals["timing"]}


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


LOCAL_SCHEDULERS = ("threads", "sync", "synchronous")


@contextmanager
def _scheduler(scheduler, workers):
    """(a distributed.Client or None for the in-process schedulers, number of worker threads)."""
    if isinstance(scheduler, str) and scheduler in LOCAL_SCHEDULERS:
        yield None, workers or cores()
        return
    if scheduler is None or scheduler == "processes":
        Client = require("distributed").Client

        from .workers import local_cluster

        with local_cluster(workers or cores()) as cluster, Client(cluster) as client:
            yield client, workers or cores()
        return
    if isinstance(scheduler, str):
        Client = require("distributed").Client

        try:
            client = Client(scheduler, timeout="10s")
        except OSError as exc:
            raise LogError(f"cannot reach the Dask scheduler ({exc})", scheduler) from None
        with client:
            yield client, _threads(client)
        return
    yield scheduler, _threads(scheduler)  # a distributed.Client of the caller's


class _Cluster:
    """The build's scheduler, with a local cluster's start (about a second: its worker processes) overlapped
    with planning: `start()`, called once some log is surely new, begins making the local cluster on a thread;
    `ready()` waits for it (or makes any scheduler then) and connects the build's client."""

    def __init__(self, scheduler, workers):
        self.scheduler, self.workers = scheduler, workers
        self.local = scheduler is None or scheduler == "processes"
        self.future, self.pool = None, None

    def start(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from .workers import local_cluster

        if self.local and self.future is None:
            self.pool = ThreadPoolExecutor(1, thread_name_prefix="iolens-cluster")
            self.future = self.pool.submit(local_cluster, self.workers or cores())

    @contextmanager
    def ready(self):
        if not self.local:
            with _scheduler(self.scheduler, self.workers) as value:
                yield value
            return
        Client = require("distributed").Client

        self.start()
        cluster, self.future = self.future.result(), None  # closed here, not again by __exit__
        with cluster, Client(cluster) as client:  # the client in this thread: its context is this one's
            yield client, self.workers or cores()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self.future is not None:  # started but never used (nothing to read after all)
            self.future.result().close()
        if self.pool is not None:
            self.pool.shutdown()


def _threads(client) -> int:
    """Size the batches for the cluster's threads, not this machine's cores."""
    return sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()) or 1


class _Tally:
    """Logs read so far, per batch, from ticks that may come from other threads; calls progress."""

    def __init__(self, progress, total: int):
        self.progress, self.total, self.done = progress, total, {}
        self.lock = threading.Lock()

    def __call__(self, index: int, n: int) -> None:
        with self.lock:  # progress called under the lock too: the bar never steps back
            if n <= self.done.get(index, 0):
                return
            self.done[index] = n
            if self.progress:
                self.progress(sum(self.done.values()), self.total)


def _run(batches, client, scheduler, workers, options, progress):
    """Yield (result, replace) for each batch as it finishes, in any order."""
    tally = _Tally(progress, sum(len(b) for b in batches))
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
    diagnose, files, thresholds = options

    def one(index):
        return index, process_batch(keys[index], diagnose, files, tick=lambda n: tally(index, n),
                                    thresholds=thresholds)

    if scheduler == "threads":
        from concurrent.futures import ThreadPoolExecutor, as_completed

        with ThreadPoolExecutor(workers) as pool:
            for future in as_completed([pool.submit(one, i) for i in range(len(keys))]):
                yield future.result()
    else:
        for index in range(len(keys)):
            yield one(index)


def _run_on_cluster(keys, client, options, tally):
    as_completed = require("distributed").as_completed

    topic = "iolens-fleet-" + uuid.uuid4().hex
    client.subscribe_topic(topic, lambda event: tally(*event[1]))
    try:
        futures = [client.submit(_batch_task, i, b, options, topic, pure=False) for i, b in enumerate(keys)]
        for future in as_completed(futures):
            yield future.result()
            future.release()
    finally:
        client.unsubscribe_topic(topic)


def _batch_task(index: int, keys: list, options: tuple, topic: str) -> tuple:
    """The Dask task: one batch, with its progress sent to the client as worker events (at most 5 a
    second per worker)."""
    tick = worker_ticker(topic, index)
    diagnose, files, thresholds = options
    return index, process_batch(keys, diagnose, files, tick, thresholds)


def worker_ticker(topic: str, index: int):
    """`tick(logs read so far)` for a Dask task of batch `index`: sent to the client as a worker event on
    `topic`, at most 5 a second per worker."""
    get_worker = require("distributed").get_worker

    worker, last = get_worker(), [0.0]

    def tick(n):
        now = time.monotonic()
        if n and now - last[0] >= 0.2:
            last[0] = now
            worker.log_event(topic, (index, n))
    return tick
