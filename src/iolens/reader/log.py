"""Read a whole Darshan log into plain records and arrays (no tables, no analysis)."""
from __future__ import annotations

import os

from ..errors import LogError
from .counters import LAYOUTS, CounterRecords, parse_counters
from .folders import NOTHING_HERE
from . import dxt as dxt_region
from .header import MODULE_NAMES, job_region, parse_header
from .inputs import refuse_special
from .heatmap import parse_heatmap
from .job import parse_job
from .lustre import parse_lustre
from .names import parse_names
from .raw import ModuleInfo, RawLog
from .recover import PARTIAL_SUFFIX, cut_after_header, is_unfinished, recover
from .regions import inflate, read_regions
from .skipped import LAYOUTS as SKIPPED_LAYOUTS, summarise


NOT_READ = "not read (left out by the caller)"
JOB_PREFIX = 1 << 14  # bytes read first by read_job_only: the header and, nearly always, the whole job region


def read_raw(path: str, progress=None, regions=None) -> RawLog:
    """Parse `path`; raise LogError with a one-line reason when it cannot be read.

    regions: the regions to inflate besides the header and the job ("names" for the name records, modules
    by their Darshan name: "POSIX", "DXT_POSIX", "LUSTRE", ...); None reads every region iolens models.
    A module left out is still listed in `modules` (with its partial flag) but has no records: a caller
    that needs a few modules of many logs skips inflating the rest."""
    data = log_bytes(path, NOTHING_HERE)
    try:
        return _parse(path, data, progress, regions)
    except LogError as exc:
        exc.path = exc.path or path
        raise
    except (ValueError, OverflowError, MemoryError, IndexError, UnicodeError) as exc:
        raise LogError(f"corrupt log ({type(exc).__name__}: {exc})", path) from None


def log_bytes(path: str, is_dir: str) -> bytes:
    """The whole file at `path`; LogError (one line: `is_dir` for a folder, else the OS's reason) otherwise."""
    refuse_special(path, "a Darshan log")
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except IsADirectoryError:
        raise LogError(is_dir, path) from None
    except OSError as exc:
        raise LogError(exc.strerror or str(exc), path) from None


def read_job_only(path: str) -> RawLog:
    """The header and the job region of `path` and nothing else (no other byte is read): who ran, when.
    An unfinished log (no header) is recovered whole. LogError as `read_raw`."""
    refuse_special(path, "a Darshan log")
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(JOB_PREFIX)
            if is_unfinished(path, head) or len(head) < 16:
                return read_raw(path, regions=())
            header = parse_header(head, size)
            end = job_region(header, size)
            if end.offset + end.length > len(head):
                fh.seek(0)
                head = fh.read(end.offset + end.length)
    except IsADirectoryError:
        raise LogError("is a directory, not a Darshan log", path) from None
    except OSError as exc:
        raise LogError(exc.strerror or str(exc), path) from None
    except LogError as exc:
        exc.path = exc.path or path
        raise
    try:
        return _parse(path, head, None, (), file_size=size, header=header)
    except LogError as exc:
        exc.path = exc.path or path
        raise
    except (ValueError, OverflowError, MemoryError, IndexError, UnicodeError) as exc:
        raise LogError(f"corrupt log ({type(exc).__name__}: {exc})", path) from None


def _parse(path: str, data: bytes, progress, regions=None, file_size=None, header=None) -> RawLog:
    if is_unfinished(path, data) and not (len(data) >= 16 and any(data[:16])):
        # the header was never written: read what Darshan wrote before it
        return recover(path, data, job_only=regions == ())
    if not data:
        raise LogError("empty file, not a Darshan log")
    size = len(data) if file_size is None else file_size  # read_job_only holds only the file's first bytes
    cut = None  # what an unfinished log cut after its header lacks
    if header is None:
        header, jr, cut = _header(path, data, size)
    else:
        jr = job_region(header, size)
    if jr.length <= 0:
        raise LogError("truncated: no job region after the header")
    bo, version = header.byte_order, header.version
    # the job first: its process count bounds the number of compressed streams in every other region
    job = parse_job(inflate(data, jr.offset, jr.length, header.compression, "job"), version, bo)
    raw = RawLog(path, header, job, {})
    # every other region iolens reads; skipped modules are not touched
    wanted, readers = [], []
    if header.name_region.length and (regions is None or "names" in regions):
        wanted.append(("name records", header.name_region.offset, header.name_region.length, None))
        readers.append(lambda buf: raw.names.update(parse_names(buf, version, bo)))
    for mod_id, reg in sorted(header.module_regions.items()):
        name = MODULE_NAMES.get(mod_id, f"module {mod_id}")
        supported = name in LAYOUTS or name in dxt_region.SEGMENT_LAYOUT or name in ("LUSTRE", "HEATMAP")
        info = ModuleInfo(mod_id, name, header.module_versions[mod_id], bool(header.partial_mask >> mod_id & 1),
                          reg.length, supported)
        raw.modules.append(info)
        if not supported:
            if (regions is None or name in regions) and (name, info.version) in SKIPPED_LAYOUTS:  # what was unseen
                wanted.append((name, reg.offset, reg.length, None))
                readers.append(lambda buf, info=info: _skipped(raw, info, buf))
            else:
                info.skipped = summarise(name, info.version, None, bo)
            continue
        if regions is not None and name not in regions:
            info.note = NOT_READ
            continue
        if name in dxt_region.SEGMENT_LAYOUT:
            wanted.append((name, reg.offset, reg.length, dxt_region.layout(name, info.version, bo)))
            readers.append(lambda cols, name=name: _read_dxt(raw, name, cols))
        else:
            wanted.append((name, reg.offset, reg.length, None))
            readers.append(lambda buf, info=info: _read_module(raw, info, buf))
    for read, result in zip(readers, read_regions(data, wanted, header.compression, progress)):
        read(result)
    if cut is not None:
        _flag_cut(raw, cut, size)
    for info in raw.modules:
        if not info.supported:
            info.note = "not modelled by iolens; skipped"
            raw.notes.append(f"module {info.name} is present but not modelled by iolens; skipped")
        elif info.name in raw.dxt:
            info.records = len(raw.dxt[info.name].ids)
        elif info.name in raw.counters and raw.counters[info.name].skipped:
            raw.notes.append(f"{info.name}: {raw.counters[info.name].skipped} records of module version 1 used "
                             f"stdio counters and cannot be converted (skipped, as darshan-util does)")
    return raw


def _header(path: str, data: bytes, size: int):
    """(header, job region, None), or for an unfinished log cut after its header was written (header, job
    region, what it lacks): the header trimmed to what is whole (recover.cut_after_header)."""
    try:
        header = parse_header(data, size)
        return header, job_region(header, size), None
    except LogError:
        if not str(path).endswith(PARTIAL_SUFFIX):
            raise
        header = parse_header(data, size, bounded=False)  # any other fault of the header still raises
        job = job_region(header, size)  # from the header's whole map, before it is trimmed
        return header, job, cut_after_header(path, data, header, job.offset + job.length)


def _flag_cut(raw: RawLog, missing: list, size: int) -> None:
    raw.recovered, raw.missing = True, missing
    for info in raw.modules:
        if info.supported:
            info.note = info.note or "recovered"
    read = ["job"] + (["name records"] if raw.names else []) + [m.name for m in raw.modules if m.note == "recovered"]
    raw.notes.append(f"unfinished log ({os.path.basename(raw.path)}): its header was written but the file ends at "
                     f"byte {size:,}; recovered " + ", ".join(read) + "; every value is recovered. Missing: "
                     + "; ".join(missing))


def _skipped(raw: RawLog, info: ModuleInfo, buf: bytes) -> None:
    info.skipped = summarise(info.name, info.version, buf, raw.header.byte_order)


def _read_dxt(raw: RawLog, module: str, columns: dict) -> None:
    raw.dxt[module] = dxt_region.records(module, columns)


def _read_module(raw: RawLog, info: ModuleInfo, buf: bytes) -> None:
    bo = raw.header.byte_order
    if info.name in LAYOUTS:
        recs: CounterRecords = parse_counters(info.name, info.version, buf, bo)
        raw.counters[info.name] = recs
        info.records = len(recs.ids)
    elif info.name == "LUSTRE":
        raw.lustre = parse_lustre(info.version, buf, bo)
        info.records = len(raw.lustre)
    elif info.name == "HEATMAP":
        raw.heatmap = parse_heatmap(info.version, buf, bo)
        info.records = len(raw.heatmap)
