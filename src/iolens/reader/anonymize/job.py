"""The job region anonymised: uid, job id, metadata, command line and mount table.

The job record (uid, times, process count, job id, 1,024 bytes of `key=value` metadata lines) is followed by
one NUL-terminated string: the command line, then one `\\n<fs type>\\t<mount point>` line per mount.
libdarshan-util reads at most 4,096 bytes of the region, so that string holds at most 3,015 characters (3,031
before log format 3.41); a string made longer by its tokens loses first the mounts no record lies under,
then the others, then the command line's end (marked `<TRUNCATED>`, as the runtime marks it).
"""
from __future__ import annotations

import re
import struct

from ...errors import LogError
from .report import Report
from .tokens import DARSHAN_METADATA, LIB_VER, PYTHON_CHILD_KEPT, TRUNCATED, Tokens, hints_text, python_child

RECORD_SIZE = 4096  # DARSHAN_JOB_RECORD_SIZE: what libdarshan-util reads of the job region
METADATA_LEN = 1024
MOUNT_LINE = re.compile(rb"[^\s]+\t[^\s]+")


def job_ints(version: str) -> int:
    return 7 if version >= "3.41" else 5


def rewrite_job(buf: bytes, version: str, bo: str, tokens: Tokens, report: Report, pid=None, names=()) -> bytes:
    """The job region with its identifying values replaced. `pid`: the process id the log's file name holds
    (a job id equal to it is Darshan's stand-in for no batch job id, and is kept); `names`: the record names
    (original), to tell the mounts some record lies under."""
    nints = job_ints(version)
    fixed = nints * 8 + METADATA_LEN
    if len(buf) < fixed:
        raise LogError(f"truncated: job record needs {fixed} bytes, region holds {len(buf)}")
    ints = list(struct.unpack_from(bo + "q" * nints, buf, 0))
    ints[0] = tokens.uid(ints[0])
    report.count("uid")
    if pid is not None and ints[-1] == pid:
        report.kept["job id"] = ("equal to the process id (Darshan's stand-in when there is no batch job id); "
                                 "process ids are kept")
    else:
        ints[-1] = tokens.jobid(ints[-1])
        report.count("jobid")
    metadata = rewrite_metadata(buf[nints * 8:fixed].split(b"\0", 1)[0], tokens, report)
    text = buf[fixed:].split(b"\0", 1)[0]
    exe = rewrite_exe_and_mounts(text, tokens, report, RECORD_SIZE - fixed - 1, names)
    return struct.pack(bo + "q" * nints, *ints) + metadata.ljust(METADATA_LEN, b"\0") + exe + b"\0"


def rewrite_metadata(text: bytes, tokens: Tokens, report: Report) -> bytes:
    """`key=value` lines: Darshan's own keys kept (their values checked), every other line replaced."""
    lines, replaced = [], []
    for line in text.split(b"\n"):
        key, sep, value = line.partition(b"=")
        own = sep and key.decode("utf-8", "replace") in DARSHAN_METADATA
        if not line:
            lines.append(line)
        elif own:
            lines.append(key + sep + _darshan_value(key, value, tokens, report))
            report.kept[f"metadata {key.decode()}"] = DARSHAN_METADATA[key.decode()]
        else:
            k, v = tokens.metadata(key, value)
            lines.append(k + sep + v if sep else k)
            replaced.append(len(lines) - 1)
            report.count("metadata")
    out = b"\n".join(lines)
    dropped = 0
    while len(out) >= METADATA_LEN and replaced:  # longer than the record holds: replaced lines go first
        del lines[replaced.pop()]
        dropped += 1
        out = b"\n".join(lines)
    if len(out) >= METADATA_LEN:
        out = out[:METADATA_LEN - 1]
        report.dropped.append("the end of the job metadata (longer than its 1,024 bytes)")
    if dropped:
        report.dropped.append(f"{dropped} replaced metadata lines (their tokens did not fit the 1,024 bytes)")
    return out


def _darshan_value(key: bytes, value: bytes, tokens: Tokens, report: Report) -> bytes:
    if key == b"h":
        hints, n = hints_text(tokens, value)
        report.count("hint_values", n)
        return hints
    if (key == b"lib_ver" and LIB_VER.fullmatch(value)) or (key == b"fork_parent" and value.isdigit()):
        return value
    report.count("metadata")
    report.not_judged.append(f"metadata {key.decode()}: a value Darshan would not write (replaced)")
    return tokens.metadata(key, value)[1]


def split_exe(text: bytes) -> tuple:
    """(command line, mount lines): the mount lines are the `type\\tpath` lines that end the string (a command
    line may hold newlines of its own, `python3 -c` with a script)."""
    lines = text.split(b"\n")
    k = len(lines)
    while k > 1 and MOUNT_LINE.fullmatch(lines[k - 1]):
        k -= 1
    return b"\n".join(lines[:k]), lines[k:]


def rewrite_exe_and_mounts(text: bytes, tokens: Tokens, report: Report, limit: int, names=()) -> bytes:
    command, mount_lines = split_exe(text)
    new_command = tokens.command_line(command)
    report.count("command_words", len(command.split()))
    if python_child(command):
        report.kept["command line after the program"] = PYTHON_CHILD_KEPT
    mounts, kept_types = [], set()
    for line in mount_lines:
        fs_type, mount = line.split(b"\t")
        new_type, replaced = tokens.fs_type(fs_type)
        report.count("fs_types", replaced)
        if not replaced:
            kept_types.add(fs_type.decode("utf-8", "replace"))
        mounts.append((mount, new_type + b"\t" + tokens.path(mount)))
        report.count("mount_points")
    if kept_types:
        report.kept["file-system types"] = ", ".join(sorted(kept_types)) + " (known types: what the storage is, "\
                                            "which iolens's advice depends on)"
    return _fit(new_command, mounts, limit, names, report)


def _fit(command: bytes, mounts: list, limit: int, names, report: Report) -> bytes:
    def joined():
        return command + b"".join(b"\n" + line for _, line in mounts)

    if len(joined()) <= limit:
        return joined()
    used = {_mount_of(name, [m for m, _ in mounts]) for name in names}
    dropped = 0
    for pick in (lambda m: m not in used, lambda m: True):  # mounts no record lies under first
        for i in reversed(range(len(mounts))):
            if len(joined()) <= limit:
                break
            if pick(mounts[i][0]):
                del mounts[i]
                dropped += 1
    if dropped:
        report.dropped.append(f"{dropped} mount-table entries (the tokens made the table longer than the "
                              f"{limit:,} characters libdarshan-util reads; mounts no record lies under went first)")
    if len(joined()) > limit:
        command = command[:limit - len(TRUNCATED) - len(joined()) + len(command)] + TRUNCATED
        report.dropped.append("the end of the command line (longer than the job record holds once replaced; "
                              "marked <TRUNCATED> as Darshan marks it)")
    return joined()


def _mount_of(name: bytes, mounts: list):
    """The mount point a name lies under (the longest prefix, as libdarshan-util matches)."""
    best = None
    for mount in mounts:
        if name.startswith(mount) and (best is None or len(mount) > len(best)):
            best = mount
    return best
