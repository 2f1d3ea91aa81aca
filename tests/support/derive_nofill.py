"""Derive, from the real `generated/fill_rank0.darshan`, the log of the same run without its fill phase.

fill_rank0: rank 0 alone writes a 256 MiB shared file in 1 MiB MPI-IO writes (the fill) while ranks 1-7
wait, then every rank writes its own 32 MiB block. The derived log is what Darshan would have recorded
had the fill not been done: rank 0's fill writes are removed from both DXT traces and from the POSIX and
MPI-IO counters (operations, bytes, size bins, access counters, time), and every time after the fill is
moved earlier by the fill's duration. The heatmap (a time histogram we would have to rebuild) is dropped.

Only the standard library, tests/support/logtools.py and PyDarshan's counter-name tables are used: never iolens.
"""
from __future__ import annotations

import struct
from pathlib import Path

from darshan.backend.cffi_backend import counter_names

from .logtools import read_parts, rewrite_log

FILL_BYTES = 1 << 20  # each fill write (Darshan's 100K_1M size bin holds it: upper bound inclusive)
DXT_HEADER = struct.Struct("<Qqq64sqq")  # id, rank, shared, hostname, writes, reads
SEGMENT = struct.Struct("<qqdd")  # offset, length, start, end


def _walk_dxt(buf: bytes):
    pos = 0
    while pos < len(buf):
        rec_id, rank, shared, host, nw, nr = DXT_HEADER.unpack_from(buf, pos)
        segs = [list(SEGMENT.unpack_from(buf, pos + DXT_HEADER.size + k * SEGMENT.size)) for k in range(nw + nr)]
        yield [rec_id, rank, shared, host, nw, nr], segs
        pos += DXT_HEADER.size + (nw + nr) * SEGMENT.size


def _fill_of(buf: bytes):
    """(number of fill writes, their summed duration, the shift) from a DXT region: rank 0 writes as
    many 1 MiB writes of its own block as every other rank; the writes before those are the fill."""
    counts = {hdr[1]: hdr[4] for hdr, _ in _walk_dxt(buf)}
    own = max(n for rank, n in counts.items() if rank != 0)
    n_fill = counts[0] - own
    segs = next(segs for hdr, segs in _walk_dxt(buf) if hdr[1] == 0)
    fill = segs[:n_fill]
    assert all(s[1] == FILL_BYTES for s in fill)
    shift = segs[n_fill][2] - fill[0][2]
    return n_fill, sum(s[3] - s[2] for s in fill), shift


def _strip_dxt(buf: bytes, n_fill: int, shift: float) -> bytes:
    out = bytearray()
    for hdr, segs in _walk_dxt(buf):
        if hdr[1] == 0:
            segs = segs[n_fill:]
            hdr[4] -= n_fill
        out += DXT_HEADER.pack(*hdr)
        for off, length, start, end in segs:
            out += SEGMENT.pack(off, length, max(start - shift, 0.0), max(end - shift, 0.0))
    return bytes(out)


def _edit_counters(buf: bytes, module: str, edits: dict, fedits: dict, shift: float) -> bytes:
    names, fnames = counter_names(module), counter_names(module, fcnts=True)
    rec = struct.Struct(f"<Qq{len(names)}q{len(fnames)}d")
    out = bytearray()
    for pos in range(0, len(buf), rec.size):
        vals = list(rec.unpack_from(buf, pos))
        counters, fcounters = vals[2:2 + len(names)], vals[2 + len(names):]
        for name, delta in edits.items():
            counters[names.index(name)] += delta
        for name, delta in fedits.items():
            fcounters[fnames.index(name)] += delta
        for i, name in enumerate(fnames):
            if name.endswith("_TIMESTAMP") and fcounters[i] > shift:
                fcounters[i] -= shift
        out += rec.pack(*vals[:2], *counters, *fcounters)
    return bytes(out)


def _shift_job_end(parts, shift: float) -> None:
    sec, nsec = struct.unpack_from("<qq", parts.job, 24)
    end = sec + nsec / 1e9 - shift
    job = bytearray(parts.job)
    struct.pack_into("<qq", job, 24, int(end), int(round((end - int(end)) * 1e9)))
    parts.job = bytes(job)


def derive_nofill(src: Path, dst: Path) -> Path:
    parts = read_parts(src)
    n_posix, t_posix, shift = _fill_of(parts.module("DXT_POSIX"))
    n_mpiio, t_mpiio, _ = _fill_of(parts.module("DXT_MPIIO"))
    fill_bytes = n_posix * FILL_BYTES
    posix = {"POSIX_WRITES": -n_posix, "POSIX_BYTES_WRITTEN": -fill_bytes, "POSIX_SIZE_WRITE_100K_1M": -n_posix,
             "POSIX_SEQ_WRITES": -n_posix, "POSIX_ACCESS1_COUNT": -n_posix}
    mpiio = {"MPIIO_INDEP_WRITES": -n_mpiio, "MPIIO_BYTES_WRITTEN": -fill_bytes,
             "MPIIO_SIZE_WRITE_AGG_100K_1M": -n_mpiio, "MPIIO_ACCESS1_COUNT": -n_mpiio}
    return rewrite_log(
        src, dst, drop_modules=["HEATMAP"],
        modules={
            "DXT_POSIX": lambda b: _strip_dxt(b, n_posix, shift),
            "DXT_MPIIO": lambda b: _strip_dxt(b, n_mpiio, shift),
            "POSIX": lambda b: _edit_counters(b, "POSIX", posix, {"POSIX_F_WRITE_TIME": -t_posix,
                                                                  "POSIX_F_SLOWEST_RANK_TIME": -t_posix}, shift),
            "MPI-IO": lambda b: _edit_counters(b, "MPI-IO", mpiio, {"MPIIO_F_WRITE_TIME": -t_mpiio,
                                                                    "MPIIO_F_SLOWEST_RANK_TIME": -t_mpiio}, shift),
        },
        edit=lambda parts: _shift_job_end(parts, shift))
