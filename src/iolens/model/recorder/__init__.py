"""`RecorderTrace`: a Recorder trace folder as the same tables as a Darshan `Log` (job, files, counters,
segments, dxt_records, ...) plus `calls`, every call of every rank."""
from __future__ import annotations

from functools import cached_property

import polars as pl

from ...reader.log import ModuleInfo
from ...reader.recorder import RecorderRaw, read_trace
from ..call_trace import CallTraceLog
from ..darshan import DXT_MODULES
from .calls import calls_table
from .counters import counters_table
from .segments import file_id, mpiio_paths, segments_table

__all__ = ["RecorderTrace", "read_recorder"]


def read_recorder(path: str, progress=None) -> "RecorderTrace":
    return RecorderTrace(read_trace(str(path), progress))


class RecorderTrace(CallTraceLog):
    """A Recorder trace folder under the Log contract; `calls` is Recorder's own (an extra table)."""

    kind = "recorder"
    consistency_model = True  # its calls hold MPI's collectives, which order the ranks
    partial_cause = "damage"  # a rank whose files are missing: what it did is gone, not dropped for memory

    def __init__(self, raw: RecorderRaw):
        self.raw = raw
        self.path = raw.path
        self.notes = [f"Recorder did not trace {layer} calls" for layer in raw.untraced]
        if "MPI" in raw.untraced:
            # no barrier or collective in the calls: nothing orders the ranks, so conflicts are judged as on a
            # Darshan log (concurrent or ordered), not per consistency model
            self.consistency_model = False
            self.notes[raw.untraced.index("MPI")] += (" (RECORDER_MPI_TRACING=0, Recorder 2.5's default): "
                                                       "conflicts are not judged per consistency model")
        for rank, gone in raw.missing.items():
            self.notes.append(f"rank {rank}'s trace files are missing ({', '.join(gone)}): its calls are not in "
                              "the trace; the other ranks are read")

    # --- calls -------------------------------------------------------------------------------
    @cached_property
    def calls(self) -> pl.DataFrame:
        """One row per call: rank, seq (its order in the rank), func, layer, depth, start, end, args, and
        path, fd (MPI file handle), offset, count (bytes), whence, comm where the call has them."""
        return mpiio_paths(calls_table(self.raw))

    # --- job ---------------------------------------------------------------------------------
    @cached_property
    def job(self) -> dict:
        calls = self.calls
        run_time = float(calls["end"].max() or 0.0) if calls.height else 0.0
        raw = self.raw
        return {
            "log_version": f"recorder {raw.version}",
            "lib_version": raw.version,
            "byte_order": "little",
            "compression": "none",
            "exe": "",
            "uid": None,
            "jobid": None,
            "nprocs": raw.nprocs,
            "start_time": raw.start_ts,
            "end_time": raw.start_ts + run_time,
            "run_time": run_time,
            "metadata": {"recorder_version": raw.version, "time_resolution": raw.time_resolution},
            "mounts": [],
            "modules": [{"name": m.name, "version": m.version, "partial": m.partial, "records": m.records,
                         "supported": m.supported, "note": m.note} for m in self.modules],
            "partial": bool(self.raw.missing),
            "notes": self.notes,
            "format": "recorder",
            "calls": calls.height,
        }

    @cached_property
    def modules(self) -> list:
        # Recorder keeps every call: a module is partial only when a rank's files are missing from the folder
        lost = bool(self.raw.missing)
        lost_note = "a rank's trace files are missing (see the notes)"
        out = []
        for k, (name, table) in enumerate((("POSIX", self.counters.get("POSIX")),
                                           ("MPI-IO", self.counters.get("MPI-IO")))):
            if table is not None:
                out.append(ModuleInfo(k, name, 0, lost, 0, True, table.height,
                                      lost_note if lost else "computed from Recorder calls"))
        recs = self.dxt_records
        for k, name in enumerate(DXT_MODULES):
            n = recs.filter(pl.col("module") == name).height
            if n:
                out.append(ModuleInfo(10 + k, name, 0, lost, 0, True, n,
                                      lost_note if lost else "Recorder reads and writes"))
        return out

    def extra_tables(self) -> dict:
        return {"calls": self.calls}

    # --- files -------------------------------------------------------------------------------
    @cached_property
    def file_ids(self) -> dict:
        paths = self.calls["path"].drop_nulls().unique(maintain_order=True).to_list()
        return {p: file_id(p) for p in paths}

    @cached_property
    def files(self) -> pl.DataFrame:
        ids = self.file_ids
        return pl.DataFrame({"file_id": list(ids.values()), "name": list(ids), "mount": [""] * len(ids),
                             "fs_type": [""] * len(ids)},
                            schema={"file_id": pl.UInt64, "name": pl.String, "mount": pl.String,
                                    "fs_type": pl.String})

    def file_names(self) -> dict:
        return {v: k for k, v in self.file_ids.items()}

    # --- counters, segments -------------------------------------------------------------------
    @cached_property
    def counters(self) -> dict:
        out = {}
        for module in ("POSIX", "MPI-IO"):
            table = counters_table(self.calls, module, self.file_ids)
            if table is not None:
                out[module] = table
        return out

    @cached_property
    def segments(self) -> pl.DataFrame:
        return segments_table(self.calls)

