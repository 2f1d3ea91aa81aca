"""Many logs of one job: logs → jobs → steps → processes, and the data flowing between steps.

    jobs = iolens.jobs.find_jobs(["run/"])       # [Job], each with steps (in start order) and helpers
    iolens.jobs.describe(jobs)                   # what `iolens jobs --json` prints
"""
from __future__ import annotations

from .group import Job, Step, group
from .processes import Process, expand, read_process


def find_jobs(paths, counters: bool = True, progress=None) -> list:
    """The jobs the logs under `paths` (files, folders, globs) belong to. counters=False reads only each log's
    header and job region (grouping alone: no totals, no helpers told apart, no flows)."""
    files = expand(paths)
    processes = []
    for i, path in enumerate(files):
        processes.append(read_process(path, counters))
        if progress:
            progress((i + 1) / len(files))
    return group(processes)


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


def describe(jobs: list) -> dict:
    """The `iolens jobs --json` structure (documented in docs/jobs.md)."""
    return {"jobs": [_job(j) for j in jobs]}


def _job(job: Job) -> dict:
    return {
        "job_id": job.job_id,
        "steps": [_step(s) for s in job.steps],
        "helpers": sum(len(s.processes) for s in job.helpers),
        "helper_logs": [p.path for s in job.helpers for p in s.processes],
        "helper_commands": sorted({p.command for s in job.helpers for p in s.processes}),
        "unplaced": [p.path for p in job.unplaced],
        "flows": flows(job),
    }


def _step(step: Step) -> dict:
    head = step.head
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
        "pids": [p.pid for p in step.processes],
        "launcher": step.launcher.command if step.launcher else None,
        **{k: step.total(k) for k in ("reads", "writes", "bytes_read", "bytes_written")},
    }


__all__ = ["Job", "Process", "Step", "describe", "expand", "find_jobs", "flows", "group", "read_process"]
