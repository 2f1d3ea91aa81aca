"""One log as a process of a job: who it was (job id, pid, command, times) and its POSIX totals.

Grouping needs only the header and the job region; the totals and the files read and written (for the flows
between steps) need the POSIX name records and counters, read only when asked for.

A DFTracer trace (a folder's `.pfw`/`.pfw.gz` files) is one process per traced process (`tracer` "dftracer",
its path its trace file; its parent pid links a worker to the main process). A process both tracers saw (the
same pid over the same time) is one process: the Darshan log's, the trace's process its `twin`."""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..analysis.diagnosis.findings.truncated_trace import partial_titles
from ..errors import LogError
from ..reader.counter_names import COUNTER_NAMES
from ..model.dftracer import DFTracerTrace
from ..reader.dftracer import TRACE_SUFFIXES, read_trace
from ..reader.folders import LOG_SUFFIXES, files_in
from ..reader.log import read_job_only, read_raw
from ..reader.recover import PARTIAL_SUFFIX, parse_log_name

COUNTED_MODULES = ("POSIX", "STDIO", "MPI-IO")
TWIN_SLACK = 1.0  # seconds: the two tracers' clocks for one process (Darshan's start at the library's load)


@dataclass
class Process:
    path: str
    jobid: Optional[int]
    pid: Optional[int]  # from Darshan's file name (the job region does not hold it)
    command: str
    start: Optional[float]  # epoch seconds
    end: Optional[float]
    nprocs: int = 1
    uid: Optional[int] = None
    fork_parent: Optional[int] = None  # Darshan's `fork_parent` metadata: the pid this process was forked from
    mpi: bool = False  # it used MPI-IO, or Darshan counted more than one process in its log
    recovered: bool = False  # an unfinished log, read by reader/recover.py
    empty: bool = False  # an unfinished log with nothing in it: only its file name speaks
    program: str = ""  # the program's base name
    counted: bool = False  # the totals below were read
    reads: int = 0
    writes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    data_ops: int = 0  # reads and writes of every counted module (0: a helper, whose only I/O is loading programs)
    files_read: set = field(default_factory=set)
    files_written: set = field(default_factory=set)
    tracer: str = "darshan"  # "dftracer": a process of a DFTracer trace (`path`: its trace file)
    file_bytes: dict = field(default_factory=dict)  # file name -> [POSIX bytes read, bytes written]
    twin: Optional["Process"] = None  # the same process as DFTracer saw it (lined up by pid and time)
    parent_pid: Optional[int] = None  # its parent as a DFTracer trace says (any child: spawned or forked)
    # its parent as `group` infers it (a process Python's multiprocessing spawned: jobs/spawn.py)
    spawned_by: Optional["Process"] = field(default=None, compare=False, repr=False)
    spawn_alternatives: list = field(default_factory=list, compare=False, repr=False)  # others alive at its start
    # what its log holds only in part, as the diagnosis's TRUNCATED_TRACE titles say it (modules flagged partial:
    # Darshan out of memory; a DFTracer trace file cut or holding bad lines); an unfinished log is `recovered`
    partial: list = field(default_factory=list)

    @property
    def tie(self) -> Optional[str]:
        """How it is tied to its parent: "fork_parent" (Darshan's metadata), "trace_parent" (a DFTracer trace's
        parent pid), "spawn" (inferred: a Python multiprocessing process, by command line and time), or None."""
        if self.fork_parent is not None:
            return "fork_parent"
        if self.parent_pid is not None:
            return "trace_parent"
        return "spawn" if self.spawned_by is not None else None

    @property
    def name(self) -> str:
        return Path(self.path).name


def expand(paths, traces: bool = False) -> list:
    """Logs from paths, folders (searched recursively) and globs, each once, in sorted order; `traces`: a
    folder's DFTracer trace files too."""
    suffixes = LOG_SUFFIXES + (TRACE_SUFFIXES if traces else ())
    found = []
    for p in paths:
        p = str(p)
        if os.path.isdir(p):
            found += files_in(p, suffixes)
        elif any(ch in p for ch in "*?[") and not os.path.exists(p):
            matches = sorted(glob.glob(p, recursive=True))
            if not matches:
                raise LogError("no file matches this pattern", p)
            found += matches
        else:
            found.append(p)
    seen, out = set(), []
    for p in sorted(found):
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def read_process(path: str, counters: bool = True) -> Process:
    """The process a log describes; LogError (one line) when the log cannot be read at all."""
    name = parse_log_name(path)
    try:
        raw = read_raw(path, regions=("names",) + COUNTED_MODULES) if counters else read_job_only(path)
    except LogError as exc:
        if str(path).endswith(PARTIAL_SUFFIX) and name is not None:
            # an empty unfinished log: only its name says whose it was; it is kept, never dropped
            return Process(str(path), name.jobid, name.pid, "", None, None, empty=True, program=name.program)
        raise exc
    return process_of(path, raw, counters)


def process_of(path: str, raw, counters: bool = True) -> Process:
    """The process of a log already read (`read_raw`; with `counters`, holding the counted modules and, for
    the files read and written, the name records): a caller that reads the whole log reads it once."""
    name = parse_log_name(path)
    job = raw.job
    parent = job.metadata.get("fork_parent", "")
    command = job.exe.strip()
    proc = Process(str(path), job.jobid, name.pid if name else None, command, job.start_time, job.end_time,
                   job.nprocs, job.uid, int(parent) if parent.isdigit() else None,
                   job.nprocs > 1 or any(m.name == "MPI-IO" for m in raw.modules), raw.recovered,
                   program=os.path.basename(command.split()[0]) if command.split() else "",
                   partial=partial_titles(raw.modules))
    if counters:
        _count(proc, raw)
    return proc


def _count(proc: Process, raw) -> None:
    proc.counted = True
    for module in COUNTED_MODULES:
        recs = raw.counters.get(module)
        if recs is None or not len(recs.ids):
            continue
        counters, index = recs.counters, _column_index(module, COUNTER_NAMES[module][0])  # the few columns needed
        prefix = "MPIIO" if module == "MPI-IO" else module
        if module == "MPI-IO":
            reads = sum(counters[:, index[f"MPIIO_{k}_READS"]] for k in ("INDEP", "COLL", "SPLIT", "NB"))
            writes = sum(counters[:, index[f"MPIIO_{k}_WRITES"]] for k in ("INDEP", "COLL", "SPLIT", "NB"))
        else:
            reads, writes = counters[:, index[f"{prefix}_READS"]], counters[:, index[f"{prefix}_WRITES"]]
        proc.data_ops += int(reads.clip(0).sum() + writes.clip(0).sum())
        if module != "POSIX":
            continue
        proc.reads, proc.writes = int(reads.sum()), int(writes.sum())
        read_bytes, written = counters[:, index["POSIX_BYTES_READ"]], counters[:, index["POSIX_BYTES_WRITTEN"]]
        proc.bytes_read, proc.bytes_written = int(read_bytes.sum()), int(written.sum())
        for rec_id, r, w in zip(recs.ids.tolist(), read_bytes.tolist(), written.tolist()):
            file = raw.names.get(rec_id)
            if file and r > 0:
                proc.files_read.add(file)
            if file and w > 0:
                proc.files_written.add(file)
            if file and (r > 0 or w > 0):
                both = proc.file_bytes.setdefault(file, [0, 0])
                both[0] += max(int(r), 0)
                both[1] += max(int(w), 0)


_INDEX: dict = {}


def _column_index(module: str, names) -> dict:
    if module not in _INDEX:
        _INDEX[module] = {n: i for i, n in enumerate(names)}
    return _INDEX[module]


# --- DFTracer traces ------------------------------------------------------------------------------------
def trace_processes(label: str, files: list) -> list:
    """The processes of the DFTracer trace made of `files` (one folder's): one per traced process, its times
    in epoch seconds, its POSIX totals and files from the trace's calls, its parent pid (`parent_pid`) when
    the parent is traced too (a spawned worker's main process). LogError when nothing is readable."""
    trace = DFTracerTrace(read_trace(label, files=files))
    t0 = trace.layout.t0 / trace.layout.ticks
    procs = trace.processes.sort("rank")
    pids = set(procs["pid"].to_list())
    names = trace.file_names()
    posix, stdio = trace.counters.get("POSIX"), trace.counters.get("STDIO")
    known = [c.split()[0] for c in procs["command"].to_list() if c and c.split()]
    said = partial_titles(trace.modules, trace.partial_cause)
    damaged = {f.path for f in trace.raw.files if f.partial}
    # the damage is named on the processes whose trace files hold it (all of them when no file is to blame)
    holders = {p["rank"] for p in procs.iter_rows(named=True) if damaged & set(p["log"].split(", "))} \
        or set(procs["rank"].to_list())
    out = []
    for p in procs.iter_rows(named=True):
        command = p["command"] or ""
        # a command DFTracer lost (with its preload log) is said by another process's program, when one has it
        program = os.path.basename(command.split()[0] if command.split() else known[0] if known else "?")
        proc = Process(p["log"].split(", ")[0], None, p["pid"], command, t0 + p["start"], t0 + p["end"],
                       program=program, tracer="dftracer", counted=True,
                       parent_pid=p["ppid"] if p["ppid"] in pids and p["ppid"] != p["pid"] else None,
                       partial=said if p["rank"] in holders else [])
        _count_trace(proc, posix, stdio, p["rank"], names)
        out.append(proc)
    return out


def _count_trace(proc: Process, posix, stdio, rank: int, names: dict) -> None:
    for table, module in ((posix, "POSIX"), (stdio, "STDIO")):
        if table is None:
            continue
        mine = table.filter(table["rank"] == rank)
        reads, writes = (int(mine[f"{module}_{k}"].clip(0).sum()) for k in ("READS", "WRITES"))
        proc.data_ops += reads + writes
        if module != "POSIX":
            continue
        proc.reads, proc.writes = reads, writes
        for fid, r, w in mine.select("file_id", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN").iter_rows():
            r, w, file = max(int(r), 0), max(int(w), 0), names.get(fid)
            proc.bytes_read += r
            proc.bytes_written += w
            if file and r > 0:
                proc.files_read.add(file)
            if file and w > 0:
                proc.files_written.add(file)
            if file and (r or w):
                both = proc.file_bytes.setdefault(file, [0, 0])
                both[0] += r
                both[1] += w


def line_up(processes: list) -> list:
    """The processes with each one both tracers saw once: a DFTracer process with the pid of a Darshan log's
    process over the same time (`TWIN_SLACK`) becomes that process's `twin` (and gives it its parent, which
    Darshan records only for a fork: `parent_pid`); the others stay as they are."""
    logs: dict = {}
    for p in processes:
        if p.tracer == "darshan" and p.pid is not None and p.start is not None:
            logs.setdefault(p.pid, []).append(p)
    out = [p for p in processes if p.tracer != "dftracer"]
    pids = set(logs)
    for t in (p for p in processes if p.tracer == "dftracer"):
        twin = next((d for d in logs.get(t.pid, ()) if d.twin is None and d.start - TWIN_SLACK <= t.end
                     and t.start <= d.end + TWIN_SLACK), None)
        if twin is None:
            out.append(t)
            continue
        twin.twin = t
        if twin.fork_parent is None and t.parent_pid in pids:
            twin.parent_pid = t.parent_pid
    return out


def agreement(proc: Process) -> dict:
    """How a process's Darshan log and its DFTracer twin agree, file by file (the files both saw): {files,
    agree, differ: [{file, darshan: [read, written], dftracer: [read, written]}]}."""
    both = sorted(set(proc.file_bytes) & set(proc.twin.file_bytes))
    differ = [{"file": f, "darshan": proc.file_bytes[f], "dftracer": proc.twin.file_bytes[f]} for f in both
              if proc.file_bytes[f] != proc.twin.file_bytes[f]]
    return {"files": len(both), "agree": len(both) - len(differ), "differ": differ}
