"""What `iolens sql` and `iolens mcp` are pointed at, opened: a log, a Recorder trace, a job (a folder of one job's
logs), several of those, or a fleet store; each giving its tables by name, built on first use.

`open_target` is the one place that opens targets with today's API (iolens.read, jobs.load_job, the reader's
region selection, the diagnosis, the fleet store); SQL (views/sql.py), the CLI and the MCP server only call it and
the `Source` it returns. When the pipeline API (`iolens.open(target)`, `pipeline.diagnose`, a `tables()` of every
log kind) lands beside this module, this module is what switches to it. (It sits in the pipeline layer: it judges
logs, which no view may do.)

A single Darshan log is read in two steps so that a query that touches only `files`, `job`, `counters_*`,
`ranks`, ... never inflates or decodes the DXT trace: first every region but the DXT modules, then, when a
table needs the trace (segments, dxt_records, conflicts, the diagnosis), the whole log.
"""
from __future__ import annotations

import os
from functools import cached_property

import polars as pl

from ..analysis.compare import compare
from ..analysis.diagnosis import Thresholds, diagnose
from ..analysis.files import file_table
from ..analysis.summary import job_summary
from ..errors import LogError
from ..fleet import store as fleet_store
from ..jobs import describe, diagnose_job, find_jobs, load_job
from ..model import Log, read
from ..reader.counters import LAYOUTS
from ..reader.log import read_raw
from ..reader.recorder import is_recorder_trace
from ..views import tables as cat
from ..views.export import conflicts_table

READ_WHOLE = "whole"  # Source.reads entries: what was read, in order ("light": every region but DXT's)
READ_LIGHT = "light"


def open_target(paths, progress=None) -> "Source":
    """THE adapter: `paths` (one or several logs, Recorder trace folders, job folders, or one fleet store) ->
    a `Source`. Raises LogError (one line) when a path cannot be opened; nothing is read before a table needs it
    (a fleet store and a job folder are opened at once: their layout is what they are)."""
    paths = [str(p) for p in paths]
    if not paths:
        raise LogError("no log given")
    sources = [_open_one(p, progress) for p in paths]
    if len(sources) == 1:
        return sources[0]
    if any(isinstance(s, StoreSource) for s in sources):
        raise LogError("a fleet store is queried alone (give one store, or logs)")
    return ManySources(sources)


def _open_one(path: str, progress=None) -> "Source":
    if not os.path.exists(path):
        raise LogError("no such file or directory", path)
    if os.path.isdir(path) and any(fleet_store.is_table(path, t) for t in fleet_store.TABLES):
        return StoreSource(path)
    if os.path.isdir(path) and fleet_store.old_layout(path):
        fleet_store.check_store(path)  # raises its one line
    if is_recorder_trace(path):
        return ParsedSource(path, read(path, progress), "recorder")
    if os.path.isdir(path):
        return ParsedSource(path, load_job([path], "iolens sql"), "job")
    return DarshanSource(path, progress)


class Source:
    """Tables of one target by name: `names()` lists them (no trace decoded), `table(name)` builds one once."""
    kind = "log"
    store = False

    def __init__(self, label: str):
        self.label = label
        self._tables: dict = {}
        self._insights = None

    def names(self) -> list:
        raise NotImplementedError

    def table(self, name: str) -> pl.DataFrame | None:
        if name not in self._tables:
            if name not in self.names():
                return None
            self._tables[name] = self._build(name)
        return self._tables[name]

    def built(self) -> list:
        """The tables built so far."""
        return list(self._tables)

    # what the CLI's other subcommands print, for the MCP tools
    def log(self):
        """The whole log object (a `Log`, a job's `JobLog`, a `RecorderTrace`)."""
        raise LogError("a fleet store has no single log: query its tables", self.label)

    def insights(self) -> list:
        """The insights as `iolens diagnose --json` lists them (default thresholds)."""
        if self._insights is None:
            self._insights = diagnosis(self.log())
        return self._insights

    def summary(self) -> dict:
        return job_summary(self.log())

    def file_rows(self) -> pl.DataFrame:
        return file_table(self.log())

    def _build(self, name: str) -> pl.DataFrame:
        log = self.log() if cat.describe(name) and cat.describe(name).needs != cat.LIGHT else self._counters_log()
        return _build(name, log, self)

    def _counters_log(self):
        return self.log()


def diagnosis(log, thresholds=None) -> list:
    """`iolens diagnose --json`'s insights of a log or a job (a job's: step by step, each naming its step)."""
    th = thresholds if isinstance(thresholds, Thresholds) else Thresholds(thresholds or {})
    if hasattr(log, "processes"):
        return diagnose_job(log, lambda step_log: [i.to_dict() for i in diagnose(step_log, th)])
    return [i.to_dict() for i in diagnose(log, th)]


def compare_targets(sources: list, labels=None, baseline_runs: int = 1) -> dict:
    """`iolens compare --json` of opened targets, the first the baseline."""
    return compare(*[s.log() for s in sources], labels=labels or None, baseline_runs=baseline_runs)


def describe_jobs(paths: list) -> dict:
    """`iolens jobs --json` of logs, folders or globs (unreadable logs listed, not raised)."""
    unreadable: list = []
    return describe(find_jobs(paths, unreadable=unreadable), unreadable)


def _names_of(log, trace: bool, extra=()) -> list:
    names = ["job", "modules", "files"]
    names += [cat.counters_name(m) for m in log.counters]
    if "MPI-IO" in log.counters:
        names.append("counters_MPI-IO")  # export's file name, quoted in SQL
    if trace:
        names += ["dxt_records", "segments", "conflicts"]
    if not log.lustre.is_empty():
        names.append("lustre")
    if not log.heatmap.is_empty():
        names.append("heatmap")
    if getattr(log, "calls", None) is not None:
        names.append("calls")
    return names + ["ranks", "insights", "insight_metrics", *extra]


def _build(name: str, log, source: Source) -> pl.DataFrame:
    simple = {"files": "files", "dxt_records": "dxt_records", "segments": "segments", "lustre": "lustre",
              "heatmap": "heatmap", "calls": "calls"}
    if name in simple:
        return getattr(log, simple[name])
    if name.startswith("counters_"):
        module = next(m for m in log.counters if name in (cat.counters_name(m), f"counters_{m}"))
        return log.counters[module]
    if name == "conflicts":
        return conflicts_table(log, log.segments)
    if name == "job":
        return cat.job_table(log)
    if name == "modules":
        return cat.modules_table(log)
    if name == "ranks":
        return cat.ranks_table(log)
    if name == "insights":
        return cat.insights_table(source.insights())
    if name == "insight_metrics":
        return cat.insight_metrics_table(source.insights())
    if name == "processes":
        return cat.processes_table(log)
    if name == "steps":
        return cat.steps_table(describe([log.group])["jobs"][0]["steps"])
    raise LogError(f"no table {name!r}")


class DarshanSource(Source):
    """One Darshan log, read first without its DXT regions, then whole when a table needs the trace."""

    def __init__(self, path: str, progress=None):
        super().__init__(path)
        self.path = path
        self.progress = progress
        self.reads: list = []  # READ_LIGHT / READ_WHOLE, in the order they happened
        self._whole = None

    @cached_property
    def _light(self):
        self.reads.append(READ_LIGHT)
        return Log(read_raw(self.path, regions={"names", "LUSTRE", "HEATMAP", *LAYOUTS}))

    def _counters_log(self):
        return self._whole if self._whole is not None else self._light

    def log(self):
        if self._whole is None:
            self.reads.append(READ_WHOLE)
            self._whole = read(self.path, self.progress)
        return self._whole

    def names(self) -> list:
        light = self._counters_log()
        trace = any(m.name.startswith("DXT_") and m.compressed_bytes > 0 for m in light.modules)
        return _names_of(light, trace)


class ParsedSource(Source):
    """A log read whole at once: a Recorder trace (kind recorder) or a job folder merged into one (kind job)."""

    def __init__(self, path: str, log, kind: str):
        super().__init__(path)
        self.kind = kind
        self._log = log

    def log(self):
        return self._log

    def names(self) -> list:
        extra = ("processes", "steps") if self.kind == "job" else ()
        return _names_of(self._log, self._log.has_dxt, extra)


class ManySources(Source):
    """Several targets: each table is theirs stacked, a first column `log` naming where each row comes from."""
    kind = "logs"

    def __init__(self, sources: list):
        super().__init__(f"{len(sources)} logs")
        self.sources = sources
        self.labels = pl.Enum(list(dict.fromkeys(s.label for s in sources)))

    def names(self) -> list:
        return list(dict.fromkeys(n for s in self.sources for n in s.names()))

    def _build(self, name: str) -> pl.DataFrame:
        frames = []
        for s in self.sources:
            df = s.table(name)
            if df is None:
                continue
            log = pl.Series("log", [s.label], dtype=self.labels).new_from_index(0, df.height)
            frames.append(df.select(log, pl.all()) if "log" not in df.columns else df)
        return pl.concat(frames, how="diagonal_relaxed", rechunk=False)

    def log(self):
        raise LogError("several logs: name one (this tool reads one log at a time)", self.label)

    def insights(self) -> list:
        raise LogError("several logs: name one (this tool reads one log at a time)", self.label)


class StoreSource(Source):
    """A fleet store: its own Delta tables (jobs, errors, files, logs)."""
    kind = "store"
    store = True

    def names(self) -> list:
        return [t for t in fleet_store.TABLES if fleet_store.is_table(self.label, t)]

    def _build(self, name: str) -> pl.DataFrame:
        return fleet_store.read(self.label, name)
