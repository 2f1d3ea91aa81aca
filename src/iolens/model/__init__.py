"""The model: a trace as plain columnar tables (polars) under one contract (contract.py), built lazily from the
reader's records: a Darshan log (`Log`), a Recorder trace folder (`RecorderTrace`)."""
from ..reader.recorder import is_recorder_trace
from .contract import KINDS, TABLES, LogBase, Provenance, TraceLog
from .log import Log, read_darshan
from .recorder import RecorderTrace, read_recorder

__all__ = ["KINDS", "TABLES", "Log", "LogBase", "Provenance", "RecorderTrace", "TraceLog", "read"]


def read(path: str, progress=None) -> TraceLog:
    """Read a Darshan log, or a Recorder trace folder (told by content; a `RecorderTrace`, same tables plus
    `calls`). Raises `iolens.LogError` with a one-line reason if it cannot."""
    if is_recorder_trace(str(path)):
        return read_recorder(str(path), progress)
    return read_darshan(str(path), progress)
