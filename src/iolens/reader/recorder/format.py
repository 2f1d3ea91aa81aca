"""Decode a Recorder 2.4 trace folder into per-rank call arrays (format only: no tables, no analysis).

A folder holds `VERSION`, `recorder.mt` (a fixed C struct, then the traced function names one a line) and,
per rank N: `N.cst` (the call-signature table: every distinct (function, depth, arguments) once, keyed by a
terminal id), `N.cfg` (a Sequitur grammar whose expansion from rule -1 is the rank's call sequence as terminal
ids) and `N.ts` (two uint32 per call: start and end, in time-resolution units, relative to the previous
call's start). Everything is little-endian as the x86 machines Recorder ran on wrote it.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

from ...errors import LogError
from ..inputs import refuse_special
from .grammar import expand, parse_grammar

METADATA = "recorder.mt"  # the file that makes a folder a Recorder trace

SUPPORTED_VERSION = (2, 4)
_META = struct.Struct("<i4xddiii4x")  # RecorderMetadata: ranks, start_ts, resolution, ts buffer, ts algo, ipc
_SIG_HEAD = struct.Struct("<iiii")  # terminal id, rank, key length, count
_KEY_HEAD = struct.Struct("<QBBBi")  # thread id, function id, depth, argument count, argument bytes
USER_FUNCTION = 255  # Recorder's id for a user function traced by its compiler hooks (name in args[1])
MAX_RANKS = 1 << 22


@dataclass
class RankTrace:
    """One rank's calls: the signature table and, per call in order, its signature and times."""
    rank: int
    sig_func: np.ndarray  # uint8 function id per signature
    sig_depth: np.ndarray  # uint8 call depth per signature
    sig_tid: np.ndarray  # uint64 thread id per signature (0 unless Recorder logged threads)
    sig_args: list  # list[str]: each signature's arguments as Recorder stored them, joined by single spaces
    sig_argc: np.ndarray  # uint8 number of arguments per signature
    calls: np.ndarray  # int32 signature (terminal id) of each call, in call order
    start: np.ndarray  # float64 seconds since the trace's start
    end: np.ndarray


@dataclass
class RecorderRaw:
    path: str
    version: str
    nprocs: int
    start_ts: float  # wall-clock (epoch seconds) of the trace's time 0
    time_resolution: float
    func_names: list
    ranks: list = field(default_factory=list)  # RankTrace per rank

    def func_classes(self) -> np.ndarray:
        """Recorder's class of every function id 0..255: 0 POSIX, 1 MPI-IO, 2 MPI, 3 HDF5, 4 user function
        (as recorder2text prints it: by the position of the first MPI and the first H5 name)."""
        names = self.func_names
        mpi = next((i for i, n in enumerate(names) if "MPI" in n), len(names))
        h5 = next((i for i, n in enumerate(names) if "H5" in n), len(names))
        out = np.full(256, 3, dtype=np.uint8)
        out[:len(names)] = [0 if i < mpi else (1 if n.startswith("MPI_File") else 2) if i < h5 else 3
                            for i, n in enumerate(names)]
        out[USER_FUNCTION] = 4
        return out


def is_recorder_trace(path: str) -> bool:
    """A folder Recorder wrote (or its recorder.mt): told by content, whatever its name."""
    folder = _folder(path)
    return folder is not None and os.path.isfile(os.path.join(folder, METADATA))


def _folder(path: str):
    if os.path.isdir(path):
        return path
    if os.path.basename(path) == METADATA and os.path.isfile(path):
        return os.path.dirname(path) or "."
    return None


def read_trace(path: str, progress=None) -> RecorderRaw:
    """Decode every rank of the trace at `path`; a LogError with one line saying what is wrong otherwise."""
    folder = _folder(path)
    if folder is None:
        raise LogError("not a Recorder trace folder", path)
    try:
        raw = _read_header(folder, path)
        for rank in range(raw.nprocs):
            raw.ranks.append(_read_rank(folder, raw, rank))
            if progress:
                progress((rank + 1) / raw.nprocs)
        return raw
    except LogError as exc:
        exc.path = exc.path or path
        raise
    except OSError as exc:
        raise LogError(f"cannot read {os.path.basename(exc.filename or '') or 'trace'}: "
                       f"{exc.strerror or exc}", path) from None
    except (ValueError, OverflowError, MemoryError, IndexError, KeyError, struct.error) as exc:
        raise LogError(f"corrupt Recorder trace ({type(exc).__name__}: {exc})", path) from None


def _read_bytes(folder: str, name: str) -> bytes:
    p = os.path.join(folder, name)
    if not os.path.isfile(p):
        refuse_special(p, f"a Recorder trace's {name}")
        raise LogError(f"missing {name} in the Recorder trace folder")
    with open(p, "rb") as fh:
        return fh.read()


def _read_header(folder: str, path: str) -> RecorderRaw:
    text = _read_bytes(folder, "VERSION").decode("ascii", "replace").strip()
    parts = text.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise LogError(f"unreadable Recorder VERSION {text[:20]!r}") from None
    if (major, minor) != SUPPORTED_VERSION:
        raise LogError(f"Recorder trace version {text[:20]} is not supported (iolens reads "
                       f"{'.'.join(map(str, SUPPORTED_VERSION))}.x)")
    data = _read_bytes(folder, METADATA)
    if len(data) < _META.size:
        raise LogError(f"truncated recorder.mt ({len(data)} bytes, the metadata needs {_META.size})")
    nprocs, start_ts, resolution, _, ts_algo, interprocess = _META.unpack_from(data)
    if not 0 < nprocs <= MAX_RANKS:
        raise LogError(f"corrupt recorder.mt: {nprocs} ranks")
    if not (resolution > 0 and np.isfinite(resolution) and np.isfinite(start_ts)):
        raise LogError(f"corrupt recorder.mt: time resolution {resolution}")
    if ts_algo != 0:
        raise LogError(f"timestamps compressed with algorithm {ts_algo}: iolens reads uncompressed ones only")
    if interprocess:
        raise LogError("traces merged across ranks (RECORDER_INTERPROCESS_COMPRESSION=1) are not supported yet")
    if not data.endswith(b"\n"):
        raise LogError("truncated recorder.mt: its function list does not end with a newline")
    names = data[_META.size:].decode("ascii", "replace").split("\n")[:-1]
    if not names or len(names) > 255:
        raise LogError(f"corrupt recorder.mt: {len(names)} function names")
    return RecorderRaw(path, text, nprocs, start_ts, resolution, names)


def _read_rank(folder: str, raw: RecorderRaw, rank: int) -> RankTrace:
    sigs = _parse_signatures(_read_bytes(folder, f"{rank}.cst"), f"{rank}.cst", len(raw.func_names))
    rules = parse_grammar(_read_bytes(folder, f"{rank}.cfg"), f"{rank}.cfg")
    ts = _read_bytes(folder, f"{rank}.ts")
    n_ts = len(ts) // 8
    calls = expand(rules, n_sigs=len(sigs[0]), limit=n_ts, name=f"{rank}.cfg")
    if len(ts) % 8 or n_ts != len(calls):
        raise LogError(f"{rank}.ts holds {len(ts) / 8:g} timestamp pairs for {len(calls)} calls (truncated?)")
    start, end = decode_times(np.frombuffer(ts, dtype="<u4").reshape(-1, 2), raw.time_resolution)
    return RankTrace(rank, *sigs, calls, start, end)


def decode_times(pairs: np.ndarray, resolution: float) -> tuple:
    """(start, end) seconds from Recorder's pairs (start, end) relative to the previous call's start.

    Summed in call order in float64, as Recorder's reader does, so they print the same digits."""
    starts = np.cumsum(pairs[:, 0] * resolution)  # numpy sums a 1-d cumsum sequentially
    prev = np.empty_like(starts)
    prev[:1] = 0.0
    prev[1:] = starts[:-1]
    return starts, pairs[:, 1] * resolution + prev


def _parse_signatures(data: bytes, name: str, n_funcs: int) -> tuple:
    """(function id, depth, thread id, argument text, argument count) per signature, in terminal-id order.

    Only the walk from entry to entry is a Python loop (each entry's length is inside it); the fields are
    then gathered with numpy and the argument texts decoded as one string. Anything odd goes to the
    entry-by-entry parser, which names what is wrong."""
    if len(data) < 4:
        raise LogError(f"truncated {name}")
    (entries,) = struct.unpack_from("<i", data)
    if entries < 0 or entries * 31 > len(data) - 4:
        raise LogError(f"corrupt {name}: {entries} call signatures in {len(data)} bytes")
    starts, pos, size, key_len_at = [], 4, len(data) - 16, struct.Struct("<i").unpack_from
    for _ in range(entries):
        if pos > size:
            break
        starts.append(pos)
        key_len = key_len_at(data, pos + 8)[0]
        if key_len < 15:
            break
        pos += 16 + key_len
    if len(starts) != entries or pos > len(data):
        return _parse_signatures_one_by_one(data, name, n_funcs)
    buf = np.frombuffer(data, dtype=np.uint8)
    at = np.array(starts, dtype=np.int64)

    def field(offset: int, dtype: str) -> np.ndarray:
        width = np.dtype(dtype).itemsize
        return buf[(at + offset)[:, None] + np.arange(width)].copy().view(dtype).ravel()

    terms, key_len, tid = field(0, "<i4"), field(8, "<i4"), field(16, "<u8")
    func, depth, argc, arg_len = buf[at + 24], buf[at + 25], buf[at + 26], field(27, "<i4")
    if (entries and (terms.min() < 0 or terms.max() >= entries or np.bincount(terms).max() != 1)) or (
            (arg_len != key_len - 15).any() or ((func >= n_funcs) & (func != USER_FUNCTION)).any()):
        return _parse_signatures_one_by_one(data, name, n_funcs)
    # every text ends with the space after its last argument: make that byte the separator (an empty text
    # gets a separator of its own)
    seg_len = np.maximum(arg_len, 1).astype(np.int64)
    seg_end = np.cumsum(seg_len)
    within = np.arange(int(seg_end[-1]) if entries else 0, dtype=np.int64) - np.repeat(seg_end - seg_len, seg_len)
    out = buf[np.repeat(at + 31, seg_len) + within]
    out[seg_end - 1] = ord("\n")
    if entries and ((buf[at + 31 + arg_len - 1] != ord(" ")) & (arg_len > 0)).any():
        return _parse_signatures_one_by_one(data, name, n_funcs)
    texts = out.tobytes().decode("utf-8", "replace").split("\n")[:-1] if entries else []
    if len(texts) != entries:  # a newline inside an argument
        return _parse_signatures_one_by_one(data, name, n_funcs)
    spaces = np.add.reduceat((out == ord(" ")).astype(np.int64), seg_end - seg_len) if entries else 0
    if (spaces + (arg_len > 0) != argc).any():
        return _parse_signatures_one_by_one(data, name, n_funcs)
    order = np.argsort(terms)
    return (func[order].copy(), depth[order].copy(), tid[order], [texts[k] for k in order.tolist()],
            argc[order].copy())


def _parse_signatures_one_by_one(data: bytes, name: str, n_funcs: int) -> tuple:
    """Entry by entry, naming the first bad one (used when the fast path finds damage)."""
    if len(data) < 4:
        raise LogError(f"truncated {name}")
    (entries,) = struct.unpack_from("<i", data)
    # every entry takes at least its 16-byte head and a 15-byte key
    if entries < 0 or entries * 31 > len(data) - 4:
        raise LogError(f"corrupt {name}: {entries} call signatures in {len(data)} bytes")
    terms, heads, args = [], [], []
    pos, size = 4, len(data)
    head, key_head = _SIG_HEAD.unpack_from, _KEY_HEAD.unpack_from
    for _ in range(entries):
        if pos + 16 > size:
            raise LogError(f"truncated {name}: it ends inside the call-signature table")
        term, _rank, key_len, _count = head(data, pos)
        if key_len < 15 or pos + 16 + key_len > size:
            raise LogError(f"truncated {name}: a call signature runs past the end of the file")
        key = head_tuple = key_head(data, pos + 16)
        if head_tuple[4] != key_len - 15:
            raise LogError(f"corrupt {name}: call signature {term} says {head_tuple[4]} argument bytes in a "
                           f"{key_len}-byte key")
        terms.append(term)
        heads.append(key)
        # each argument is followed by one space (spaces inside arguments were stored as '_')
        args.append(data[pos + 31:pos + 16 + key_len])
        pos += 16 + key_len
    terms = np.array(terms, dtype=np.int64)
    if entries and (terms.min() < 0 or terms.max() >= entries or len(np.unique(terms)) != entries):
        raise LogError(f"corrupt {name}: call signature ids are not 0..{entries - 1}")
    order = np.argsort(terms)
    table = np.array(heads, dtype=np.uint64).reshape(-1, 5)[order] if entries else np.zeros((0, 5), np.uint64)
    tid, func, depth, argc = table[:, 0], table[:, 1].astype(np.uint8), table[:, 2].astype(np.uint8), table[:, 3]
    bad = np.flatnonzero((table[:, 1] >= n_funcs) & (table[:, 1] != USER_FUNCTION))
    if len(bad):
        raise LogError(f"corrupt {name}: call signature {int(bad[0])} names function id {int(table[bad[0], 1])}")
    texts = [args[k] for k in order.tolist()]
    spaces = np.fromiter((t.count(b" ") for t in texts), dtype=np.int64, count=entries)
    ends_ok = np.fromiter((not t or t[-1:] == b" " for t in texts), dtype=bool, count=entries)
    bad = np.flatnonzero((spaces != argc) | ~ends_ok)
    if len(bad):
        raise LogError(f"corrupt {name}: call signature {int(bad[0])} has {int(spaces[bad[0]])} arguments, "
                       f"says {int(argc[bad[0]])}")
    text = [t[:-1].decode("utf-8", "replace") for t in texts]
    return func, depth, tid, text, argc.astype(np.uint8)
