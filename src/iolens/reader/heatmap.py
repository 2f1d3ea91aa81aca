"""HEATMAP records: per rank and API, bytes read and written in fixed-width time bins."""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..errors import LogError


@dataclass
class HeatmapRecord:
    id: int
    rank: int
    bin_width: float
    write_bins: np.ndarray
    read_bins: np.ndarray


def parse_heatmap(version: int, buf: bytes, bo: str) -> list:
    if version != 1:
        raise LogError(f"HEATMAP module version {version} is not one iolens knows")
    records, pos, n = [], 0, len(buf)
    head = struct.Struct(bo + "Qqdq16x")
    while pos < n:
        if pos + head.size > n:
            raise LogError(f"truncated HEATMAP record at byte {pos} of the region")
        rec_id, rank, width, nbins = head.unpack_from(buf, pos)
        pos += head.size
        if nbins < 0 or pos + 16 * nbins > n:
            raise LogError(f"corrupt HEATMAP record: {nbins} bins do not fit in the region")
        bins = np.frombuffer(buf, dtype=bo + "i8", count=2 * nbins, offset=pos).astype(np.int64)
        records.append(HeatmapRecord(rec_id, rank, width, bins[:nbins], bins[nbins:]))
        pos += 16 * nbins
    return records
