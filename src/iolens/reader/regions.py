"""Inflate regions piece by piece: zlib or bzip2 as a concatenation of independent streams, or raw.

Each region's inflated bytes are handed, in order, to that region's *sink* (`feed(part)` for each part,
then `close()`), so a big region is parsed while it is inflated and is never held whole.

A many-rank log holds one compressed stream per rank in each region, back to back, and the header
does not say where they start. To use every core, big regions are cut at *guessed* stream starts (a
valid zlib / bzip2 stream header that decodes at least a little) and the pieces are inflated in
threads (zlib and bz2 release the GIL), a few pieces ahead of the sinks. A guess is only trusted when
the piece before it ends a stream exactly there, so the bytes are always those of sequential
inflation; a wrong guess costs the speculative work and the gap is inflated sequentially.
"""
from __future__ import annotations

import bz2
import os
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Callable, Optional

from ..errors import LogError

try:  # zlib-ng inflates the same streams faster; stdlib zlib is the fallback.
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # pragma: no cover - depends on the install
    _zlib = zlib

_CHUNK = 1 << 18  # most compressed bytes fed per call
_FIRST = 1 << 12  # first feed of a stream of unknown size (grows x4 while the stream lasts)
_PART = 1 << 20  # outputs of tiny streams are joined into parts of about this size
PIECE_OUT = 1 << 23  # a worker hands a piece over after about this many inflated bytes
MIN_PIECE = 1 << 18  # compressed bytes: smaller regions are not split
MIN_STREAM = 1 << 16  # compressed bytes per stream (on average) below which a region is not split
MAX_PIECE = 1 << 20  # compressed bytes per piece at most: pieces in flight are held until parsed
AHEAD = 1  # pieces inflated ahead of the one being parsed, beyond one per thread
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


class Collect:
    """A sink that joins a region's parts and hands the whole bytes to `parse` on close."""

    def __init__(self, parse: Callable[[bytes], None]):
        self.parse, self.parts = parse, []

    def feed(self, part: bytes) -> None:
        self.parts.append(part)

    def close(self) -> None:
        parts, self.parts = self.parts, []
        self.parse(parts[0] if len(parts) == 1 else b"".join(parts))


def inflate(data, compression: str, label: str) -> bytes:
    """One region, sequentially, whole."""
    out = []
    inflate_into(data, [(label, 0, len(data))], compression, [Collect(out.append)], threads=1)
    return out[0]


def inflate_into(data, regions: list, compression: str, sinks: list, progress: Optional[Callable] = None,
                 threads: Optional[int] = None, streams: int = 1) -> None:
    """regions: [(label, offset, length)] of `data`; sinks: one per region, fed its inflated bytes in order.

    streams: how many streams a region may hold (the job's process count): regions whose streams are
    small on average are inflated sequentially, since threads that hand the GIL back and forth every few
    microseconds are slower than one thread."""
    view = memoryview(data)
    total = sum(n for _, _, n in regions) or 1
    if compression == "none":
        for (_label, o, n), sink in zip(regions, sinks):
            if n:
                sink.feed(bytes(view[o:o + n]))
            sink.close()
        if progress:
            progress(1.0)
        return
    nthreads = threads or workers()
    size = min(MAX_PIECE, max(MIN_PIECE, total // (4 * nthreads)))  # compressed bytes per piece
    plans = [_plan(view[o:o + n], size, compression)
             if nthreads > 1 and n >= 2 * size and n >= MIN_STREAM * max(streams, 1) else None
             for _, o, n in regions]
    jobs = [(r, i) for r, starts in enumerate(plans) if starts for i in range(len(starts))]

    def run(job):
        r, i = job
        label, o, n = regions[r]
        starts = plans[r]
        cursor = _Cursor(view[o:o + n], starts[i], compression, label)
        try:
            return list(cursor.parts(_stop(starts, i, n), limit=PIECE_OUT)), cursor
        except LogError as exc:
            if i == 0:
                raise
            return exc  # a guessed start may be wrong: judged when the piece before reaches it

    done = 0

    def tick(pos):
        if progress:
            progress((done + pos) / total)

    with ThreadPoolExecutor(min(nthreads, len(jobs)) or 1) as pool:
        results = _ahead(pool, run, jobs, nthreads + AHEAD)
        try:
            for r, (label, o, n) in enumerate(regions):
                region = view[o:o + n]
                if plans[r]:  # pieces inflated by the pool, a few ahead
                    _assemble(region, plans[r], results, sinks[r], compression, label, tick)
                else:  # inflated here, while the pool works ahead on big pieces
                    cursor = _Cursor(region, 0, compression, label)
                    for part in cursor.parts(n):
                        sinks[r].feed(part)
                        tick(cursor.pos)
                sinks[r].close()
                done += n
        finally:
            results.close()  # cancels what is queued, so an error does not wait for it
    if progress:
        progress(1.0)


def _ahead(pool, fn, jobs, window):
    """fn(job) for every job, in order, running at most `window` jobs ahead of the one consumed."""
    jobs = iter(jobs)
    pending = deque(pool.submit(fn, job) for job in islice(jobs, window))
    try:
        while pending:
            future = pending.popleft()
            for job in islice(jobs, 1):
                pending.append(pool.submit(fn, job))
            yield future.result()
    finally:  # the consumer stopped (an error): do not start what is still queued
        for future in pending:
            future.cancel()


def _plan(region, size: int, compression: str) -> list:
    """Piece starts of one region (relative to it): 0, then guessed stream starts about `size` apart."""
    n, starts = len(region), [0]
    if n >= 2 * size:
        for k in range(1, -(-n // size)):
            at = max(k * size, starts[-1] + 1)
            guess = _next_stream_start(region, at, min(n, at + size), compression)
            if guess is not None:
                starts.append(guess)
    return starts


def _stop(starts: list, i: int, n: int) -> int:
    return starts[i + 1] if i + 1 < len(starts) else n


def _assemble(region, starts, results, sink, compression, label, tick) -> None:
    """Feed the region's bytes in order: piece i's result is used only where the inflation before it
    ended a stream exactly at its start; every piece's result is taken from `results` once, in order."""
    n = len(region)
    pos, i = 0, 0
    while pos < n:
        while i < len(starts) and starts[i] < pos:  # wrong guesses, overrun by the piece before
            next(results)
            i += 1
        if i < len(starts) and starts[i] == pos:
            res = next(results)
            if isinstance(res, LogError):
                raise res  # a real stream start whose data is corrupt
            parts, cursor = res
            stop = _stop(starts, i, n)
            i += 1
        else:  # no trusted piece starts here: inflate on, up to the next guessed start
            parts, cursor = (), _Cursor(region, pos, compression, label)
            stop = starts[i] if i < len(starts) else n
        for part in parts:
            sink.feed(part)
        for part in cursor.parts(stop):  # the rest of a piece the worker handed over early
            sink.feed(part)
        pos = cursor.pos
        tick(pos)
    for _ in range(i, len(starts)):  # guesses overrun by the region's last stream
        next(results)


class _Cursor:
    """Inflates consecutive streams of one region from `pos`; a stream may stay open between calls."""

    def __init__(self, region, pos: int, compression: str, label: str):
        self.region, self.pos, self.label = region, pos, label
        self.new = _zlib.decompressobj if compression == "zlib" else bz2.BZ2Decompressor
        self.errors = _ZLIB_ERRORS if compression == "zlib" else _BZ2_ERRORS
        self.stream, self.start = None, pos
        self.feed = _FIRST  # compressed bytes first fed to a new stream: about the last stream's size

    def parts(self, stop: int, limit: Optional[int] = None):
        """Yield inflated bytes until a stream ends at or after `stop`, or (with `limit`) stop after about
        `limit` bytes with the stream left open. Many-rank logs have thousands of streams of a few KB:
        this loop is kept lean (locals; one call per stream when it fits the first feed)."""
        region, n, new, errors, part_size = self.region, len(self.region), self.new, self.errors, _PART
        pos, stream, start, feed = self.pos, self.stream, self.start, self.feed
        small, small_size, out = [], 0, 0
        try:
            while stream is not None or pos < stop:
                if stream is None:
                    if limit and out >= limit:
                        break
                    stream, start, step = new(), pos, feed
                else:
                    step = _CHUNK
                while True:
                    if pos >= n:
                        raise LogError(f"truncated compressed data in the {self.label} region (stream does not end)")
                    end = pos + step
                    try:
                        data = stream.decompress(region[pos:end])
                    except errors as exc:
                        raise LogError(f"corrupt compressed data in the {self.label} region ({exc})") from None
                    pos = end if end < n else n
                    size = len(data)
                    out += size
                    if size >= part_size:  # big output: handed on as it is
                        if small:
                            yield b"".join(small)
                            small, small_size = [], 0
                        yield data
                    elif size:  # tiny streams: joined into parts of about _PART bytes
                        small.append(data)
                        small_size += size
                        if small_size >= part_size:
                            yield b"".join(small)
                            small, small_size = [], 0
                    ended = stream.eof
                    if ended or (limit and out >= limit):
                        break
                    step *= 4
                    if step > _CHUNK:
                        step = _CHUNK
                if not ended:  # handed over with the stream open
                    break
                pos -= len(stream.unused_data)
                feed = 2 * (pos - start) + 1024  # next stream: about this one's size
                if feed > _CHUNK:
                    feed = _CHUNK
                stream = None
            if small:
                yield b"".join(small)
        finally:
            self.pos, self.stream, self.start, self.feed = pos, stream, start, feed


def _next_stream_start(region, pos: int, end: int, compression: str) -> Optional[int]:
    """The first position in [pos, end) that looks like the start of a stream and inflates a little
    without error (the probe may read past `end`)."""
    buf = bytes(region[pos:min(len(region), end + _PROBE)])
    end -= pos
    at = 0
    while True:
        if compression == "zlib":
            at = buf.find(b"\x78", at, end)
            if at < 0 or at + 2 > len(buf):
                return None
            flg = buf[at + 1]
            ok = (0x78 * 256 + flg) % 31 == 0 and not flg & 0x20
        else:
            at = buf.find(b"BZh", at, end)
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
