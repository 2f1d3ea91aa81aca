"""`iolens fleet build --group-by job`: one row per job (the grouping `iolens jobs` does), not per log.

A build first groups every log into its job from the header and job region alone (a log already in the
store as it is on disk is not read again: its grouping facts are in the `logs` table), then recomputes only
the jobs whose set of member logs changed (a log new, rewritten, gone with --prune, or moved to another job).
One task reads all the logs of the jobs it is given, so a job is never split across tasks. A job's row and
its `logs` rows are keyed by its job key and replaced together (a Delta replace-where on `job`).

The row's features are `features.job_features` over the job's logs merged into one (helpers left out, every
process's ranks renumbered and its timestamps moved to the job's clock as `iolens diagnose FOLDER` does), so a
job of one log has exactly that log's per-log features; its insight columns come from the job's diagnosis
(`jobs.diagnose_job`, one step at a time).
"""
from __future__ import annotations

import dataclasses
import os
import time
import uuid
import warnings
from collections import Counter

import numpy as np
import polars as pl

from ..analysis.diagnosis import CODES
from ..analysis.diagnosis import diagnose as run_checks
from ..errors import LogError
from ..jobs import diagnose_job, group, process_of, read_process
from ..jobs.merged import JobLog, merge_modules
from ..jobs.processes import Process
from ..model import Log
from ..optional import require
from ..reader.counter_names import COUNTER_NAMES
from ..reader.folders import LOG_SUFFIXES, files_in
from ..reader.log import RawLog, read_raw
from ..reader.lustre import LustreRecords
from . import store as fleet_store
from .columns import ERROR_SCHEMA, TIMING, column_dtype, typed_frame
from .features import DIAGNOSIS_REGIONS, FEATURE_REGIONS, FILE_ROW_REGIONS, file_rows, job_features
from .scan import find_logs, log_key
from .scheduling import Tally, batch_size, open_scheduler, worker_ticker

# the job columns a per-job row adds to the per-log features
JOB_COLS = {"job": pl.String, "logs": pl.Int64, "steps": pl.Int64, "helpers": pl.Int64, "recovered": pl.Int64,
            "empty_logs": pl.Int64}
LOGS_SCHEMA = {"job": pl.String, "path": pl.String, "size": pl.Int64, "mtime": pl.Int64, "role": pl.String,
               "step": pl.Int64, "recovered": pl.Boolean, "jobid": pl.Int64, "pid": pl.Int64, "uid": pl.Int64,
               "start_time": pl.Float64, "end_time": pl.Float64, "nprocs": pl.Int64, "fork_parent": pl.Int64,
               "command": pl.String, "program": pl.String}
KEYED_BY_JOB = ("jobs", "logs", "files")
# the `logs` rows last: a job counts as done only once its member logs are in (a build killed before that
# reads the job again)
COMMIT_ORDER = ("files", "errors", "jobs", "logs")
PER_LOG = "store was built per log; use a new store or drop --group-by"
PER_JOB = "store was built per job (--group-by job); use a new store or add --group-by job"


# --- which kind of store ----------------------------------------------------------------------------
def is_per_job(store) -> bool:
    return fleet_store.is_table(store, "logs")


def check_grouping(store, grouped: bool) -> None:
    """Refuse (one line) a per-log build on a per-job store and the other way round: their rows cannot mix."""
    if grouped and not is_per_job(store) and any(fleet_store.is_table(store, t) for t in ("jobs", "errors")):
        raise LogError(PER_LOG, str(store))
    if not grouped and is_per_job(store):
        raise LogError(PER_JOB, str(store))


# --- finding and grouping the logs ------------------------------------------------------------------
def find_job_logs(paths, others: Counter | None = None) -> list:
    """As `scan.find_logs`, unfinished logs (.darshan_partial) included: they belong to their job. Other
    tracers' traces met in the folders are counted in `others` (`reader.folders.count_other_traces`)."""
    found = []
    for arg in map(str, paths):
        if os.path.isdir(arg):
            found += files_in(arg, LOG_SUFFIXES, others)
        else:
            found += find_logs([arg])
    return sorted({os.path.abspath(p) for p in found})


def job_key(job) -> str:
    """The job id Darshan recorded; for logs grouped by time (no batch job id), user and first start."""
    if job.job_id is not None:
        return str(job.job_id)
    procs = members(job)
    first = min((p for p in procs if p.start is not None), key=lambda p: p.start)
    return f"uid {first.uid or 0} at {first.start:.6f}"


def members(job) -> list:
    """Every process (log) of a job: its steps', their empty unfinished logs, its helpers', the unplaced."""
    return ([p for s in job.steps for p in s.processes + s.empty] + [p for s in job.helpers for p in s.processes]
            + list(job.unplaced))


def _process_of(row: dict) -> Process:
    """A log's grouping facts as stored in the `logs` table (no read)."""
    return Process(row["path"], row["jobid"], row["pid"], row["command"] or "", row["start_time"], row["end_time"],
                   row["nprocs"] or 1, row["uid"], row["fork_parent"], recovered=bool(row["recovered"]),
                   empty=row["role"] == "empty", program=row["program"] or "")


def plan_jobs(paths, store, prune: bool, progress=None) -> dict:
    """What a per-job build does: `todo` {job key: [log paths]} to (re)compute, `stale` job keys whose rows
    go, `errors` rows of logs whose header cannot be read, and counts."""
    others = Counter()
    found = find_job_logs(paths, others)
    stored = fleet_store.read(store, "logs")
    stored_rows = {r["path"]: r for r in stored.iter_rows(named=True)} if stored.height else {}
    errs = fleet_store.read(store, "errors")
    known_errors = {(r["path"], r["size"], r["mtime"]) for r in errs.iter_rows(named=True)} if errs.height else set()
    procs, keys, errors, skipped = [], {}, [], 0
    for i, path in enumerate(found):
        key = log_key(path)
        keys[path] = key
        row = stored_rows.get(path)
        if row is not None and (row["size"], row["mtime"]) == key[1:]:
            procs.append(_process_of(row))
        elif key in known_errors:
            skipped += 1
        else:
            try:
                procs.append(read_process(path, counters=False))
            except LogError as exc:
                errors.append({"path": path, "size": key[1], "mtime": key[2], "reason": exc.message})
        if progress:
            progress(i + 1, len(found))
    seen = set(found)
    stored_paths = set(stored_rows) | {p for p, _, _ in known_errors}
    gone = sorted(p for p in stored_paths if p not in seen and not os.path.exists(p))
    for path, row in stored_rows.items():  # stored logs outside PATHS stay members of their job
        if path not in seen and not (prune and path in gone):
            procs.append(_process_of(row))
            keys[path] = (path, row["size"], row["mtime"])
    was = {}
    for row in stored_rows.values():
        was.setdefault(row["job"], set()).add((row["path"], row["size"], row["mtime"]))
    todo, now_keys = {}, set()
    for job in group(procs):
        k = job_key(job)
        now_keys.add(k)
        now = {keys[p.path] for p in members(job)}
        if was.get(k) != now:
            todo[k] = sorted(p.path for p in members(job))
        else:
            skipped += len(now)
    return {"todo": todo, "stale": sorted(set(was) - now_keys), "errors": errors, "gone": gone,
            "skipped": skipped, "found": len(found), "replaced": sum(k in was for k in todo),
            "other_traces": {kind: n for kind, n in others.items() if n}}


# --- one job: its row ------------------------------------------------------------------------------
def job_rows(job_paths: dict, diagnose: bool = True, files: bool = False, tick=None, thresholds=None) -> dict:
    """The task: {job key: [paths]} -> frames (jobs, logs, errors, files), each job's logs read whole.
    `tick(n)` is called with the number of logs read so far. Writes nothing (the build commits)."""
    timing = dict.fromkeys(TIMING, 0.0)
    jobs, logs, errors, file_table, keys, n = [], [], [], [], set(job_paths), 0
    for key, paths in job_paths.items():
        t0 = time.perf_counter()
        procs, raws = _read_job(paths, diagnose, files, errors)
        n += len(paths)
        if tick is not None:
            tick(n)
        t1 = time.perf_counter()
        timing["read"] += t1 - t0
        found = group(procs)
        for job in found:
            # more than one: a log that bridged two runs by time could not be read; each keeps its own key
            key = job_key(job) if len(found) > 1 else key
            keys.add(key)
            logs += _log_rows(job, key)
            if not job.steps:  # only empty unfinished logs: nothing to make a row of, each one named
                errors += [{"path": p.path, **_size(p.path), "reason": "unfinished log with nothing recoverable "
                            "(only its file name: job, program, pid)"} for p in job.unplaced]
                continue
            try:
                row, raw = job_row(job, key, raws, diagnose, timing, thresholds)
            except Exception as exc:  # noqa: BLE001 - one bad job never stops a batch
                errors += [{"path": p.path, **_size(p.path),
                            "reason": f"job {key}: features failed ({type(exc).__name__}: {exc})"}
                           for p in members(job)]
                continue
            jobs.append(row)
            if files:
                file_table += [{**r, "job": key} for r in file_rows(raw, row["path"])]
    t0 = time.perf_counter()
    frames = {"jobs": _typed(jobs) if jobs else None,
              "logs": pl.DataFrame(logs, schema=LOGS_SCHEMA) if logs else None,
              "errors": pl.DataFrame(errors, schema=ERROR_SCHEMA) if errors else None,
              "files": typed_frame(file_table).with_columns(pl.col("job").cast(pl.String)) if file_table else None}
    timing["parquet"] = time.perf_counter() - t0
    return {"frames": frames, "keys": sorted(keys), "paths": [p for ps in job_paths.values() for p in ps],
            "logs": n, "jobs": len(jobs), "errors": len(errors), "timing": timing}


def _read_job(paths: list, diagnose: bool, files: bool, errors: list) -> tuple:
    """([Process], {path: RawLog}) of a job's logs on disk, each read once; a log that cannot be read becomes
    an errors row, an empty unfinished log a process known by its file name only."""
    procs, raws = [], {}
    for path in paths:
        if not os.path.exists(path):
            continue  # gone from disk: the job is recomputed from the logs it still has
        try:
            raws[path] = _read(path, diagnose, files)
            procs.append(process_of(path, raws[path]))
        except LogError as exc:
            try:
                empty = read_process(path, counters=False)
            except LogError:
                empty = None
            if empty is not None and empty.empty:
                procs.append(empty)
            else:
                errors.append({"path": path, **_size(path), "reason": exc.message})
    return procs, raws


def _typed(rows: list) -> pl.DataFrame:
    names = list(dict.fromkeys(k for r in rows for k in r))
    return pl.DataFrame(rows, schema={n: JOB_COLS.get(n) or column_dtype(n) for n in names}, strict=False)


def _read(path: str, diagnose: bool, files: bool):
    return read_raw(path, regions=DIAGNOSIS_REGIONS if diagnose else FILE_ROW_REGIONS if files else FEATURE_REGIONS)


def _size(path: str) -> dict:
    _, size, mtime = log_key(path)
    return {"size": size, "mtime": mtime}


def job_row(job, key: str, raws: dict, diagnose: bool, timing: dict, thresholds=None) -> tuple:
    """(row, the job's RawLog): its features (its logs merged; one log alone: that log's own), its job
    columns, its diagnosis."""
    t0 = time.perf_counter()
    data = [p for s in job.steps for p in s.processes]
    raw = raws[data[0].path] if len(data) == 1 else merged_raw(job, raws)
    head = job.steps[0].head.path
    row = {"job": key, **_size(head), **job_features(raw, head), "diagnosed": diagnose}
    row["io_share_over_100"] = None if row.get("io_share") is None else row["io_share"] > 1
    row.update({"logs": len(members(job)), "steps": len(job.steps),
                "helpers": sum(len(s.processes) for s in job.helpers),
                "recovered": sum(p.recovered for p in members(job)),
                "empty_logs": sum(p.empty for p in members(job))})
    t1 = time.perf_counter()
    if diagnose:
        judge = (lambda log: diagnose_log(log, thresholds)) if len(data) == 1 else None
        row.update(judge(Log(raw)) if judge else job_diagnosis_columns(job, raws, thresholds))
    timing["features"] += t1 - t0
    timing["diagnosis"] += time.perf_counter() - t1
    return row, raw


def diagnose_log(log, thresholds=None) -> dict:
    """A one-log job's insight columns: `diagnose(log)`'s, as `iolens diagnose LOG` judges it. (A per-job
    store keeps the diagnosis as built: its jobs' steps have no rule features, see docs/fleet.md.)"""
    out = {f"insight_{code}": None for code in CODES}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            found = [i.to_dict() for i in run_checks(log, thresholds)]
    except Exception as exc:  # noqa: BLE001 - the job's features are still worth a row
        return {**out, "insights": 0, "headline": None, "headline_severity": None, "headline_title": None,
                "diagnosis_error": f"{type(exc).__name__}: {exc}"}
    return _insight_columns(out, found)


def job_diagnosis_columns(job, raws: dict, thresholds=None) -> dict:
    """The insight columns of the job's diagnosis, as `iolens diagnose FOLDER` judges it (step by step)."""
    out = {f"insight_{code}": None for code in CODES}
    try:
        log = JobLog(job, job.steps[0].head.path, cache={p: Log(r) for p, r in raws.items()})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            found = diagnose_job(log, lambda step: [i.to_dict() for i in run_checks(step, thresholds)])
    except Exception as exc:  # noqa: BLE001 - the job's features are still worth a row
        return {**out, "insights": 0, "headline": None, "headline_severity": None, "headline_title": None,
                "diagnosis_error": f"{type(exc).__name__}: {exc}"}
    return _insight_columns(out, found)


def _insight_columns(out: dict, found: list) -> dict:
    for i in found:  # most severe first: keep the first severity seen per code
        out[f"insight_{i['code']}"] = out.get(f"insight_{i['code']}") or i["severity"]
    top = next((i for i in found if i["severity"] in ("critical", "warning")), None)
    return {**out, "insights": sum(i["severity"] in ("critical", "warning") for i in found),
            "headline": top["code"] if top else None, "headline_severity": top["severity"] if top else None,
            "headline_title": top["title"] if top else None, "diagnosis_error": None}


def _log_rows(job, key: str) -> list:
    roles = [(p, "process", i) for i, s in enumerate(job.steps) for p in s.processes]
    roles += [(p, "empty", i) for i, s in enumerate(job.steps) for p in s.empty]
    roles += [(p, "helper", None) for s in job.helpers for p in s.processes]
    roles += [(p, "empty", None) for p in job.unplaced]
    return [{"job": key, "path": p.path, **_size(p.path), "role": role, "step": step, "recovered": p.recovered,
             "jobid": p.jobid, "pid": p.pid, "uid": p.uid, "start_time": p.start, "end_time": p.end,
             "nprocs": p.nprocs, "fork_parent": p.fork_parent, "command": p.command, "program": p.program}
            for p, role, step in roles]


# --- many logs as one: the merged reader arrays ----------------------------------------------------
def merged_raw(job, raws: dict):
    """The job's data logs (helpers out) as one RawLog: every log's records with its ranks moved to the
    job's numbering (a one-process log's reduced record is that process's own) and its timestamps to the
    job's clock (seconds from the earliest start), as `jobs.merged.JobLog` does for the analysis."""
    logs = [raws[p.path] for s in job.steps for p in s.processes]
    start = min((r.job.start_time_sec, r.job.start_time_nsec) for r in logs)
    end = max((r.job.end_time_sec, r.job.end_time_nsec) for r in logs)
    t0 = start[0] + start[1] / 1e9
    firsts = np.cumsum([0] + [int(r.job.nprocs) for r in logs])[:-1]
    offsets = [r.job.start_time - t0 for r in logs]
    head = logs[0]
    jobrec = dataclasses.replace(head.job, nprocs=int(sum(int(r.job.nprocs) for r in logs)),
                                 start_time_sec=start[0], start_time_nsec=start[1], end_time_sec=end[0],
                                 end_time_nsec=end[1], jobid=job.job_id if job.job_id is not None else head.job.jobid)
    out = RawLog(head.path, head.header, jobrec, {k: v for r in reversed(logs) for k, v in r.names.items()})
    out.modules = merge_modules(r.modules for r in logs)
    out.counters = _counters(logs, firsts, offsets)
    out.dxt = _dxt(logs, firsts, offsets)
    out.lustre = _lustre(logs, firsts)
    out.notes = [f"{os.path.basename(r.path)}: {n}" for r in logs for n in r.notes]
    out.recovered = any(r.recovered for r in logs)
    out.missing = [f"{os.path.basename(r.path)}: {m}" for r in logs for m in r.missing]
    return out


def _ranks(ranks: np.ndarray, first: int, nprocs: int) -> np.ndarray:
    ranks = np.asarray(ranks, dtype=np.int64)
    if nprocs == 1:
        return np.maximum(ranks, 0) + first
    return np.where(ranks >= 0, ranks + first, -1)


def _counters(logs: list, firsts, offsets) -> dict:
    parts: dict = {}
    for r, first, offset in zip(logs, firsts, offsets):
        for module, recs in r.counters.items():
            stamps = [i for i, n in enumerate(COUNTER_NAMES[module][1]) if n.endswith("_TIMESTAMP")]
            f = recs.fcounters.copy()
            if stamps and offset:
                f[:, stamps] = np.where(f[:, stamps] > 0, f[:, stamps] + offset, f[:, stamps])
            parts.setdefault(module, []).append(dataclasses.replace(
                recs, ranks=_ranks(recs.ranks, int(first), int(r.job.nprocs)), fcounters=f))
    out = {}
    for module, ps in parts.items():
        links = [p.file_rec_ids for p in ps]
        out[module] = dataclasses.replace(
            ps[0], ids=np.concatenate([p.ids for p in ps]), ranks=np.concatenate([p.ranks for p in ps]),
            counters=np.concatenate([p.counters for p in ps]), fcounters=np.concatenate([p.fcounters for p in ps]),
            file_rec_ids=None if any(x is None for x in links) else np.concatenate(links),
            skipped=sum(p.skipped for p in ps))
    return out


def _dxt(logs: list, firsts, offsets) -> dict:
    parts: dict = {}
    for r, first, offset in zip(logs, firsts, offsets):
        for module, recs in r.dxt.items():
            chunks = [{**c, "start": c["start"] + offset, "end": c["end"] + offset} for c in recs.chunks]
            parts.setdefault(module, []).append(dataclasses.replace(
                recs, ranks=_ranks(recs.ranks, int(first), int(r.job.nprocs)), chunks=chunks))
    return {module: dataclasses.replace(
        ps[0], ids=np.concatenate([p.ids for p in ps]), ranks=np.concatenate([p.ranks for p in ps]),
        hostnames=[h for p in ps for h in p.hostnames], write_counts=np.concatenate([p.write_counts for p in ps]),
        read_counts=np.concatenate([p.read_counts for p in ps]), chunks=[c for p in ps for c in p.chunks])
        for module, ps in parts.items()}


def _lustre(logs: list, firsts):
    ps = [(r.lustre, int(first), int(r.job.nprocs)) for r, first in zip(logs, firsts) if r.lustre.records]
    if not ps:
        return LustreRecords()
    offsets, base = [np.zeros(1, np.int64)], 0
    for lu, _, _ in ps:
        offsets.append(lu.ost_offsets[1:] + base)
        base += int(lu.ost_offsets[-1])
    return LustreRecords(records=sum(lu.records for lu, _, _ in ps),
                         file_id=np.concatenate([lu.file_id for lu, _, _ in ps]),
                         rank=np.concatenate([_ranks(lu.rank, f, n) for lu, f, n in ps]),
                         component=np.concatenate([lu.component for lu, _, _ in ps]),
                         values=np.concatenate([lu.values for lu, _, _ in ps]),
                         pool_name=[x for lu, _, _ in ps for x in lu.pool_name],
                         ost_offsets=np.concatenate(offsets), osts=np.concatenate([lu.osts for lu, _, _ in ps]))


# --- the whole build --------------------------------------------------------------------------------
def build_jobs(paths, store, *, diagnose: bool = True, files: bool = False, scheduler=None,
               workers: int | None = None, batch: int | None = None, progress=None, prune: bool = False,
               thresholds=None) -> dict:
    """`build.build` with one row per job: group, then recompute the jobs whose logs changed, a batch of
    whole jobs per task, each batch committed as it finishes (rows replaced by job key)."""
    began = time.perf_counter()
    totals = {"added": 0, "errors": 0, "batches": 0, "read": 0, "timing": dict.fromkeys(TIMING, 0.0)}
    with fleet_store.Writer(store) as writer:
        check_grouping(store, True)
        todo = plan_jobs(paths, store, prune, progress if _phase(progress, "grouping logs") else None)
        _phase(progress, "reading logs")
        _create_empty(store)  # marks the store as per job from its first build on
        errs = todo["errors"]
        drop = [p for p in todo["gone"]] if prune else []
        if errs or drop or todo["stale"]:
            where = {"errors": fleet_store.path_predicate([e["path"] for e in errs] + drop)} if errs or drop else {}
            if todo["stale"]:
                where.update({t: fleet_store.in_predicate("job", todo["stale"]) for t in KEYED_BY_JOB})
            writer.commit_where({"errors": pl.DataFrame(errs, schema=ERROR_SCHEMA) if errs else None}, where,
                                COMMIT_ORDER)
            totals["errors"] += len(errs)
        jobs = list(todo["todo"].items())
        if jobs:
            with open_scheduler(scheduler, workers) as (client, n_workers):
                n_logs = sum(len(ps) for _, ps in jobs)
                size = batch or batch_size(n_logs, n_workers)
                for result in _run(_batches(jobs, size), client, (diagnose, files, thresholds), progress):
                    where = {t: fleet_store.in_predicate("job", result["keys"]) for t in KEYED_BY_JOB}
                    where["errors"] = fleet_store.path_predicate(result["paths"])
                    writer.commit_where(result["frames"], where, COMMIT_ORDER)
                    totals["added"] += result["jobs"]
                    totals["errors"] += result["errors"]
                    totals["read"] += result["logs"]
                    totals["batches"] += 1
                    for k in TIMING:
                        totals["timing"][k] += result["timing"][k]
        if jobs or errs or drop or todo["stale"]:
            writer.compact()
            writer.vacuum()
    return {"store": str(store), "group_by": "job", "found": todo["found"], "skipped": todo["skipped"],
            "read": totals["read"], "replaced": todo["replaced"], "added": totals["added"],
            "errors": totals["errors"], "pruned": len(todo["gone"]) if prune else 0, "parts": totals["batches"],
            "jobs_recomputed": len(jobs), "jobs_dropped": len(todo["stale"]), "other_traces": todo["other_traces"],
            "seconds": time.perf_counter() - began, "timing": totals["timing"]}


def _phase(progress, name: str) -> bool:
    """Tell a progress callback that has phases (the CLI's bar) that the build starts `name`; whether it has.
    A plain `progress(done, total)` hears of the logs read only, as in a per-log build."""
    if progress is None or not hasattr(progress, "phase"):
        return False
    progress.phase(name)
    return True


def _create_empty(store) -> None:
    """The `logs` table with no rows yet (a store of unreadable logs only is still a per-job store)."""
    if not fleet_store.is_table(store, "logs"):
        require("deltalake").write_deltalake(str(fleet_store.table_dir(store, "logs").resolve()), pl.DataFrame(schema=LOGS_SCHEMA))


def _batches(jobs: list, size: int) -> list:
    """Whole jobs per batch, about SIZE logs each (a job larger than SIZE is a batch of its own)."""
    out, cur, n = [], {}, 0
    for key, paths in jobs:
        if cur and n + len(paths) > size:
            out.append(cur)
            cur, n = {}, 0
        cur[key] = paths
        n += len(paths)
    if cur:
        out.append(cur)
    return out


def _run(batches: list, client, options: tuple, progress):
    """Yield each batch's result as it finishes (in this process, or as Dask tasks on CLIENT), with
    `progress(logs read, logs to read)` called as logs are read."""
    tally = Tally(progress, sum(len(ps) for b in batches for ps in b.values()))
    diagnose, files, thresholds = options
    if client is None:
        for index, b in enumerate(batches):
            yield job_rows(b, diagnose, files, tick=lambda n, index=index: tally(index, n), thresholds=thresholds)
        return
    topic = "iolens-fleet-jobs-" + uuid.uuid4().hex
    client.subscribe_topic(topic, lambda event: tally(*event[1]))
    try:
        futures = [client.submit(_batch_task, i, b, diagnose, files, topic, thresholds, pure=False)
                   for i, b in enumerate(batches)]
        for future in require("distributed").as_completed(futures):
            index, result = future.result()
            tally(index, result["logs"])
            yield result
            future.release()
    finally:
        client.unsubscribe_topic(topic)


def _batch_task(index: int, batch: dict, diagnose: bool, files: bool, topic: str, thresholds=None) -> tuple:
    """The Dask task: one batch of whole jobs, its progress sent to the client as worker events."""
    return index, job_rows(batch, diagnose, files, worker_ticker(topic, index), thresholds)
