"""DXT_POSIX / DXT_MPIIO: per (rank, file) records, each a header then its write and read segments.

A DXT region is parsed while it is inflated: `DxtParser` is the region's sink (see regions.py). It walks
the records of each inflated part and copies segments straight into their final columns, a few big
chunks filled in place, so the inflated region is never held whole and no segment is copied twice.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ..errors import LogError

HEADER = 104
# module -> version -> (segment size, offsets recorded)
SEGMENT_LAYOUT = {
    "DXT_POSIX": {1: (32, True), 2: (40, True)},
    "DXT_MPIIO": {1: (32, False), 2: (32, True), 3: (40, True)},
}
# segments per column chunk: 8 MiB per column, big enough for numpy to ask for huge pages (far fewer
# page faults while the columns are filled); the last chunk is shrunk to what it holds
CHUNK = 1 << 20


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


def segment_fields(seg_size: int, bo: str) -> list:
    fields = [("offset", bo + "i8"), ("length", bo + "i8"), ("start", bo + "f8"), ("end", bo + "f8")]
    if seg_size == 40:
        # pthread_id is written in native order and never swapped by darshan-util either
        fields.append(("pthread_id", "<u8"))
    return fields


class DxtParser:
    """Sink for a DXT region's inflated parts; `records` holds the result after `close()`.

    Parts end anywhere: a record header or a segment cut by the end of a part is carried over (fewer
    than 104 bytes), and a record's segments are copied part by part, so no record is ever joined."""

    def __init__(self, module: str, version: int, bo: str):
        layout = SEGMENT_LAYOUT[module].get(version)
        if layout is None:
            raise LogError(f"{module} module version {version} is not one iolens knows")
        self.module, self.bo = module, bo
        self.seg_size, self.has_offsets = layout
        self.head = struct.Struct(bo + "Qqq64sqq")
        self.meta = []  # (id, rank, shared, hostname bytes, write count, read count) per record
        self.left = 0  # segments of the current record not read yet
        self.carry = b""  # the start of a header or of a segment, cut by the end of the last part
        self.at = 0  # offset in the region of the next part
        self.rec_at = 0  # offset in the region of the current record
        fields = segment_fields(self.seg_size, bo)
        self.columns = _Chunks({name: np.dtype(fmt).newbyteorder("=") for name, fmt in fields})
        self.records = None

    def feed(self, part: bytes) -> None:
        pos = 0
        if self.carry:  # complete the cut header or segment with the start of this part
            need = (self.seg_size if self.left else HEADER) - len(self.carry)
            if len(part) < need:
                self.carry += part
                self.at += len(part)
                return
            whole, self.carry = self.carry + part[:need], b""
            if self.left:
                self._copy(whole, [(0, self.seg_size)], 1)
                self.left -= 1
            else:
                self.left = self._header(whole, 0, self.at - (HEADER - need))
            pos = need
        self._walk(part, pos)
        self.at += len(part)

    def close(self) -> None:
        if self.left:
            raise self._misfit(*self.meta[-1][4:], self.rec_at)
        if self.carry:
            raise LogError(f"truncated {self.module} record header at byte {self.at - len(self.carry)} "
                           f"of the region")
        meta, names = self.meta, {}
        hosts = [names[m[3]] if m[3] in names else names.setdefault(m[3], _text(m[3])) for m in meta]
        self.records = DxtRecords(
            self.module,
            np.array([m[0] for m in meta], dtype=np.uint64), np.array([m[1] for m in meta], dtype=np.int64),
            hosts, np.array([m[4] for m in meta], dtype=np.int64), np.array([m[5] for m in meta], dtype=np.int64),
            self.columns.done(),
        )

    def _walk(self, buf, pos: int) -> None:
        """Read record headers and whole segments from buf[pos:]; carry what is cut at its end."""
        n, size, left, spans, count = len(buf), self.seg_size, self.left, [], 0
        unpack, meta = self.head.unpack_from, self.meta
        while True:
            if left:  # inside a record: as many of its segments as this part holds
                k = (n - pos) // size
                if k > left:
                    k = left
                if k:
                    spans.append((pos, pos + k * size))
                    pos += k * size
                    left -= k
                    count += k
                if left:
                    break
            if n - pos < HEADER:
                break
            head = unpack(buf, pos)  # id, rank, shared (unused), hostname, write count, read count
            if head[4] < 0 or head[5] < 0:
                raise self._misfit(head[4], head[5], self.at + pos)
            meta.append(head)
            self.rec_at = self.at + pos
            left = head[4] + head[5]
            pos += HEADER
        self.left = left
        self.carry = bytes(buf[pos:])
        if spans:
            self._copy(buf, spans, count)

    def _header(self, buf, pos: int, at: int) -> int:
        head = self.head.unpack_from(buf, pos)
        if head[4] < 0 or head[5] < 0:
            raise self._misfit(head[4], head[5], at)
        self.meta.append(head)
        self.rec_at = at
        return head[4] + head[5]

    def _misfit(self, wc: int, rc: int, at: int) -> LogError:
        return LogError(f"corrupt {self.module} record at byte {at}: {wc} writes + {rc} reads do not fit in "
                        f"the region")

    def _copy(self, buf, spans: list, count: int) -> None:
        out = _segment_columns(buf, spans, self.seg_size, self.bo, self.columns.reserve(count))
        if not self.has_offsets:
            out["offset"][:] = -1  # DXT_MPIIO v1 did not record offsets (darshan-util: -1)


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


class _Chunks:
    """Columns held as a few big chunks filled in place: reserve(k) -> views to write the next k rows into."""

    def __init__(self, dtypes: dict):
        self.dtypes, self.full, self.cur = dtypes, [], None
        self.used = self.cap = 0

    def reserve(self, k: int) -> dict:
        if self.cur is None or self.used + k > self.cap:
            self._seal()
            self.cap = max(k, CHUNK)
            self.cur = {name: np.empty(self.cap, dtype) for name, dtype in self.dtypes.items()}
        views = {name: a[self.used:self.used + k] for name, a in self.cur.items()}
        self.used += k
        return views

    def done(self) -> list:
        self._seal()
        return self.full

    def _seal(self) -> None:
        if self.cur is not None and self.used:
            for a in self.cur.values():  # give back the unused tail (no view of it is alive any more)
                a.resize(self.used, refcheck=False)
            self.full.append(self.cur)
        self.cur, self.used = None, 0


def _segment_columns(buf, spans: list, seg_size: int, bo: str, out: dict = None) -> dict:
    """Copy the segments of every record span into native-order columns (into `out` when given)."""
    fields = segment_fields(seg_size, bo)
    counts = np.array([(b - a) // seg_size for a, b in spans], dtype=np.int64)
    total = int(counts.sum())
    if out is None:
        out = {name: np.empty(total, dtype=np.dtype(fmt).newbyteorder("=")) for name, fmt in fields}
    if len(spans) > 64 and total < 2048 * len(spans):
        return _gathered(buf, spans, counts, total, fields, seg_size, out)
    dtype = np.dtype(fields)
    at = 0
    for (a, _b), count in zip(spans, counts.tolist()):
        if not count:
            continue
        block = np.frombuffer(buf, dtype=dtype, count=count, offset=a)
        for name in dtype.names:
            out[name][at:at + count] = block[name]
        at += count
    return out


def _gathered(buf, spans, counts, total, fields, seg_size, out: dict = None) -> dict:
    """Many small records: one gather per field. Headers and segments are multiples of 8 bytes, so every
    span starts at the same offset modulo 8 (a part of the region may start anywhere)."""
    words = seg_size // 8
    shift = spans[0][0] % 8
    first = (np.array([a for a, _ in spans], dtype=np.int64) - shift) // 8
    before = np.cumsum(counts) - counts
    idx = np.arange(total, dtype=np.int64)  # word index of each segment's first field
    idx *= words
    idx += np.repeat(first - before * words, counts)
    nwords = (len(buf) - shift) // 8
    out = {} if out is None else out
    for k, (name, fmt) in enumerate(fields):
        # field k of segment i: view[idx[i]]
        view = np.frombuffer(buf, dtype=fmt, count=nwords - k, offset=shift + 8 * k)
        if name in out:
            np.take(view, idx, out=out[name], mode="clip")  # idx is in range; "raise" would buffer `out`
        else:
            out[name] = view[idx].astype(np.dtype(fmt).newbyteorder("="), copy=False)
    return out
