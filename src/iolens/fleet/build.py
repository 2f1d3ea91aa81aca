"""Many logs -> the fleet store, read in parallel on Dask.

The logs are cut into batches; one Dask task reads a batch, computes each job's features (and diagnosis),
and writes the batch's rows as its own Parquet part. Tasks return only counts and timings, so memory is
bounded by the batch, not the corpus, and workers on a cluster write to the (shared) store directly.
"""
from __future__ import annotations

import fnmatch
import glob
import os
import time
import uuid
import warnings
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from ..errors import LogError
from . import store as fleet_store
from .features import FEATURE_REGIONS, FILE_ROW_REGIONS, file_rows, job_features

LOG_SUFFIX = ".darshan"
LIST_SUFFIXES = (".txt", ".list", ".lst")
STRING_COLS = {"path", "exe", "app", "log_version", "lib_version", "headline", "headline_severity",
               "headline_title", "diagnosis_error"}
BOOL_COLS = {"diagnosed", "partial", "has_dxt", "dxt_truncated", "uses_hdf5", "uses_pnetcdf", "shared"}
INT_SUFFIXES = ("_bytes_read", "_bytes_written", "_reads", "_writes", "_meta_ops", "_files", "_min", "_max",
                "_ranks")
INT_COLS = {"size", "mtime", "uid", "jobid", "nprocs", "files", "shared_files", "unique_files", "bytes",
            "bytes_read", "bytes_written", "dxt_segments", "insights"}
TIMING = ("read", "features", "diagnosis", "parquet")


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
def process_batch(keys: list, store: str, part: str, diagnose: bool = True, files: bool = False) -> dict:
    """Read a batch of logs and write its jobs/errors/files parts. Returns counts and seconds per stage."""
    with _one_reader_thread():
        return _process(keys, store, part, diagnose, files)


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


def _process(keys: list, store: str, part: str, diagnose: bool, files: bool) -> dict:
    from ..model import Log
    from ..reader.log import read_raw

    timing = dict.fromkeys(TIMING, 0.0)
    # the diagnosis reads the whole log; the features alone need only a few of its regions
    regions = None if diagnose else FILE_ROW_REGIONS if files else FEATURE_REGIONS
    jobs, errors, file_table = [], [], []
    for path, size, mtime in keys:
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
        if files:
            file_table.extend(file_rows(raw, path))
        t2 = time.perf_counter()
        if diagnose:
            row.update(diagnosis_columns(Log(raw)))
        jobs.append(row)
        t3 = time.perf_counter()
        timing["read"] += t1 - t0
        timing["features"] += t2 - t1
        timing["diagnosis"] += t3 - t2
    t0 = time.perf_counter()
    if jobs:
        fleet_store.write_part(typed_frame(jobs), store, "jobs", part)
    if errors:
        fleet_store.write_part(pl.DataFrame(errors, schema={"path": pl.String, "size": pl.Int64,
                                                            "mtime": pl.Int64, "reason": pl.String}),
                               store, "errors", part)
    if file_table:
        fleet_store.write_part(typed_frame(file_table), store, "files", part)
    timing["parquet"] = time.perf_counter() - t0
    return {"logs": len(keys), "jobs": len(jobs), "errors": len(errors), "timing": timing}


def diagnosis_columns(log) -> dict:
    """One column per insight code (its severity, null when not found) and the headline insight."""
    from ..analysis.diagnosis import CODES, diagnose

    out = {f"insight_{code}": None for code in CODES}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            found = diagnose(log)
    except Exception as exc:  # noqa: BLE001 - the job's features are still worth a row
        return {**out, "insights": 0, "headline": None, "headline_severity": None, "headline_title": None,
                "diagnosis_error": f"{type(exc).__name__}: {exc}"}
    for i in found:  # most severe first: keep the first severity seen per code
        key = f"insight_{i.code}"
        if out.get(key) is None:
            out[key] = i.severity
    top = next((i for i in found if i.severity in ("critical", "warning")), None)
    return {**out, "insights": sum(i.severity in ("critical", "warning") for i in found),
            "headline": top.code if top else None, "headline_severity": top.severity if top else None,
            "headline_title": top.title if top else None, "diagnosis_error": None}


def column_dtype(name: str):
    if name in STRING_COLS or name.startswith("insight_") or name == "file":
        return pl.String
    if name in BOOL_COLS:
        return pl.Boolean
    if name in INT_COLS or name.endswith(INT_SUFFIXES):
        return pl.Int64
    return pl.Float64


def typed_frame(rows: list) -> pl.DataFrame:
    """Rows -> a frame with the same types in every part, whatever values a batch happens to hold."""
    names = list(dict.fromkeys(k for r in rows for k in r))
    return pl.DataFrame(rows, schema={n: column_dtype(n) for n in names}, strict=False)


# --- the whole build --------------------------------------------------------------------------------
def plan(paths, store) -> tuple:
    """(keys of logs to read, number already in the store)."""
    keys = [log_key(p) for p in find_logs(paths)]
    known = fleet_store.known_keys(store) if Path(store).is_dir() else set()
    new = [k for k in keys if k not in known]
    return new, len(keys) - len(new)


def batch_size(n: int, workers: int, most: int = 500) -> int:
    """Enough batches to keep every worker busy and the progress bar moving, few enough that task
    overhead stays small; at most `most` logs per part (bounds a worker's memory)."""
    return max(1, min(most, -(-n // max(4 * workers, 1))))


def build(paths, store, *, diagnose: bool = True, files: bool = False, scheduler=None, workers: int | None = None,
          batch: int | None = None, progress=None) -> dict:
    """Add every new log under `paths` to `store`. `scheduler`: None (Dask's local process scheduler on
    `workers` processes), "sync"/"threads", a `distributed.Client`, or a scheduler address.
    `progress(done_logs, total_logs)` is called as batches finish. Returns a summary."""
    began = time.perf_counter()
    new, skipped = plan(paths, store)
    where = str(fleet_store.prepare(store).resolve())  # absolute: workers elsewhere have another cwd
    client = _client(scheduler) if new else None
    try:
        if client is not None:  # size the batches for the cluster's threads, not this machine's cores
            workers = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()) or 1
        workers = workers or cores()
        size = batch or batch_size(len(new), workers)
        build_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        batches = [new[i:i + size] for i in range(0, len(new), size)]
        args = [(b, where, f"part-{build_id}-{k:05d}", diagnose, files) for k, b in enumerate(batches)]
        results = run_tasks(args, client or scheduler, workers, progress, len(new)) if args else []
    finally:
        if client is not None and isinstance(scheduler, str):
            client.close()
    timing = {k: sum(r["timing"][k] for r in results) for k in TIMING}
    return {"store": str(store), "found": len(new) + skipped, "skipped": skipped, "read": len(new),
            "added": sum(r["jobs"] for r in results), "errors": sum(r["errors"] for r in results),
            "parts": len(batches), "seconds": time.perf_counter() - began, "timing": timing}


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_tasks(args: list, scheduler, workers, progress, total: int) -> list:
    import dask

    tasks = [dask.delayed(process_batch, pure=False)(*a) for a in args]
    client = _client(scheduler)
    if client is not None:
        from distributed import as_completed

        results, done = [], 0
        for future in as_completed(client.compute(tasks)):
            results.append(future.result())
            done += results[-1]["logs"]
            if progress:
                progress(done, total)
        return results
    from dask.callbacks import Callback

    class _Progress(Callback):
        done = 0

        def _posttask(self, key, result, dsk, state, worker_id):
            if isinstance(result, dict) and "logs" in result:
                self.done += result["logs"]
                if progress:
                    progress(self.done, total)

    kind = scheduler or "processes"
    opts = {"num_workers": workers} if kind in ("processes", "threads") else {}
    with _Progress():
        return list(dask.compute(*tasks, scheduler=kind, **opts))


LOCAL_SCHEDULERS = ("processes", "threads", "sync", "synchronous")


def _client(scheduler):
    """A `distributed.Client` for a scheduler address or a Client; None for Dask's local schedulers."""
    if scheduler is None or (isinstance(scheduler, str) and scheduler in LOCAL_SCHEDULERS):
        return None
    if isinstance(scheduler, str):
        from distributed import Client

        try:
            return Client(scheduler, timeout="10s")
        except OSError as exc:
            raise LogError(f"cannot reach the Dask scheduler ({exc})", scheduler) from None
    return scheduler  # a distributed.Client
