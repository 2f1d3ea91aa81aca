"""Conflicts in a Recorder trace, classified per consistency model from every call of every rank.

shared_header (see ../shared/logs/recorder/README.md): all 4 ranks write the same 4 KiB header at offset 0
with nothing between them, then 8 MiB each after it; MPI_File_sync + barrier; rank 0 then reads rank 1's
first MiB. The header writes conflict unsynchronised under every model; the read-after-write is made
synchronised under MPI-IO's sync-barrier-sync (and commit: the sync's fsync), not under session (nobody
closes and reopens in between)."""
from __future__ import annotations

import polars as pl

import iolens
from iolens.analysis.consistency import MODELS, classify_pairs, synchronised

from support.recordertools import overlapping_pairs, write_trace

FILE = "/tmp/rec-shared/h.dat"


def test_header_writes_are_unsynchronised_conflicts(shared_header_trace):
    log, pairs, index = shared_header_trace
    writes = [(a, b) for a, b in pairs if a["op"] == b["op"] == "write"]
    # 4 ranks wrote bytes 0-4095: every two of them conflict
    assert sorted({frozenset((a["rank"], b["rank"])) for a, b in writes}, key=sorted) == sorted(
        {frozenset((i, j)) for i in range(4) for j in range(i + 1, 4)}, key=sorted)
    assert all(a["offset"] == b["offset"] == 0 and a["length"] == 4096 for a, b in writes)
    for a, b in writes:
        verdict = index.synchronised(FILE, a["rank"], a["end"], b["rank"], b["start"])
        assert verdict == {m: False for m in MODELS}, (a["rank"], b["rank"])


def test_read_after_sync_and_barrier(shared_header_trace):
    log, pairs, index = shared_header_trace
    reads = [(w, r) for w, r in pairs if r["op"] == "read"]
    assert [(w["rank"], r["rank"], r["offset"]) for w, r in reads] == [(1, 0, 8392704)]
    w, r = reads[0]
    verdict = synchronised(log.calls, FILE, w["rank"], w["end"], r["rank"], r["start"])
    assert verdict == {"POSIX": True, "commit": True, "session": False, "MPI-IO": True}


def test_without_the_barrier_nothing_orders_the_read(tmp_path, logs_dir):
    """The same calls minus the barrier between the syncs: no model can call the read synchronised."""
    log = iolens.read(logs_dir / "recorder" / "shared_header")
    pairs = overlapping_pairs(log.segments.filter(pl.col("module") == "DXT_POSIX").join(log.files, on="file_id"))
    w, r = next((w, r) for w, r in pairs if r["op"] == "read")
    calls = log.calls.filter(~((pl.col("func") == "MPI_Barrier") & (pl.col("start") > w["end"])))
    assert synchronised(calls, FILE, w["rank"], w["end"], r["rank"], r["start"]) == {m: False for m in MODELS}


def test_session_close_to_open(tmp_path, logs_dir):
    """A write, the writer's close, a barrier, the reader's open, its read: synchronised under session too;
    the reader opening *before* the barrier is not."""
    f = "/data/x"

    def trace(reader_opens_at):
        writer = [("open", 0, [f, "66", "420"], 0.1, 0.11), ("pwrite", 0, [f, "%p", "10", "0"], 0.2, 0.21),
                  ("close", 0, [f], 0.3, 0.31), ("MPI_Barrier", 0, ["MPI_COMM_WORLD"], 0.4, 0.5)]
        reader = [("MPI_Barrier", 0, ["MPI_COMM_WORLD"], 0.45, 0.5), ("pread", 0, [f, "%p", "10", "0"], 0.7, 0.71)]
        reader.insert(0 if reader_opens_at < 0.45 else 1, ("open", 0, [f, "0"], reader_opens_at, reader_opens_at))
        return iolens.read(write_trace(tmp_path / str(reader_opens_at), logs_dir / "recorder" / "shared_header",
                                       [writer, reader]))

    pairs = pl.DataFrame({"path": [f], "writer": [0], "write_end": [0.21], "other": [1], "access_start": [0.7]})
    after = classify_pairs(trace(0.6).calls, pairs).row(0, named=True)
    assert (after["synchronised_POSIX"], after["synchronised_commit"], after["synchronised_session"],
            after["synchronised_MPI-IO"]) == (True, True, True, False)
    before = classify_pairs(trace(0.05).calls, pairs).row(0, named=True)
    assert (before["synchronised_commit"], before["synchronised_session"]) == (True, False)
