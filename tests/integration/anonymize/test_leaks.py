"""Nothing identifying survives `iolens anonymize`: searched for, byte for byte, in every inflated region.

Each shared log is first made distinctive with the standard-library writer of tests/logtools.py (independent of
iolens): every path component, command-line word, mount point, DXT host name, Lustre pool name and an added
metadata line gets the marker ZQX...QXZ, the uid and job id become distinctive numbers, and the file is given a
Darshan-style name holding all of them. After `iolens anonymize`, neither marker, nor the numbers (as 8-byte
integers in the log's byte order or as text), nor any original record id (each one a hash of an original path,
that a guessed path could be checked against) may occur in the file, in any inflated region, in the output's
name or in the report.
"""
from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from iolens.reader.anonymize import Key, Tokens, write_anonymized
from iolens.reader.anonymize.tokens import is_darshan_name

from support.cli import run_iolens
from support.corpus import LOGS, all_logs, each_kind, log_id
from support.dxt_writer import dxt_records, set_dxt_records
from support.logtools import read_parts, write_parts

MARK, END = b"ZQX", b"QXZ"
UID, JOBID, PID = 7411234567891, 9876543210123, 31337
SECRET_NAME = f"ZQXaliceQXZ_ZQXappQXZ_id{JOBID}-{PID}_11-24-79683-1234567890123456789_1.darshan"
CLI_LOGS = ("aligned.darshan", "mpi-io-test-ppc64-3.1.6.darshan", "ior_hdf5_example.darshan")  # through the command
HEADERLESS = sorted(p for p in LOGS.glob("**/*.darshan_partial") if p.stat().st_size) if LOGS.is_dir() else []


def marked(word: bytes) -> bytes:
    return MARK + word + END if word not in (b"", b".", b"..") else word


def mark_path(path: bytes) -> bytes:
    return b"/".join(marked(c) for c in path.split(b"/"))


def mark_job(job: bytes, fixed: int, nints: int, bo: str) -> bytes:
    ints = list(struct.unpack_from(bo + "q" * nints, job, 0))
    ints[0], ints[-1] = UID, JOBID
    meta = job[nints * 8:fixed].split(b"\0", 1)[0]
    meta = (meta + b"ZQXprojectQXZ=ZQXsecretQXZ\n")[:1023]
    text = job[fixed:].split(b"\0", 1)[0]
    lines = text.split(b"\n")
    out = [b"".join(marked(w) if w.strip() else w for w in _words(lines[0]))]
    for line in lines[1:]:
        fs, tab, mount = line.partition(b"\t")
        out.append(fs + tab + mark_path(mount) if tab else b"".join(marked(w) if w.strip() else w
                                                                     for w in _words(line)))
    return struct.pack(bo + "q" * nints, *ints) + meta.ljust(1024, b"\0") + b"\n".join(out) + b"\0"


def _words(text: bytes) -> list:
    import re

    return re.split(rb"(\s+)", text)


def mark_names(records: list) -> list:
    return [(i, n if is_darshan_name(n) else mark_path(n)) for i, n in records]


def mark_lustre(data: bytes, version: int, bo: str) -> bytes:
    """v2 components' pool names marked (v1 has none)."""
    if version != 2:
        return data
    data, pos = bytearray(data), 0
    while pos < len(data):
        _, _, ncomps, nstripes = struct.unpack_from(bo + "Qqqq", data, pos)
        for k in range(ncomps):
            at = pos + 32 + 72 * k + 56
            pool = bytes(data[at:at + 16]).split(b"\0", 1)[0]
            if pool:
                data[at:at + 16] = (b"ZQX" + pool[:9] + b"QXZ").ljust(16, b"\0")[:16]
        pos += 32 + 72 * ncomps + 8 * nstripes
    return bytes(data)


def make_distinctive(src: Path, folder: Path) -> Path:
    parts = read_parts(src)
    fixed = parts.job_fixed_size
    nints = (fixed - 1024) // 8
    parts.job = mark_job(parts.job, fixed, nints, parts.byte_order)
    parts.set_name_records(mark_names(parts.name_records()))
    for module in ("DXT_POSIX", "DXT_MPIIO"):
        if parts.module(module):
            recs = dxt_records(parts, module)
            for r in recs:
                r.hostname = (MARK + r.hostname.split(b"\0", 1)[0][:50] + END)
            set_dxt_records(parts, module, recs)
    if parts.module("LUSTRE"):
        parts.set_module("LUSTRE", mark_lustre(parts.module("LUSTRE"), parts.versions[parts.slot("LUSTRE")],
                                               parts.byte_order))
    return write_parts(parts, folder / SECRET_NAME)


def original_ids(src: Path) -> set:
    """The ids of the names that hold a name (not Darshan's own, not only the tree's structure: "/")."""
    parts = read_parts(src)
    return {struct.pack(parts.byte_order + "Q", i) for i, n in parts.name_records()
            if not is_darshan_name(n) and i and set(n.split(b"/")) - {b"", b".", b".."}}


def forbidden(bo: str) -> list:
    return [MARK, END, struct.pack(bo + "q", UID), struct.pack(bo + "q", JOBID), str(UID).encode(),
            str(JOBID).encode(), b"1234567890123456789"]


def assert_clean(blobs: dict, bad: list, ids: set) -> None:
    for label, blob in blobs.items():
        for needle in bad:
            assert needle not in blob, f"{needle!r} found in the {label}"
        found = [i for i in ids if i in blob]
        assert not found, f"{len(found)} original record ids found in the {label}"


def anonymize(path: Path, tmp_path: Path, cli: bool = False) -> tuple:
    """(the anonymised log, its report as JSON text): by the command (`cli`) or in this process."""
    out = tmp_path / "out"
    if cli:
        key, report = tmp_path / "k.key", tmp_path / "report.json"
        key.write_text("ab" * 32)
        run_iolens("anonymize", path, "-o", f"{out}/", "--key-file", key, "--report", report)
        (anon,) = list(out.iterdir())
        return anon, report.read_text()
    out.mkdir()
    report = write_anonymized(path, out, Tokens(Key(bytes.fromhex("ab" * 32))))
    return Path(report.output), json.dumps({"logs": [report.to_dict()]})


@pytest.mark.parametrize("src", each_kind(all_logs(), big=4 << 20), ids=log_id)
def test_nothing_identifying_survives(tmp_path, src):
    dist = make_distinctive(src, tmp_path)
    parts = read_parts(dist)
    named = any(not is_darshan_name(n) and n.strip(b"/") for _, n in parts.name_records())
    assert MARK in parts.job and (MARK in parts.names or not named)  # the markers are really there
    anon, report = anonymize(dist, tmp_path, cli=src.name in CLI_LOGS)
    new = read_parts(anon)
    blobs = {"file": anon.read_bytes(), "job region": new.job, "name records": new.names,
             "file name": anon.name.encode(), "report": report.encode()}
    blobs.update({f"module slot {slot}": data for slot, data in new.modules.items()})
    assert_clean(blobs, forbidden(parts.byte_order), original_ids(dist))
    assert json.loads(report)["logs"][0]["replaced"]["uid"] == 1


@pytest.mark.parametrize("src", HEADERLESS, ids=log_id)
def test_nothing_identifying_survives_in_an_unfinished_log(tmp_path, src):
    """The header never written: each zlib stream (job, names, modules) made distinctive, then searched."""
    data = src.read_bytes()
    size = 1328 if not any(data[:1328]) else 360
    streams, pos = [], size
    while pos < len(data):
        d = zlib.decompressobj()
        out = d.decompress(data[pos:])
        if not d.eof:
            break
        streams.append(out)
        pos = len(data) - len(d.unused_data)
    from support.logtools import encode_names, parse_names

    streams[0] = mark_job(streams[0], 1080, 7, "<")
    ids = set()
    for k in range(1, len(streams)):
        try:
            names = parse_names(streams[k], "3.41", "<")
        except (ValueError, struct.error):
            continue
        if names and all(n and n.isascii() and n.decode().isprintable() for _, n in names):
            ids |= {struct.pack("<Q", i) for i, n in names if not is_darshan_name(n)}
            streams[k] = encode_names(mark_names(names), "3.41", "<")
    dist = tmp_path / SECRET_NAME.replace("_1.darshan", ".darshan_partial")
    dist.write_bytes(bytes(size) + b"".join(zlib.compress(s) for s in streams))
    anon, report = anonymize(dist, tmp_path, cli=True)
    out, blobs, pos = anon.read_bytes(), {}, size
    while pos < len(out):
        d = zlib.decompressobj()
        blobs[f"stream at {pos}"] = d.decompress(out[pos:])
        pos = len(out) - len(d.unused_data)
    blobs.update({"file": out, "file name": anon.name.encode(), "report": report.encode()})
    assert len(blobs) >= 5 and anon.name.endswith(".darshan_partial")
    assert_clean(blobs, forbidden("<"), ids)
