"""A Darshan log as the reader leaves it: plain records and arrays (`RawLog`), one `ModuleInfo` per module."""
from __future__ import annotations

from dataclasses import dataclass, field

from .header import Header
from .job import JobRecord
from .lustre import LustreRecords


@dataclass
class ModuleInfo:
    id: int
    name: str
    version: int
    partial: bool
    compressed_bytes: int
    supported: bool
    records: int = 0
    note: str = ""
    # a module iolens does not model (`supported` False): what it holds, as far as iolens can tell
    # (reader/skipped.py: kind, records, reads, writes, bytes_read, bytes_written, io_time)
    skipped: dict | None = None


@dataclass
class RawLog:
    path: str
    header: Header
    job: JobRecord
    names: dict
    modules: list = field(default_factory=list)
    counters: dict = field(default_factory=dict)  # module -> CounterRecords
    dxt: dict = field(default_factory=dict)  # module -> DxtRecords
    lustre: LustreRecords = field(default_factory=LustreRecords)
    heatmap: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    recovered: bool = False  # an unfinished log (no header): every value read by reader/recover.py
    missing: list = field(default_factory=list)  # what an unfinished log lacks, named
