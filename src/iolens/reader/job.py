"""The job region: job record, metadata lines, command line and mount table."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import LogError


@dataclass
class JobRecord:
    uid: int
    jobid: int
    nprocs: int
    start_time_sec: int
    start_time_nsec: int
    end_time_sec: int
    end_time_nsec: int
    metadata: dict = field(default_factory=dict)
    exe: str = ""
    mounts: list = field(default_factory=list)  # [(mount_point, fs_type)], longest first

    @property
    def start_time(self) -> float:
        return self.start_time_sec + self.start_time_nsec / 1e9

    @property
    def end_time(self) -> float:
        return self.end_time_sec + self.end_time_nsec / 1e9


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def parse_job(buf: bytes, version: str, bo: str) -> JobRecord:
    new = version >= "3.41"
    nints = 7 if new else 5
    fixed = nints * 8 + 1024
    if len(buf) < fixed:
        raise LogError(f"truncated: job record needs {fixed} bytes, region holds {len(buf)}")
    ints = struct.unpack_from(bo + "q" * nints, buf, 0)
    if new:
        uid, s, sn, e, en, nprocs, jobid = ints
    else:
        uid, s, e, nprocs, jobid = ints
        sn = en = 0
    metadata = {}
    for line in _text(buf[nints * 8:fixed]).split("\n"):
        key, sep, value = line.partition("=")
        if sep and key:
            metadata[key] = value
    exe, mounts = _exe_and_mounts(_text(buf[fixed:]))
    return JobRecord(uid, jobid, nprocs, s, sn, e, en, metadata, exe, mounts)


def _exe_and_mounts(text: str):
    lines = text.split("\n")
    mounts = []
    for line in lines[1:]:
        tokens = line.split()
        if len(tokens) == 2:
            fs_type, mount = tokens
            mounts.append((mount, fs_type))
    mounts.sort(key=lambda m: len(m[0]), reverse=True)
    return lines[0], mounts


def mount_of(name: str, mounts: list):
    """Longest mount-point prefix of a path, as darshan-util matches records to file systems."""
    for mount, fs_type in mounts:
        if name.startswith(mount):
            return mount, fs_type
    return None, None
