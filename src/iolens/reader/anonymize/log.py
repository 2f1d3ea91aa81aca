"""One Darshan log anonymised: every region rewritten in the log's own format version, byte order and
compression, each module kept only if its layout is known (never copied blind).

A finished log is written as a finished log (header, job, names, modules); an unfinished one
(`.darshan_partial`, header still zeros) as an unfinished one: the same whole streams in the same order,
each rewritten, and whatever could not be labelled left out.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional

from ...errors import LogError
from ..counters import LAYOUTS
from ..dxt import SEGMENT_LAYOUT
from ..header import MODULE_NAMES, job_region, parse_header
from ..regions import workers
from ..recover import PARTIAL_SUFFIX, cut_after_header, is_unfinished, label_streams
from ..writer import LogImage, Module, Region, encode_log, encode_unfinished, inflate_region, zlib_stream
from . import records
from .job import job_ints, rewrite_job, split_exe
from .records import DATASET_MODULES, IdMap, Unwritable
from .report import Report
from .tokens import Tokens, is_darshan_name

# Modules iolens does not model: their layouts are not rewritten, so they are left out.
NOT_MODELLED = {
    "BG/Q": "Blue Gene/Q machine description (not rewritten by iolens)",
    "MDHIM": "MDHIM key-value records (not rewritten by iolens)",
    "APXC": "Cray XC network counters, with router and node ids (not rewritten by iolens)",
    "APMPI": "per-call MPI statistics (not rewritten by iolens)",
    "DFS": "DAOS file-system records, with pool and container ids (not rewritten by iolens)",
    "DAOS": "DAOS object records, with pool, container and object ids (not rewritten by iolens)",
}
# Darshan's own log file name: <user>_<program>_id<jobid>-<pid>_<month>-<day>-<seconds>-<hash>[_<n>]
LOG_NAME = re.compile(r"(?P<who>.+)_id(?P<jobid>\d+)-(?P<pid>\d+)_(?P<month>\d+)-(?P<day>\d+)-(?P<seconds>\d+)"
                      r"-(?P<hash>\d+)(?P<n>_\d+)?(?P<suffix>\.darshan(?:_partial)?)$")


@dataclass
class Anonymized:
    name: str  # the output file's name
    pieces: object  # the log as (offset, bytes) pieces, compressed as they are taken (writer.encode_log)
    report: Report


def modelled(module: str) -> bool:
    return module in LAYOUTS or module in SEGMENT_LAYOUT or module in ("LUSTRE", "HEATMAP")


def anonymize_data(path: str, data: bytes, tokens: Tokens, compression: Optional[str] = None) -> Anonymized:
    """The anonymised log of `data` (the bytes of the log at `path`, whose file name also speaks).
    `compression`: write a finished log's regions so instead of as the original is (None)."""
    if is_unfinished(path, data):
        if not data and str(path).endswith(PARTIAL_SUFFIX):
            return _empty_unfinished(path, tokens)
        if not (len(data) >= 16 and any(data[:16])):
            return _unfinished(path, data, tokens)
    if not data:
        raise LogError("empty file, not a Darshan log")
    report = Report()
    try:
        header = parse_header(data, len(data))
        job_at = job_region(header, len(data))
    except LogError:
        if not str(path).endswith(PARTIAL_SUFFIX):
            raise
        header = parse_header(data, len(data), bounded=False)
        job_at = job_region(header, len(data))
        missing = cut_after_header(path, data, header, job_at.offset + job_at.length)
        report.unfinished = True
        report.dropped += [f"{m} (the file ends early; written as a finished log of what is whole)" for m in missing]
    if job_at.length <= 0:
        raise LogError("truncated: no job region after the header")
    comp = header.compression

    def region(offset, length, label):
        return inflate_region(memoryview(data)[offset:offset + length], comp, label)

    job = region(job_at.offset, job_at.length, "job").data
    names_region = region(header.name_region.offset, header.name_region.length, "name records") \
        if header.name_region.length else Region(b"")
    modules = {}
    for mod_id, reg in sorted(header.module_regions.items()):
        name = MODULE_NAMES.get(mod_id, f"module {mod_id}")
        if not modelled(name):
            report.dropped.append(f"module {name}: " + NOT_MODELLED.get(name, "a module iolens does not know"))
            continue
        modules[mod_id] = (name, header.module_versions[mod_id], region(reg.offset, reg.length, name),
                           bool(header.partial_mask >> mod_id & 1))
    parts = _Parts(header.version, header.byte_order, tokens, report)
    parts.read_names([(names_region, records.name_entries(names_region.data, header.version, header.byte_order))])
    parts.read_datasets([(name, version, reg.data) for name, version, reg, _ in modules.values()])
    new_job = parts.job(job, _pid(path))
    image = LogImage(header.version, header.byte_order, compression or comp, Region(new_job), None)
    for mod_id, (name, version, reg, partial) in modules.items():
        rewritten = parts.module(name, version, reg)
        if rewritten is not None:
            image.modules[mod_id] = Module(version, rewritten, partial)
    image.names = parts.names()[0] if names_region.data else None
    _describe(report, path, header.version, header.byte_order, image.compression, tokens, parts.command)
    return Anonymized(report.output, encode_log(image, workers()), report)


class _Parts:
    """The pieces of one log as they are rewritten: its names first (the new ids come from them)."""

    def __init__(self, version: str, bo: str, tokens: Tokens, report: Report):
        self.version, self.bo, self.tokens, self.report = version, bo, tokens, report
        self.entries: list = []  # [(Region, [(offset, id, name)])] per name region or stream
        self.names_by_id: dict = {}
        self.datasets: dict = {}
        self.ids: Optional[IdMap] = None
        self.command = b""

    def read_names(self, regions: list) -> None:
        self.entries = regions
        self.names_by_id = records.winning_names([e for _, entries in regions for e in entries])

    def read_datasets(self, modules: list) -> None:
        """Which file each dataset record belongs to (HDF5 datasets, PnetCDF variables), then the new ids."""
        prefixed = []
        for name, version, data in modules:
            if name not in DATASET_MODULES:
                continue
            try:
                self.datasets.update(records.dataset_files(name, version, data, self.bo, self.names_by_id))
                prefixed += records.record_ids(name, version, data, self.bo).tolist()
            except (Unwritable, LogError):
                continue  # the module itself is judged when it is rewritten
        for rec_id, file_name in records.dataset_files_by_prefix(
                [i for i in prefixed if i not in self.datasets], self.names_by_id).items():
            self.datasets[rec_id] = file_name
        renamed = records.new_names(self.names_by_id, self.datasets, self.tokens, self.report)
        self.report.count("path_components", len({c for n in self.names_by_id.values() if not is_darshan_name(n)
                                                  for c in n.split(b"/") if c not in (b"", b".", b"..")}))
        self.ids = IdMap(self.tokens, renamed, self.report)

    def job(self, buf: bytes, pid) -> bytes:
        new_job = rewrite_job(buf, self.version, self.bo, self.tokens, self.report, pid,
                              [n for n in self.names_by_id.values() if not is_darshan_name(n)])
        fixed = job_ints(self.version) * 8 + 1024
        self.command = split_exe(buf[fixed:].split(b"\0", 1)[0])[0]
        return new_job

    def module(self, name: str, version: int, region: Region) -> Optional[Region]:
        """The module's region rewritten, or None (dropped, and said) when its layout is not known."""
        try:
            if name in LAYOUTS:
                return records.rewrite_counters(region, name, version, self.bo, self.ids)
            if name == "LUSTRE":
                return records.rewrite_lustre(region, version, self.bo, self.ids, self.tokens, self.report)
            if name == "HEATMAP":
                return records.rewrite_heatmap(region, version, self.bo, self.ids, self.report)
            return records.rewrite_dxt(region, name, version, self.bo, self.ids, self.tokens, self.report)
        except Unwritable as exc:
            self.report.dropped.append(f"module {name}: {exc} (its layout is not known, so it is not copied)")
            return None

    def names(self) -> list:
        return [records.rewrite_names(region, entries, self.version, self.bo, self.ids, self.datasets, self.tokens)
                for region, entries in self.entries]


def _unfinished(path: str, data: bytes, tokens: Tokens) -> Anonymized:
    """An unfinished log (no header): each whole stream recover() labels, rewritten, in the same order."""
    found = label_streams(path, data)
    report = Report(unfinished=True)
    parts = _Parts(found.version, found.byte_order, tokens, report)
    parts.read_names([(Region(buf), records.name_entries(buf, found.version, found.byte_order))
                      for _, _, buf in found.name_streams])
    parts.read_datasets([(MODULE_NAMES[m], v, buf) for _, _, buf, m, v, _ in found.modules])
    streams = [zlib_stream(parts.job(found.job_stream[2], _pid(path)))]
    streams += [zlib_stream(region.data) for region in parts.names()]
    for _, _, buf, mod_id, version, _ in found.modules:
        rewritten = parts.module(MODULE_NAMES[mod_id], version, Region(buf))
        if rewritten is not None:
            streams.append(zlib_stream(rewritten.data))
    report.dropped += [f"{m} (not in the unfinished log, or not labelled: left out)" for m in found.missing]
    _describe(report, path, found.version, found.byte_order, "zlib", tokens, parts.command)
    return Anonymized(report.output, encode_unfinished(found.version, streams), report)


def _empty_unfinished(path: str, tokens: Tokens) -> Anonymized:
    report = Report(unfinished=True)
    report.dropped.append("nothing: Darshan wrote nothing to this unfinished log; only its file name speaks "
                          "(and is anonymised)")
    report.output = output_name(path, tokens, None)
    report.count("log_name")
    return Anonymized(report.output, [], report)


def _describe(report: Report, path: str, version: str, bo: str, compression: str, tokens: Tokens,
              command: bytes) -> None:
    report.log_format, report.byte_order, report.compression = version, "little" if bo == "<" else "big", compression
    report.output = output_name(path, tokens, command)
    report.count("log_name")


def _pid(path: str) -> Optional[int]:
    m = LOG_NAME.search(os.path.basename(str(path)))
    return int(m["pid"]) if m else None


def output_name(path: str, tokens: Tokens, command: Optional[bytes]) -> str:
    """The anonymised log's file name. Darshan's own pattern keeps its shape: user and program as their
    tokens, the job id as the log's (kept when it is the pid), the pid and date kept, the hash replaced;
    any other name becomes its token with the same suffix."""
    base = os.path.basename(str(path))
    m = LOG_NAME.search(base)
    if not m:
        for suffix in (PARTIAL_SUFFIX, ".darshan", ""):
            if base.endswith(suffix) and len(base) > len(suffix):
                stem = base[:len(base) - len(suffix)] if suffix else base
                return tokens.component(os.fsencode(stem)).decode() + suffix
    who = os.fsencode(m["who"])  # a file name: its own bytes, UTF-8 or not
    words = command.split() if command else []
    program = os.path.basename(words[0]) if words else b""
    if program and who.endswith(b"_" + program):
        user = who[:-len(program) - 1]
    else:
        user, _, program = who.rpartition(b"_") if b"_" in who else (who, b"", b"")
    name = tokens.component(user)
    if program:
        name += b"_" + tokens.program_name(program)
    jobid, pid = int(m["jobid"]), int(m["pid"])
    job = jobid if jobid == pid else tokens.jobid(jobid)
    return (f"{name.decode()}_id{job}-{pid}_{m['month']}-{m['day']}-{m['seconds']}-"
            f"{tokens.log_name_number(m['hash'])}{m['n'] or ''}{m['suffix']}")
