"""Take a DXT module region apart into records and segments, change them, and encode it again.

Layout from ../shared/docs/darshan-log-format.md §7: a 104-byte record header (id, rank, shared_record,
hostname[64], write_count, read_count), then the write segments, then the read segments, each
(offset, length, start, end) plus a pthread id in DXT_POSIX v2 / DXT_MPIIO v3. Standard library only,
like logtools, so it checks iolens' reader instead of reusing it.

    parts = read_parts(src)
    recs = dxt_records(parts, "DXT_POSIX")
    recs[0].writes[0] = recs[0].writes[0]._replace(offset=100)
    set_dxt_records(parts, "DXT_POSIX", recs)
    write_parts(parts, dst)
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import NamedTuple

HEADER = 104


class Segment(NamedTuple):
    offset: int
    length: int
    start: float
    end: float
    extra: bytes = b""  # pthread id of newer module versions, kept as it was


@dataclass
class DxtRecord:
    file_id: int
    rank: int
    shared: int
    hostname: bytes
    writes: list = field(default_factory=list)
    reads: list = field(default_factory=list)


def segment_size(module: str, version: int) -> int:
    new = (module == "DXT_POSIX" and version >= 2) or (module == "DXT_MPIIO" and version >= 3)
    return 40 if new else 32


def dxt_records(parts, module: str) -> list:
    data = parts.module(module) or b""
    bo = parts.byte_order
    size = segment_size(module, parts.versions.get(parts.slot(module), 1))
    out, pos = [], 0
    while pos + HEADER <= len(data):
        fid, rank, shared = struct.unpack_from(bo + "Qqq", data, pos)
        host = data[pos + 24:pos + 88]
        nw, nr = struct.unpack_from(bo + "qq", data, pos + 88)
        pos += HEADER
        segs = []
        for _ in range(nw + nr):
            off, ln, st, en = struct.unpack_from(bo + "qqdd", data, pos)
            segs.append(Segment(off, ln, st, en, data[pos + 32:pos + size]))
            pos += size
        out.append(DxtRecord(fid, rank, shared, host, segs[:nw], segs[nw:]))
    return out


def encode_dxt(records: list, bo: str) -> bytes:
    chunks = []
    for r in records:
        chunks.append(struct.pack(bo + "Qqq", r.file_id, r.rank, r.shared) + r.hostname.ljust(64, b"\0")[:64]
                      + struct.pack(bo + "qq", len(r.writes), len(r.reads)))
        for s in (*r.writes, *r.reads):
            chunks.append(struct.pack(bo + "qqdd", s.offset, s.length, s.start, s.end) + s.extra)
    return b"".join(chunks)


def set_dxt_records(parts, module: str, records: list) -> None:
    parts.set_module(module, encode_dxt(records, parts.byte_order))
