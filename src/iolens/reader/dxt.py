"""DXT_POSIX / DXT_MPIIO: per (rank, file) records, each a header then its write and read segments."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import LogError

HEADER = 104
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
    # one entry per segment, records in order, writes before reads inside a record
    offset: np.ndarray
    length: np.ndarray
    start: np.ndarray
    end: np.ndarray
    pthread_id: Optional[np.ndarray] = None


def parse_dxt(module: str, version: int, buf: bytes, bo: str) -> DxtRecords:
    layout = SEGMENT_LAYOUT[module].get(version)
    if layout is None:
        raise LogError(f"{module} module version {version} is not one iolens knows")
    seg_size, has_offsets = layout
    head = struct.Struct(bo + "Qqq64sqq")
    ids, ranks, hosts, wcs, rcs, spans = [], [], [], [], [], []
    pos, n = 0, len(buf)
    while pos < n:
        if pos + HEADER > n:
            raise LogError(f"truncated {module} record header at byte {pos} of the region")
        rec_id, rank, _shared, host, wc, rc = head.unpack_from(buf, pos)
        count = wc + rc
        if wc < 0 or rc < 0 or pos + HEADER + count * seg_size > n:
            raise LogError(f"corrupt {module} record at byte {pos}: {wc} writes + {rc} reads "
                           f"do not fit in the region")
        ids.append(rec_id)
        ranks.append(rank)
        hosts.append(host.split(b"\0", 1)[0].decode("utf-8", "replace"))
        wcs.append(wc)
        rcs.append(rc)
        spans.append((pos + HEADER, pos + HEADER + count * seg_size))
        pos += HEADER + count * seg_size
    cols = _segment_columns(buf, spans, seg_size, bo)
    if not has_offsets:
        cols["offset"][:] = -1
    return DxtRecords(
        module,
        np.array(ids, dtype=np.uint64), np.array(ranks, dtype=np.int64), hosts,
        np.array(wcs, dtype=np.int64), np.array(rcs, dtype=np.int64),
        cols["offset"], cols["length"], cols["start"], cols["end"], cols.get("pthread_id"),
    )


def _segment_columns(buf: bytes, spans: list, seg_size: int, bo: str) -> dict:
    """Copy every record's segments into native-order columns (one array per field)."""
    fields = [("offset", bo + "i8"), ("length", bo + "i8"), ("start", bo + "f8"), ("end", bo + "f8")]
    if seg_size == 40:
        # pthread_id is written in native order and never swapped by darshan-util either
        fields.append(("pthread_id", "<u8"))
    dtype = np.dtype(fields)
    counts = np.array([(b - a) // seg_size for a, b in spans], dtype=np.int64)
    total = int(counts.sum())
    if len(spans) > 64 and total < 2048 * len(spans) and len(buf) % 8 == 0:
        return _gathered(buf, spans, counts, total, fields, seg_size)
    cols = {name: np.empty(total, dtype=dtype[name].newbyteorder("=")) for name in dtype.names}
    at = 0
    for (a, _b), count in zip(spans, counts.tolist()):
        if not count:
            continue
        block = np.frombuffer(buf, dtype=dtype, count=count, offset=a)
        for name in dtype.names:
            cols[name][at:at + count] = block[name]
        at += count
    return cols


def _gathered(buf, spans, counts, total, fields, seg_size) -> dict:
    """Many small records: one gather per field (records and segments are 8-byte aligned)."""
    words = seg_size // 8
    first = np.array([a for a, _ in spans], dtype=np.int64) // 8
    before = np.cumsum(counts) - counts
    idx = np.repeat(first - before * words, counts) + words * np.arange(total, dtype=np.int64)
    cols = {}
    for k, (name, fmt) in enumerate(fields):
        view = np.frombuffer(buf, dtype=fmt, count=len(buf) // 8)
        cols[name] = view[idx + k].astype(np.dtype(fmt).newbyteorder("="), copy=False)
    return cols
