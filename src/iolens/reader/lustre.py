"""LUSTRE records: layout components and the OSTs each one stripes over (v1 up-converted to v2)."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import LogError

COMPONENT_FIELDS = ("stripe_size", "stripe_count", "stripe_pattern", "flags", "ext_start", "ext_end", "mirror_id")


@dataclass
class LustreRecord:
    id: int
    rank: int
    components: list = field(default_factory=list)  # dicts with COMPONENT_FIELDS + pool_name + osts


def parse_lustre(version: int, buf: bytes, bo: str) -> list:
    if version not in (1, 2):
        raise LogError(f"LUSTRE module version {version} is not one iolens knows")
    parse = _record_v1 if version == 1 else _record_v2
    records, pos = [], 0
    while pos < len(buf):
        rec, pos = parse(buf, pos, bo)
        records.append(rec)
    return records


def _need(buf, pos, size):
    if size < 0 or pos + size > len(buf):
        raise LogError(f"corrupt LUSTRE record at byte {pos} of the region")


def _record_v1(buf, pos, bo):
    _need(buf, pos, 56)
    rec_id, rank, _osts, _mdts, _offset, stripe_size, width = struct.unpack_from(bo + "Qq5q", buf, pos)
    _need(buf, pos + 56, 8 * width)
    osts = list(struct.unpack_from(bo + f"{width}q", buf, pos + 56))
    comp = dict(stripe_size=stripe_size, stripe_count=width, stripe_pattern=-1, flags=-1,
                ext_start=0, ext_end=-1, mirror_id=-1, pool_name="", osts=osts)
    return LustreRecord(rec_id, rank, [comp]), pos + 56 + 8 * width


def _record_v2(buf, pos, bo):
    _need(buf, pos, 32)
    rec_id, rank, ncomps, nstripes = struct.unpack_from(bo + "Qqqq", buf, pos)
    _need(buf, pos + 32, 72 * ncomps + 8 * nstripes)
    comps, p = [], pos + 32
    for _ in range(ncomps):
        vals = struct.unpack_from(bo + "7q16s", buf, p)
        comps.append(dict(zip(COMPONENT_FIELDS, vals[:7]), pool_name=vals[7].split(b"\0", 1)[0].decode(
            "utf-8", "replace")))
        p += 72
    ost_ids = list(struct.unpack_from(bo + f"{nstripes}q", buf, p))
    end = p + 8 * nstripes
    # unused trailing components are marked with stripe_size == -1
    kept = []
    for comp in comps:
        if comp["stripe_size"] == -1:
            break
        kept.append(comp)
    taken = 0
    for comp in kept:
        count = max(comp["stripe_count"], 0)
        comp["osts"] = ost_ids[taken:taken + count]
        taken += count
    return LustreRecord(rec_id, rank, kept), end
