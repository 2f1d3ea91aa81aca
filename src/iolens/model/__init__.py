"""The model: a trace as plain columnar tables (polars) under one contract (contract.py), built lazily from the
reader's records: a Darshan log (`Log`), a Recorder trace folder (`RecorderTrace`), a DFTracer trace
(`DFTracerTrace`: a `.pfw`/`.pfw.gz` file or a folder of one job's per-process files)."""
from ..reader.dftracer import is_dftracer_trace
from ..reader.recorder import is_recorder_trace
from .contract import KINDS, TABLES, LogBase, Provenance, TraceLog
from .dftracer import DFTracerTrace, read_dftracer
from .log import Log, read_darshan
from .recorder import RecorderTrace, read_recorder

__all__ = ["KINDS", "TABLES", "DFTracerTrace", "Log", "LogBase", "Provenance", "RecorderTrace", "TraceLog", "read"]


def read(path: str, progress=None) -> TraceLog:
    """Read a Darshan log, a Recorder trace folder or a DFTracer trace, told by content (a `RecorderTrace` or a
    `DFTracerTrace`: the same tables plus their own). Raises `iolens.LogError` with a one-line reason if it
    cannot."""
    if is_recorder_trace(str(path)):
        return read_recorder(str(path), progress)
    if is_dftracer_trace(str(path)):
        return read_dftracer(str(path), progress)
    return read_darshan(str(path), progress)
