"""DFTracer traces (github hariharan-devarajan/dftracer): JSON lines, one event a line, one file per process
(`trace-<hash>-app.pfw`, `-preload.pfw`, gzip'd as `.pfw.gz`). Format only: the files' events as columns, the
metadata events (hash -> path, host, command) and what could not be read; no tables, no analysis.

An event is `{"id", "name", "cat", "pid", "tid", "ts", "dur", "ph", "args"}`; `ph` 1 (or "X") is a complete
event, 4 (or "M") a metadata event. POSIX and STDIO calls (`cat`) come from DFTracer's preload library, other
categories are the application's spans (its Python API), `dftracer` its own start/end events. The native
reader (`_native.read_dftracer`) streams every file, many at once.
"""
from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import LogError
from .inputs import refuse_special
from .regions import _native, workers

TRACE_SUFFIXES = (".pfw", ".pfw.gz")
NA = np.iinfo(np.int64).min  # an integer the event does not carry
NO_STRING = np.iinfo(np.uint32).max
# DFTracer 2's counter events (`ph` 2; Chrome's "C"): time series of telemetry, not I/O: not read, and a trace
# holding them is not partial for that
COUNTER_PHASES = ("2", "C")


@dataclass
class TraceFile:
    """One file of the trace, and how far it could be read."""
    path: str
    gzip: bool
    lines: int  # event lines (not blank)
    bad_lines: int  # lines that are not DFTracer events
    first_bad: tuple | None  # (line number, its start)
    unknown: dict  # event kind (ph) -> events skipped
    cut: bool  # the last line stops mid-event
    error: str | None  # why the file could not be read to its end
    events: int = 0
    pids: frozenset = frozenset()  # the processes whose events it holds

    @property
    def partial(self) -> bool:
        lost = {ph: n for ph, n in self.unknown.items() if ph not in COUNTER_PHASES}
        return bool(self.bad_lines or lost or self.cut or self.error)

    def problems(self) -> list:
        """One phrase per thing this file lost."""
        out = []
        if self.error:
            out.append(self.error)
        if self.cut and not self.error:
            out.append("its last line stops mid-event (the file was cut)")
        if self.bad_lines:
            line, text = self.first_bad or (0, "")
            out.append(f"{self.bad_lines:,} line(s) are not DFTracer events (first: line {line}, {shown(text)!r})")
        for ph, n in sorted(self.unknown.items()):
            if ph in COUNTER_PHASES:
                out.append(f"{n:,} counter event(s) (ph {ph}: readings such as psutil's or PAPI's, no I/O) not read")
            else:
                out.append(f"{n:,} event(s) of a kind iolens does not read (ph {ph}) skipped")
        return out


@dataclass
class DFTracerRaw:
    path: str
    files: list  # TraceFile per file read
    strings: list  # every name, category and hash; the columns hold their index (NO_STRING: none)
    io: dict  # column -> numpy array: one entry per POSIX/STDIO call (`proc`: its row of `procs`)
    spans: dict  # column -> numpy array (args: a list): one entry per application event
    procs: dict  # column -> numpy array: one entry per process of each file (pid, host, events, first, last,
    #              max_id, with_id, file: the index of its TraceFile)
    meta: list = field(default_factory=list)  # (pid, event, name, value) of metadata events
    internal: list = field(default_factory=list)  # (proc, ts, name, args dict) of DFTracer's own events
    aggregated: list = field(default_factory=list)  # (proc, tid, ts, cat, name, args dict): DFTracer 2's
    #              aggregation mode (ph 3), a function's events of a thread summed over an interval
    inherited: int = 0  # aggregated records a forked child repeated from its parent (dropped)
    t0: int = 0  # the earliest event's start, in trace units: `start` and `end` are seconds from it
    ticks: int = 10**6  # trace units a second (the CM time_metric event; microseconds unless it says)

    def string_map(self, event: str) -> dict:
        """hash -> text from the metadata events named `event` (FH files, HH hosts, SH strings)."""
        return {value: name for _, ev, name, value in self.meta if ev == event}


def shown(text: str) -> str:
    """A bad line's start as a message may show it: what is not printable as '?'."""
    return "".join(c if c.isprintable() and c != "\ufffd" else "?" for c in text)


def trace_files(path: str) -> list:
    """The trace files of `path`: the file itself, or a folder's `.pfw`/`.pfw.gz` files (searched down)."""
    if os.path.isdir(path):
        found = []
        for root, _, files in os.walk(path):
            found += [os.path.join(root, f) for f in files if f.endswith(TRACE_SUFFIXES)]
        return sorted(found)
    return [path]


def is_dftracer_trace(path: str) -> bool:
    """A DFTracer trace file or a folder of them, told by name (`.pfw`, `.pfw.gz`) or, for a file, by content
    (JSON lines: its first byte, inflated when gzip'd, opens an object or an array). A folder that also holds
    Darshan logs is not one trace (its logs are a job's)."""
    if os.path.isdir(path):
        has_trace = has_log = False
        for _, _, files in os.walk(path):
            has_trace = has_trace or any(f.endswith(TRACE_SUFFIXES) for f in files)
            has_log = has_log or any(f.endswith((".darshan", ".darshan_partial")) for f in files)
        return has_trace and not has_log
    if not os.path.isfile(path):
        return False
    if path.endswith(TRACE_SUFFIXES):
        return True
    return _looks_like_json_lines(path)


def _looks_like_json_lines(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(2)
            f.seek(0)
            if head == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=f) as z:
                    head = z.read(64)
            else:
                head = f.read(64)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    text = head.lstrip()
    return text[:1] == b"{" or (text[:1] == b"[" and text[1:].lstrip()[:1] in (b"{", b""))


def read_trace(path: str, progress=None, threads: int | None = None, files=None) -> DFTracerRaw:
    """Every event of the trace at `path` (a file or a folder of one job's files; `files`: these trace files,
    `path` naming them). LogError with one line when nothing in it is a DFTracer trace; files with a few bad
    lines, cut off or with events of unknown kinds are read as far as they go and say so
    (`TraceFile.problems`)."""
    paths = sorted(files) if files is not None else trace_files(str(path))
    if not paths:
        raise LogError("no DFTracer trace file (.pfw, .pfw.gz) in this folder", str(path))
    if not os.path.exists(paths[0]):
        raise LogError("no such file or folder", str(path))
    for p in paths:
        refuse_special(p, "a DFTracer trace file")
        if not os.access(p, os.R_OK):
            raise LogError("cannot read this file (permission denied)", p)
    got = _native.read_dftracer(paths, threads or workers(), progress)
    files = []
    for p, f in zip(paths, got["files"]):
        if f["error"] and f["error"].startswith("cannot open"):
            raise LogError(f["error"], p)
        files.append(TraceFile(p, f["gzip"], f["lines"], f["bad_lines"], f["first_bad"], dict(f["unknown"]), f["cut"],
                               f["error"], f["events"], frozenset(f["pids"])))
    _refuse_garbage(str(path), files)
    internal = [(proc, ts, name, _args(args)) for proc, ts, name, args in got["internal"]]
    procs = {k: np.array([row[i] for row in got["procs"]], dtype=np.int64)
             for i, k in enumerate(("pid", "host", "events", "first", "last", "max_id", "with_id", "file"))}
    aggregated, inherited = _own_records(
        [(proc, tid, ts, cat, name, _args(args)) for proc, tid, ts, cat, name, args in got.get("aggregated", ())],
        procs["pid"], internal)
    procs["host"] = np.where(procs["host"] == NO_STRING, -1, procs["host"])
    return DFTracerRaw(str(path), files, got["strings"], got["io"], got["spans"], procs, got["meta"], internal,
                       aggregated, inherited, got["t0"], got["ticks"])


def _own_records(records: list, pids: np.ndarray, internal: list) -> tuple:
    """(the aggregated records, how many were dropped): a process forked without exec starts with a copy of
    its parent's aggregation state, and DFTracer 2.2 writes those records again in the child's file under the
    child's pid (with the parent's thread ids); a child's record equal to one of its parent's (interval,
    thread, category, name, sums) is that copy, not the child's I/O."""
    if not records:
        return records, 0
    ppid = {int(pids[proc]): a.get("ppid") for proc, _, name, a in internal if name == "start"}

    def key(rec):
        _, tid, ts, cat, name, args = rec
        return tid, ts, cat, name, json.dumps({k: v for k, v in args.items() if k != "hhash"}, sort_keys=True)

    by_pid = {}
    for rec in records:
        by_pid.setdefault(int(pids[rec[0]]), set()).add(key(rec))
    own = [rec for rec in records if key(rec) not in by_pid.get(ppid.get(int(pids[rec[0]])), ())]
    return own, len(records) - len(own)


def _args(text: str) -> dict:
    """An event's arguments (JSON text) as a dict; {} when they are none or not an object."""
    try:
        parsed = json.loads(text) if text else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _refuse_garbage(path: str, files: list) -> None:
    """A LogError (one line) when no file holds a readable event: garbage (its first bad line named), a file
    cut before its first event, or only empty files. A trace with some readable events is read; what its other
    files lost is said by `TraceFile.problems`."""
    if any(f.lines > f.bad_lines for f in files):
        return
    junk = next((f for f in files if f.bad_lines), None)
    if junk is not None:
        line, text = junk.first_bad or (1, "")
        raise LogError(f"not a DFTracer trace: line {line} is not a DFTracer event ({shown(text)!r})", junk.path)
    lost = next((f for f in files if f.error or f.cut), None)
    if lost is not None:
        raise LogError(f"no complete event in this trace: {(lost.problems() or ['cut'])[0]}", lost.path)
    raise LogError("no event in this trace (its files are empty)", path)


def file_positions(group, key, start, kind, nbytes, offset, ret, whence) -> tuple:
    """(offset, source, seq) of every call: where each read or write was in its file, followed per (group,
    key) through the calls in start order (see native/src/dftracer.rs `positions`), and each call's place
    among its group's in that order."""
    return _native.dftracer_positions(group, key, start, kind, nbytes, offset, ret, whence)


def span_nesting(group, start, end) -> tuple:
    """(parent row or -1, depth) of every span: the span that encloses it in its group (a thread), by time."""
    return _native.dftracer_nest(group, start, end)
