"""LUSTRE records: layout components and the OSTs each one stripes over (v1 up-converted to v2).

Read column-wise: one row per layout component, the OST ids of all components in one flat array.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ..errors import LogError

COMPONENT_FIELDS = ("stripe_size", "stripe_count", "stripe_pattern", "flags", "ext_start", "ext_end", "mirror_id")
V1_HEAD = 56  # id, rank, 5 int64 (OSTS, MDTS, STRIPE_OFFSET, STRIPE_SIZE, STRIPE_WIDTH), then the OST ids


@dataclass
class LustreRecords:
    """One entry per layout component (a v1 record is one component); len() is the number of records."""
    records: int = 0
    file_id: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    rank: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    component: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # index inside its record
    values: np.ndarray = field(default_factory=lambda: np.empty((0, 7), np.int64))  # COMPONENT_FIELDS
    pool_name: list = field(default_factory=list)
    ost_offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))  # component k: osts[o[k]:o[k+1]]
    osts: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def __len__(self) -> int:
        return self.records


def parse_lustre(version: int, buf: bytes, bo: str) -> LustreRecords:
    if version == 1:
        return _parse_v1(buf, bo)
    if version == 2:
        return _parse_v2(buf, bo)
    raise LogError(f"LUSTRE module version {version} is not one iolens knows")


def _need(buf, pos, size):
    if size < 0 or pos + size > len(buf):
        raise LogError(f"corrupt LUSTRE record at byte {pos} of the region")


def _parse_v1(buf: bytes, bo: str) -> LustreRecords:
    starts = _v1_starts(buf, bo)
    if not len(starts):
        return LustreRecords()
    words = np.frombuffer(buf, dtype=bo + "i8", count=len(buf) // 8)
    at = starts // 8
    width = words[at + 6].astype(np.int64)
    n = len(at)
    values = np.empty((n, 7), dtype=np.int64)
    values[:] = (0, 0, -1, -1, 0, -1, -1)  # pattern, flags, mirror -1; extent 0 .. EOF (-1)
    values[:, 0] = words[at + 5]
    values[:, 1] = width
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(width, out=offsets[1:])
    idx = np.repeat(at + 7 - offsets[:-1], width) + np.arange(offsets[-1], dtype=np.int64)
    return LustreRecords(n, np.frombuffer(buf, dtype=bo + "u8", count=len(buf) // 8)[at].astype(np.uint64),
                         words[at + 1].astype(np.int64), np.zeros(n, dtype=np.int64), values, [""] * n,
                         offsets, words[idx].astype(np.int64))


def _v1_starts(buf: bytes, bo: str) -> np.ndarray:
    """Byte offsets of the v1 records: vectorised when they all have the first one's width, else walked."""
    n = len(buf)
    if n >= V1_HEAD:
        width = struct.unpack_from(bo + "q", buf, 48)[0]
        size = V1_HEAD + 8 * width
        if width >= 0 and n % size == 0:
            words = np.frombuffer(buf, dtype=bo + "i8", count=n // 8)
            if (words[6::size // 8] == width).all():
                return np.arange(0, n, size, dtype=np.int64)
    starts, pos = [], 0
    width_of = struct.Struct(bo + "q")
    while pos < n:
        _need(buf, pos, V1_HEAD)
        width = width_of.unpack_from(buf, pos + 48)[0]
        _need(buf, pos + V1_HEAD, 8 * width)
        starts.append(pos)
        pos += V1_HEAD + 8 * width
    return np.array(starts, dtype=np.int64)


def _parse_v2(buf: bytes, bo: str) -> LustreRecords:
    head, comp = struct.Struct(bo + "Qqqq"), struct.Struct(bo + "7q16s")
    ids, ranks, index, values, pools, counts, osts = [], [], [], [], [], [], []
    records, pos = 0, 0
    while pos < len(buf):
        _need(buf, pos, 32)
        rec_id, rank, ncomps, nstripes = head.unpack_from(buf, pos)
        if ncomps < 0 or nstripes < 0:
            raise LogError(f"corrupt LUSTRE record at byte {pos} of the region")
        p = pos + 32
        _need(buf, p, 72 * ncomps + 8 * nstripes)
        ost_ids = np.frombuffer(buf, dtype=bo + "i8", count=nstripes, offset=p + 72 * ncomps)
        taken = 0
        for k in range(ncomps):
            vals = comp.unpack_from(buf, p + 72 * k)
            if vals[0] == -1:  # unused trailing components are marked with stripe_size == -1
                break
            mine = ost_ids[taken:taken + max(vals[1], 0)]
            taken += max(vals[1], 0)
            ids.append(rec_id)
            ranks.append(rank)
            index.append(k)
            values.append(vals[:7])
            pools.append(vals[7].split(b"\0", 1)[0].decode("utf-8", "replace"))
            counts.append(len(mine))
            osts.append(mine)
        records += 1
        pos = p + 72 * ncomps + 8 * nstripes
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return LustreRecords(records, np.array(ids, dtype=np.uint64), np.array(ranks, dtype=np.int64),
                         np.array(index, dtype=np.int64), np.array(values, dtype=np.int64).reshape(-1, 7), pools,
                         offsets, np.concatenate(osts).astype(np.int64) if osts else np.empty(0, np.int64))
