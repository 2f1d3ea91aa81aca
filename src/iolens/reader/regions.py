"""Inflate one region: zlib or bzip2 as a concatenation of independent streams, or raw."""
from __future__ import annotations

import bz2
import zlib

from ..errors import LogError

try:  # zlib-ng inflates the same streams faster; stdlib zlib is the fallback.
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # pragma: no cover - depends on the install
    _zlib = zlib


def inflate(data: bytes | memoryview, compression: str, label: str) -> bytes:
    if compression == "none":
        return bytes(data)
    if not len(data):
        return b""
    if compression == "zlib":
        return _inflate_streams(data, lambda: _zlib.decompressobj(), (zlib.error, _zlib.error), label)
    return _inflate_streams(data, bz2.BZ2Decompressor, (OSError, ValueError), label)


def _inflate_streams(data, new_stream, errors, label: str) -> bytes:
    """Each rank compressed its share separately; streams follow each other with no gap.

    Input is fed in chunks so that the leftover a finished stream hands back stays small
    (feeding the whole remainder would copy it once per stream: quadratic on 1,024 ranks).
    """
    view = memoryview(data)
    parts, pos, total = [], 0, len(view)
    while pos < total:
        stream = new_stream()
        try:
            while not stream.eof and pos < total:
                chunk = view[pos:pos + _CHUNK]
                pos += len(chunk)
                parts.append(stream.decompress(chunk))
        except errors as exc:
            raise LogError(f"corrupt compressed data in the {label} region ({exc})") from None
        if not stream.eof:
            raise LogError(f"truncated compressed data in the {label} region (stream does not end)")
        pos -= len(stream.unused_data)
    return parts[0] if len(parts) == 1 else b"".join(parts)


_CHUNK = 1 << 18
