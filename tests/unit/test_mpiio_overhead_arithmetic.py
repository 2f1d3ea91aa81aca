"""MPIIO_OVERHEAD's arithmetic on hand-built segment tables: per rank, only the POSIX time inside the rank's own
MPI-IO calls counts; open, close and sync are not counted; the collective buffer one aggregator needs.
(On real logs: integration/diagnosis/test_mpiio_overhead.py.)"""
from __future__ import annotations

import polars as pl
import pytest

from iolens.analysis.diagnosis.findings.mpiio_overhead import collective_buffer, overhead_by_rank


MiB = 1 << 20


def _seg(rows) -> pl.DataFrame:
    """rows: (rank, file_id, op, start, end)."""
    rank, fid, op, start, end = zip(*rows)
    return pl.DataFrame({"rank": list(rank), "file_id": pl.Series(fid, dtype=pl.UInt64), "op": list(op),
                         "start": list(start), "end": list(end)})


def test_per_rank_share_counts_only_posix_inside_the_ranks_own_mpiio_calls():
    mpiio = _seg([(0, 1, "write", 0.0, 2.0), (1, 1, "write", 0.0, 2.0), (0, 1, "write", 3.0, 4.0)])
    posix = _seg([(0, 1, "write", 0.5, 1.0),    # inside rank 0's first call: 0.5 s
                  (0, 1, "write", 1.5, 2.5),    # runs past the call's end: only 0.5 s counts
                  (0, 1, "write", 2.6, 2.9),    # between two calls: not MPI-IO's
                  (0, 2, "write", 3.1, 3.9),    # another file: not this call's
                  (0, 1, "write", 3.2, 3.4),    # inside rank 0's second call: 0.2 s
                  (1, 1, "read", 10.0, 11.0)])  # rank 1 reads long after its call ended
    t = overhead_by_rank(mpiio, posix)
    got = {r["rank"]: (r["mpiio_s"], r["posix_s"], r["overhead_s"], r["overhead_share"]) for r in t.iter_rows(named=True)}
    assert got[0] == pytest.approx((3.0, 1.2, 1.8, 0.6))
    assert got[1] == pytest.approx((2.0, 0.0, 2.0, 1.0))  # not an aggregator: all of it is waiting
    assert t["rank"].to_list() == [1, 0]  # most time above the file system first


def test_open_close_and_sync_are_not_counted():
    mpiio = _seg([(0, 1, "open", 0.0, 5.0), (0, 1, "write", 5.0, 6.0)])
    posix = _seg([(0, 1, "write", 5.0, 6.0)])
    row = overhead_by_rank(mpiio, posix).row(0, named=True)
    assert (row["mpiio_s"], row["overhead_s"]) == pytest.approx((1.0, 0.0))


def test_collective_buffer_holds_what_one_aggregator_gathers():
    assert collective_buffer(4 * MiB, 8, 2) is None  # 16 MiB per aggregator: ROMIO's default holds it
    assert collective_buffer(8 * MiB, 8, 2) == 32 * MiB
    assert collective_buffer(64 * MiB, 64, 1) == 256 * MiB  # capped
    assert collective_buffer(None, 8, 2) is None
