"""The rank checks on hand-made traces and loads: a straggler named with its delay (late, not slow), no
straggler for one late record, the time a rank is busy alone, and imbalance from every angle (bytes, fsyncs,
time), each only when it matters for the run."""
from __future__ import annotations

import numpy as np
import pytest

from iolens.analysis.diagnosis import Thresholds


# --- the timeline algorithms on hand-made traces --------------------------------------------------
MiB = 1 << 20


class _FakeCtx:
    """Just what check_straggler needs."""

    def __init__(self, seg, run_time=100.0):
        import polars as pl

        from iolens.analysis.segments import Segments

        table = pl.DataFrame(seg, schema={"rank": pl.Int64, "file_id": pl.UInt64, "start": pl.Float64,
                                          "end": pl.Float64, "length": pl.Int64}, orient="row")
        zeros = np.zeros(table.height, dtype=np.int64)  # module, op, offset: not read by these checks
        self.trace_app = Segments(zeros.astype(np.uint8), table["file_id"].to_numpy(), table["rank"].to_numpy(),
                                  zeros.astype(np.uint8), zeros, table["length"].to_numpy(),
                                  table["start"].to_numpy(), table["end"].to_numpy())
        self.th = Thresholds()
        self.run_time = run_time

    def trace_truncated(self, module):
        return False

    def rank_groups(self, seg):  # `Context.rank_groups`
        from iolens.analysis.segments import groups

        return groups(seg.rank)

    def names_of(self, ids, limit=10):
        return [f"file{i}" for i in ids][:limit]

    def rank_labels(self, ranks):  # `Context.rank_labels`
        from iolens.analysis.units import fmt_ranks

        return fmt_ranks(ranks)

    def matters(self, seconds):
        return seconds >= 0.25

    def has(self, module):
        return False  # no counters: the straggler check then says nothing about MPI-IO metadata time

    def has_layer(self, layer):  # `Context.has_layer`: no MPI-IO, as `has` says
        return False

    nprocs = 8
    peers = None  # `Context.peers`: one program's ranks, all compared


def _ops(rank, start, end, step=1.0, fid=1):
    t, out = start, []
    while t < end:
        out.append((rank, fid, t, min(t + step * 0.9, end), 1 << 20))
        t += step
    return out


def test_straggler_names_the_late_rank_and_its_delay():
    from iolens.analysis.diagnosis.findings.straggler import report as check_straggler

    seg = [op for r in range(8) for op in _ops(r, 0.0, 10.0)] + _ops(5, 10.0, 40.0)  # rank 5 goes on for 30 s
    ins = check_straggler(_FakeCtx(seg))
    assert [i.code for i in ins] == ["STRAGGLER"]
    assert ins[0].evidence.ranks == [5]
    assert 25 <= ins[0].evidence.metrics["max_delay_s"] <= 31


def test_no_straggler_when_a_rank_only_writes_one_record_late():
    from iolens.analysis.diagnosis.findings.straggler import report as check_straggler

    seg = [op for r in range(8) for op in _ops(r, 0.0, 10.0)] + [(0, 2, 39.9, 40.0, 100)]
    assert check_straggler(_FakeCtx(seg)) == []


def test_alone_time_finds_the_lone_rank():
    import polars as pl

    from iolens.analysis.diagnosis.findings.serialized_io import alone_time, busy_intervals

    seg = pl.DataFrame([op for op in _ops(0, 0.0, 50.0, step=0.01)] +
                       [op for r in range(1, 4) for op in _ops(r, 50.0, 60.0)],
                       schema=["rank", "file_id", "start", "end", "length"], orient="row")
    iv = busy_intervals(seg, gap=0.01)
    assert iv.filter(pl.col("rank") == 0).height == 1  # back-to-back operations merge into one busy interval
    alone = alone_time(iv).sort("alone", descending=True)
    rank, secs, first, last = alone.row(0)
    assert rank == 0 and 49 <= secs <= 50.01 and first == 0.0


def test_straggler_that_starts_late_is_named_with_its_start_delay():
    from iolens.analysis.diagnosis.findings.straggler import report as check_straggler

    seg = [op for r in range(8) if r != 3 for op in _ops(r, 0.0, 10.0)] + _ops(3, 30.0, 31.0)
    ins = check_straggler(_FakeCtx(seg))
    assert [i.evidence.ranks for i in ins] == [[3]]
    assert ins[0].evidence.metrics["straggler_start_delay_s"] >= 20
    assert "late, not slow" in ins[0].summary


# --- balance from every angle (hand-made per-rank loads) ---------------------------------------------------
class _Ctx:
    peers = None  # `Context.peers`: one program's ranks, all compared

    def __init__(self, run_time=100.0):
        self.th = Thresholds()
        self.run_time = run_time

    def matters(self, seconds):
        return seconds >= 0.25


def _loads(n=8, **heavy):
    import numpy as np

    loads = {"bytes": np.full(n, 8.0 * MiB), "operations": np.full(n, 8.0), "time": np.full(n, 1.0),
             "fsyncs": np.zeros(n), "end": None}
    for angle, (rank, value) in heavy.items():
        loads[angle][rank] = value
    return loads


def test_imbalance_angles_bytes_fsyncs_and_time():
    from iolens.analysis.diagnosis.findings.rank_imbalance import imbalanced_angles as _imbalanced_angles

    ctx = _Ctx()
    assert _imbalanced_angles(ctx, _loads()) == {}
    # rank 5 writes 6x the others: 40 MiB more than the mean, well over imbalance_min_bytes
    got = _imbalanced_angles(ctx, _loads(bytes=(5, 48.0 * MiB)))
    assert set(got) == {"bytes"} and got["bytes"][1] == 5 and got["bytes"][0] == pytest.approx(48 / 13)
    # 6x the bytes but only 2 MiB more: a header, not an imbalance
    assert _imbalanced_angles(ctx, _loads(bytes=(5, 12.0 * MiB))) == {}
    # one rank fsyncs after every write (64 times), the others never
    got = _imbalanced_angles(ctx, _loads(fsyncs=(3, 64.0)))
    assert set(got) == {"fsyncs"} and got["fsyncs"][1] == 3
    # 3x the I/O time counts only when the wait matters for this run (1.75 s of a 20 s run: the rule's
    # min_runtime_share, not this stub's `matters`)
    assert set(_imbalanced_angles(_Ctx(run_time=20.0), _loads(time=(2, 3.0)))) == {"time"}
    assert _imbalanced_angles(ctx, _loads(time=(2, 3.0))) == {}  # 1.75 s of 100 s: below 5 %
    quick = _loads()
    quick["time"][:] = 1e-3
    quick["time"][2] = 3e-3  # 3x the mean, but 2 ms of waiting in a 100 s run
    assert _imbalanced_angles(ctx, quick) == {}
