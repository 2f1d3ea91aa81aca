"""Unfinished logs (`.darshan_partial`): what Darshan wrote before the process was ended, read region by region.

The runtime writes the regions first (job, name records, then each module in increasing id order, one zlib
stream per rank and region) and the header, which maps them, last. A process ended while Darshan was writing
leaves a file whose header is still zeros. Its whole streams are read here in that order; which module a
stream holds is decided by the format alone: the stream must be a whole number of that module's records (for
the runtime version the job region names), every record's id must be a name the log holds and its rank one
of the job's. The first stream no module (or more than one) fits stops the recovery: nothing after it is
labelled. Every value read this way is flagged recovered; what is missing is named.
"""
from __future__ import annotations

import os
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import LogError
from .counter_names import COUNTER_NAMES
from .counters import LAYOUTS, CounterRecords, parse_counters, record_dtype
from .dxt import SEGMENT_LAYOUT, DxtRecords
from .dxt import layout as dxt_layout
from .dxt import records as dxt_records
from .header import MODULE_NAMES, Header, Region
from .heatmap import parse_heatmap
from .job import JobRecord, parse_job
from .lustre import parse_lustre
from .names import parse_names
from .raw import ModuleInfo, RawLog
from .regions import read_regions

PARTIAL_SUFFIX = ".darshan_partial"
HEADER_SIZES = {"3.41": 1328, "3.21": 360}  # the header left as zeros, by the log format it would have had
DXT_HEADER = 104
# Darshan's own log name: <user>_<exe>_id<jobid>-<pid>_<month>-<day>-<seconds of day>-<hash>[_<n>].darshan[_partial]
NAME_PATTERN = re.compile(r"(?P<who>.+)_id(?P<jobid>\d+)-(?P<pid>\d+)_(?P<month>\d+)-(?P<day>\d+)-(?P<seconds>\d+)"
                          r"-(?P<hash>\d+)(?:_\d+)?\.darshan(?:_partial)?$")


@dataclass
class LogName:
    """What a Darshan log's file name says (all a log with nothing written still tells)."""
    user_and_program: str
    jobid: int
    pid: int
    month: int
    day: int
    seconds_of_day: int

    @property
    def program(self) -> str:
        """The program: the name's text before `_id`, less Darshan's leading user name."""
        return self.user_and_program.split("_", 1)[-1]

    def describe(self) -> str:
        return f"job {self.jobid}, program {self.program}, process {self.pid}"


def parse_log_name(path: str):
    m = NAME_PATTERN.search(os.path.basename(path))
    if not m:
        return None
    return LogName(m["who"], int(m["jobid"]), int(m["pid"]), int(m["month"]), int(m["day"]), int(m["seconds"]))


def is_unfinished(path: str, data: bytes) -> bool:
    """A `.darshan_partial`, or a file whose header was never written (zeros where the magic number goes)."""
    return str(path).endswith(PARTIAL_SUFFIX) or (len(data) >= 16 and not any(data[:16]))


def module_versions(lib_ver: str):
    """The record-format version of each module a runtime release writes (the doc's table of versions);
    None for a release whose versions iolens does not know (then no module stream is labelled)."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", lib_ver or "")
    if not m:
        return None
    release = tuple(int(x) for x in m.groups())
    if not (3, 4, 1) <= release < (3, 6, 0):
        return None
    return {"POSIX": [4], "MPI-IO": [3], "H5F": [3], "H5D": [2], "PNETCDF_FILE": [3], "PNETCDF_VAR": [1],
            "LUSTRE": [2] if release >= (3, 4, 6) else [1], "STDIO": [2],
            # 3.5.x: the released DXT segments, or the pthread_id ones of builds from master
            "DXT_POSIX": [1, 2] if release >= (3, 5, 0) else [1],
            "DXT_MPIIO": [2, 3] if release >= (3, 5, 0) else [2], "HEATMAP": [1]}


def _streams(data: bytes, start: int):
    """(offset, length, inflated bytes, whole) of each zlib stream from `start`, back to back."""
    pos = start
    while pos < len(data):
        d = zlib.decompressobj()
        try:
            out = d.decompress(data[pos:], 1 << 28)
        except zlib.error:
            yield pos, len(data) - pos, b"", False
            return
        used = len(data) - pos - len(d.unused_data)
        if not d.eof:
            yield pos, used, b"", False
            return
        yield pos, used, out, True
        pos += used


def _job_stream(data: bytes):
    """(log format, byte order, job record, streams after it) from the first stream after a zeroed header."""
    for version, size in HEADER_SIZES.items():
        if len(data) <= size or any(data[:size]):
            continue
        streams = _streams(data, size)
        first = next(streams, None)
        if not first or not first[3]:
            continue
        for bo in ("<", ">"):
            try:
                job = parse_job(first[2], version, bo)
            except LogError:
                continue
            if 1 <= job.nprocs <= 1 << 24 and 0 < job.start_time_sec < 1 << 40:
                return version, bo, job, streams
    return None


def _names(buf: bytes, version: str, bo: str):
    try:
        return parse_names(buf, version, bo)
    except LogError:
        return None


def _valid_names(names: dict) -> bool:
    return bool(names) and all(n and n.isprintable() and "\ufffd" not in n for n in names.values())


def _fits(module: str, version: int, buf: bytes, bo: str, names: dict, nprocs: int, counters=None):
    """The module's records parsed from `buf`, or None unless it is exactly that module's records with known
    ids and ranks."""
    def known(rec_id, rank):
        return int(rec_id) in names and -1 <= int(rank) < nprocs

    try:
        if module in LAYOUTS:
            size = record_dtype(LAYOUTS[module][version], bo).itemsize
            if not buf or len(buf) % size:
                return None
            recs = parse_counters(module, version, buf, bo)
            return recs if all(known(i, r) for i, r in zip(recs.ids, recs.ranks)) else None
        if module in SEGMENT_LAYOUT:
            return _dxt_fits(module, version, buf, bo, known, (counters or {}).get(DXT_OF[module]))
        if module == "LUSTRE":
            recs = parse_lustre(version, buf, bo)
            return recs if len(recs) and all(known(i, r) for i, r in zip(recs.file_id, recs.rank)) else None
        if module == "HEATMAP":
            recs = parse_heatmap(version, buf, bo)
            return recs if recs and all(known(r.id, r.rank) for r in recs) else None
    except (LogError, ValueError, IndexError, struct.error):
        return None
    return None


def _dxt_fits(module, version, buf, bo, known, base):
    """DXT_POSIX and DXT_MPIIO records look alike: a stream is one only if each record's operations fit in
    the counters of the same file and rank in the module it traces (POSIX, MPI-IO), already recovered."""
    if base is None:
        return None
    ops = _ops(base)
    seg = SEGMENT_LAYOUT[module][version][0]
    head = struct.Struct(bo + "Qq8x64xqq")
    pos = 0
    while pos < len(buf):
        if pos + DXT_HEADER > len(buf):
            return None
        rec_id, rank, writes, reads = head.unpack_from(buf, pos)
        if writes < 0 or reads < 0 or not known(rec_id, rank):
            return None
        counted = ops.get((rec_id, rank), ops.get((rec_id, -1)))
        if counted is None or writes > counted[0] or reads > counted[1]:
            return None
        pos += DXT_HEADER + (writes + reads) * seg
    if pos != len(buf) or not buf:
        return None

    cols = read_regions(buf, [(module, 0, len(buf), dxt_layout(module, version, bo))], "none", threads=1)[0]
    return dxt_records(module, cols)


DXT_OF = {"DXT_POSIX": "POSIX", "DXT_MPIIO": "MPI-IO"}
COUNTED_OPS = {"POSIX": (["POSIX_WRITES"], ["POSIX_READS"]),
               "MPI-IO": ([f"MPIIO_{k}_WRITES" for k in ("INDEP", "COLL", "SPLIT", "NB")],
                          [f"MPIIO_{k}_READS" for k in ("INDEP", "COLL", "SPLIT", "NB")])}


def _ops(recs) -> dict:
    """(file id, rank) -> (writes, reads) the counters of a module record."""
    names = COUNTER_NAMES[recs.module][0]
    w_cols, r_cols = ([names.index(c) for c in cols] for cols in COUNTED_OPS[recs.module])
    writes = recs.counters[:, w_cols].sum(axis=1)
    reads = recs.counters[:, r_cols].sum(axis=1)
    return {(int(i), int(r)): (int(w), int(x)) for i, r, w, x in zip(recs.ids, recs.ranks, writes, reads)}


@dataclass
class Streams:
    """What an unfinished log's whole zlib streams hold, in file order, as far as the format decides it."""
    version: str
    byte_order: str
    job: JobRecord
    job_stream: tuple  # (offset, length, inflated bytes)
    name_streams: list  # [(offset, length, inflated bytes)]
    names: dict
    modules: list  # [(offset, length, inflated bytes, module id, module version, records)], labelled streams
    missing: list  # what the file lacks after its header, named
    lib_versions: Optional[dict]  # the module versions of the runtime release (None: unknown)


def _first_job(path: str, data: bytes):
    """(log format, byte order, job record, streams after it), or LogError when there is no job region."""
    name = parse_log_name(path)
    said = f" (its name says {name.describe()})" if name else ""
    if not data:
        raise LogError(f"empty unfinished log: Darshan wrote nothing{said}; nothing to recover")
    found = _job_stream(data)
    if found is None:
        raise LogError(f"unfinished log with no header and no whole job region{said}; nothing to recover")
    return found


def label_streams(path: str, data: bytes) -> Streams:
    """Every whole stream of an unfinished log: the job, the name records, then each stream labelled with its
    module (recover's rule); LogError when not even the job region is whole."""
    version, bo, job, streams = _first_job(path, data)
    job_stream = next(_streams(data, HEADER_SIZES[version]))[:3]
    versions = module_versions(job.metadata.get("lib_ver", ""))
    order = [m for m in sorted(MODULE_NAMES) if versions and MODULE_NAMES[m] in versions]
    names: dict = {}
    name_streams, pending, missing = [], [], []
    end = None
    for offset, length, buf, whole in streams:
        if not whole:
            missing.append(f"a stream cut short at byte {offset} (the file ends inside it)")
            end = offset
            break
        parsed = _names(buf, version, bo) if not pending else None
        if parsed is not None and _valid_names(parsed) and not (names and _any_module_fits(
                buf, order, versions, bo, names, job.nprocs)):
            for rec_id, n in parsed.items():
                names.setdefault(rec_id, n)
            name_streams.append((offset, length, buf))
            continue
        pending.append((offset, length, buf))
    labels, stop = _label(pending, order, versions or {}, bo, names, job.nprocs)
    modules = [(*stream, *label) for stream, label in zip(pending, labels)]
    if stop is not None:
        missing.append(f"the stream at byte {pending[len(labels)][0]} and all after it ({stop}: not labelled)")
        end = pending[len(labels)][0]
    if not names:
        missing.append("name records")
    if versions is None:
        missing.append(f"every module region (runtime {job.metadata.get('lib_ver', '?')!r}: its module "
                       f"versions are not known to iolens)")
    current = modules[-1][3] if modules else 0  # the module id of the last stream labelled (0: the names)
    tail = [MODULE_NAMES[m] for m in order if m > current]
    if end is None and tail:
        missing.append("any module region after " + (MODULE_NAMES.get(current, "the name records"))
                       + " (the file ends there; the header that would list them was never written)")
    return Streams(version, bo, job, job_stream, name_streams, names, modules, missing, versions)


def recover(path: str, data: bytes, job_only: bool = False):
    """A RawLog of what an unfinished log holds (`raw.recovered`, `raw.missing`); LogError when nothing is.
    job_only: stop after the job region (grouping many logs needs no more)."""
    if job_only:
        version, bo, job, _ = _first_job(path, data)
        raw = RawLog(path, Header(version, bo, "zlib", HEADER_SIZES[version], 0, Region(0, 0)), job, {})
        raw.recovered, raw.missing = True, ["header (region map, module versions, partial flags)"]
        raw.notes.append(f"unfinished log ({Path(path).name}): no header; only its job region was read")
        return raw
    found = label_streams(path, data)
    header = Header(found.version, found.byte_order, "zlib", HEADER_SIZES[found.version], 0, Region(0, 0))
    raw = RawLog(path, header, found.job, dict(found.names))
    raw.recovered = True
    raw.missing = ["header (region map, module versions, partial flags)", *found.missing]
    modules: dict = {}  # module id -> [parsed streams]
    for _, length, _, mod_id, mod_version, recs in found.modules:
        modules.setdefault(mod_id, []).append((mod_version, recs, length))
    for mod_id, parts in sorted(modules.items()):
        _store(raw, ModuleInfo, mod_id, parts)
    raw.notes.append("unfinished log (" + Path(path).name + "): no header; recovered " +
                     ", ".join(["job"] + (["name records"] if raw.names else []) +
                               [MODULE_NAMES[m] for m in sorted(modules)]) +
                     "; every value is recovered. Missing: " + "; ".join(raw.missing))
    return raw


def cut_after_header(path: str, data: bytes, header: Header, job_end: int) -> list:
    """An unfinished log whose header was written but whose file ends early: the regions the header maps that
    lie whole in the file are kept; the one the file ends inside keeps its whole streams (one per rank); the
    ones after it are dropped from `header`. What is missing, named; LogError when the job region is cut."""
    size = len(data)
    if job_end > size:
        name = parse_log_name(path)
        said = f" (its name says {name.describe()})" if name else ""
        raise LogError(f"unfinished log cut inside its job region{said}; nothing to recover")
    missing = []
    regions = [("name records", None, header.name_region)] + [
        (MODULE_NAMES.get(m, f"module {m}"), m, r) for m, r in header.module_regions.items()]
    for label, mod_id, region in sorted(regions, key=lambda item: item[2].offset):
        if not region.length or region.offset + region.length <= size:
            continue
        whole = 0
        if region.offset < size and header.compression == "zlib":
            whole = sum(n for _, n, _, ok in _streams(data[:region.offset + region.length], region.offset) if ok)
        if whole:
            missing.append(f"{label}: the file ends inside its region (its first {whole:,} of {region.length:,} "
                           "compressed bytes, whole streams, are read)")
            region.length = whole
            continue
        missing.append(f"{label} (the file ends {'inside' if region.offset < size else 'before'} its region)")
        if mod_id is None:
            header.name_region = Region(0, 0)
        else:
            del header.module_regions[mod_id]
    return missing


def _so_far(modules: dict) -> dict:
    """The counter records recovered so far, by module name (several streams of one module concatenated)."""
    out = {}
    for mod_id, parts in modules.items():
        if MODULE_NAMES[mod_id] in COUNTED_OPS:
            recs = parts[0][1]
            for _, more, _ in parts[1:]:
                recs = _concat_counters(recs, more)
            out[MODULE_NAMES[mod_id]] = recs
    return out


def _stream_rank(recs) -> int:
    """The rank whose buffer a stream holds (rank 0's also holds the shared records, rank -1)."""
    if isinstance(recs, list):
        ranks = [r.rank for r in recs]
    else:
        ranks = list(getattr(recs, "ranks", getattr(recs, "rank", [0])))
    return max([0] + [int(r) for r in ranks])


def _label(pending: list, order: list, versions: dict, bo: str, names: dict, nprocs: int):
    """The module of each stream, as far as the format decides it; (labels, why the rest is not labelled).

    Regions come in increasing module id; inside a region, one stream per rank in increasing rank. A stream
    is labelled only when every labelling of all the whole streams that obeys this agrees on it."""
    sure: dict = {}  # counters of streams with one possible module, for telling DXT_POSIX from DXT_MPIIO
    cands = []
    for _, _, buf in pending:
        fits = [(m, v, recs) for m in order for v in versions[MODULE_NAMES[m]]
                if (recs := _fits(MODULE_NAMES[m], v, buf, bo, names, nprocs, sure)) is not None]
        if not fits:
            break
        if len({m for m, _, _ in fits}) == 1 and MODULE_NAMES[fits[0][0]] in COUNTED_OPS:
            name = MODULE_NAMES[fits[0][0]]
            sure[name] = _concat_counters(sure[name], fits[0][2]) if name in sure else fits[0][2]
        cands.append([(m, v, recs, _stream_rank(recs)) for m, v, recs in fits])
    n = len(cands)

    def follows(a, b) -> bool:  # may stream b come right after stream a?
        return b[0] > a[0] or (b[0] == a[0] and b[3] > a[3])

    forward = [cands[0]] if n else []
    for i in range(1, n):
        forward.append([c for c in cands[i] if any(follows(p, c) for p in forward[i - 1])])
    backward = [None] * n
    for i in reversed(range(n)):
        backward[i] = [c for c in forward[i] if i == n - 1 or any(follows(c, d) for d in backward[i + 1])]
    labels = []
    for i in range(n):
        options = backward[i]
        if len(options) != 1:
            mods = sorted({MODULE_NAMES[m] for m, _, _, _ in options})
            return labels, ("the records of " + " or ".join(mods) + " fit it") if mods else "no order fits"
        labels.append(options[0][:3])
    if n < len(pending):
        return labels, "no module's records fit it"
    return labels, None


def _any_module_fits(buf, order, versions, bo, names, nprocs) -> bool:
    return any(_fits(MODULE_NAMES[m], v, buf, bo, names, nprocs) is not None
               for m in order for v in versions[MODULE_NAMES[m]])


def _store(raw, module_info, mod_id: int, parts: list) -> None:
    name = MODULE_NAMES[mod_id]
    version = parts[0][0]
    info = module_info(mod_id, name, version, False, sum(p[2] for p in parts), True, note="recovered")
    if name in LAYOUTS:
        recs = parts[0][1]
        for _, more, _ in parts[1:]:
            recs = _concat_counters(recs, more)
        raw.counters[name] = recs
        info.records = len(recs.ids)
    elif name in SEGMENT_LAYOUT:
        recs = parts[0][1]
        for _, more, _ in parts[1:]:
            recs = _concat_dxt(recs, more)
        raw.dxt[name] = recs
        info.records = len(recs.ids)
    elif name == "LUSTRE":
        raw.lustre = parts[0][1]  # one stream per rank is rare for Lustre; the first is kept whole
        info.records = len(raw.lustre)
    elif name == "HEATMAP":
        raw.heatmap = [r for _, recs, _ in parts for r in recs]
        info.records = len(raw.heatmap)
    raw.modules.append(info)


def _concat_counters(a, b):

    fr = None if a.file_rec_ids is None else np.concatenate([a.file_rec_ids, b.file_rec_ids])
    return CounterRecords(a.module, np.concatenate([a.ids, b.ids]), np.concatenate([a.ranks, b.ranks]),
                          np.concatenate([a.counters, b.counters]), np.concatenate([a.fcounters, b.fcounters]),
                          fr, a.skipped + b.skipped)


def _concat_dxt(a, b):

    return DxtRecords(a.module, np.concatenate([a.ids, b.ids]), np.concatenate([a.ranks, b.ranks]),
                      a.hostnames + b.hostnames, np.concatenate([a.write_counts, b.write_counts]),
                      np.concatenate([a.read_counts, b.read_counts]), a.chunks + b.chunks)
