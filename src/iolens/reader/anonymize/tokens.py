"""Keyed tokens: what replaces each identifying string or number of a log.

Every token is HMAC-SHA-256 under the user's key of the original value, prefixed by what kind of value it is
(a path component, a host name, a uid, ...): the same key gives the same token for the same value in every
log (so `jobs`, `fleet` and `compare` still group and match anonymised logs); another key gives tokens that
share nothing; without the key a token tells nothing of what it replaced (a guessed path cannot be tested).

Paths are replaced one component at a time, so two files of one folder keep one folder token and the tree
keeps its shape; a component's format suffix (.h5, .nc, ...) is kept, as iolens phrases its advice by it.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path
from typing import Optional

from ...errors import LogError
from ..python_children import kind
from ..writer import write_atomically

WORD = 10  # base32 characters of a text token: 50 bits
KEY_BYTES = 32

# Names Darshan itself gives records that are not files: kept, they say nothing of the user.
STD_NAMES = frozenset({b"<STDIN>", b"<STDOUT>", b"<STDERR>"})
HEATMAP_NAME = re.compile(rb"heatmap:[A-Z]+")
# Suffixes iolens tells a file's library by (analysis/diagnosis/context.py: HDF5_SUFFIXES, NETCDF_SUFFIXES):
# kept on the token, so that the diagnosis phrases its advice as it does on the original.
KEPT_SUFFIXES = tuple(sorted((".h5", ".hdf5", ".he5", ".hdf", ".h5part", ".nc4", ".cgns", ".nc", ".cdf", ".netcdf"),
                             key=len, reverse=True))
KEPT_COMPONENTS = frozenset({b"", b".", b".."})  # the tree's structure, not a name

# Job metadata keys the Darshan runtime writes itself (darshan-core.c), kept with why.
DARSHAN_METADATA = {
    "lib_ver": "the Darshan release that wrote the log (darshan_log_record_hints_and_ver)",
    "h": "the MPI-IO hints Darshan wrote the log with (darshan_log_record_hints_and_ver); a value that is not a "
         "plain setting (a number, size, true/false, enable/disable, ...) is replaced",
    "fork_parent": "the pid this process was forked from (darshan-core's fork handler): pids are kept, as in "
                   "the log file name, and `iolens jobs` links a forked worker to its parent by it",
}
PLAIN_VALUE = re.compile(rb"(?i)[0-9]+(\.[0-9]+)?([kmgt]i?b?)?|true|false|enable|disable|enabled|disabled|automatic"
                         rb"|auto|on|off|yes|no|none|[*0-9:,._+-]+")
HINT_KEY = re.compile(rb"[A-Za-z0-9_.-]+")
LIB_VER = re.compile(rb"[0-9][0-9A-Za-z.+_-]*")
# Python's multiprocessing starts its workers and helpers with fixed command lines (reader/python_children.py):
# their words are Python's, not the user's, and `iolens jobs` ties a spawned worker to its parent by them; only
# the program is replaced
PYTHON_CHILD_KEPT = ("Python's own words (a multiprocessing worker's or helper's `-c \"from multiprocessing.spawn "
                     "import spawn_main; ...\" --multiprocessing-fork`): `iolens jobs` ties a spawned worker to its "
                     "parent by them; the program is replaced")


def python_child(command: bytes) -> bool:
    """A command line Python's multiprocessing gave a worker or helper it started as a new interpreter."""
    return kind(command.decode("utf-8", "replace")) is not None

# File-system types a mount table may hold (Linux, HPC): kept. Any other type is replaced (it could be a
# FUSE program's own name), as is the program part of an unknown `fuse.*` type.
KNOWN_FS = frozenset("""
    lustre gpfs nfs nfs4 panfs beegfs pvfs2 orangefs ceph cephfs glusterfs dvs wekafs vast daos lustre_lite
    ext2 ext3 ext4 xfs btrfs zfs jfs reiserfs f2fs vfat msdos exfat ntfs ntfs3 hfs hfsplus iso9660 udf squashfs
    overlay overlayfs aufs tmpfs ramfs rootfs devtmpfs devpts proc sysfs securityfs cgroup cgroup2 pstore bpf
    tracefs debugfs configfs efivarfs mqueue hugetlbfs autofs binfmt_misc fusectl nsfs rpc_pipefs nfsd selinuxfs
    fuse fuseblk cifs smb3 smbfs 9p virtiofs afs gfs2 ocfs2 xenfs none
""".split())
KNOWN_FUSE = frozenset({"gvfsd-fuse", "portal", "sshfs", "daos", "dfuse", "lxcfs", "s3fs", "rclone", "squashfuse",
                        "gcsfuse", "ceph-fuse", "glusterfs", "encfs", "bindfs", "snapfuse", "appimagelauncherfs"})
TRUNCATED = b"<TRUNCATED>"  # Darshan's own mark of a command line cut to fit
UNKNOWN_ARGS = b"<unknown args>"  # Darshan's own words when it could not read the arguments


class Key:
    """The secret the tokens are keyed with: from a file (hex text or raw bytes), or new."""

    def __init__(self, secret: bytes):
        if len(secret) < 16:
            raise LogError("the key is too short (at least 16 bytes; a new key file holds 32 random bytes as hex)")
        self.secret = secret

    @classmethod
    def new(cls) -> "Key":
        return cls(secrets.token_bytes(KEY_BYTES))

    @classmethod
    def from_file(cls, path) -> "Key":
        try:
            raw = Path(path).read_bytes()
        except FileNotFoundError:
            raise LogError("no such key file (leave out --key-file to have a new key written)", str(path)) from None
        except OSError as exc:
            raise LogError(f"cannot read the key file ({exc.strerror or exc})", str(path)) from None
        text = raw.strip()
        if re.fullmatch(rb"[0-9a-fA-F]{32,}", text) and len(text) % 2 == 0:
            raw = bytes.fromhex(text.decode())
        if not raw.strip():
            raise LogError("the key file is empty", str(path))
        try:
            return cls(raw)
        except LogError as exc:
            raise LogError(exc.message, str(path)) from None

    def text(self) -> str:
        return self.secret.hex() + "\n"

    def fingerprint(self) -> str:
        """A name for the key that does not reveal it (stored with a fleet store to refuse a second key)."""
        return hmac.new(self.secret, b"iolens anonymize key fingerprint", hashlib.sha256).hexdigest()[:16]


def new_key_file(path, force: bool = False) -> Key:
    """A fresh key, written to `path` (owner-only), which must not exist unless `force`."""
    key = Key.new()
    write_atomically(path, [(0, key.text().encode())], force=force, mode=0o600)
    return key


class Tokens:
    """The tokens of one key; remembers every original it replaced, by kind (`originals`, for `--map`)."""

    def __init__(self, key: Key, keep_exe_name: bool = False):
        self.key = key
        self.keep_exe_name = keep_exe_name
        self.originals: dict = {}  # kind -> {original: token}
        self._cache: dict = {}

    # --- the primitives ---------------------------------------------------------------------------------
    def mac(self, kind: str, value: bytes) -> bytes:
        return hmac.new(self.key.secret, kind.encode() + b"\0" + value, hashlib.sha256).digest()

    def word(self, kind: str, value: bytes, length: int = WORD) -> bytes:
        cached = self._cache.get((kind, value))
        if cached is None:
            cached = base64.b32encode(self.mac(kind, value)).lower()[:length]
            self._cache[(kind, value)] = cached
            self.originals.setdefault(kind, {})[value] = cached
        return cached

    def hex_hash(self, kind: str, value: str) -> str:
        """A keyed stand-in for a tracer's hash of a name (hex, as long as the original): the same name's
        hash gives the same stand-in in every file of every trace under one key."""
        cached = self._cache.get((kind, value))
        if cached is None:
            cached = self.mac(kind, value.encode()).hex()[:max(len(value), 8)]
            self._cache[(kind, value)] = cached
            self.originals.setdefault(kind + " hash", {})[value] = cached
        return cached

    def number(self, kind: str, value: int, top: int = 1 << 31) -> int:
        """A positive integer below `top` standing for `value`."""
        token = 1 + int.from_bytes(self.mac(kind, str(value).encode())[:8], "little") % (top - 1)
        self.originals.setdefault(kind, {})[value] = token
        return token

    # --- names and paths --------------------------------------------------------------------------------
    def component(self, part: bytes) -> bytes:
        if part in KEPT_COMPONENTS:
            return part
        lower = part.lower()
        for suffix in KEPT_SUFFIXES:
            if lower.endswith(suffix.encode()) and len(part) > len(suffix):
                return self.word("path", part) + part[-len(suffix):]
        return self.word("path", part)

    def path(self, path: bytes) -> bytes:
        return b"/".join(self.component(p) for p in path.split(b"/"))

    def record_name(self, name: bytes, file_name: Optional[bytes] = None) -> bytes:
        """A record's name: a path, Darshan's own pseudo-names kept; a dataset record's name
        (`file:dataset`, `file_name` being its file's) as its file's path token, ':', the dataset path's."""
        if is_darshan_name(name):
            return name
        if file_name and name.startswith(file_name + b":"):
            return self.path(file_name) + b":" + self.path(name[len(file_name) + 1:])
        return self.path(name)

    def unnamed_record_id(self, old: int) -> int:
        """An id for a record no name record names (its old id hashes a path that is not in the log)."""
        return int.from_bytes(self.mac("record-id", old.to_bytes(8, "little"))[:8], "little") or 1

    # --- the job ----------------------------------------------------------------------------------------
    def command_line(self, text: bytes) -> bytes:
        """Every word replaced, whitespace kept (libdarshan-util parses it): a word with '/' one component at
        a time; the program's base name kept with keep_exe_name; Darshan's own marks kept."""
        tail = b""
        if text.endswith(TRUNCATED):
            text, tail = text[:-len(TRUNCATED)], TRUNCATED
        if text.endswith(UNKNOWN_ARGS):
            text, tail = text[:-len(UNKNOWN_ARGS)], UNKNOWN_ARGS + tail
        pieces = re.split(rb"(\s+)", text)
        words = iter(self.argv([p for p in pieces if p and not p.isspace()]))
        return b"".join(p if not p or p.isspace() else next(words) for p in pieces) + tail

    def argv(self, words: list) -> list:
        """A command's words: the program as `program` gives it, every argument as a path; a multiprocessing
        worker's or helper's arguments kept (Python's own: PYTHON_CHILD_KEPT)."""
        keep = python_child(b" ".join(words))
        return [self.program(w) if i == 0 else w if keep else self.path(w) for i, w in enumerate(words)]

    def program(self, word: bytes) -> bytes:
        if not self.keep_exe_name:
            return self.path(word)
        head, sep, base = word.rpartition(b"/")
        return (self.path(head) + sep if sep else b"") + base

    def program_name(self, base: bytes) -> bytes:
        """A program's base name (as in a log file name), as `command_line` gives it."""
        return base if self.keep_exe_name else self.component(base)

    def hostname(self, host: bytes) -> bytes:
        return self.word("host", host)

    def uid(self, uid: int) -> int:
        return self.number("uid", uid)

    def jobid(self, jobid: int) -> int:
        return self.number("jobid", jobid)

    def metadata(self, key: bytes, value: bytes) -> tuple:
        return self.word("metadata-key", key), self.word("metadata-value", value)

    def hint_value(self, value: bytes) -> bytes:
        return self.word("hint", value)

    def fs_type(self, fs_type: bytes) -> tuple:
        """(type, replaced?): a known file-system type kept, any other replaced."""
        text = fs_type.decode("utf-8", "replace")
        if text in KNOWN_FS:
            return fs_type, False
        if text.startswith("fuse."):
            sub = text[5:]
            return (fs_type, False) if sub in KNOWN_FUSE else (b"fuse." + self.word("fs", sub.encode()), True)
        return self.word("fs", fs_type), True

    def pool(self, pool: bytes) -> bytes:
        return self.word("pool", pool)  # 10 characters: fits Lustre's 15

    def log_name_number(self, value: str) -> str:
        """The hash Darshan puts in a log file name (of the host and time)."""
        return str(self.number("log-name", int(value), top=1 << 63))


def is_darshan_name(name: bytes) -> bool:
    return name in STD_NAMES or HEATMAP_NAME.fullmatch(name) is not None


def plain_value(value: bytes) -> bool:
    return PLAIN_VALUE.fullmatch(value) is not None


def hints_text(tokens: Tokens, value: bytes) -> tuple:
    """(hints, values replaced): `key=value;...` with every value that is not a plain setting replaced."""
    out, replaced = [], 0
    for part in value.split(b";"):
        key, sep, setting = part.partition(b"=")
        if key and not HINT_KEY.fullmatch(key):
            key, replaced = tokens.hint_value(key), replaced + 1
        if sep and setting and not plain_value(setting):
            setting, replaced = tokens.hint_value(setting), replaced + 1
        out.append(key + sep + setting)
    return b";".join(out), replaced


def key_beside(output) -> Path:
    """Where a new key goes: beside the output (a file `OUT.key`, a folder `OUT.key` next to it)."""
    out = Path(output)
    return out.parent / (out.name.rstrip("/" + os.sep) + ".key")
