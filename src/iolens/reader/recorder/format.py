"""Decode a Recorder trace folder (releases 2.3, 2.4, 2.5) into per-rank call arrays (format only: no tables,
no analysis).

A folder holds `VERSION`, `recorder.mt` (a fixed C struct, then the traced function names one a line) and, per
rank, a call-signature table (every distinct (function, depth, arguments) once, keyed by a terminal id), a
Sequitur grammar whose expansion from rule -1 is the rank's call sequence as terminal ids, and two uint32 per
call: start and end, in time-resolution units, relative to the previous call's start. Which file holds which
piece, and how, depends on the release (`releases.py`). Everything is little-endian as the x86 machines
Recorder ran on wrote it.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

from ...errors import LogError
from .grammar import expand, parse_grammar
from .releases import METADATA, RELEASES, TraceFiles, parse_header, read_file, release_of

SUPPORTED_VERSIONS = tuple(RELEASES)  # (major, minor) of the releases read
_KEY_HEAD = struct.Struct("<QBBBi")  # thread id, function id, depth, argument count, argument bytes
_KEY_FIXED = _KEY_HEAD.size  # 15 bytes of a key before its arguments
USER_FUNCTION = 255  # Recorder's id for a user function traced by its compiler hooks (name in args[1])


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
    untraced: tuple = ()  # layers Recorder did not trace ("MPI": Recorder 2.5's default)
    missing: dict = field(default_factory=dict)  # rank -> its own files not in the folder (the rank read as empty)

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
        raw, files = _read_header(folder, path)
        decoded = {}  # signature tables and grammars ranks share (merged traces) are decoded once
        for rank in range(raw.nprocs):
            gone = [f for f in files.own_files(rank) if not os.path.lexists(os.path.join(folder, f))]
            if gone:  # the other ranks are read; this one is empty, named in `missing` (the trace is partial)
                raw.missing[rank] = gone
                raw.ranks.append(_no_calls(rank))
            else:
                raw.ranks.append(_read_rank(files, raw, rank, decoded))
            if progress:
                progress((rank + 1) / raw.nprocs)
        if len(raw.missing) == raw.nprocs:
            raise LogError(f"missing {', '.join(raw.missing[0])} in the Recorder trace folder (no rank's files "
                           "are there)")
        return raw
    except LogError as exc:
        exc.path = exc.path or path
        raise
    except OSError as exc:
        raise LogError(f"cannot read {os.path.basename(exc.filename or '') or 'trace'}: "
                       f"{exc.strerror or exc}", path) from None
    except (ValueError, OverflowError, MemoryError, IndexError, KeyError, struct.error) as exc:
        raise LogError(f"corrupt Recorder trace ({type(exc).__name__}: {exc})", path) from None


def _read_header(folder: str, path: str) -> tuple:
    version = read_file(folder, "VERSION").decode("ascii", "replace").strip()
    release = release_of(version)
    data = read_file(folder, METADATA)
    header = parse_header(data, release)
    if not data.endswith(b"\n"):
        raise LogError("truncated recorder.mt: its function list does not end with a newline")
    names = data[release.metadata_size:].decode("ascii", "replace").split("\n")[:-1]
    if not names or len(names) > 255:
        raise LogError(f"corrupt recorder.mt: {len(names)} function names")
    raw = RecorderRaw(path, version, header.nprocs, header.start_ts, header.time_resolution, names,
                      untraced=header.untraced)
    return raw, TraceFiles(folder, release, header)


def _no_calls(rank: int) -> RankTrace:
    """A rank whose files are missing: no signature, no call."""
    none = np.empty(0, dtype=np.uint8)
    return RankTrace(rank, none, none, np.empty(0, dtype=np.uint64), [], none, np.empty(0, dtype=np.int32),
                     np.empty(0), np.empty(0))


def _read_rank(files: TraceFiles, raw: RecorderRaw, rank: int, decoded: dict) -> RankTrace:
    cst, cst_name = files.signatures(rank)
    if cst_name not in decoded:
        decoded[cst_name] = _parse_signatures(cst, cst_name, len(raw.func_names), files.release.signature_head)
    sigs = decoded[cst_name]
    cfg, cfg_name, grammar_id = files.grammar(rank)
    ts, ts_name = files.timestamps(rank)
    n_ts = len(ts) // 8
    if ("cfg", grammar_id) not in decoded:
        rules = parse_grammar(cfg, cfg_name)
        decoded["cfg", grammar_id] = expand(rules, n_sigs=len(sigs[0]), limit=n_ts, name=cfg_name)
    calls = decoded["cfg", grammar_id]
    if len(ts) % 8 or n_ts != len(calls):
        where = ts_name if ts_name == f"{rank}.ts" else f"{ts_name} (rank {rank})"
        raise LogError(f"{where} holds {len(ts) / 8:g} timestamp pairs for {len(calls)} calls (truncated?)")
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


def _parse_signatures(data: bytes, name: str, n_funcs: int, head: int = 16) -> tuple:
    """(function id, depth, thread id, argument text, argument count) per signature, in terminal-id order.

    Each entry is a `head`-byte head (terminal id, [rank,] key length[, count]: 16 bytes, 8 in Recorder 2.3),
    then the key: thread id, function id, depth, argument count, argument bytes, the arguments.

    Only the walk from entry to entry is a Python loop (each entry's length is inside it); the fields are
    then gathered with numpy and the argument texts decoded as one string. Anything odd goes to the
    entry-by-entry parser, which names what is wrong."""
    if len(data) < 4:
        raise LogError(f"truncated {name}")
    (entries,) = struct.unpack_from("<i", data)
    if entries < 0 or entries * (head + _KEY_FIXED) > len(data) - 4:
        raise LogError(f"corrupt {name}: {entries} call signatures in {len(data)} bytes")
    key_len_offset = 8 if head == 16 else 4  # (terminal, rank, key length, count) or (terminal, key length)
    starts, pos, size, key_len_at = [], 4, len(data) - head, struct.Struct("<i").unpack_from
    for _ in range(entries):
        if pos > size:
            break
        starts.append(pos)
        key_len = key_len_at(data, pos + key_len_offset)[0]
        if key_len < _KEY_FIXED:
            break
        pos += head + key_len
    if len(starts) != entries or pos > len(data):
        return _parse_signatures_one_by_one(data, name, n_funcs, head)
    buf = np.frombuffer(data, dtype=np.uint8)
    at = np.array(starts, dtype=np.int64)

    def field(offset: int, dtype: str) -> np.ndarray:
        width = np.dtype(dtype).itemsize
        return buf[(at + offset)[:, None] + np.arange(width)].copy().view(dtype).ravel()

    key = head  # where each entry's key starts
    terms, key_len, tid = field(0, "<i4"), field(key_len_offset, "<i4"), field(key, "<u8")
    func, depth, argc, arg_len = buf[at + key + 8], buf[at + key + 9], buf[at + key + 10], field(key + 11, "<i4")
    args_at = at + key + _KEY_FIXED
    if (entries and (terms.min() < 0 or terms.max() >= entries or np.bincount(terms).max() != 1)) or (
            (arg_len != key_len - _KEY_FIXED).any() or ((func >= n_funcs) & (func != USER_FUNCTION)).any()):
        return _parse_signatures_one_by_one(data, name, n_funcs, head)
    found = _argument_texts(buf, args_at, arg_len)
    if found is None or (found[1] + (arg_len > 0) != argc).any():
        return _parse_signatures_one_by_one(data, name, n_funcs, head)
    texts = found[0]
    order = np.argsort(terms)
    return (func[order].copy(), depth[order].copy(), tid[order], [texts[k] for k in order.tolist()],
            argc[order].copy())


def _argument_texts(buf: np.ndarray, args_at: np.ndarray, arg_len: np.ndarray):
    """(each signature's argument text without its trailing space, the spaces left in it), or None where the
    bytes are not as Recorder writes them. The texts are picked out of the table with one boolean mask
    (index arrays as long as the table would cost a pass over memory eight times its size) and decoded as
    one string, the space after each text's last argument made the separator."""
    full = arg_len > 0
    if not full.any():
        return [""] * len(arg_len), np.zeros(len(arg_len), dtype=np.int64)
    # region starts and ends never meet (a head lies between two regions): +1 in, -1 out, summed in order
    edges = np.zeros(len(buf) + 1, dtype=np.int8)
    edges[args_at[full]] = 1
    edges[(args_at + arg_len)[full]] = -1
    out = buf[np.cumsum(edges[:-1], dtype=np.int8).view(bool)]
    ends = np.cumsum(arg_len[full].astype(np.int64)) - 1
    if (out[ends] != ord(" ")).any():
        return None
    out[ends] = ord("\n")
    texts = out.tobytes().decode("utf-8", "replace").split("\n")[:-1]
    if len(texts) != len(ends):  # a newline inside an argument
        return None
    space_at = np.flatnonzero(out == ord(" "))
    spaces = np.zeros(len(arg_len), dtype=np.int64)
    spaces[full] = np.searchsorted(space_at, ends) - np.searchsorted(space_at, ends - arg_len[full] + 1)
    if full.all():
        return texts, spaces
    filled = iter(texts)
    return [next(filled) if f else "" for f in full.tolist()], spaces


def _parse_signatures_one_by_one(data: bytes, name: str, n_funcs: int, head: int = 16) -> tuple:
    """Entry by entry, naming the first bad one (used when the fast path finds damage)."""
    if len(data) < 4:
        raise LogError(f"truncated {name}")
    (entries,) = struct.unpack_from("<i", data)
    # every entry takes at least its head and a 15-byte key
    if entries < 0 or entries * (head + _KEY_FIXED) > len(data) - 4:
        raise LogError(f"corrupt {name}: {entries} call signatures in {len(data)} bytes")
    terms, heads, args = [], [], []
    pos, size = 4, len(data)
    entry_head = struct.Struct("<iiii" if head == 16 else "<ii").unpack_from
    key_head = _KEY_HEAD.unpack_from
    for _ in range(entries):
        if pos + head > size:
            raise LogError(f"truncated {name}: it ends inside the call-signature table")
        fields = entry_head(data, pos)
        term, key_len = fields[0], fields[-2 if head == 16 else -1]
        if key_len < _KEY_FIXED or pos + head + key_len > size:
            raise LogError(f"truncated {name}: a call signature runs past the end of the file")
        key = head_tuple = key_head(data, pos + head)
        if head_tuple[4] != key_len - _KEY_FIXED:
            raise LogError(f"corrupt {name}: call signature {term} says {head_tuple[4]} argument bytes in a "
                           f"{key_len}-byte key")
        terms.append(term)
        heads.append(key)
        # each argument is followed by one space (spaces inside arguments were stored as '_')
        args.append(data[pos + head + _KEY_FIXED:pos + head + key_len])
        pos += head + key_len
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
