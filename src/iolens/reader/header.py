"""The fixed, uncompressed header: version, byte order, compression, region maps, module versions."""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from ..errors import LogError

MAGIC = 6567223
KNOWN_VERSIONS = ("3.00", "3.10", "3.20", "3.21", "3.41")
COMPRESSION = {0: "zlib", 1: "bzip2", 2: "none"}

# Current module ids (log format 3.41).
MODULE_NAMES = {
    1: "POSIX", 2: "MPI-IO", 3: "H5F", 4: "H5D", 5: "PNETCDF_FILE", 6: "PNETCDF_VAR",
    7: "BG/Q", 8: "LUSTRE", 9: "STDIO", 10: "DXT_POSIX", 11: "DXT_MPIIO", 12: "MDHIM",
    13: "APXC", 14: "APMPI", 15: "HEATMAP", 16: "DFS", 17: "DAOS",
}


@dataclass
class Region:
    offset: int
    length: int


@dataclass
class Header:
    version: str
    byte_order: str  # "<" or ">"
    compression: str
    size: int
    partial_mask: int
    name_region: Region
    module_regions: dict = field(default_factory=dict)  # current module id -> Region
    module_versions: dict = field(default_factory=dict)  # current module id -> int


def _remap(index_list: list, version: str) -> list:
    """Shift old module indices to current ids, as libdarshan-util does after reading."""
    items = list(index_list)
    if version < "3.20":
        items.insert(4, None)
    if version < "3.41":
        items.insert(6, None)
    return items


def _version_key(version: str) -> tuple:
    major, _, minor = version.partition(".")
    return int(major), int(minor.ljust(2, "0"))


def parse_header(buf: bytes, file_size: int, bounded: bool = True) -> Header:
    """The header; bounded=False accepts regions past the file's end (an unfinished log cut after its header
    was written: reader/recover.py keeps what is whole)."""
    if len(buf) < 16:
        raise LogError("not a Darshan log (file too short for a header)")
    raw_version = buf[:8].split(b"\0", 1)[0]
    if struct.unpack_from("<q", buf, 8)[0] == MAGIC:
        bo = "<"
    elif struct.unpack_from(">q", buf, 8)[0] == MAGIC:
        bo = ">"
    else:
        raise LogError("not a Darshan log (bad magic number)")
    version = raw_version.decode("ascii", "replace")
    if version not in KNOWN_VERSIONS:
        if not re.fullmatch(rb"\d+\.\d+", raw_version):
            raise LogError(f"corrupt header: version field {bytes(buf[:8])!r} is not a log format version")
        if _version_key(version) > _version_key(KNOWN_VERSIONS[-1]):
            raise LogError(f"log format {version} is newer than iolens knows (it reads up to "
                           f"{KNOWN_VERSIONS[-1]}); a newer iolens may read it")
        raise LogError(f"unsupported log format version {version} (iolens reads {', '.join(KNOWN_VERSIONS)})")
    new = version >= "3.41"
    size, nmods = (1328, 64) if new else (360, 16)
    if len(buf) < size:
        raise LogError(f"truncated: header needs {size} bytes, file has {len(buf)}")
    comp_code = buf[16]
    if comp_code not in COMPRESSION:
        raise LogError(f"corrupt header: unknown compression type {comp_code}")
    if new:
        partial = struct.unpack_from(bo + "Q", buf, 24)[0]
        maps_off, vers_off = 32, 1072
    else:
        partial = struct.unpack_from(bo + "I", buf, 20)[0]
        maps_off, vers_off = 24, 296
    name_off, name_len = struct.unpack_from(bo + "QQ", buf, maps_off)
    maps = struct.unpack_from(bo + "QQ" * nmods, buf, maps_off + 16)
    vers = struct.unpack_from(bo + "I" * nmods, buf, vers_off)
    # most of the 64 slots are unused: no Region for them (reading thousands of headers, this shows)
    regions = [Region(maps[2 * i], maps[2 * i + 1]) if maps[2 * i + 1] else None for i in range(nmods)]
    partial_bits = [bool(partial >> i & 1) for i in range(nmods)]
    if not new:
        regions, vers, partial_bits = _remap(regions, version), _remap(vers, version), _remap(partial_bits, version)
    header = Header(version, bo, COMPRESSION[comp_code], size, 0, Region(name_off, name_len))
    for mod_id, region in enumerate(regions):
        if region is None or region.length == 0 or mod_id == 0:
            continue
        header.module_regions[mod_id] = region
        header.module_versions[mod_id] = vers[mod_id]
        if partial_bits[mod_id]:
            header.partial_mask |= 1 << mod_id
    for label, region in [("name records", header.name_region)] + [
        (MODULE_NAMES.get(m, f"module {m}"), r) for m, r in header.module_regions.items()
    ]:
        if region.length and (region.offset < size or (bounded and region.offset + region.length > file_size)):
            raise LogError(
                f"truncated or corrupt: {label} region [{region.offset}, +{region.length}) "
                f"lies outside the file ({file_size} bytes)"
            )
    return header


def job_region(header: Header, file_size: int) -> Region:
    """The job region has no map entry: it runs from the header to the next region."""
    starts = [r.offset for r in [header.name_region, *header.module_regions.values()] if r.length]
    end = min(starts) if starts else file_size
    return Region(header.size, end - header.size)
