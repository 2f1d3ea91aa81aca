"""Where each Recorder release puts a trace's pieces (format only): the metadata struct, the call-signature
entry head, and which files hold each rank's signatures, grammar and timestamps.

| release | recorder.mt struct | .cst entry head | per-rank files | merged across ranks (ug.mt) | timestamps |
|---|---|---|---|---|---|
| 2.3.x | ranks, start, resolution, ts buffer, ts algorithm (32 bytes) | terminal, key length | N.cst, N.cfg, N.ts | never | N.ts, raw |
| 2.4.x | 2.3's + interprocess flag (40 bytes) | terminal, rank, key length, count | N.cst, N.cfg, N.ts | opt-in: 0.cst, U.cfg per unique grammar | N.ts, raw |
| 2.5.x | ranks, 6 bools, start, resolution, ts buffer, 4 bools (40 bytes) | as 2.4 | N.cst, N.cfg (zlib) | default: recorder.cst, ug.cfg (zlib) | recorder.ts, zlib by default |

"zlib" is Recorder's blob: compressed size and decompressed size (uint64 each), then a zlib stream. ug.mt holds
each rank's unique-grammar id (int32 per rank), then the number of unique grammars.
"""
from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass

import numpy as np

from ...errors import LogError
from ..inputs import refuse_special

METADATA = "recorder.mt"
MAX_RANKS = 1 << 22
_BLOB_HEAD = struct.Struct("<QQ")  # compressed size, decompressed size
MAX_BLOB = 1 << 34  # a decompressed size past this is damage, not a trace


@dataclass(frozen=True)
class Release:
    name: str  # "2.4"
    metadata_size: int
    signature_head: int  # bytes before each signature's key in a .cst file
    zlib_tables: bool  # .cst/.cfg files are zlib blobs
    merged_timestamps: bool  # one recorder.ts for every rank


RELEASES = {
    (2, 3): Release("2.3", 32, 8, False, False),
    (2, 4): Release("2.4", 40, 16, False, False),
    (2, 5): Release("2.5", 40, 16, True, True),
}
READ = ", ".join(r.name for r in RELEASES.values())


@dataclass(frozen=True)
class Header:
    nprocs: int
    start_ts: float  # wall-clock (epoch seconds) of the trace's time 0
    time_resolution: float
    interprocess: bool  # one signature table and the unique grammars for all ranks (ug.mt)
    zlib_timestamps: bool
    untraced: tuple = ()  # layers Recorder was told not to trace (2.5 says which; 2.3 and 2.4 trace all)


def release_of(version: str) -> Release:
    parts = version.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise LogError(f"unreadable Recorder VERSION {version[:20]!r}") from None
    if (major, minor) not in RELEASES:
        raise LogError(f"Recorder trace version {version[:20]} is not supported (iolens reads {READ}.x)")
    return RELEASES[(major, minor)]


def parse_header(data: bytes, release: Release) -> Header:
    """The metadata struct at the head of recorder.mt, as `release` lays it out."""
    if len(data) < release.metadata_size:
        raise LogError(f"truncated recorder.mt ({len(data)} bytes, the metadata needs {release.metadata_size})")
    if release.name == "2.5":
        header = _header_25(data)
    else:
        header = _header_23_24(data, release)
    if not 0 < header.nprocs <= MAX_RANKS:
        raise LogError(f"corrupt recorder.mt: {header.nprocs} ranks")
    resolution = header.time_resolution
    if not (resolution > 0 and np.isfinite(resolution) and np.isfinite(header.start_ts)):
        raise LogError(f"corrupt recorder.mt: time resolution {resolution}")
    return header


def _header_23_24(data: bytes, release: Release) -> Header:
    nprocs, start_ts, resolution, _buffer, ts_algo = struct.unpack_from("<i4xddii", data)
    interprocess = struct.unpack_from("<i", data, 32)[0] if release.name == "2.4" else 0
    if ts_algo != 0:  # 2.3 and 2.4 write 0 only (their readers ignore the field)
        raise LogError(f"Recorder {release.name} trace says its timestamps are compressed (algorithm {ts_algo}):"
                       " iolens reads uncompressed ones only for this version")
    return Header(nprocs, start_ts, resolution, bool(interprocess), False)


def _header_25(data: bytes) -> Header:
    # int ranks; bool posix, mpi, mpiio, hdf5 tracing, store_tid, store_call_depth; double start, resolution;
    # int ts buffer; bool ts_compression, interprocess_compression, inter- and intraprocess pattern recognition
    (nprocs, posix, mpi, mpiio, hdf5, _tid, _depth, start_ts, resolution, _buffer, ts_zlib, interprocess,
     inter_pattern, intra_pattern) = struct.unpack_from("<i6B6xddi4B", data)
    if inter_pattern or intra_pattern:
        which = "RECORDER_INTERPROCESS_PATTERN_RECOGNITION" if inter_pattern else \
            "RECORDER_INTRAPROCESS_PATTERN_RECOGNITION"
        raise LogError(f"Recorder 2.5 trace made with {which}=1 stores offsets as patterns, not values: "
                       "iolens cannot read it")
    untraced = tuple(layer for layer, on in (("POSIX", posix), ("MPI", mpi), ("MPI-IO", mpiio), ("HDF5", hdf5))
                     if not on)  # 2.5 leaves MPI (RECORDER_MPI_TRACING) off by default
    return Header(nprocs, start_ts, resolution, bool(interprocess), bool(ts_zlib), untraced)


def read_file(folder: str, name: str) -> bytes:
    p = os.path.join(folder, name)
    if not os.path.isfile(p):
        refuse_special(p, f"a Recorder trace's {name}")
        raise LogError(f"missing {name} in the Recorder trace folder")
    with open(p, "rb") as fh:
        return fh.read()


def unzlib(data: bytes, pos: int, name: str) -> tuple:
    """(decompressed bytes, position after the blob) of Recorder's zlib blob at `pos` of file `name`."""
    if pos + _BLOB_HEAD.size > len(data):
        raise LogError(f"truncated {name}: it ends inside a compressed block's header")
    packed, unpacked = _BLOB_HEAD.unpack_from(data, pos)
    begin = pos + _BLOB_HEAD.size
    if packed > len(data) - begin or unpacked > MAX_BLOB:
        raise LogError(f"truncated {name}: a compressed block of {packed} bytes runs past the end of the file")
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data[begin:begin + packed], unpacked + 1)
    except zlib.error as exc:
        raise LogError(f"corrupt {name}: {exc}") from None
    if len(out) != unpacked or not inflater.eof:
        raise LogError(f"corrupt {name}: a compressed block holds {len(out)} bytes, says {unpacked}")
    return out, begin + packed


class TraceFiles:
    """The bytes of each rank's signature table, grammar and timestamps, wherever `release` put them.

    Shared pieces (a merged table, a unique grammar, the one timestamp file) are read once."""

    def __init__(self, folder: str, release: Release, header: Header):
        self.folder, self.release, self.header = folder, release, header
        self._cache = {}
        self.grammar_of = self._grammar_ids() if header.interprocess else list(range(header.nprocs))

    def own_files(self, rank: int) -> list:
        """The files that hold rank `rank`'s trace alone (none when every table and timestamp is merged)."""
        own = []
        if not self.header.interprocess:
            own += [f"{rank}.cst", f"{rank}.cfg"]
        if not self.release.merged_timestamps:
            own.append(f"{rank}.ts")
        return own

    def _once(self, key, load):
        if key not in self._cache:
            self._cache[key] = load()
        return self._cache[key]

    def _table_file(self, name: str) -> bytes:
        data = read_file(self.folder, name)
        if not self.release.zlib_tables:
            return data
        out, end = unzlib(data, 0, name)
        if end != len(data):
            raise LogError(f"corrupt {name}: {len(data) - end} bytes after its compressed block")
        return out

    def _grammar_ids(self) -> list:
        data = read_file(self.folder, "ug.mt")
        nprocs = self.header.nprocs
        if len(data) != 4 * (nprocs + 1):
            raise LogError(f"corrupt ug.mt: {len(data)} bytes for {nprocs} ranks (needs {4 * (nprocs + 1)})")
        ids = np.frombuffer(data, dtype="<i4")
        unique = int(ids[-1])
        if ids[:-1].min() < 0 or ids[:-1].max() >= unique:
            raise LogError(f"corrupt ug.mt: a rank's grammar id is outside 0..{unique - 1}")
        return ids[:-1].tolist()

    def signatures(self, rank: int) -> tuple:
        """(bytes, file name) of the call-signature table rank `rank` uses (one for all ranks when merged)."""
        if self.header.interprocess:
            name = "recorder.cst" if self.release.zlib_tables else "0.cst"
        else:
            name = f"{rank}.cst"
        return self._once(("cst", name), lambda: self._table_file(name)), name

    def grammar(self, rank: int) -> tuple:
        """(bytes, file name, grammar id) of rank `rank`'s grammar; ranks of one grammar id share it."""
        unique = self.grammar_of[rank]
        if self.header.interprocess and self.release.zlib_tables:
            blobs = self._once("ug.cfg", self._unique_grammars)
            return blobs[unique], "ug.cfg", unique
        name = f"{unique}.cfg"
        return self._once(("cfg", name), lambda: self._table_file(name)), name, unique

    def _unique_grammars(self) -> list:
        data, pos, blobs = read_file(self.folder, "ug.cfg"), 0, []
        while pos < len(data):
            blob, pos = unzlib(data, pos, "ug.cfg")
            blobs.append(blob)
        if len(blobs) <= max(self.grammar_of):
            raise LogError(f"truncated ug.cfg: {len(blobs)} grammars, ug.mt uses {max(self.grammar_of) + 1}")
        return blobs

    def timestamps(self, rank: int) -> tuple:
        """(bytes, name) of rank `rank`'s timestamp pairs, decompressed."""
        if not self.release.merged_timestamps:
            name = f"{rank}.ts"
            return read_file(self.folder, name), name
        data, blocks = self._once("recorder.ts", self._rank_blocks)
        begin, end = blocks[rank]
        if self.header.zlib_timestamps and end > begin:
            out, stop = unzlib(memoryview(data)[:end], begin, "recorder.ts")  # a view: no copy per rank
            if stop != end:
                raise LogError(f"corrupt recorder.ts: rank {rank}'s block holds more than its compressed data")
            return out, "recorder.ts"
        return data[begin:end], "recorder.ts"

    def _rank_blocks(self) -> tuple:
        """recorder.ts: the byte size of each rank's block (uint64 per rank), then the blocks in rank order."""
        data, nprocs = read_file(self.folder, "recorder.ts"), self.header.nprocs
        if len(data) < 8 * nprocs:
            raise LogError(f"truncated recorder.ts: {len(data)} bytes, its header alone needs {8 * nprocs}")
        sizes = np.frombuffer(data, dtype="<u8", count=nprocs).astype(object)
        ends = np.cumsum(sizes) + 8 * nprocs if nprocs else sizes
        if nprocs and ends[-1] > len(data):
            raise LogError(f"truncated recorder.ts: {len(data)} bytes, the ranks' blocks need {int(ends[-1])}")
        begins = [8 * nprocs] + [int(e) for e in ends[:-1]]
        return data, list(zip(begins, (int(e) for e in ends)))
