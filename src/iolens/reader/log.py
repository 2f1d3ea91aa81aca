"""Read a whole Darshan log into plain records and arrays (no tables, no analysis)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import LogError
from .counters import LAYOUTS, CounterRecords, parse_counters
from .dxt import SEGMENT_LAYOUT, DxtRecords, parse_dxt
from .header import MODULE_NAMES, Header, job_region, parse_header
from .heatmap import parse_heatmap
from .job import JobRecord, parse_job
from .lustre import parse_lustre
from .names import parse_names
from .regions import inflate_regions


@dataclass
class ModuleInfo:
    id: int
    name: str
    version: int
    partial: bool
    compressed_bytes: int
    supported: bool
    records: int = 0
    note: str = ""


@dataclass
class RawLog:
    path: str
    header: Header
    job: JobRecord
    names: dict
    modules: list = field(default_factory=list)
    counters: dict = field(default_factory=dict)  # module -> CounterRecords
    dxt: dict = field(default_factory=dict)  # module -> DxtRecords
    lustre: list = field(default_factory=list)
    heatmap: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def read_raw(path: str, progress=None) -> RawLog:
    """Parse `path`; raise LogError with a one-line reason when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except IsADirectoryError:
        raise LogError("is a directory, not a Darshan log", path) from None
    except OSError as exc:
        raise LogError(exc.strerror or str(exc), path) from None
    try:
        return _parse(path, data, progress)
    except LogError as exc:
        exc.path = exc.path or path
        raise
    except (ValueError, OverflowError, MemoryError, IndexError, UnicodeError) as exc:
        raise LogError(f"corrupt log ({type(exc).__name__}: {exc})", path) from None


def _parse(path: str, data: bytes, progress) -> RawLog:
    if not data:
        raise LogError("empty file, not a Darshan log")
    header = parse_header(data, len(data))
    jr = job_region(header, len(data))
    if jr.length <= 0:
        raise LogError("truncated: no job region after the header")
    infos = []
    for mod_id, reg in sorted(header.module_regions.items()):
        name = MODULE_NAMES.get(mod_id, f"module {mod_id}")
        supported = name in LAYOUTS or name in SEGMENT_LAYOUT or name in ("LUSTRE", "HEATMAP")
        infos.append((ModuleInfo(mod_id, name, header.module_versions[mod_id],
                                 bool(header.partial_mask >> mod_id & 1), reg.length, supported), reg))
    # every region iolens reads, inflated up front (in threads when big); skipped modules are not touched
    wanted = [("job", jr.offset, jr.length)]
    if header.name_region.length:
        wanted.append(("name records", header.name_region.offset, header.name_region.length))
    wanted += [(info.name, reg.offset, reg.length) for info, reg in infos if info.supported]
    bufs = inflate_regions(data, wanted, header.compression, progress)
    bufs.reverse()  # popped in order, so each buffer is freed once parsed
    job = parse_job(bufs.pop(), header.version, header.byte_order)
    names = parse_names(bufs.pop(), header.version, header.byte_order) if header.name_region.length else {}
    raw = RawLog(path, header, job, names)
    for info, _reg in infos:
        raw.modules.append(info)
        if not info.supported:
            info.note = "not modelled by iolens; skipped"
            raw.notes.append(f"module {info.name} is present but not modelled by iolens; skipped")
        else:
            _read_module(raw, info, bufs.pop())
    return raw


def _read_module(raw: RawLog, info: ModuleInfo, buf: bytes) -> None:
    bo = raw.header.byte_order
    if info.name in LAYOUTS:
        recs: CounterRecords = parse_counters(info.name, info.version, buf, bo)
        raw.counters[info.name] = recs
        info.records = len(recs.ids)
        if recs.skipped:
            raw.notes.append(f"{info.name}: {recs.skipped} records of module version 1 used stdio "
                             f"counters and cannot be converted (skipped, as darshan-util does)")
    elif info.name in SEGMENT_LAYOUT:
        recs: DxtRecords = parse_dxt(info.name, info.version, buf, bo)
        raw.dxt[info.name] = recs
        info.records = len(recs.ids)
    elif info.name == "LUSTRE":
        raw.lustre = parse_lustre(info.version, buf, bo)
        info.records = len(raw.lustre)
    elif info.name == "HEATMAP":
        raw.heatmap = parse_heatmap(info.version, buf, bo)
        info.records = len(raw.heatmap)


def file_size(path: str) -> int:
    return os.path.getsize(path)
