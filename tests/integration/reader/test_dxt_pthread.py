"""DXT with 40-byte segments (DXT_POSIX v2 / DXT_MPIIO v3: offset, length, start, end, pthread_id).

No released runtime writes them yet (Darshan master after 3.5.0), so the logs are built from real 3.41
logs: every DXT record keeps its 104-byte header, and each 32-byte segment is followed by a made-up
pthread_id (stored in the writer's byte order and, like libdarshan-util, read without swapping); the
header's module versions are bumped. iolens must read the same table as from the original, plus
pthread_id.
"""
from __future__ import annotations

import struct

import numpy as np
import polars as pl
import pytest

import iolens

from support.logtools import read_parts, write_parts

HEADER = 104


def widen(region: bytes, bo: str, thread_of) -> tuple:
    """32-byte segments -> 40-byte ones; returns (new region, pthread ids in table order)."""
    out, tids, pos = bytearray(), [], 0
    while pos < len(region):
        head = region[pos:pos + HEADER]
        _rec_id, rank, _shared, _host, wc, rc = struct.unpack(bo + "Qqq64sqq", head)
        out += head
        pos += HEADER
        for k in range(wc + rc):
            tid = thread_of(rank, k)
            out += region[pos:pos + 32] + struct.pack("<Q", tid)  # native (little-endian) writer
            tids.append(tid)
            pos += 32
    return bytes(out), np.array(tids, dtype=np.uint64)


def build(src, dst, thread_of=lambda rank, k: 0x7F3A_0000_0000 + (rank << 12) + k % 3):
    parts = read_parts(src)
    assert parts.version == "3.41"
    tids = {}
    for mod, new_version in (("DXT_POSIX", 2), ("DXT_MPIIO", 3)):
        region = parts.module(mod)
        if region:
            wide, tids[mod] = widen(region, parts.byte_order, thread_of)
            parts.set_module(mod, wide, version=new_version)
    write_parts(parts, dst, compression="zlib", streams=3)
    return tids


@pytest.mark.parametrize("name", ["generated/fill_rank0.darshan", "generated/collective_2phase.darshan",
                                  "generated/small_indep_shared.darshan"])
def test_40_byte_segments_read_like_32_byte_ones(generated, tmp_path, name):
    src = generated.parent / name
    dst = tmp_path / "pthread.darshan"
    tids = build(src, dst)
    original, wide = iolens.read(src), iolens.read(dst)
    assert {m.name: m.version for m in wide.modules if m.name.startswith("DXT")} == \
        {m: {"DXT_POSIX": 2, "DXT_MPIIO": 3}[m] for m in tids}
    seg = wide.segments
    assert "pthread_id" in seg.columns and "pthread_id" not in original.segments.columns
    assert seg.drop("pthread_id").equals(original.segments)
    want = np.concatenate([tids[m] for m in ("DXT_POSIX", "DXT_MPIIO") if m in tids])
    assert np.array_equal(seg["pthread_id"].to_numpy(), want)
    assert seg.schema["pthread_id"] == pl.UInt64
    assert wide.dxt_records.equals(original.dxt_records)
    assert wide.counters.keys() == original.counters.keys()


def test_mixed_segment_sizes(generated, tmp_path):
    """Only DXT_POSIX widened: the segment table still holds both modules, pthread_id null for MPI-IO."""
    src = generated / "fill_rank0.darshan"
    parts = read_parts(src)
    wide, tids = widen(parts.module("DXT_POSIX"), parts.byte_order, lambda rank, k: 1000 + rank)
    parts.set_module("DXT_POSIX", wide, version=2)
    dst = write_parts(parts, tmp_path / "mixed.darshan")
    seg, original = iolens.read(dst).segments, iolens.read(src).segments
    assert seg.height == original.height
    posix = seg.filter(pl.col("module") == "DXT_POSIX")
    assert np.array_equal(posix["pthread_id"].to_numpy(), tids)
    assert seg.filter(pl.col("module") == "DXT_MPIIO")["pthread_id"].null_count() == \
        original.filter(pl.col("module") == "DXT_MPIIO").height
    assert seg.drop("pthread_id").equals(original)


def test_40_byte_region_cut_short_is_an_error(generated, tmp_path):
    src = generated / "fill_rank0.darshan"
    parts = read_parts(src)
    wide, _ = widen(parts.module("DXT_POSIX"), parts.byte_order, lambda rank, k: 7)
    parts.set_module("DXT_POSIX", wide[:-20], version=2)
    dst = write_parts(parts, tmp_path / "short.darshan")
    with pytest.raises(iolens.LogError, match="DXT_POSIX"):
        iolens.read(dst)
    # the same bytes announced as 32-byte segments do not parse either: the size is part of the format
    parts.set_module("DXT_POSIX", wide, version=1)
    with pytest.raises(iolens.LogError):
        iolens.read(write_parts(parts, tmp_path / "wrongver.darshan"))
