"""Write a Recorder 2.4 trace folder from a list of calls per rank, in Recorder's own layout (for cases no
real trace in ../shared/logs/recorder shows, e.g. `write` after `lseek`). The function table and metadata
struct are copied from a real trace's recorder.mt; each rank's grammar is the plain sequence (rule -1 with
one symbol per call), which Recorder's reader accepts as any other grammar."""
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
