"""The Log contract: what every trace source gives the analysis and the views.

A Darshan log (`model.log.Log`), a Recorder trace (`model.recorder.RecorderTrace`) and the logs of one job
merged (`jobs.merged.JobLog`) all satisfy `TraceLog`, so that the measures, the diagnosis and the views read any
of them alike and never ask which kind they hold. A new source is one reader (its format, under `reader/`) plus
an adapter: a class here in `model/` deriving from `LogBase` that fills the tables below (docs/sources.md).

The tables are those `iolens export` writes (columns in the README):

    job          dict: the run's facts (exe, nprocs, start_time, end_time, run_time, modules, partial, ...)
    files        file_id, name, mount, fs_type
    counters     {module: table}: file_id, rank, then Darshan's counters of that module
    dxt_records  module, file_id, rank, hostname, write_count, read_count
    segments     module, file_id, rank, hostname, op, offset, length, start, end (+ osts, pthread_id)
    lustre       file_id, rank, component, stripe_size, ..., osts
    heatmap      module, rank, bin, bin_width, start, write_bytes, read_bytes
    processes    one row per rank: rank, label, host, pid, step, role, log (null where unknown)

plus the tables only some sources have, by name (`extra_tables()`: a Recorder trace's `calls`, a job's `steps`,
a DFTracer trace's `calls` and `spans`); `tables()` lists them all, so that SQL, export and an agent can name
every table. Where a source's data means something else than Darshan's, a flag says so (`partial_cause`,
`consistency_model`), never a test of `kind`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Optional, Protocol, runtime_checkable

import polars as pl

from ..errors import printable

KINDS = ("darshan", "recorder", "job", "dftracer")
PARTIAL_CAUSES = ("memory", "damage")  # what a module flagged partial lost its records to (`partial_cause`)
# the core tables every log has (empty where the source records none), in export's order
TABLES = ("files", "counters", "dxt_records", "segments", "lustre", "heatmap")
PROCESS_SCHEMA = {"rank": pl.Int64, "label": pl.String, "host": pl.String, "pid": pl.Int64, "step": pl.Int64,
                  "role": pl.String, "log": pl.String}


@dataclass(frozen=True)
class Provenance:
    """Where a log's data came from.

    paths: the files (or trace folder) read, in rank order.
    processes: for a log assembled from several processes' logs (a job), one dict per process in rank order:
        rank (its first rank here), ranks (how many), step, exe, pid, role, log, recovered, offset (its clock's
        shift, s), step_rank (its first rank's MPI rank in its step; None outside an MPI launch). Empty for one
        trace, whose ranks are its own: the views then name rows and findings by rank.
    job_id: the batch job id the processes share (None: unknown, or grouped by time)."""
    paths: tuple
    processes: tuple = ()
    job_id: Optional[int] = None


@runtime_checkable
class TraceLog(Protocol):
    """What the analysis and the views read of a log, whatever its source."""

    kind: str  # one of KINDS: for provenance and display only, never to choose what to compute
    path: str
    modules: list  # reader.log.ModuleInfo per module (name, records, partial, supported, note)
    notes: list  # what the reader could not read or had to guess, one line each
    partial_cause: str  # one of PARTIAL_CAUSES: why a module is flagged partial
    consistency_model: bool  # its `calls` order the ranks: conflicts are judged per consistency model

    @property
    def job(self) -> dict: ...
    @property
    def files(self) -> pl.DataFrame: ...
    @property
    def counters(self) -> dict: ...
    @property
    def dxt_records(self) -> pl.DataFrame: ...
    @property
    def segments(self) -> pl.DataFrame: ...
    @property
    def lustre(self) -> pl.DataFrame: ...
    @property
    def heatmap(self) -> pl.DataFrame: ...
    @property
    def has_dxt(self) -> bool: ...

    @property
    def partial_modules(self) -> tuple: ...
    @property
    def provenance(self) -> Provenance: ...
    @property
    def processes(self) -> pl.DataFrame: ...
    @property
    def ranks_noun(self) -> str: ...
    @property
    def reader_records(self): ...
    @property
    def steps(self) -> list: ...

    def module(self, name: str): ...
    def is_partial(self, name: str) -> bool: ...
    def file_names(self) -> dict: ...
    def label(self, rank: int) -> str: ...
    def labels(self, ranks) -> list: ...
    def row_label(self, rank: int) -> str: ...
    def process_of(self, rank: int): ...
    def step_log(self, step: int) -> "TraceLog": ...
    def extra_tables(self) -> dict: ...
    def tables(self) -> dict: ...


class LogBase:
    """What the sources share: modules and partial flags, rank labels from `provenance.processes`, steps, and the
    table listing. An adapter sets `kind`, `path`, `modules`, `notes` and defines the tables; it overrides
    `extra_tables` for tables of its own and `reader_records` when its tables are the reader's arrays as
    they are (the measures' fast path, `model.log.reader_arrays`)."""

    kind = "unknown"  # each adapter names its source (KINDS)
    # Why a module is flagged partial: "memory", Darshan's runtime ran out of record memory (the files opened
    # after are missing: more memory brings them back); "damage", the trace's files were cut, corrupt or hold
    # lines that are not events (what they lost is gone). The findings and views word it and advise from this.
    partial_cause = "memory"
    # True when the `calls` extra table holds every call of every rank, the MPI collectives that order ranks
    # included (a Recorder trace): conflicting pairs are then classified under each file-system consistency
    # model (analysis/consistency.py). A trace whose calls are I/O only cannot order its processes.
    consistency_model = False

    # --- modules, what is partial --------------------------------------------------------------
    def module(self, name: str):
        return next((m for m in self.modules if m.name == name), None)

    def is_partial(self, name: str) -> bool:
        m = self.module(name)
        return bool(m and m.partial)

    @property
    def partial_modules(self) -> tuple:
        """The modules whose records the source could not hold in full (Darshan ran out of memory)."""
        return tuple(m.name for m in self.modules if m.partial)

    # --- where it came from ---------------------------------------------------------------------
    @property
    def provenance(self) -> Provenance:
        return Provenance((printable(str(self.path)),))

    @property
    def reader_records(self):
        """The reader's records when the counter and DXT record tables are made from them as they are: the
        measures may read those arrays instead of the tables. None: read the tables."""
        return None

    # --- ranks and processes --------------------------------------------------------------------
    def process_of(self, rank: int):
        """The `provenance.processes` entry holding `rank`, or None (one trace: its ranks are its own)."""
        return next((p for p in self.provenance.processes if p["rank"] <= rank < p["rank"] + p["ranks"]), None)

    def label(self, rank: int) -> str:
        """A rank as a finding's text names it: `rank 3` (an MPI rank, numbered inside its step), or the role
        and pid of a process outside an MPI launch (`worker pid 3688`), the row the user finds in the report."""
        p = self.process_of(rank)
        if p is None or p["pid"] is None:
            return f"rank {rank}"
        if p["step_rank"] is not None:
            return f"rank {p['step_rank'] + rank - p['rank']}"
        return f"{p['role']} pid {p['pid']}"

    def labels(self, ranks) -> list:
        return [self.label(int(r)) for r in ranks]

    @property
    def ranks_noun(self) -> str:
        """`ranks`, or `processes` when none of the log's processes is an MPI rank (a parent and its workers)."""
        procs = self.provenance.processes
        return "processes" if procs and all(p["step_rank"] is None for p in procs) else "ranks"

    def row_label(self, rank: int) -> str:
        """What the report's timeline calls the row of a rank: its number for one trace; `step·rN` for rank N
        of an MPI launch and `step·pid` for any other process of a job (views/static/app.js: rowLabel)."""
        p = self.process_of(rank)
        if p is None:
            return str(rank)
        if p["step_rank"] is not None:
            return f"{p['step']}·r{p['step_rank'] + rank - p['rank']}"
        return f"{p['step']}·{p['pid'] if p['pid'] is not None else rank}"

    @cached_property
    def processes(self) -> pl.DataFrame:
        """One row per rank: rank, label, host, pid, step, role, log (null where the source does not say)."""
        n = self.nranks
        hosts = self.rank_hosts()
        pid = self.pid
        return pl.DataFrame({"rank": list(range(n)), "label": self.labels(range(n)),
                             "host": [hosts.get(r) for r in range(n)], "pid": [pid] * n, "step": [0] * n,
                             "role": [None] * n, "log": [printable(str(self.path))] * n}, schema=PROCESS_SCHEMA)

    @property
    def pid(self):
        """The process id of a one-process trace when the source records it (None otherwise)."""
        return None

    @property
    def nranks(self) -> int:
        return int(self.job["nprocs"] or 0)

    def rank_hosts(self) -> dict:
        """rank -> host name, from the DXT records (empty where the source records no host)."""
        recs = self.dxt_records
        if recs.is_empty():
            return {}
        first = recs.filter(pl.col("hostname").is_not_null() & (pl.col("hostname") != "")).group_by(
            "rank").agg(pl.col("hostname").first())
        return dict(zip(first["rank"].to_list(), first["hostname"].to_list()))

    # --- steps ----------------------------------------------------------------------------------
    @property
    def steps(self) -> list:
        """The steps whose processes ran together (a job's, in start order); one step for one trace."""
        return [0]

    def step_log(self, step: int):
        """The log of one step's processes (one trace: itself)."""
        if step not in self.steps:
            raise KeyError(step)
        return self

    # --- every table by name --------------------------------------------------------------------
    def extra_tables(self) -> dict:
        """name -> table: the tables this source has beyond the core ones (Recorder's `calls`, a job's
        `steps`)."""
        return {}

    def tables(self) -> dict:
        """name -> table, every table of the log under the names `iolens export` writes (counters_<MODULE>),
        `processes` and the extra tables included."""
        out = {"files": self.files}
        out.update({f"counters_{module}": df for module, df in self.counters.items()})
        out.update(dxt_records=self.dxt_records, segments=self.segments, lustre=self.lustre, heatmap=self.heatmap,
                   processes=self.processes)
        out.update(self.extra_tables())
        return out
