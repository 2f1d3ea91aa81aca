"""DXT_POSIX / DXT_MPIIO: per (rank, file) records, each a header then its write and read segments.

The records are walked natively while their region is inflated (native/src/dxt.rs): segments go
straight into their final columns. Here: which layout each module version has, and the result's shape.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import LogError

# module -> version -> (segment size, offsets recorded)
SEGMENT_LAYOUT = {
    "DXT_POSIX": {1: (32, True), 2: (40, True)},
    "DXT_MPIIO": {1: (32, False), 2: (32, True), 3: (40, True)},
}


@dataclass
class DxtRecords:
    module: str
    # one entry per DXT record
    ids: np.ndarray
    ranks: np.ndarray
    hostnames: list
    write_counts: np.ndarray
    read_counts: np.ndarray
    # the segments, records in order, writes before reads inside a record, as consecutive chunks:
    # [{"offset", "length", "start", "end"[, "pthread_id"] -> array}]
    chunks: list = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(len(c["offset"]) for c in self.chunks)

    def column(self, name: str) -> np.ndarray:
        """One segment field as a single array (a copy when there are several chunks)."""
        parts = [c[name] for c in self.chunks]
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.empty(0)


def layout(module: str, version: int, byte_order: str) -> tuple:
    """What the native walker needs to know of a DXT region: (module, segment size, big endian,
    offsets recorded)."""
    found = SEGMENT_LAYOUT[module].get(version)
    if found is None:
        raise LogError(f"{module} module version {version} is not one iolens knows")
    seg_size, has_offsets = found
    return module, seg_size, byte_order == ">", has_offsets


def records(module: str, columns: dict) -> DxtRecords:
    """DxtRecords from the native walker's columns (segment chunks as they are: one per piece of the
    region walked in parallel)."""
    return DxtRecords(module, columns["ids"], columns["ranks"], _hostnames(columns["hostnames"]),
                      columns["write_counts"], columns["read_counts"], columns["chunks"])


def _hostnames(raw: bytes) -> list:
    """64-byte NUL-padded names, one per record; a many-rank log has few distinct hosts."""
    slots = np.frombuffer(raw, dtype="S64")
    unique, index = np.unique(slots, return_inverse=True)
    names = [name.split(b"\0", 1)[0].decode("utf-8", "replace") for name in unique.tolist()]
    return [names[i] for i in index.tolist()]
