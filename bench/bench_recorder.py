#!/usr/bin/env python3
"""Decode speed on a Recorder trace of a few million calls: iolens (`iolens.read` + the `calls` and
`segments` tables), optionally next to Recorder's own C reader.

No real trace that large is in ../shared/logs/recorder, so one is written here in Recorder 2.4's layout
(the function table and metadata copied from a real trace): RANKS ranks, each a loop of
`MPI_File_write_at` + its `pwrite` at a new offset, plus `lseek` + `write` pairs, so that every call
signature is distinct (the worst case for the signature table: nothing repeats) and the grammar is flat.

    python bench/bench_recorder.py --calls 2000000 --ranks 4
    python bench/bench_recorder.py --calls 2000000 --recorder-src /path/to/Recorder   # + the C reader
    python bench/bench_recorder.py --calls 2000000 --release 2.5    # Recorder 2.5's default layout

With --recorder-src (a checkout of github uiuc-hpc/Recorder at the release's tag or branch), tools/reader.c
(2.5: with tools/reader-cst-cfg.c, linked with zlib) is compiled with a small driver that decodes every rank
and throws the records away (recorder_decode_records), and timed on the same folder. Nothing of Recorder is
kept in this repository.

--release 2.5 writes the same calls as Recorder 2.5 does by default: one signature table for all ranks
(recorder.cst), each rank's grammar once in ug.cfg (ug.mt), every rank's timestamps in recorder.ts, all
zlib-compressed.
"""
from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs"))
PATH = b"/scratch/bench/out.dat"


def _key(func_id: int, depth: int, args: list) -> bytes:
    arg_str = b"".join(a + b" " for a in args)
    return struct.pack("<QBBBi", 0, func_id, depth, len(args), len(arg_str)) + arg_str


def rank_calls(rank: int, calls: int, fid: dict) -> tuple:
    """(signature keys in first-use order, each call's signature, timestamp pairs) of one rank: calls/4
    iterations of MPI_File_write_at(off) > pwrite(off), lseek(off2), write(4096)."""
    n_iter = calls // 4
    keys, base = [], (rank * n_iter) << 22
    for k in range(n_iter):
        off = str(base + (k << 22)).encode()
        off2 = str(base + (k << 22) + (1 << 21)).encode()
        keys += [_key(fid["MPI_File_write_at"], 0, [b"0-0", off, b"%p", b"1048576", b"MPI_BYTE", b""]),
                 _key(fid["pwrite"], 1, [PATH, b"%p", b"1048576", off]),
                 _key(fid["lseek"], 0, [PATH, off2, b"0"]),
                 _key(fid["write"], 0, [PATH, b"%p", b"4096"])]
    # the `write` signature repeats: keep one terminal for it, as Recorder would
    table, seq = {}, np.empty(len(keys), dtype=np.int32)
    for i, key in enumerate(keys):
        seq[i] = table.setdefault(key, len(table))
    ts = np.column_stack([np.full(len(seq), 30, dtype="<u4"), np.full(len(seq), 50, dtype="<u4")])
    return list(table), seq, ts.tobytes()


def _table(keys: list, rank: int) -> bytes:
    parts = [struct.pack("<i", len(keys))]
    for term, key in enumerate(keys):
        parts.append(struct.pack("<iiii", term, rank, len(key), 1) + key)
    return b"".join(parts)


def _grammar(seq: np.ndarray) -> bytes:
    body = np.column_stack([seq, np.ones(len(seq), dtype=np.int32)]).ravel()
    return struct.pack("<iii", 1, -1, len(seq)) + body.astype("<i4").tobytes()


def _zlib(data: bytes) -> bytes:
    packed = zlib.compress(data)
    return struct.pack("<QQ", len(packed), len(data)) + packed


def write_24(folder: Path, ranks: list) -> None:
    for rank, (keys, seq, ts) in enumerate(ranks):
        (folder / f"{rank}.cst").write_bytes(_table(keys, rank))
        (folder / f"{rank}.cfg").write_bytes(_grammar(seq))
        (folder / f"{rank}.ts").write_bytes(ts)


def write_25_merged(folder: Path, ranks: list) -> None:
    merged, grammars = {}, []
    for keys, seq, _ts in ranks:
        ids = np.array([merged.setdefault(key, len(merged)) for key in keys], dtype=np.int32)
        grammars.append(_grammar(ids[seq]))
    (folder / "recorder.cst").write_bytes(_zlib(_table(list(merged), 0)))
    (folder / "ug.cfg").write_bytes(b"".join(_zlib(g) for g in grammars))  # every rank's grammar differs
    (folder / "ug.mt").write_bytes(struct.pack(f"<{len(ranks) + 1}i", *range(len(ranks)), len(ranks)))
    blocks = [_zlib(ts) for _k, _s, ts in ranks]
    (folder / "recorder.ts").write_bytes(struct.pack(f"<{len(blocks)}Q", *map(len, blocks)) + b"".join(blocks))


def make_trace(folder: Path, calls: int, ranks: int, release: str = "2.4") -> Path:
    template = LOGS / "recorder" / "shared_header"
    folder.mkdir(parents=True, exist_ok=True)
    meta = (template / "recorder.mt").read_bytes()
    names = meta[40:].decode().split("\n")[:-1]
    fid = {n: i for i, n in enumerate(names)}
    if release == "2.5":  # ranks; 6 bools; start, resolution; ts buffer; zlib times, merged, 2 pattern flags
        head = struct.pack("<i6B6xddi4B", ranks, 1, 1, 1, 1, 0, 1, *struct.unpack_from("<dd", meta, 8),
                           1 << 20, 1, 1, 0, 0)
    else:
        head = bytearray(meta[:40])
        struct.pack_into("<i", head, 0, ranks)
    (folder / "recorder.mt").write_bytes(bytes(head) + meta[40:])
    (folder / "VERSION").write_bytes(b"2.5.0" if release == "2.5" else b"2.4.0")
    per_rank = [rank_calls(rank, calls // ranks, fid) for rank in range(ranks)]
    (write_25_merged if release == "2.5" else write_24)(folder, per_rank)
    return folder


DRIVER = r"""
#include <stdio.h>
#include "reader.h"
static long n = 0;
static void count(Record *r, void *arg) { n++; }
int main(int argc, char **argv) {
    RecorderReader reader;
    recorder_init_reader(argv[1], &reader);
    for (int rank = 0; rank < reader.metadata.total_ranks; rank++)
        recorder_decode_records(&reader, rank, count, NULL);
    recorder_free_reader(&reader);
    printf("%ld\n", n);
    return 0;
}
"""


def build_c_reader(src: Path, out: Path) -> Path:
    driver = out / "driver.c"
    driver.write_text(DRIVER)
    exe = out / "c_reader"
    sources = [str(driver)] + [str(p) for p in (src / "tools" / "reader.c", src / "tools" / "reader-cst-cfg.c")
                               if p.exists()]
    subprocess.run(["gcc", "-O2", "-o", str(exe), *sources, f"-I{src / 'include'}", f"-I{src / 'tools'}",
                    "-lz"], check=True)
    return exe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2_000_000)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--recorder-src", type=Path, help="Recorder source of the release, to time its C reader too")
    ap.add_argument("--release", choices=("2.4", "2.5"), default="2.4",
                    help="layout: 2.4 (per rank) or 2.5's default (merged ranks, zlib)")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} (1 min) before the run")
    sys.path.insert(0, str(REPO / "src"))
    import iolens

    with tempfile.TemporaryDirectory() as tmp:
        folder = make_trace(Path(tmp) / "trace", args.calls, args.ranks, args.release)
        size = sum(p.stat().st_size for p in folder.iterdir())
        t0 = time.perf_counter()
        log = iolens.read(folder)
        t1 = time.perf_counter()
        calls = log.calls
        t2 = time.perf_counter()
        seg = log.segments
        t3 = time.perf_counter()
        print(f"trace: Recorder {args.release} layout, {args.ranks} ranks, {calls.height:,} calls, "
              f"{size / 2**20:.0f} MiB on disk")
        print(f"iolens decode (iolens.read)      {t1 - t0:6.2f} s")
        print(f"iolens calls table               {t2 - t1:6.2f} s")
        print(f"iolens segments (with offsets)   {t3 - t2:6.2f} s   ({seg.height:,} segments)")
        print(f"iolens total                     {t3 - t0:6.2f} s   ({calls.height / (t3 - t0) / 1e6:.2f} M calls/s)")
        if args.recorder_src:
            exe = build_c_reader(args.recorder_src, Path(tmp))
            c0 = time.perf_counter()
            out = subprocess.run([str(exe), str(folder)], capture_output=True, text=True, check=True).stdout
            c1 = time.perf_counter()
            print(f"Recorder C reader (decode only)  {c1 - c0:6.2f} s   ({int(out):,} records)")
            print(f"ratio iolens total / C decode    {(t3 - t0) / (c1 - c0):6.2f}")


if __name__ == "__main__":
    main()
