"""`DFTracerTrace`: a DFTracer trace (a file, or a folder of one job's per-process files) under the Log contract
(model/contract.py): the tables of a Darshan `Log` (job, files, counters, segments, dxt_records, ...), its own
`processes` (which rank is which process: main, workers, helpers), and the extra tables `calls` (every
POSIX/STDIO call) and `spans` (the application's events above its I/O)."""
from __future__ import annotations

import os
from functools import cached_property

import numpy as np
import polars as pl

from ...reader.dftracer import COUNTER_PHASES, NA, NO_STRING, DFTracerRaw, read_trace
from ...reader.log import ModuleInfo
from ..call_trace import CallTraceLog
from ..contract import Provenance
from .counters import counters_table
from .tables import Layout, aggregated_table, calls_table, io_frame, process_table, segments_table, spans_table

__all__ = ["DFTracerTrace", "read_dftracer"]

PARTIAL_NOTE = "a trace file was cut or holds lines that are not events (see the notes)"


def read_dftracer(path: str, progress=None) -> "DFTracerTrace":
    return DFTracerTrace(read_trace(str(path), progress))


class DFTracerTrace(CallTraceLog):
    """A DFTracer trace under the Log contract. Its processes are not MPI ranks (a main process and its data
    loader's workers, or processes DFTracer saw apart): `provenance.processes` says which rank is which, so
    that the findings name them (`worker pid 4723`). `calls` and `spans` are its own (extra tables)."""

    kind = "dftracer"
    # a partial module lost events to damaged trace files (cut, corrupt, stray lines), not to a full buffer
    partial_cause = "damage"

    def __init__(self, raw: DFTracerRaw):
        self.raw = raw
        self.path = raw.path
        self.layout = Layout(raw)
        self.notes = self._notes()

    # --- processes ---------------------------------------------------------------------------
    @cached_property
    def processes(self) -> pl.DataFrame:
        """One row per traced process: the Log contract's rank, label ('main pid 4722', 'worker pid 4723'),
        host, pid, step (0: a trace is one step), role (main / worker / helper), log (its trace file); then
        ppid, command, start, end (seconds), events in the trace, lost_events (numbered by DFTracer but not in
        the trace)."""
        return process_table(self.layout)

    @cached_property
    def provenance(self) -> Provenance:
        """The trace files read; one entry per process (one rank each, none an MPI rank: no `step_rank`)."""
        procs = self.processes.sort("rank")
        commands = [c for c in procs.filter(pl.col("role") == "main")["command"].to_list() if c]
        exe = os.path.basename(commands[0].split()[0]) if commands and commands[0].split() else ""
        return Provenance(tuple(f.path for f in self.raw.files) or (str(self.path),), tuple(
            {"rank": p["rank"], "ranks": 1, "step": p["step"], "exe": exe, "pid": p["pid"], "role": p["role"],
             "log": p["log"], "recovered": False, "offset": 0.0, "step_rank": None}
            for p in procs.iter_rows(named=True)))

    @cached_property
    def _labels(self) -> dict:
        return dict(self.processes.select("rank", "label").iter_rows())

    def label(self, rank: int) -> str:
        """`main pid 4722`, `worker pid 4723` (`@host` added when the trace spans several hosts)."""
        return self._labels.get(int(rank), f"rank {rank}")

    @property
    def nranks(self) -> int:
        return self.processes.height

    def rank_hosts(self) -> dict:
        return {r: h for r, h in self.processes.select("rank", "host").iter_rows() if h}

    def extra_tables(self) -> dict:
        out = {"calls": self.calls, "spans": self.spans}
        if self.raw.aggregated:  # DFTracer's aggregation mode: its summed records
            out["aggregated"] = self.aggregated
        return out

    # --- calls, spans --------------------------------------------------------------------------
    @cached_property
    def _columns(self):
        return io_frame(self.layout)

    @property
    def _io(self) -> pl.DataFrame:
        return self._columns.frame

    @cached_property
    def calls(self) -> pl.DataFrame:
        """One row per POSIX/STDIO call: rank, tid, seq (its order in the rank), layer, func, file_id, path,
        start, end, ret, bytes (moved by a read or write), offset and offset_source (call / followed: how the
        offset is known; not opened / open twice / append / seek end: why it is not), whence, fd."""
        return calls_table(self._columns)

    @cached_property
    def spans(self) -> pl.DataFrame:
        """One row per application event: span_id, rank, tid, cat, name, start, end, epoch, step, parent
        (the enclosing span's span_id in the same thread), depth, args (its other arguments, JSON)."""
        return spans_table(self.layout)

    @cached_property
    def aggregated(self) -> pl.DataFrame:
        """One row per aggregated record (DFTracer's aggregation mode): rank, tid, cat, name, start, count
        (events summed), time (their summed duration, s), bytes (reads and writes), path (when named)."""
        return aggregated_table(self.layout)

    # --- job ---------------------------------------------------------------------------------
    @cached_property
    def job(self) -> dict:
        procs = self.processes
        run_time = float(procs["end"].max() or 0.0) if procs.height else 0.0
        start = self.layout.t0 / self.layout.ticks
        main = procs.filter(pl.col("role") == "main")
        versions = [v for v in self.layout.processes["version"].to_list() if v]
        version = _version(versions[0]) if versions else ""
        gz = {f.gzip for f in self.raw.files if f.lines}
        return {
            "log_version": f"dftracer {version}".strip(),
            "lib_version": version,
            "byte_order": "little",
            "compression": "gzip" if gz == {True} else "none" if gz == {False} else "mixed" if gz else "none",
            "exe": (main["command"][0] or "") if main.height else "",
            "uid": None,
            "jobid": None,
            "nprocs": procs.height,
            "start_time": start,
            "end_time": start + run_time,
            "run_time": run_time,
            "metadata": {"dftracer_version": version, "ticks_per_second": self.layout.ticks,
                         "trace_files": len(self.raw.files),
                         "hosts": sorted({h for h in procs["host"].to_list() if h})},
            "mounts": [],
            "modules": [{"name": m.name, "version": m.version, "partial": m.partial, "records": m.records,
                         "supported": m.supported, "note": m.note} for m in self.modules],
            "partial": self.partial,
            "notes": self.notes,
            "format": "dftracer",
            "calls": len(self.raw.io.get("start", ())),
            "spans": len(self.raw.spans.get("start", ())),
            "lost_events": int(procs["lost_events"].sum() or 0),
        }

    @property
    def partial(self) -> bool:
        """Some trace file was cut, held lines that are no event, or events of kinds not read; or the calls
        are not whole events: summed (aggregation mode) or without their arguments (no metadata)."""
        return (any(f.partial and not self._left_unfinished(f) for f in self.raw.files) or bool(self.raw.aggregated)
                or self._bare_calls)

    def _left_unfinished(self, f) -> bool:
        """A `-preload` trace file that only ends early (a gzip stream without its end, a last line cut) while
        the same process's `-app` file is in the trace: DFTracer's preload library flushed its log (a small
        DFTRACER_WRITE_BUFFER_SIZE) and abandoned it unfinished when the Python API started the `-app` one. Not
        damage: the job's own events are in the `-app` file."""
        name = os.path.basename(f.path)
        if "-preload.pfw" not in name or f.bad_lines or not (f.cut or (f.error and "ends early" in f.error)):
            return False
        if any(ph not in COUNTER_PHASES for ph in f.unknown):
            return False
        app = name.split("-preload.pfw")[0] + "-app.pfw"
        return any(os.path.basename(g.path).startswith(app) for g in self.raw.files)

    @cached_property
    def _bare_calls(self) -> bool:
        """The calls carry no arguments (DFTRACER_INC_METADATA=0): no file, return value nor size."""
        io = self.raw.io
        if not len(io.get("start", ())):
            return False
        return bool((io["file"] == NO_STRING).all() and (io["ret"] == NA).all())

    def _notes(self) -> list:
        out = []
        for f in self.raw.files:
            if self._left_unfinished(f):
                out.append(f"{os.path.basename(f.path)}: the preload library's log, left unfinished by DFTracer when "
                           f"the Python API started the process's own (its -app file); its whole events are read")
                continue
            for problem in f.problems():
                out.append(f"{os.path.basename(f.path)}: {problem}; its other events are read")
        out += self._config_notes()
        lost = self.layout.processes.sort("rank").filter(pl.col("lost_events") > 0)
        if lost.height:
            each = ", ".join(f"pid {pid}: {n:,}" for pid, n in lost.select("pid", "lost_events").iter_rows())
            out.append(f"{int(lost['lost_events'].sum()):,} events that DFTracer numbered are missing from the trace "
                       f"({each}): lost by the tracer (e.g. its preload log, dropped when the Python API starts its "
                       f"own) or with a cut file; their I/O is not counted")
        files = self.raw.io.get("file", np.zeros(0, dtype=np.int64))
        used = np.zeros(len(self.raw.strings) + 1, dtype=bool)
        used[np.minimum(files, len(self.raw.strings))] = True
        missing = {self.raw.strings[c] for c in np.flatnonzero(used[:-1]).tolist()} - set(self.layout.files)
        if missing:
            out.append(f"{len(missing)} file hash(es) have no FH metadata event naming them (DFTRACER_INC_METADATA=1 "
                       f"writes them): shown as <file HASH>")
        return out

    def _config_notes(self) -> list:
        """What the way DFTracer ran leaves out of the trace: summed records, calls without arguments, layers it
        did not trace (its end event's `cfg`)."""
        out = []
        if self.raw.aggregated:
            n = len(self.raw.aggregated)
            out.append(f"{n:,} aggregated record(s) (DFTracer's aggregation mode, DFTRACER_ENABLE_AGGREGATION=1): "
                       f"calls and spans summed per process, thread, function and interval, in the `aggregated` "
                       f"table; they are not single calls (no offsets, and no files unless named), so the calls, "
                       f"segments, counters and diagnosis do not hold them")
            if self.raw.inherited:
                out.append(f"{self.raw.inherited:,} aggregated record(s) that forked processes repeated from their "
                           f"parent (DFTracer copies its aggregation state into a child forked without exec) are "
                           f"not counted twice")
        if self._bare_calls:
            out.append("the calls carry no arguments (DFTracer ran without DFTRACER_INC_METADATA=1): which file "
                       "each names and the bytes it moved are not in the trace; calls are counted and timed only")
        procs = self.layout.processes
        if procs.height > 1 and procs["ppid"].null_count() == procs.height:
            out.append("which process started which is not in the trace (its start events name no parent: DFTracer "
                       "without DFTRACER_INC_METADATA=1): every process is shown as a main process; the training "
                       "loop takes the processes that compute as its own and the others as its workers")
        off = set()
        for _, _, name, args in self.raw.internal:
            cfg = args.get("cfg") if name == "end" else None
            if isinstance(cfg, dict):
                off |= {layer for layer in ("io", "posix", "stdio") if cfg.get(layer) in (0, False, "0")}
        if off:
            named = "I/O (DFTRACER_DISABLE_IO=1)" if "io" in off else " and ".join(
                f"{layer.upper()} (DFTRACER_DISABLE_{layer.upper()}=1)" for layer in sorted(off))
            out.append(f"DFTracer did not trace {named}: those calls are not in the trace")
        return out

    @cached_property
    def modules(self) -> list:
        out = []
        for k, name in enumerate(("POSIX", "STDIO")):
            table = self.counters.get(name)
            if table is not None:
                out.append(ModuleInfo(k, name, 0, self.partial, 0, True, table.height,
                                      PARTIAL_NOTE if self.partial else "computed from DFTracer calls"))
        n = self.dxt_records.height
        if n:
            out.append(ModuleInfo(10, "DXT_POSIX", 0, self.partial, 0, True, n,
                                  PARTIAL_NOTE if self.partial else "DFTracer reads and writes"))
        return out

    # --- files -------------------------------------------------------------------------------
    @cached_property
    def files(self) -> pl.DataFrame:
        return self._columns.files.with_columns(mount=pl.lit(""), fs_type=pl.lit(""))

    def file_names(self) -> dict:
        return dict(self.files.select("file_id", "name").iter_rows())

    # --- counters, segments -------------------------------------------------------------------
    @cached_property
    def counters(self) -> dict:
        out = {}
        for module in ("POSIX", "STDIO"):
            table = counters_table(self._io, module)
            if table is not None:
                out[module] = table
        return out

    @cached_property
    def segments(self) -> pl.DataFrame:
        return segments_table(self._columns, self.layout)


def _version(v) -> str:
    """DFTracer's start event says 20003 for 2.0.3 (DFTracer 2), 100008 for 1.0.8 (DFTracer 1.0.x:
    MAJOR * 100000 + MINOR * 100 + PATCH, dftracer_config.hpp.in at v1.0.8)."""
    try:
        n = int(v)
    except (TypeError, ValueError):
        return str(v)
    if n >= 100000:
        return f"{n // 100000}.{n // 100 % 1000}.{n % 100}"
    return f"{n // 10000}.{n // 100 % 100}.{n % 100}" if n >= 10000 else str(n)
