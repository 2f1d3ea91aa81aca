"""The name-record region: record id (hash of the path) -> path."""
from __future__ import annotations

import struct

from ..errors import LogError


def parse_names(buf: bytes, version: str, bo: str) -> dict:
    """First occurrence wins, but a later non-empty name replaces an empty one."""
    names: dict = {}
    pos, n = 0, len(buf)
    old = version == "3.00"
    id_fmt = struct.Struct(bo + "Q")
    len_fmt = struct.Struct(bo + "I")
    while pos < n:
        if pos + 8 > n:
            raise LogError("truncated name record")
        rec_id = id_fmt.unpack_from(buf, pos)[0]
        pos += 8
        if old:
            if pos + 4 > n:
                raise LogError("truncated name record")
            length = len_fmt.unpack_from(buf, pos)[0]
            pos += 4
            end = pos + length
            if end > n:
                raise LogError("truncated name record")
            raw, pos = buf[pos:end], end
        else:
            end = buf.find(b"\0", pos)
            if end < 0:
                raise LogError("truncated name record (no terminating NUL)")
            raw, pos = buf[pos:end], end + 1
        name = raw.decode("utf-8", "replace")
        if rec_id not in names or (not names[rec_id] and name):
            names[rec_id] = name
    return names
