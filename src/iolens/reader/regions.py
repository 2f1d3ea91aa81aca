"""Inflate regions: zlib or bzip2 as a concatenation of independent streams, or raw.

A many-rank log holds one compressed stream per rank in each region, back to back, and the header
does not say where they start. To use every core, big regions are cut at *guessed* stream starts (a
valid zlib / bzip2 stream header that decodes at least a little) and the pieces are inflated in
threads (zlib and bz2 release the GIL). A guess is only trusted when the piece before it ends a stream
exactly there, so the result is always the one sequential inflation gives; a wrong guess costs the
speculative work and the region is finished sequentially.
"""
from __future__ import annotations

import bz2
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

from ..errors import LogError

try:  # zlib-ng inflates the same streams faster; stdlib zlib is the fallback.
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # pragma: no cover - depends on the install
    _zlib = zlib

_CHUNK = 1 << 18  # input fed per call: keeps the leftover a finished stream hands back small
MIN_PIECE = 1 << 20  # compressed bytes: smaller regions are not worth a thread
_PROBE = 512  # compressed bytes a guessed stream start must inflate without error
_ZLIB_ERRORS = (zlib.error, _zlib.error)
_BZ2_ERRORS = (OSError, ValueError, EOFError)
_BZ2_BLOCK = (b"\x31\x41\x59\x26\x53\x59", b"\x17\x72\x45\x38\x50\x90")  # block / end-of-stream magics


def workers() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    env = os.environ.get("IOLENS_THREADS")
    if env and env.isdigit():
        n = int(env)
    return max(1, min(n, 8))


def inflate(data, compression: str, label: str) -> bytes:
    """One region, sequentially."""
    if compression == "none":
        return bytes(data)
    if not len(data):
        return b""
    view = memoryview(data)
    parts, end = _decode(view, 0, len(view), len(view), compression, label)
    return _join(parts)


def inflate_regions(data, regions: list, compression: str, progress: Optional[Callable] = None) -> list:
    """[(label, offset, length)] -> inflated bytes of each, using threads for big regions."""
    view = memoryview(data)
    if compression == "none":
        out = [bytes(view[o:o + n]) for _, o, n in regions]
        if progress:
            progress(1.0)
        return out
    nthreads = workers()
    total = sum(n for _, _, n in regions) or 1
    if nthreads == 1 or total < 2 * MIN_PIECE:
        out, done = [], 0
        for label, o, n in regions:
            out.append(inflate(view[o:o + n], compression, label))
            done += n
            if progress:
                progress(done / total)
        return out
    # plan: cut each big region at guessed stream starts into pieces of about total / (2 * threads)
    target = max(MIN_PIECE, total // (2 * nthreads))
    plans = []  # per region: list of piece starts (relative to the region), first one certain
    for label, o, n in regions:
        region = view[o:o + n]
        starts = [0]
        if n >= 2 * MIN_PIECE:
            for k in range(1, -(-n // target)):
                guess = _next_stream_start(region, max(k * target, starts[-1] + 1), compression)
                if guess is None:
                    break
                if guess > starts[-1] and guess < n:
                    starts.append(guess)
        plans.append(starts)
    jobs = []  # (region index, piece index)
    for r, starts in enumerate(plans):
        jobs += [(r, i) for i in range(len(starts))]
    # biggest pieces first, so the pool finishes together
    sizes = {}
    for r, i in jobs:
        starts, n = plans[r], regions[r][2]
        sizes[r, i] = (starts[i + 1] if i + 1 < len(starts) else n) - starts[i]
    jobs.sort(key=lambda j: -sizes[j])

    def run(job):
        r, i = job
        label, o, n = regions[r]
        starts = plans[r]
        stop = starts[i + 1] if i + 1 < len(starts) else n
        try:
            return _decode(view[o:o + n], starts[i], stop, n, compression, label)
        except LogError as exc:
            if i == 0:
                raise
            return exc  # a guessed start may be wrong: judged when the piece before reaches it

    results, done = {}, 0
    with ThreadPoolExecutor(min(nthreads, len(jobs))) as pool:
        for job, res in zip(jobs, pool.map(run, jobs)):
            results[job] = res
            done += sizes[job]
            if progress:
                progress(0.95 * done / total)
    out = []
    for r, (label, o, n) in enumerate(regions):
        out.append(_assemble(view[o:o + n], plans[r], {i: results[r, i] for i in range(len(plans[r]))},
                             compression, label))
    if progress:
        progress(1.0)
    return out


def _assemble(region, starts, results, compression, label) -> bytes:
    """Chain the pieces: trust piece i only where the inflation before it ended a stream exactly at its start."""
    n = len(region)
    index = {s: i for i, s in enumerate(starts)}
    parts, pos, i = [], 0, 0
    while pos < n:
        res = results.get(i) if i is not None else None
        if i is not None and isinstance(res, LogError):
            raise res  # a real stream start whose data is corrupt
        if i is None:  # no trusted piece starts here: inflate on, up to the next guessed start
            nxt = min((s for s in starts if s > pos), default=n)
            res = _decode(region, pos, nxt, n, compression, label)
        piece, end = res
        parts += piece
        pos = end
        i = index.get(pos)
    return _join(parts)


def _join(parts: list) -> bytes:
    if not parts:
        return b""
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _decode(region, pos: int, stop: int, end: int, compression: str, label: str):
    """Inflate whole streams from `pos` until a stream ends at or after `stop`; -> (parts, end position)."""
    new_stream = _zlib.decompressobj if compression == "zlib" else bz2.BZ2Decompressor
    errors = _ZLIB_ERRORS if compression == "zlib" else _BZ2_ERRORS
    parts = []
    while pos < stop:
        stream = new_stream()
        try:
            while not stream.eof and pos < end:
                chunk = region[pos:pos + _CHUNK]
                pos += len(chunk)
                out = stream.decompress(chunk)
                if out:
                    parts.append(out)
        except errors as exc:
            raise LogError(f"corrupt compressed data in the {label} region ({exc})") from None
        if not stream.eof:
            raise LogError(f"truncated compressed data in the {label} region (stream does not end)")
        pos -= len(stream.unused_data)
    return parts, pos


def _next_stream_start(region, pos: int, compression: str) -> Optional[int]:
    """The first position >= pos that looks like the start of a stream and inflates a little without error."""
    buf = bytes(region[pos:min(len(region), pos + 4 * MIN_PIECE)])  # search window: a few MiB
    at = 0
    while True:
        if compression == "zlib":
            at = buf.find(b"\x78", at)
            if at < 0 or at + 2 > len(buf):
                return None
            flg = buf[at + 1]
            ok = (0x78 * 256 + flg) % 31 == 0 and not flg & 0x20
        else:
            at = buf.find(b"BZh", at)
            if at < 0 or at + 10 > len(buf):
                return None
            ok = 0x31 <= buf[at + 3] <= 0x39 and buf[at + 4:at + 10] in _BZ2_BLOCK
        if ok and _probe(buf[at:at + _PROBE], compression):
            return pos + at
        at += 1


def _probe(head: bytes, compression: str) -> bool:
    try:
        if compression == "zlib":
            _zlib.decompressobj().decompress(head)
        else:
            bz2.BZ2Decompressor().decompress(head)
    except (*_ZLIB_ERRORS, *_BZ2_ERRORS):
        return False
    return True
