"""Test helpers that take a real Darshan log apart and write it back, changed.

The format is the one in ../shared/docs/darshan-log-format.md: an uncompressed header, then the job
region, the name-record region and one region per module, each compressed on its own. These helpers
inflate every region (in the log's own byte order, nothing is swapped), let a test change the inflated
bytes, the names, the command line, module versions or partial flags, and write a valid log again with
freshly computed region maps, compressed as zlib (one or many streams per region), bzip2 or not at all.

They use only the standard library, so they are an independent check on iolens' reader, which they
must never import.

    rewrite_log(src, dst, compression="bzip2")
    rewrite_log(src, dst, names={rec_id: "<img src=x onerror=window.__xss=1>"}, exe="evil <script>")
    rewrite_log(src, dst, names=lambda rec_id, name: name.upper())
"""
from __future__ import annotations

import bz2
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

MAGIC = 6567223
COMPRESSION_CODES = {"zlib": 0, "bzip2": 1, "none": 2}
COMPRESSION_NAMES = {v: k for k, v in COMPRESSION_CODES.items()}
# current module ids (log format 3.41)
MODULE_IDS = {
    "POSIX": 1, "MPI-IO": 2, "H5F": 3, "H5D": 4, "PNETCDF_FILE": 5, "PNETCDF_VAR": 6, "BG/Q": 7,
    "LUSTRE": 8, "STDIO": 9, "DXT_POSIX": 10, "DXT_MPIIO": 11, "MDHIM": 12, "APXC": 13, "APMPI": 14,
    "HEATMAP": 15, "DFS": 16, "DAOS": 17,
}


def _layout(version: str):
    """(header size, module slots, offset of maps, offset of versions, partial-flag format)."""
    if version >= "3.41":
        return 1328, 64, 32, 1072, "Q"
    return 360, 16, 24, 296, "I"


def disk_index(version: str, module: str) -> Optional[int]:
    """The slot a module occupies in this log version's header (None if the version has no slot for it)."""
    cur = MODULE_IDS[module]
    if version < "3.41":
        if cur == 6:
            return None
        if cur > 6:
            cur -= 1
    if version < "3.20":
        if cur == 4:
            return None
        if cur > 4:
            cur -= 1
    return cur


@dataclass
class LogParts:
    """A log taken apart. Regions are inflated; module regions are keyed by header slot."""
    version: str
    byte_order: str  # "<" or ">"
    compression: str
    partial: int
    header: bytes  # the original header bytes (kept for padding and unused slots)
    job: bytes
    names: bytes
    modules: dict = field(default_factory=dict)  # slot -> inflated bytes
    versions: dict = field(default_factory=dict)  # slot -> module version

    # --- convenience views -------------------------------------------------------------------
    def slot(self, module: str) -> Optional[int]:
        return disk_index(self.version, module)

    def module(self, module: str) -> Optional[bytes]:
        s = self.slot(module)
        return self.modules.get(s) if s is not None else None

    def set_module(self, module: str, data: bytes, version: Optional[int] = None) -> None:
        s = self.slot(module)
        if s is None:
            raise ValueError(f"log format {self.version} has no slot for {module}")
        self.modules[s] = data
        if version is not None:
            self.versions[s] = version

    def name_records(self) -> list:
        """[(id, name bytes)] in on-disk order."""
        return parse_names(self.names, self.version, self.byte_order)

    def set_name_records(self, records: list) -> None:
        self.names = encode_names(records, self.version, self.byte_order)

    @property
    def job_fixed_size(self) -> int:
        return (7 if self.version >= "3.41" else 5) * 8 + 1024

    def exe_and_mounts(self) -> str:
        return self.job[self.job_fixed_size:].split(b"\0", 1)[0].decode("utf-8", "replace")

    def set_exe(self, exe: str) -> None:
        text = self.exe_and_mounts()
        _, sep, mounts = text.partition("\n")
        new = exe + (sep + mounts if sep else "")
        self.job = self.job[:self.job_fixed_size] + new.encode() + b"\0"


def _inflate(data: bytes, compression: str) -> bytes:
    if compression == "none":
        return bytes(data)
    out, rest = [], bytes(data)
    while rest:
        d = zlib.decompressobj() if compression == "zlib" else bz2.BZ2Decompressor()
        out.append(d.decompress(rest))
        if not d.eof:
            raise ValueError("truncated compressed stream")
        rest = d.unused_data
    return b"".join(out)


def _deflate(data: bytes, compression: str, streams: int = 1) -> bytes:
    if compression == "none" or not data:
        return bytes(data)
    streams = max(1, min(streams, len(data)))
    cuts = [len(data) * k // streams for k in range(streams + 1)]
    pack = zlib.compress if compression == "zlib" else bz2.compress
    return b"".join(pack(data[a:b]) for a, b in zip(cuts, cuts[1:]))


def read_parts(path) -> LogParts:
    raw = Path(path).read_bytes()
    version = raw[:8].split(b"\0", 1)[0].decode("ascii")
    bo = "<" if struct.unpack_from("<q", raw, 8)[0] == MAGIC else ">"
    size, nmods, maps, vers_off, pfmt = _layout(version)
    compression = COMPRESSION_NAMES[raw[16]]
    partial = struct.unpack_from(bo + pfmt, raw, maps - struct.calcsize(pfmt))[0]
    name_off, name_len = struct.unpack_from(bo + "QQ", raw, maps)
    mod_maps = struct.unpack_from(bo + "QQ" * nmods, raw, maps + 16)
    versions = struct.unpack_from(bo + "I" * nmods, raw, vers_off)
    starts = [o for o, n in [(name_off, name_len)] + list(zip(mod_maps[::2], mod_maps[1::2])) if n]
    job_end = min(starts) if starts else len(raw)
    parts = LogParts(version, bo, compression, partial, raw[:size],
                     _inflate(raw[size:job_end], compression),
                     _inflate(raw[name_off:name_off + name_len], compression) if name_len else b"")
    for i in range(nmods):
        off, n = mod_maps[2 * i], mod_maps[2 * i + 1]
        if n:
            parts.modules[i] = _inflate(raw[off:off + n], compression)
            parts.versions[i] = versions[i]
    return parts


def write_parts(parts: LogParts, dst, compression: Optional[str] = None, streams: int = 1) -> Path:
    """Write `parts` as a log; `streams` > 1 splits every region into that many zlib/bzip2 streams."""
    compression = compression or parts.compression
    bo = parts.byte_order
    size, nmods, maps, vers_off, pfmt = _layout(parts.version)
    header = bytearray(parts.header[:size])
    header[16] = COMPRESSION_CODES[compression]
    struct.pack_into(bo + pfmt, header, maps - struct.calcsize(pfmt), parts.partial)
    body = bytearray(_deflate(parts.job, compression, 1))  # the job region is one stream (rank 0)
    pos = size + len(body)
    names = _deflate(parts.names, compression, streams)
    struct.pack_into(bo + "QQ", header, maps, pos if names else 0, len(names))
    body += names
    pos += len(names)
    for i in range(nmods):
        data = parts.modules.get(i)
        region = _deflate(data, compression, streams) if data else b""
        struct.pack_into(bo + "QQ", header, maps + 16 + 16 * i, pos if region else 0, len(region))
        struct.pack_into(bo + "I", header, vers_off + 4 * i, parts.versions.get(i, 0) if region else 0)
        body += region
        pos += len(region)
    dst = Path(dst)
    dst.write_bytes(bytes(header) + bytes(body))
    return dst


def parse_names(buf: bytes, version: str, bo: str) -> list:
    out, pos = [], 0
    while pos < len(buf):
        (rec_id,) = struct.unpack_from(bo + "Q", buf, pos)
        pos += 8
        if version == "3.00":
            (n,) = struct.unpack_from(bo + "I", buf, pos)
            out.append((rec_id, buf[pos + 4:pos + 4 + n]))
            pos += 4 + n
        else:
            end = buf.index(b"\0", pos)
            out.append((rec_id, buf[pos:end]))
            pos = end + 1
    return out


def encode_names(records: list, version: str, bo: str) -> bytes:
    out = bytearray()
    for rec_id, name in records:
        name = name.encode() if isinstance(name, str) else name
        out += struct.pack(bo + "Q", rec_id)
        out += struct.pack(bo + "I", len(name)) + name if version == "3.00" else name + b"\0"
    return bytes(out)


NameChange = Union[dict, Callable[[int, str], Optional[str]]]


def rewrite_log(src, dst, *, compression: Optional[str] = None, streams: int = 1,
                names: Optional[NameChange] = None, exe: Optional[str] = None,
                modules: Optional[dict] = None, versions: Optional[dict] = None,
                partial: Optional[int] = None, drop_modules=(), edit: Optional[Callable] = None) -> Path:
    """Copy log `src` to `dst`, changed:

    compression: "zlib", "bzip2" or "none" (default: the source's); streams: streams per region.
    names: {id: new name} or a callable (id, old name) -> new name; a new name of None drops the record.
    exe: the new command line (mount table kept). modules: {module name: inflated bytes, or a callable
    old bytes -> new bytes}. versions: {module name: version}. partial: the raw partial-flag word.
    drop_modules: module names whose regions are removed. edit: a callable getting the LogParts last.
    """
    parts = read_parts(src)
    if names is not None:
        new = []
        for rec_id, raw_name in parts.name_records():
            old = raw_name.decode("utf-8", "replace")
            name = names(rec_id, old) if callable(names) else names.get(rec_id, old)
            if name is not None:
                new.append((rec_id, name))
        parts.set_name_records(new)
    if exe is not None:
        parts.set_exe(exe)
    for mod, change in (modules or {}).items():
        old = parts.module(mod)
        parts.set_module(mod, change(old) if callable(change) else change)
    for mod, ver in (versions or {}).items():
        parts.versions[parts.slot(mod)] = ver
    for mod in drop_modules:
        slot = parts.slot(mod)
        parts.modules.pop(slot, None)
        parts.versions.pop(slot, None)
    if partial is not None:
        parts.partial = partial
    if edit is not None:
        edit(parts)
    return write_parts(parts, dst, compression, streams)


def region_spans(path) -> dict:
    """{label: (offset, length)} of every compressed region on disk (job, names, module names)."""
    raw = Path(path).read_bytes()
    version = raw[:8].split(b"\0", 1)[0].decode("ascii")
    bo = "<" if struct.unpack_from("<q", raw, 8)[0] == MAGIC else ">"
    size, nmods, maps, _, _ = _layout(version)
    name_off, name_len = struct.unpack_from(bo + "QQ", raw, maps)
    mod_maps = struct.unpack_from(bo + "QQ" * nmods, raw, maps + 16)
    slots = {disk_index(version, m): m for m in MODULE_IDS if disk_index(version, m) is not None}
    spans = {}
    if name_len:
        spans["names"] = (name_off, name_len)
    for i in range(nmods):
        if mod_maps[2 * i + 1]:
            spans[slots.get(i, f"slot {i}")] = (mod_maps[2 * i], mod_maps[2 * i + 1])
    starts = [o for o, _ in spans.values()]
    spans["job"] = (size, (min(starts) if starts else len(raw)) - size)
    return spans
