"""Inflate a log's regions: zlib and uncompressed ones natively (`iolens.reader._native`: every core, no GIL,
DXT records walked into columns as they are inflated), bzip2 ones here (rare, and small).

A many-rank log holds one compressed stream per rank in each region, back to back, and the header
does not say where they start; the native reader cuts big regions at guessed stream starts and uses a
piece only where the inflation before it ended a stream exactly there (native/src/pieces.rs).
"""
from __future__ import annotations

import bz2
import os
from typing import Callable, Optional

from ..errors import LogError

try:
    from . import _native
except ImportError as exc:  # a source tree used without being installed
    raise ImportError("iolens's native reader (iolens.reader._native) is not built: install iolens with "
                      "`pip install .`, which needs Rust's cargo on the PATH, or from a wheel") from exc

MIN_PIECE = 1 << 18  # compressed bytes per piece of a region inflated in parallel, at least ...
MAX_PIECE = 1 << 20  # ... and at most (pieces in flight are held until parsed)
BUFFERED = 32 << 20  # inflated bytes of a DXT piece a worker holds before walking them as they come



def workers() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    env = os.environ.get("IOLENS_THREADS")
    if env and env.isdigit():
        n = int(env)
    return max(1, min(n, 8))


def inflate(data: bytes, offset: int, length: int, compression: str, label: str) -> bytes:
    """One region, whole, on this thread."""
    return read_regions(data, [(label, offset, length, None)], compression, threads=1)[0]


def read_regions(data: bytes, wanted: list, compression: str, progress: Optional[Callable] = None,
                 threads: Optional[int] = None) -> list:
    """The result of every wanted region, in order; LogError when one is corrupt or truncated.

    wanted: [(label, offset, length, dxt)], dxt being `dxt.layout(...)` for a DXT region (its result: a
    dict of columns) and None for any other region (its result: the inflated bytes)."""
    if not wanted:
        return []
    if compression == "bzip2":
        return [_bzip2_region(data, *region) for region in wanted]
    if threads is None and sum(n for _, _, n, _ in wanted) < MIN_PIECE:
        threads = 1  # one piece in all: starting worker threads would cost more than it saves (small logs)
    try:
        return _native.read_regions(data, [(o, n, label, dxt) for label, o, n, dxt in wanted], compression,
                                    threads or workers(), MIN_PIECE, MAX_PIECE, BUFFERED, progress)
    except ValueError as exc:
        raise LogError(str(exc)) from None


def _bzip2_region(data: bytes, label: str, offset: int, length: int, dxt):
    raw = _bunzip(memoryview(data)[offset:offset + length], label)
    if dxt is None:
        return raw
    return read_regions(raw, [(label, 0, len(raw), dxt)], "none", threads=1)[0]


def _bunzip(region, label: str) -> bytes:
    """A concatenation of bzip2 streams."""
    out, pos = [], 0
    while pos < len(region):
        stream = bz2.BZ2Decompressor()
        try:
            out.append(stream.decompress(region[pos:]))
        except (OSError, ValueError, EOFError) as exc:
            raise LogError(f"corrupt compressed data in the {label} region ({exc})") from None
        if not stream.eof:
            raise LogError(f"truncated compressed data in the {label} region (stream does not end)")
        pos = len(region) - len(stream.unused_data)
    return b"".join(out)
