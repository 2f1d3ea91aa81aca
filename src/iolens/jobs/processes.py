"""One log as a process of a job: who it was (job id, pid, command, times) and its POSIX totals.

Grouping needs only the header and the job region; the totals and the files read and written (for the flows
between steps) need the POSIX name records and counters, read only when asked for."""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..errors import LogError
from ..reader.counter_names import COUNTER_NAMES
from ..reader.log import read_job_only, read_raw
from ..reader.recover import PARTIAL_SUFFIX, parse_log_name

COUNTED_MODULES = ("POSIX", "STDIO", "MPI-IO")
LOG_SUFFIXES = (".darshan", PARTIAL_SUFFIX)


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

    @property
    def name(self) -> str:
        return Path(self.path).name


def expand(paths) -> list:
    """Logs from paths, folders (searched recursively) and globs, each once, in sorted order."""
    found = []
    for p in paths:
        p = str(p)
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                found += [os.path.join(root, f) for f in files if f.endswith(LOG_SUFFIXES)]
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
                   program=os.path.basename(command.split()[0]) if command.split() else "")
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


_INDEX: dict = {}


def _column_index(module: str, names) -> dict:
    if module not in _INDEX:
        _INDEX[module] = {n: i for i, n in enumerate(names)}
    return _INDEX[module]
