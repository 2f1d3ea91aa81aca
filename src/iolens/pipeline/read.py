"""Reading: `open` a target as a log of the contract, `summary` (`iolens info`), `describe_jobs` (`iolens jobs`)."""
from __future__ import annotations

import os

from ..analysis.summary import job_summary
from ..errors import LogError
from ..jobs import describe, expand, find_jobs, load_job
from ..model import TraceLog, read
from ..reader.dftracer import is_dftracer_trace
from ..reader.recorder import is_recorder_trace

__all__ = ["describe_jobs", "open", "summary"]


def open(target, progress=None, what: str = "this") -> TraceLog:  # noqa: A001 - iolens.open, as a file is opened
    """The log a target holds: a Darshan log, a Recorder trace folder, a DFTracer trace (a `.pfw`/`.pfw.gz`
    file or a folder of one job's trace files), or a folder (or several paths) of one job's Darshan logs merged
    into one (each process's ranks renumbered, its times on the job's clock). A folder without any log is read
    as a trace folder, so that its error says what it is not. `progress(fraction)` is
    called while one log is read. LogError (one line) when it cannot be read, or holds no job or several
    (`what` names the command in that message)."""
    paths = [os.fspath(target)] if isinstance(target, (str, os.PathLike)) else [os.fspath(p) for p in target]
    if not paths:
        raise LogError("no log given")
    one = paths[0]
    if len(paths) == 1 and (not os.path.isdir(one) or is_recorder_trace(one) or is_dftracer_trace(one)
                            or not expand(paths)):
        return read(one, progress)
    return load_job(paths, what)


def summary(log: TraceLog) -> dict:
    """What `iolens info --json` prints."""
    return job_summary(log)


def describe_jobs(paths, progress=None) -> dict:
    """The jobs, steps and processes the logs under `paths` (files, folders, globs) hold, and the data flowing
    between steps: what `iolens jobs --json` prints. Unreadable logs are listed; LogError when the only log
    given cannot be read."""
    unreadable: list = []
    found = find_jobs(paths, progress=progress, unreadable=unreadable)
    if not found and len(unreadable) == 1:
        raise LogError(unreadable[0][1], unreadable[0][0])
    return describe(found, unreadable)
