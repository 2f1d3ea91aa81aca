"""Many logs of one job: logs → jobs → steps → processes, and the data flowing between steps.

    jobs = iolens.jobs.find_jobs(["run/"])       # [Job], each with steps (in start order) and helpers
    iolens.jobs.describe(jobs)                   # what `iolens jobs --json` prints
"""
from __future__ import annotations

import os

from ..errors import LogError
from ..reader.dftracer import TRACE_SUFFIXES
from . import spawn
from .group import Job, Step, group
from .merged import JobLog, merge
from .processes import Process, agreement, expand, line_up, process_of, read_process, trace_processes


def find_jobs(paths, counters: bool = True, progress=None, unreadable=None, traces: bool = False) -> list:
    """The jobs the logs under `paths` (files, folders, globs) belong to. counters=False reads only each log's
    header and job region (grouping alone: no totals, no helpers told apart, no flows). `traces`: DFTracer
    traces too (a folder's `.pfw`/`.pfw.gz` files: one trace), their processes lined up with the Darshan logs
    of the same processes (`line_up`).

    unreadable: a list to collect (path, one-line reason) of logs that cannot be read; without it, the first
    such log raises its LogError."""
    files = expand(paths, traces)
    logs = [f for f in files if not f.endswith(TRACE_SUFFIXES)]
    folders: dict = {}
    for f in files:
        if f.endswith(TRACE_SUFFIXES):
            folders.setdefault(os.path.dirname(f), []).append(f)
    processes = []
    for i, path in enumerate(logs):
        try:
            processes.append(read_process(path, counters))
        except LogError as exc:
            if unreadable is None:
                raise
            unreadable.append((path, exc.message))
        if progress:
            progress((i + 1) / (len(logs) + len(folders)))
    for i, (folder, trace) in enumerate(sorted(folders.items())):
        try:
            processes += trace_processes(folder, trace)
        except LogError as exc:
            if unreadable is None:
                raise
            unreadable.append((folder, exc.message))
        if progress:
            progress((len(logs) + i + 1) / (len(logs) + len(folders)))
    return group(line_up(processes))


def flows(job: Job) -> list:
    """[{file, from, to}]: a file a step wrote that a later step read (from: the last step before `to` that
    wrote it; steps by index)."""
    out = []
    for to, step in enumerate(job.steps):
        read = {f for p in step.processes for f in p.files_read}
        for file in sorted(read):
            writers = [i for i in range(to) if any(file in p.files_written for p in job.steps[i].processes)]
            if writers:
                out.append({"file": file, "from": writers[-1], "to": to})
    return out


def describe(jobs: list, unreadable=()) -> dict:
    """The `iolens jobs --json` structure (documented in docs/jobs.md)."""
    return {"jobs": [_job(j) for j in jobs], "unreadable": [{"path": p, "error": e} for p, e in unreadable]}


def _job(job: Job) -> dict:
    return {
        "job_id": job.job_id,
        "steps": [_step(s, job) for s in job.steps],
        "helpers": sum(len(s.processes) for s in job.helpers),
        "helper_logs": [p.path for s in job.helpers for p in s.processes],
        "helper_commands": sorted({p.command for s in job.helpers for p in s.processes}),
        "unplaced": [p.path for p in job.unplaced],
        "flows": flows(job),
    }


def _step(step: Step, job: Job) -> dict:
    head = step.head
    twins = [p for p in step.processes if p.twin is not None]
    traced = [p.path for p in step.processes if p.tracer == "dftracer"] + [p.twin.path for p in twins]
    return {
        "exe": head.program,
        "command": head.command,
        "start": step.start,
        "end": step.end,
        "processes": len(step.processes) + len(step.empty),
        "ranks": step.ranks,
        "logs": [p.path for p in step.processes] + [p.path for p in step.empty],
        "recovered": [p.path for p in step.processes if p.recovered],
        "empty": [p.path for p in step.empty],
        "missing_pids": step.missing_pids,
        "partial": [{"log": q.path, "said": q.partial} for p in step.processes
                    for q in (p, p.twin) if q is not None and q.partial],
        "pids": [p.pid for p in step.processes],
        "launcher": step.launcher.command if step.launcher else None,
        **{k: step.total(k) for k in ("reads", "writes", "bytes_read", "bytes_written")},
        # DFTracer: the tracers of the step's processes, its trace files, and the processes both tracers saw
        "tracers": sorted({p.tracer for p in step.processes} | ({"dftracer"} if twins else set())),
        "traces": traced,
        "lined_up": [{"pid": p.pid, "log": p.path, "trace": p.twin.path, **agreement(p)} for p in twins],
        "ties": ties(step, job),
    }


HOW = {"fork_parent": "forked (Darshan's fork_parent)", "trace_parent": "the DFTracer trace's parent pid",
       "spawn": "spawned (Python multiprocessing), tied by command line and time"}


def ties(step: Step, job: Job) -> list:
    """How the step's processes are tied to their parents, and the job's helpers tied to one of them:
    [{pid, log, parent_pid, parent_log, role (worker or helper), tie, how, command, alternatives}]; `tie`
    "spawn" is an inference (jobs/spawn.py; `alternatives`: the pids of the other processes that fit, alive at
    its start), the others are what a tracer recorded."""
    mine = step.processes
    by_pid = {p.pid: p for p in mine if p.pid is not None}
    helpers = [p for h in job.helpers for p in h.processes if any(p.spawned_by is q for q in mine)]
    out = []
    for p in mine + helpers:
        parent = p.spawned_by if p.tie == "spawn" else by_pid.get(
            p.fork_parent if p.tie == "fork_parent" else p.parent_pid)
        if parent is None or parent is p:
            continue
        out.append({"pid": p.pid, "log": p.path, "parent_pid": parent.pid, "parent_log": parent.path,
                    "role": "helper" if spawn.kind(p.command) == "helper" else "worker", "tie": p.tie,
                    "how": HOW[p.tie], "command": p.command,
                    "alternatives": [q.pid for q in p.spawn_alternatives] if p.tie == "spawn" else []})
    return out


__all__ = ["Job", "JobLog", "Process", "Step", "agreement", "describe", "diagnose_job", "load_job", "expand", "find_jobs",
           "flows", "group", "line_up", "process_of", "read_process", "ties", "trace_processes"]


def load_job(paths, what: str = "this"):
    """The one job the Darshan logs under `paths` hold, merged into one log-like object (jobs/merged.py).
    LogError when they hold none or several (`iolens jobs` lists them). A DFTracer trace beside them is not
    merged in (`iolens compare FOLDER` puts the two side by side)."""
    jobs = [j for j in find_jobs(paths) if j.steps]
    label = paths[0] if len(paths) == 1 else f"{len(paths)} paths"
    if not jobs:
        raise LogError("no job with data among these logs", str(label))
    if len(jobs) > 1:
        ids = ", ".join(str(j.job_id) for j in jobs)
        raise LogError(f"{len(jobs)} jobs here ({ids}); {what} takes one job's logs (`iolens jobs` lists them)",
                       str(label))
    return merge(jobs[0], str(label))


def attribute(log, ranks=(), files=()) -> list:
    """The processes of a log assembled from several processes' logs behind an insight: its ranks, and the
    processes that touched its files (a recovered log has counters but no trace). [{step, exe, pid, role, log}]"""
    chosen = {log.process_of(int(r))["rank"] for r in ranks if log.process_of(int(r))}
    if files:
        names = log.file_names()
        wanted = {k for k, v in names.items() if v in set(files)}
        for table in log.counters.values():
            hit = table.filter(table["file_id"].is_in(list(wanted)))["rank"].unique().to_list()
            chosen |= {log.process_of(int(r))["rank"] for r in hit if log.process_of(int(r))}
    return [{k: p[k] for k in ("step", "exe", "pid", "role", "log")} for p in log.provenance.processes
            if p["rank"] in chosen]


SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2, "ok": 3}


def diagnose_job(log, diagnose_step) -> list:
    """Each step's findings (a step's processes ran together; steps ran one after another, so cross-rank
    checks across steps would compare unrelated processes), each insight naming its `step`, its `processes`
    and its evidence's `rows` (the report's row labels), and its `evidence.ranks` moved to the job's numbering
    (its title and summary already name the step's processes by their labels: the Context reads them from the
    step's log); most severe first.
    `log`: any log of the contract whose `provenance.processes` says which rank is which process."""
    out = []
    for step in log.steps:
        sub = log.step_log(step)
        first = sub.provenance.processes[0]["rank"]
        moved = {p["rank"]: p for p in log.provenance.processes if p["step"] == step}
        for insight in diagnose_step(sub):
            ev = insight["evidence"]
            insight["processes"] = attribute(sub, ev["ranks"], ev["files"])
            ev["ranks"] = [r + min(moved) - first for r in ev["ranks"]]
            insight["rows"] = [log.row_label(r) for r in ev["ranks"]]
            insight["step"] = step
            out.append(insight)
    return sorted(out, key=lambda i: SEVERITY_ORDER.get(i["severity"], 9))
