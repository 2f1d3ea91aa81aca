"""Recorder traces for the tests.

`write_trace` writes a Recorder 2.4 trace folder from a list of calls per rank, in Recorder's own layout (for
cases no real trace in ../shared/logs/recorder shows, e.g. `write` after `lseek`). The function table and
metadata struct are copied from a real trace's recorder.mt; each rank's grammar is the plain sequence (rule -1
with one symbol per call), which Recorder's reader accepts as any other grammar. `dump_io` reads what a trace
holds from Recorder's own text dump (`_text/`), not through iolens; `overlapping_pairs` lists the conflicting
pairs iolens' sweep finds in a trace's segments."""
from __future__ import annotations

import struct
from pathlib import Path

RESOLUTION = 1e-7


def write_trace(folder: Path, template: Path, ranks: list) -> Path:
    """ranks[r] = [(func, depth, [args], start, end), ...] in seconds; returns `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = (template / "recorder.mt").read_bytes()
    names = meta[40:].decode().split("\n")[:-1]
    head = bytearray(meta[:40])
    struct.pack_into("<i", head, 0, len(ranks))
    (folder / "recorder.mt").write_bytes(bytes(head) + meta[40:])
    (folder / "VERSION").write_bytes(b"2.4.0")
    for rank, calls in enumerate(ranks):
        sigs, seq, ts, prev = {}, [], [], 0.0
        for func, depth, args, start, end in calls:
            arg_str = "".join(a + " " for a in args).encode()
            key = struct.pack("<QBBBi", 0, names.index(func), depth, len(args), len(arg_str)) + arg_str
            seq.append(sigs.setdefault(key, len(sigs)))
            ts += [round((start - prev) / RESOLUTION), round((end - prev) / RESOLUTION)]
            prev = start
        cst = [struct.pack("<i", len(sigs))]
        for key, term in sigs.items():
            cst.append(struct.pack("<iiii", term, rank, len(key), 1) + key)
        (folder / f"{rank}.cst").write_bytes(b"".join(cst))
        body = [x for term in seq for x in (term, 1)]
        (folder / f"{rank}.cfg").write_bytes(struct.pack(f"<iii{len(body)}i", 1, -1, len(seq), *body))
        (folder / f"{rank}.ts").write_bytes(struct.pack(f"<{len(ts)}I", *ts))
    return folder


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
