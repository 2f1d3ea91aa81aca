"""Write a Darshan log: the header with its region map, then the job, name-record and module regions.

The layout is the reader's (../shared/docs/darshan-log-format.md): an uncompressed header (1,328 bytes for
log format 3.41, 360 before), the job region right after it, then the name records and each module's region
in increasing module id, every region compressed on its own as the log's header says (zlib, bzip2 or none).
A log is written in the format version and byte order it is given, module slots and partial flags placed as
that version's header holds them (older formats number the modules differently). A region keeps the stream
cuts it is given: the runtime compresses each rank's part of a region as a stream of its own, and readers
(iolens's among them) inflate those streams in parallel.

Files are written whole to a temporary name beside the target and renamed, so a killed writer never leaves
half a log under the final name.
"""
from __future__ import annotations

import bz2
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

from ..errors import LogError
from ..output import whole_file
from .header import MAGIC

COMPRESSION_CODE = {"zlib": 0, "bzip2": 1, "none": 2}
PARALLEL_BYTES = 1 << 20  # a region smaller than this is compressed on the calling thread


@dataclass(frozen=True)
class HeaderLayout:
    size: int
    slots: int
    partial_at: int
    partial_fmt: str
    maps_at: int  # the name map {off, len}, then one {off, len} per module slot
    versions_at: int


def header_layout(version: str) -> HeaderLayout:
    if version >= "3.41":
        return HeaderLayout(1328, 64, 24, "Q", 32, 1072)
    return HeaderLayout(360, 16, 20, "I", 24, 296)


def slot_of(version: str, module_id: int) -> Optional[int]:
    """The header slot of a module (current id) in this format version; None when the version has none."""
    slot = module_id
    if version < "3.41":
        if slot == 6:  # PNETCDF_VAR came with 3.41
            return None
        slot -= slot > 6
    if version < "3.20":
        if slot == 4:  # H5D came with 3.20
            return None
        slot -= slot > 4
    return slot if 0 <= slot < header_layout(version).slots else None


@dataclass
class Region:
    """A region's inflated bytes and where its compressed streams begin (offsets after 0, increasing)."""
    data: bytes
    cuts: tuple = ()


@dataclass
class Module:
    version: int
    region: Region
    partial: bool = False


@dataclass
class LogImage:
    version: str
    byte_order: str
    compression: str
    job: Region
    names: Optional[Region]
    modules: dict = field(default_factory=dict)  # current module id -> Module


def inflate_region(buf, compression: str, label: str) -> Region:
    """A region's bytes, with the offsets where each stream after the first begins."""
    if compression == "none":
        return Region(bytes(buf))
    out, cuts, pos, size = [], [], 0, 0
    view = memoryview(buf)
    while pos < len(view):
        stream = zlib.decompressobj() if compression == "zlib" else bz2.BZ2Decompressor()
        try:
            data = stream.decompress(view[pos:])
        except (zlib.error, OSError, ValueError, EOFError) as exc:
            raise LogError(f"corrupt compressed data in the {label} region ({exc})") from None
        if not stream.eof:
            raise LogError(f"truncated compressed data in the {label} region (stream does not end)")
        if out:
            cuts.append(size)
        out.append(data)
        size += len(data)
        pos = len(view) - len(stream.unused_data)
    return Region(b"".join(out), tuple(cuts))


def deflate_region(region: Region, compression: str, threads: int = 1) -> list:
    """The region compressed, one stream per piece between its cuts (zlib at the runtime's default level),
    as a list of streams; pieces compressed on `threads` threads (zlib and bzip2 release the GIL)."""
    if compression == "none" or not region.data:
        return [bytes(region.data)] if region.data else []
    pack = zlib.compress if compression == "zlib" else bz2.compress
    bounds = [0, *region.cuts, len(region.data)]
    view = memoryview(region.data)
    pieces = [view[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]
    if threads <= 1 or len(pieces) == 1 or len(region.data) < PARALLEL_BYTES:
        return [pack(piece) for piece in pieces]
    # contiguous groups of pieces, a few per thread: a many-rank region has thousands of small streams
    groups = max(1, min(len(pieces), 4 * threads))
    cuts = [len(pieces) * k // groups for k in range(groups + 1)]
    with ThreadPoolExecutor(min(threads, groups)) as pool:
        done = pool.map(lambda ab: [pack(piece) for piece in pieces[ab[0]:ab[1]]], zip(cuts, cuts[1:]))
        return [stream for group in done for stream in group]


def encode_log(image: LogImage, threads: int = 1) -> Iterator[tuple]:
    """The log as (file offset, bytes) pieces: the regions in file order as they are compressed, then the
    header (at offset 0, once the region map is known; the first piece reserves its place)."""
    layout = header_layout(image.version)
    bo = image.byte_order
    header = bytearray(layout.size)
    header[:8] = image.version.encode("ascii").ljust(8, b"\0")
    struct.pack_into(bo + "q", header, 8, MAGIC)
    header[16] = COMPRESSION_CODE[image.compression]
    yield 0, bytes(layout.size)
    pos = layout.size
    for stream in deflate_region(image.job, image.compression):
        yield pos, stream
        pos += len(stream)

    def region(at: int, data: Region):
        nonlocal pos
        start = pos
        for stream in deflate_region(data, image.compression, threads):
            yield pos, stream
            pos += len(stream)
        if pos > start:
            struct.pack_into(bo + "QQ", header, at, start, pos - start)

    if image.names is not None:
        yield from region(layout.maps_at, image.names)
    partial = 0
    for module_id in sorted(image.modules):
        module = image.modules[module_id]
        slot = slot_of(image.version, module_id)
        if slot is None:
            raise ValueError(f"log format {image.version} has no slot for module {module_id}")
        start = pos
        yield from region(layout.maps_at + 16 * (slot + 1), module.region)
        if pos > start:
            struct.pack_into(bo + "I", header, layout.versions_at + 4 * slot, module.version)
            partial |= int(module.partial) << slot
    struct.pack_into(bo + layout.partial_fmt, header, layout.partial_at, partial)
    yield 0, bytes(header)


def encode_unfinished(version: str, streams: Iterable[bytes]) -> Iterator[tuple]:
    """An unfinished log as the runtime leaves one: the header still zeros, then the regions' zlib streams."""
    pos = header_layout(version).size
    yield 0, bytes(pos)
    for stream in streams:
        yield pos, stream
        pos += len(stream)


def assemble(pieces: Iterable[tuple]) -> bytes:
    """The file's bytes from (offset, bytes) pieces."""
    out = bytearray()
    for offset, data in pieces:
        if offset + len(data) > len(out):
            out.extend(bytes(offset + len(data) - len(out)))
        out[offset:offset + len(data)] = data
    return bytes(out)


def zlib_stream(data: bytes) -> bytes:
    return zlib.compress(data)


# --- files ------------------------------------------------------------------------------------------------
def write_atomically(path, pieces: Iterable[tuple], force: bool = False, mode: int = 0o644) -> None:
    """Write (offset, bytes) `pieces` to `path` through a temporary file in the same folder, renamed once whole
    (and synced: `output.whole_file`). An existing `path` is replaced only with `force`; LogError (one line)
    otherwise or when it cannot be written. A process killed meanwhile leaves at most the hidden temporary file,
    never `path`."""
    path = Path(path)
    if path.exists() and not force:
        raise LogError("exists (give --force to replace it)", str(path))
    if path.is_dir():
        raise LogError("is a directory", str(path))
    with whole_file(path, mode, sync=True, replace=force) as tmp, open(tmp, "wb") as fh:
        for offset, data in pieces:
            if fh.tell() != offset:
                fh.seek(offset)
            fh.write(data)
