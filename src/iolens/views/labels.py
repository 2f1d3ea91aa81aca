"""What a label names, by the log's source (`kind`, docs/sources.md): a Recorder or DFTracer trace's reads and
writes fill the contract's `DXT_POSIX`/`DXT_MPIIO` tables, but they are that tracer's calls, not Darshan's DXT
module, and the pages and the terminal say so."""
from __future__ import annotations

from ..analysis.diagnosis.insight import SOURCES as EVIDENCE_SOURCES  # an insight's `source`: the --json enum

TRACERS = {"recorder": "Recorder", "dftracer": "DFTracer"}  # a Darshan log and a job of them: Darshan's names
LAYER_OF_MODULE = {"DXT_POSIX": "POSIX", "DXT_MPIIO": "MPI-IO"}


def tracer(kind: str | None) -> str | None:
    """The tracer of a log that is not Darshan's (`Recorder`, `DFTracer`), else None."""
    return TRACERS.get(kind or "")


def trace_module(module: str, kind: str | None) -> str:
    """A traced module as a person reads it: `DXT_POSIX` for a Darshan log, `POSIX calls (DFTracer)` for a
    DFTracer trace."""
    name = tracer(kind)
    if name is None:
        return module
    return f"{LAYER_OF_MODULE.get(module, module)} calls ({name})"


def evidence_source(source: str, kind: str | None) -> str:
    """A finding's `source` (the --json enum: `dxt`, `counters`, `spans`) in words for the log it was found on;
    a Darshan log keeps the enum's own word."""
    name = tracer(kind)
    if name is None:
        return source
    if source == "dxt":
        return f"calls of the {name} trace"
    if source == "counters":
        return f"counters computed from the {name} trace's calls"
    if source == "spans":
        return f"spans of the {name} trace"
    return source
