"""What `iolens sql` and `iolens mcp` are pointed at, opened: a Darshan log, a Recorder trace, a DFTracer trace, a
job (a folder of one job's logs), several of those, or a fleet store; each giving its tables by name, built on
first use.

A target is opened as `iolens.open` opens it (read.py) and judged as `iolens.diagnose` judges it (judge.py); its
tables are the Log contract's (`tables()`: the core ones, `processes` and the source's `extra_tables()`, such as a
Recorder trace's `calls`, a DFTracer trace's `calls` and `spans`, a job's `steps`) under the names `iolens export`
writes, plus what SQL adds (views/tables.py: `job`, `modules`, `ranks`, `insights`, ...). Nothing here asks which
kind of log it holds; the one exception is how a single Darshan log is read:

A single Darshan log is read in two steps so that a query that touches only `files`, `job`, `counters_*`,
`ranks`, ... never inflates or decodes the DXT trace: first every region but the DXT modules, then, when a
table needs the trace (segments, dxt_records, conflicts, the diagnosis), the whole log.
"""
from __future__ import annotations

import os
from functools import cached_property

import polars as pl

from ..errors import LogError
from ..fleet import store as fleet_store
from ..model import Log
from ..reader.counters import LAYOUTS
from ..reader.dftracer import is_dftracer_trace
from ..reader.log import read_raw
from ..reader.recorder import is_recorder_trace
from ..views import tables as cat
from ..views.export import conflicts_table
from .judge import diagnose, partial_titles
from .read import open as open_log

READ_WHOLE = "whole"  # Source.reads entries: what was read, in order ("light": every region but DXT's)
READ_LIGHT = "light"
WHAT = "iolens sql"  # the command a job folder's one-line errors name


def open_target(paths, progress=None) -> "Source":
    """THE adapter: `paths` (one or several logs, trace folders, job folders, or one fleet store) -> a `Source`.
    Raises LogError (one line) when a path cannot be opened; a single Darshan log is not read before a table
    needs it (the others are read when opened: their layout is what they are)."""
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
    if _darshan_file(path):
        return DarshanSource(path, progress)
    return LogSource(path, open_log(path, progress, WHAT))


def _darshan_file(path: str) -> bool:
    """A file `iolens.open` reads as one Darshan log (read.open: neither a folder nor another format's trace)."""
    return os.path.isfile(path) and not is_recorder_trace(path) and not is_dftracer_trace(path)


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
        """The whole log, as `iolens.open` gives it (a log of the Log contract)."""
        raise LogError("a fleet store has no single log: query its tables", self.label)

    def partial(self) -> list:
        """What the target holds only in part, one sentence each (`judge.partial_titles`), [] when whole."""
        return partial_titles(self._counters_log())

    def insights(self) -> list:
        """The insights as `iolens diagnose --json` lists them (default thresholds)."""
        if self._insights is None:
            self._insights = diagnose(self.log())
        return self._insights

    def _build(self, name: str) -> pl.DataFrame:
        entry = cat.describe(name)
        log = self._counters_log() if entry is not None and entry.needs == cat.LIGHT else self.log()
        return _build(name, log, self)

    def _counters_log(self):
        return self.log()


def _names_of(log, trace: bool) -> list:
    """The tables of a log (of the Log contract) by name: export's (views/export.py), then SQL's own."""
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
    if log.provenance.processes:  # which rank is which process (a job's, a DFTracer trace's main and workers)
        names.append("processes")
    names += [n for n in log.extra_tables() if n not in names]
    return names + ["ranks", "insights", "insight_metrics"]


def _build(name: str, log, source: Source) -> pl.DataFrame:
    core = {"files": "files", "dxt_records": "dxt_records", "segments": "segments", "lustre": "lustre",
            "heatmap": "heatmap", "processes": "processes"}
    if name in core:
        return getattr(log, core[name])
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
    extra = log.extra_tables()
    if name in extra:
        return extra[name]
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
            self._whole = open_log(self.path, self.progress, WHAT)
        return self._whole

    def names(self) -> list:
        light = self._counters_log()
        trace = any(m.name.startswith("DXT_") and m.compressed_bytes > 0 for m in light.modules)
        return _names_of(light, trace)


class LogSource(Source):
    """A target read whole when opened: a Recorder or DFTracer trace, or a job's logs merged into one."""

    def __init__(self, path: str, log):
        super().__init__(path)
        self._log = log

    def log(self):
        return self._log

    @cached_property
    def _names(self) -> list:
        return _names_of(self._log, self._log.has_dxt)

    def names(self) -> list:
        return self._names


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

    def partial(self) -> list:
        return [f"{s.label}: {said}" for s in self.sources for said in s.partial()]

    def insights(self) -> list:
        raise LogError("several logs: name one (this tool reads one log at a time)", self.label)


class StoreSource(Source):
    """A fleet store: its own Delta tables (jobs, errors, files, logs)."""
    kind = "store"
    store = True

    def names(self) -> list:
        return [t for t in fleet_store.TABLES if fleet_store.is_table(self.label, t)]

    def partial(self) -> list:
        return []  # a store's logs are judged when ingested (its `errors` table)

    def _build(self, name: str) -> pl.DataFrame:
        return fleet_store.read(self.label, name)
