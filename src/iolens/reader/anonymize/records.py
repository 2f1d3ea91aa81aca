"""Module regions and name records rewritten in place: new record ids, host names and pool names; every other
byte as it was.

Each region is rewritten in the layout and byte order it was written in (no up-conversion): a fixed-size
record's id (and an H5D / PNETCDF_VAR record's `file_rec_id`) is patched, a LUSTRE record's id and pool names,
a HEATMAP record's id (its two stale pointer slots zeroed), a DXT record's id and host name; counters, OST ids,
bins and segments keep their bytes. Sizes do not change, so the region keeps its stream cuts.
"""
from __future__ import annotations

import struct

import numpy as np

from ...errors import LogError
from ..counter_names import COUNTER_NAMES
from ..counters import LAYOUTS, record_dtype
from ..dxt import SEGMENT_LAYOUT
from ..jenkins import record_id
from ..lustre import _v1_starts
from ..writer import Region
from .report import Report
from .tokens import Tokens, is_darshan_name

DATASET_MODULES = ("H5D", "PNETCDF_VAR")  # their records name `file:dataset` and point at the file's record
# Counters that hold a record id (as an int64): (module, version) -> counter names. POSIX_RENAMED_FROM is the id of
# the file a renamed file was renamed from (POSIX module version 4, runtime 3.1.7 on).
ID_COUNTERS = {("POSIX", 4): ("POSIX_RENAMED_FROM",)}
DXT_HEADER = 104
HOSTNAME = slice(24, 88)


class Unwritable(Exception):
    """A module this writer does not know the layout of (its version): the module is dropped, not copied."""


class IdMap:
    """Old record id -> new: Darshan's hash of the new name; a keyed stand-in for an id no name record names
    (or that a second name would share)."""

    def __init__(self, tokens: Tokens, new_names: dict, report: Report):
        self.tokens, self.report = tokens, report
        self.new: dict = {0: 0}  # 0 is no record (an H5D record of a log that did not say its file)
        taken: dict = {}
        for old, name in new_names.items():
            rid = record_id(name)
            if taken.get(rid, old) != old:
                rid = tokens.unnamed_record_id(old)
                report.count("ids_set_apart")
            taken[rid] = old
            self.new[old] = rid
        report.count("record_ids", len(new_names))

    def __getitem__(self, old: int) -> int:
        new = self.new.get(old)
        if new is None:
            new = self.new[old] = self.tokens.unnamed_record_id(old)
            self.report.count("unnamed_record_ids")
        return new

    def array(self, ids: np.ndarray) -> np.ndarray:
        unique, inverse = np.unique(np.asarray(ids, dtype=np.uint64), return_inverse=True)
        return np.array([self[int(i)] for i in unique.tolist()], dtype=np.uint64)[inverse]


# --- name records ---------------------------------------------------------------------------------------
def name_entries(data: bytes, version: str, bo: str) -> list:
    """[(offset, id, name bytes)] in region order (3.00: u32 length + bytes; later: NUL-terminated)."""
    out, pos, n = [], 0, len(data)
    while pos < n:
        if pos + 8 > n:
            raise LogError("truncated name record")
        start = pos
        (rec_id,) = struct.unpack_from(bo + "Q", data, pos)
        pos += 8
        if version == "3.00":
            if pos + 4 > n:
                raise LogError("truncated name record")
            (length,) = struct.unpack_from(bo + "I", data, pos)
            pos += 4
            if pos + length > n:
                raise LogError("truncated name record")
            out.append((start, rec_id, bytes(data[pos:pos + length])))
            pos += length
        else:
            end = data.find(b"\0", pos)
            if end < 0:
                raise LogError("truncated name record (no terminating NUL)")
            out.append((start, rec_id, bytes(data[pos:end])))
            pos = end + 1
    return out


def winning_names(entries: list) -> dict:
    """id -> name, as libdarshan-util keeps them: the first, unless empty and a later one is not."""
    names: dict = {}
    for _, rec_id, name in entries:
        if rec_id not in names or (not names[rec_id] and name):
            names[rec_id] = name
    return names


def new_names(names: dict, dataset_files: dict, tokens: Tokens, report: Report) -> dict:
    """id -> new name bytes for every name record."""
    out = {}
    for rec_id, name in names.items():
        file_name = dataset_files.get(rec_id)
        out[rec_id] = tokens.record_name(name, file_name)
        if file_name is not None and name.startswith(file_name + b":"):
            report.count("datasets")
        if not is_darshan_name(name):
            report.count("names")
    kept = sum(is_darshan_name(n) for n in names.values())
    if kept:
        report.kept["Darshan's own record names"] = (f"{kept} (<STDIN>, <STDOUT>, <STDERR>, heatmap:POSIX, ...: "
                                                     "the same in every log)")
    return out


def rewrite_names(region: Region, entries: list, version: str, bo: str, ids: IdMap, dataset_files: dict,
                  tokens: Tokens) -> Region:
    """The name records, each entry with its new id and name, in their order; stream cuts kept at the entries
    they fell on."""
    out, starts = bytearray(), {}
    for start, rec_id, name in entries:
        starts[start] = len(out)
        new = tokens.record_name(name, dataset_files.get(rec_id))
        out += struct.pack(bo + "Q", ids[rec_id])
        out += struct.pack(bo + "I", len(new)) + new if version == "3.00" else new + b"\0"
    cuts = tuple(starts[c] for c in region.cuts if c in starts)
    return Region(bytes(out), cuts)


# --- fixed-size counter modules ---------------------------------------------------------------------------
def dataset_files(module: str, version: int, data: bytes, bo: str, names: dict) -> dict:
    """dataset record id -> its file's name, for the dataset modules' records that say their file."""
    layout = LAYOUTS[module].get(version)
    if layout is None or not layout.file_rec_id:
        return {}
    recs = _records(module, version, data, bo)
    out = {}
    for rec_id, file_id in zip(recs["id"].tolist(), recs["file_rec_id"].tolist()):
        if file_id in names:
            out[rec_id] = names[file_id]
    return out


def dataset_files_by_prefix(dataset_ids, names: dict) -> dict:
    """For dataset records that do not say their file (H5D v1): the longest other name that is a `file:`
    prefix of the record's name."""
    out, known = {}, set(names.values())
    for rec_id in dataset_ids:
        name = names.get(rec_id, b"")
        at = name.rfind(b":")
        while at > 0 and rec_id not in out:
            if name[:at] in known:
                out[rec_id] = name[:at]
            at = name.rfind(b":", 0, at)
    return out


def _records(module: str, version: int, data: bytes, bo: str) -> np.ndarray:
    layout = LAYOUTS[module].get(version)
    if layout is None:
        raise Unwritable(f"{module} module version {version} is not one iolens knows")
    dtype = record_dtype(layout, bo)
    if len(data) % dtype.itemsize:
        raise LogError(f"corrupt {module} region: {len(data)} bytes is not a whole number of "
                       f"{dtype.itemsize}-byte records")
    return np.frombuffer(data, dtype=dtype)


def record_ids(module: str, version: int, data: bytes, bo: str) -> np.ndarray:
    return _records(module, version, data, bo)["id"].astype(np.uint64)


def rewrite_counters(region: Region, module: str, version: int, bo: str, ids: IdMap) -> Region:
    recs = _records(module, version, region.data, bo).copy()
    recs["id"] = ids.array(recs["id"])
    if "file_rec_id" in (recs.dtype.names or ()):
        recs["file_rec_id"] = ids.array(recs["file_rec_id"])
    for counter in ID_COUNTERS.get((module, version), ()):
        column = COUNTER_NAMES[module][0].index(counter)
        values = recs["ints"][:, column].astype(np.int64).view(np.uint64)
        named = values != 0  # 0: no such record
        values[named] = ids.array(values[named])
        recs["ints"][:, column] = values.view(np.int64)
    return Region(recs.tobytes(), region.cuts)


# --- LUSTRE -------------------------------------------------------------------------------------------------
def rewrite_lustre(region: Region, version: int, bo: str, ids: IdMap, tokens: Tokens, report: Report) -> Region:
    data = bytearray(region.data)
    id_at = struct.Struct(bo + "Q")
    if version == 1:
        for start in _v1_starts(bytes(data), bo).tolist():
            id_at.pack_into(data, start, ids[id_at.unpack_from(data, start)[0]])
        return Region(bytes(data), region.cuts)
    if version != 2:
        raise Unwritable(f"LUSTRE module version {version} is not one iolens knows")
    head = struct.Struct(bo + "Qqqq")
    pos = 0
    while pos < len(data):
        if pos + 32 > len(data):
            raise LogError(f"corrupt LUSTRE record at byte {pos} of the region")
        rec_id, _, ncomps, nstripes = head.unpack_from(data, pos)
        end = pos + 32 + 72 * ncomps + 8 * nstripes
        if ncomps < 0 or nstripes < 0 or end > len(data):
            raise LogError(f"corrupt LUSTRE record at byte {pos} of the region")
        id_at.pack_into(data, pos, ids[rec_id])
        for k in range(ncomps):
            at = pos + 32 + 72 * k + 56  # a component: 7 int64, then char pool_name[16]
            pool = bytes(data[at:at + 16]).split(b"\0", 1)[0]
            if pool:
                pool = tokens.pool(pool)
                report.count("pool_names")
            data[at:at + 16] = pool.ljust(16, b"\0")[:16]
        pos = end
    return Region(bytes(data), region.cuts)


# --- HEATMAP ------------------------------------------------------------------------------------------------
def rewrite_heatmap(region: Region, version: int, bo: str, ids: IdMap, report: Report) -> Region:
    if version != 1:
        raise Unwritable(f"HEATMAP module version {version} is not one iolens knows")
    data = bytearray(region.data)
    head = struct.Struct(bo + "Qqdq")
    pos = cleared = 0
    while pos < len(data):
        if pos + 48 > len(data):
            raise LogError(f"truncated HEATMAP record at byte {pos} of the region")
        rec_id, _, _, nbins = head.unpack_from(data, pos)
        if nbins < 0 or pos + 48 + 16 * nbins > len(data):
            raise LogError(f"corrupt HEATMAP record: {nbins} bins do not fit in the region")
        struct.pack_into(bo + "Q", data, pos, ids[rec_id])
        cleared += any(data[pos + 32:pos + 48])
        data[pos + 32:pos + 48] = bytes(16)  # the runtime's two in-memory pointers, dumped as they were
        pos += 48 + 16 * nbins
    if cleared:
        report.cleared.append(f"the two stale pointer slots of {cleared} HEATMAP records (no reader uses them)")
    return Region(bytes(data), region.cuts)


# --- DXT ------------------------------------------------------------------------------------------------------
def rewrite_dxt(region: Region, module: str, version: int, bo: str, ids: IdMap, tokens: Tokens,
                report: Report) -> Region:
    found = SEGMENT_LAYOUT[module].get(version)
    if found is None:
        raise Unwritable(f"{module} module version {version} is not one iolens knows")
    segment = found[0]
    data = bytearray(region.data)
    head = struct.Struct(bo + "Q")
    counts = struct.Struct(bo + "qq")
    hosts = set()
    pos = 0
    while pos < len(data):
        if pos + DXT_HEADER > len(data):
            raise LogError(f"truncated {module} record at byte {pos} of the region")
        writes, reads = counts.unpack_from(data, pos + 88)
        end = pos + DXT_HEADER + (writes + reads) * segment
        if writes < 0 or reads < 0 or end > len(data):
            raise LogError(f"corrupt {module} record at byte {pos} of the region")
        head.pack_into(data, pos, ids[head.unpack_from(data, pos)[0]])
        host = bytes(data[pos + HOSTNAME.start:pos + HOSTNAME.stop]).split(b"\0", 1)[0]
        hosts.add(host)
        data[pos + HOSTNAME.start:pos + HOSTNAME.stop] = tokens.hostname(host).ljust(64, b"\0")
        pos = end
    report.count("hostnames", len(hosts))
    return Region(bytes(data), region.cuts)

