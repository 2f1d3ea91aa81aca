"""What the modules iolens does not model hold: enough to say how much I/O a diagnosis could not see.

DFS (the DAOS file system) and DAOS (its objects) are I/O layers iolens does not analyse; their records are
fixed-size counter records (darshan-dfs-log-format.h, darshan-daos-log-format.h: a base record, int64 counters,
double counters, then UUIDs and, for DAOS, the object id), of which only the totals are read here: records,
reads, writes, bytes and the time spent. Other modules are either no I/O (APMPI: MPI profiling; APXC: Cray
network counters; BG/Q: machine facts) or unknown to iolens (a module id it has no name for).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IO = "io"  # an I/O layer iolens does not model
OTHER = "other"  # instrumentation of something other than I/O
UNKNOWN = "unknown"  # a module iolens knows nothing of
NOT_IO = ("APMPI", "APXC", "BG/Q", "NULL")


@dataclass(frozen=True)
class Totals:
    """Where the totals sit in one record version: its size, counters, and the counter indices summed."""
    nints: int
    nflts: int
    tail: int  # bytes after the double counters (UUIDs, object id)
    reads: tuple
    writes: tuple
    bytes_read: int
    bytes_written: int
    times: tuple  # the cumulative read, write and meta times (double counters)


LAYOUTS = {
    # DFS_READS, DFS_READXS; DFS_WRITES, DFS_WRITEXS; DFS_BYTES_READ/WRITTEN; DFS_F_READ/WRITE/META_TIME
    ("DFS", 1): Totals(52, 15, 32, (4, 5), (6, 7), 14, 15, (8, 9, 10)),
    # DAOS_OBJ_FETCHES, DAOS_ARRAY_READS, DAOS_KV_GETS; DAOS_OBJ_UPDATES, DAOS_ARRAY_WRITES, DAOS_KV_PUTS
    ("DAOS", 1): Totals(64, 15, 48, (1, 10, 18), (2, 11, 19), 24, 25, (8, 9, 10)),
}


def kind(name: str) -> str:
    if name in NOT_IO:
        return OTHER
    if name in {m for m, _ in LAYOUTS} or name == "MDHIM":
        return IO
    return UNKNOWN


def summarise(name: str, version: int, buf: bytes | None, bo: str) -> dict:
    """{kind, records, reads, writes, bytes_read, bytes_written, io_time} of a module iolens skips; the numbers
    None where its record layout is not known (or its region was not read: `buf` None)."""
    out = {"kind": kind(name), "records": None, "reads": None, "writes": None, "bytes_read": None,
           "bytes_written": None, "io_time": None}
    layout = LAYOUTS.get((name, version))
    if layout is None or buf is None:
        return out
    dtype = np.dtype([("id", bo + "u8"), ("rank", bo + "i8"), ("ints", bo + "i8", (layout.nints,)),
                      ("flts", bo + "f8", (layout.nflts,)), ("tail", "u1", (layout.tail,))])
    if len(buf) % dtype.itemsize:
        return out  # not the layout this version should have: say nothing rather than something wrong
    recs = np.frombuffer(buf, dtype=dtype)
    ints = np.maximum(recs["ints"].astype(np.int64), 0)
    flts = np.maximum(recs["flts"].astype(np.float64), 0.0)
    out.update(records=len(recs), reads=int(ints[:, list(layout.reads)].sum()),
               writes=int(ints[:, list(layout.writes)].sum()), bytes_read=int(ints[:, layout.bytes_read].sum()),
               bytes_written=int(ints[:, layout.bytes_written].sum()),
               io_time=float(flts[:, list(layout.times)].sum()))
    return out
