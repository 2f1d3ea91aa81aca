"""Recorder traces for the tests.

`write_trace` writes a Recorder trace folder from a list of calls per rank, in the layout of Recorder release 2.3,
2.4 or 2.5, per rank or merged across ranks (interprocess compression: one signature table, the unique grammars
and ug.mt), for cases no real trace in ../shared/logs/recorder shows (e.g. `write` after `lseek`, a release other
than 2.4). It follows the layouts as Recorder's own writer code lays them out (lib/recorder-logger.c,
recorder-cst-cfg.c, recorder-sequitur-logger.c, recorder-timestamps.c of each release) and was checked while it
was written against real traces of Recorder 2.3.3, 2.4.0 and 2.5.0 (the development branch of November 2023)
made on this project's machine: iolens reads both the same, call for call. The function table is copied from a
real trace's recorder.mt; each rank's grammar is the plain sequence (rule -1 with one symbol per call), which
Recorder's reader accepts as any other grammar. `dump_io` reads what a trace holds from Recorder's own text dump
(`_text/`), not through iolens; `dump_calls` reads every call of it; `overlapping_pairs` lists the conflicting
pairs iolens' sweep finds in a trace's segments."""
from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

RESOLUTION = 1e-7
START_TS = 1.7e9  # the trace's wall-clock start (epoch seconds)
VERSIONS = {"2.3": "2.3.3", "2.4": "2.4.0", "2.5": "2.5.0"}


def write_trace(folder: Path, template: Path, ranks: list, release: str = "2.4", merged: bool = False,
                zlib_timestamps: bool = True) -> Path:
    """ranks[r] = [(func, depth, [args], start, end), ...] in seconds; returns `folder`.

    `merged`: Recorder's interprocess compression (2.4 opt-in, 2.5 default); `zlib_timestamps`: 2.5 only."""
    assert release in VERSIONS and not (merged and release == "2.3")
    folder.mkdir(parents=True, exist_ok=True)
    names = (template / "recorder.mt").read_bytes()[40:].decode().split("\n")[:-1]
    (folder / "recorder.mt").write_bytes(_metadata(release, len(ranks), merged, zlib_timestamps)
                                         + "".join(n + "\n" for n in names).encode())
    (folder / "VERSION").write_bytes(VERSIONS[release].encode())
    keys = [[_key(names, func, depth, args) for func, depth, args, _s, _e in calls] for calls in ranks]
    times = [_time_pairs(calls) for calls in ranks]
    if merged:
        _write_merged(folder, release, keys)
    else:
        for rank, rank_keys in enumerate(keys):
            table = {}
            seq = [table.setdefault(key, len(table)) for key in rank_keys]
            _write_table(folder / f"{rank}.cst", release, table, rank)
            _write_blob(folder / f"{rank}.cfg", _grammar(seq), release == "2.5")
    if release == "2.5":
        blocks = [_zlib(ts) if zlib_timestamps else ts for ts in times]
        sizes = struct.pack(f"<{len(blocks)}Q", *map(len, blocks))
        (folder / "recorder.ts").write_bytes(sizes + b"".join(blocks))
    else:
        for rank, ts in enumerate(times):
            (folder / f"{rank}.ts").write_bytes(ts)
    return folder


def _metadata(release: str, nprocs: int, merged: bool, zlib_timestamps: bool) -> bytes:
    if release == "2.3":  # ranks, start, resolution, ts buffer elements, ts compression algorithm (0: none)
        return struct.pack("<i4xddii", nprocs, START_TS, RESOLUTION, 1 << 20, 0)
    if release == "2.4":  # 2.3's, then interprocess compression
        return struct.pack("<i4xddiii4x", nprocs, START_TS, RESOLUTION, 1 << 20, 0, int(merged))
    # ranks; posix, mpi, mpiio, hdf5 tracing, store tid, store call depth; start, resolution; ts buffer elements;
    # ts compression, interprocess compression, inter- and intraprocess pattern recognition (C bools)
    return struct.pack("<i6B6xddi4B", nprocs, 1, 1, 1, 1, 0, 1, START_TS, RESOLUTION, 1 << 20,
                       int(zlib_timestamps), int(merged), 0, 0)


def _key(names: list, func: str, depth: int, args: list) -> bytes:
    """thread id, function id, depth, argument count, argument bytes, each argument followed by a space."""
    arg_str = "".join(a + " " for a in args).encode()
    return struct.pack("<QBBBi", 0, names.index(func), depth, len(args), len(arg_str)) + arg_str


def _time_pairs(calls: list) -> bytes:
    """(start, end) per call in resolution ticks relative to the previous call's start (uint32)."""
    ticks = [(round(start / RESOLUTION), round(end / RESOLUTION)) for _f, _d, _a, start, end in calls]
    prev, out = 0, []
    for start, end in ticks:
        out += [start - prev, end - prev]
        prev = start
    return struct.pack(f"<{len(out)}I", *out)


def _write_table(path: Path, release: str, table: dict, rank: int) -> None:
    """Entries: terminal id, [rank,] key length, [count,] key (2.3 has no rank and count)."""
    parts = [struct.pack("<i", len(table))]
    for key, term in table.items():
        head = struct.pack("<ii", term, len(key)) if release == "2.3" else struct.pack("<iiii", term, rank,
                                                                                     len(key), 1)
        parts.append(head + key)
    _write_blob(path, b"".join(parts), release == "2.5")


def _grammar(seq: list) -> bytes:
    body = [x for term in seq for x in (term, 1)]
    return struct.pack(f"<iii{len(body)}i", 1, -1, len(seq), *body)


def _zlib(data: bytes) -> bytes:
    """Recorder's blob: compressed size, decompressed size (uint64), then the zlib stream."""
    packed = zlib.compress(data)
    return struct.pack("<QQ", len(packed), len(data)) + packed


def _write_blob(path: Path, data: bytes, compressed: bool) -> None:
    path.write_bytes(_zlib(data) if compressed else data)


def _write_merged(folder: Path, release: str, keys: list) -> None:
    """One table of every rank's signatures (rank 0 writes it: 0.cst in 2.4, recorder.cst in 2.5); each distinct
    grammar once (U.cfg in 2.4; blobs one after the other in ug.cfg in 2.5), ug.mt naming each rank's."""
    table = {}
    for rank_keys in keys:
        for key in rank_keys:
            table.setdefault(key, len(table))
    _write_table(folder / ("recorder.cst" if release == "2.5" else "0.cst"), release, table, 0)
    grammars, ids = {}, []
    for rank_keys in keys:
        ids.append(grammars.setdefault(_grammar([table[k] for k in rank_keys]), len(grammars)))
    if release == "2.5":
        (folder / "ug.cfg").write_bytes(b"".join(_zlib(g) for g in grammars))
    else:
        for grammar, unique in grammars.items():
            (folder / f"{unique}.cfg").write_bytes(grammar)
    (folder / "ug.mt").write_bytes(struct.pack(f"<{len(ids) + 1}i", *ids, len(grammars)))


def dump_calls(folder: Path, rank: int) -> list:
    """Rank `rank`'s calls as Recorder's recorder2text printed them: (func, depth, [args], start, end) with the
    times as printed (strings), `tstart tend function depth class ( arg arg ... )` a line."""
    out = []
    for line in (folder / "_text" / f"{rank}.txt").read_text().splitlines():
        head, _, rest = line.partition(" ( ")
        start, end, func, depth, _cls = head.split(" ")
        out.append((func, int(depth), rest[:-2].split(" ") if rest != ")" else [], start, end))
    return out


def dump_io(folder: Path) -> list:
    """(rank, func, offset, length) of every pwrite/pread in Recorder's own dump."""
    out = []
    for dump in sorted((folder / "_text").glob("*.txt")):
        for line in dump.read_text().splitlines():
            head, _, rest = line.partition(" ( ")
            func = head.split(" ")[2]
            if func in ("pwrite", "pread"):
                args = rest[:-2].split(" ")  # path %p count offset
                out.append((int(dump.stem), func, int(args[3]), int(args[2])))
    return out


def overlapping_pairs(segments) -> list:
    """(first, second) segment rows of different ranks on the same file whose bytes overlap, at least one a
    write (iolens' conflict sweep): the write first, then the other access."""
    from iolens.analysis.conflicts import find_conflicts

    rows = segments.rows(named=True)
    out = []
    for first, second, kind in find_conflicts(segments).select("first", "second", "kind").iter_rows():
        a, b = rows[first], rows[second]
        out.append((b, a) if kind == "write-after-read" else (a, b))
    return out


def recorder2text_times(folder: Path, rank: int):
    """The (start, end) strings the trace's own recorder2text prints for rank `rank` when its reader does not
    print the rank's own times, else None. Two reader bugs of Recorder (their writers are right):
    2.4 with ranks merged reads `cst->rank`.ts, and the merged table's rank is 0, so every rank gets 0.ts;
    2.5 passes its timestamp pointer by value into a sub-rule of the grammar, so after a sub-rule the next
    terminal takes again the timestamps the sub-rule took."""
    import numpy as np

    from iolens.reader.recorder.grammar import parse_grammar
    from iolens.reader.recorder.format import _read_header

    raw, files = _read_header(str(folder), str(folder))
    rules = None
    if files.release.name == "2.4" and files.header.interprocess and rank > 0:
        pairs, walk = files.timestamps(0)[0], "sequential"
    elif files.release.name == "2.5":
        cfg, name, _ = files.grammar(rank)
        rules = parse_grammar(cfg, name)
        if all((values >= 0).all() for values, _ in rules.values()):
            return None  # no sub-rule: it prints the right times
        pairs, walk = files.timestamps(rank)[0], "by value"
    else:
        return None
    ticks = np.frombuffer(pairs, dtype="<u4").reshape(-1, 2).tolist()
    decimals = round(math.log10(1 / raw.time_resolution))
    out, prev = [], [0.0]

    def emit(index):
        start, end = ticks[index]
        tstart = start * raw.time_resolution + prev[0]
        out.append((f"{tstart:.{decimals}f}", f"{end * raw.time_resolution + prev[0]:.{decimals}f}"))
        prev[0] = tstart

    def apply(rule_id, index):  # Recorder 2.5's rule_application: `index` does not come back from a sub-rule
        for value, repeat in zip(*(a.tolist() for a in rules[rule_id])):
            for _ in range(repeat):
                if value >= 0:
                    emit(index)
                    index += 1
                else:
                    apply(value, index)

    if walk == "by value":
        apply(-1, 0)
    else:
        n_calls = len((folder / "_text" / f"{rank}.txt").read_text().splitlines())
        for index in range(min(n_calls, len(ticks))):
            emit(index)
    return out


def rewrite_dump(real: Path, folder: Path, release: str, merged: bool = False, zlib_timestamps: bool = True) -> Path:
    """A real trace's calls, as its recorder2text dump prints them, written in `release`'s layout."""
    nprocs = len(list((real / "_text").glob("*.txt")))
    ranks = [[(f, d, a, float(s), float(e)) for f, d, a, s, e in dump_calls(real, r)] for r in range(nprocs)]
    return write_trace(folder, real, ranks, release=release, merged=merged, zlib_timestamps=zlib_timestamps)
