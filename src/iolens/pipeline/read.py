"""Reading: `open` a target as a log of the contract, `summary` (`iolens info`), `describe_jobs` (`iolens jobs`)."""
from __future__ import annotations

import os

from ..analysis.summary import job_summary
from ..errors import LogError
from ..jobs import describe, expand, find_jobs, load_job
from ..model import TraceLog, read
from ..model.dftracer import read_dftracer
from ..reader.dftracer import TRACE_SUFFIXES, is_dftracer_trace
from ..reader.folders import NOTHING_HERE
from ..reader.recorder import is_recorder_trace

__all__ = ["describe_jobs", "holds_two_tracers", "open", "open_tracers", "summary"]


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
    found = find_jobs(paths, progress=progress, unreadable=unreadable, traces=True)
    if not found and len(unreadable) == 1:
        raise LogError(unreadable[0][1], unreadable[0][0])
    if not found and not unreadable:
        recorder = [os.fspath(p) for p in paths if is_recorder_trace(os.fspath(p))]
        if recorder:  # NOTHING_HERE names recorder.mt, which this folder holds: say what jobs reads instead
            raise LogError("jobs groups Darshan logs and DFTracer traces; this is a Recorder trace, one job "
                           "(`iolens info` and `diagnose` read it)", recorder[0])
        raise LogError(NOTHING_HERE, ", ".join(map(os.fspath, paths)))
    return describe(found, unreadable)


def holds_two_tracers(path) -> bool:
    """A folder holding one job's Darshan logs and its DFTracer trace (`iolens compare FOLDER` lines them up)."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return False
    found = expand([path], traces=True)
    return any(f.endswith(TRACE_SUFFIXES) for f in found) and any(not f.endswith(TRACE_SUFFIXES) for f in found)


def open_tracers(path, what: str = "this") -> list:
    """[(tracer, log)] of a folder holding both: the Darshan logs (one, or one job's merged) and the DFTracer
    trace (its `.pfw`/`.pfw.gz` files), in that order."""
    path = os.fspath(path)
    logs = [f for f in expand([path]) if not f.endswith(TRACE_SUFFIXES)]
    darshan = read(logs[0]) if len(logs) == 1 else load_job([path], what)
    return [("darshan", darshan), ("dftracer", read_dftracer(path))]