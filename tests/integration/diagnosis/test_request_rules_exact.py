"""The request rules' batched numpy helpers give the bits of the per-value polars computations they replace
(a fleet row's SMALL_IO / RANDOM_ACCESS / MISALIGNED_IO features must not move by a last bit)."""
from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

from iolens.analysis.diagnosis import Context, Thresholds
from iolens.analysis.segments import float_sum
from iolens.analysis.diagnosis.common import counter_stake, dxt_stake
from iolens.analysis.diagnosis.findings._requests import (SEQUENTIAL_SUM_BELOW, column_stakes, float_sums, rank_stake,
                                                          trace_arrays)
from iolens.analysis.segments import POLARS_SMALL_GROUP_BY
from iolens.errors import LogError
from iolens.model import read

from support.corpus import all_logs, log_id

LOGS = [p for p in all_logs() if p.stat().st_size < 2 << 20]


def context(path) -> Context:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return Context(read(str(path)), Thresholds({}))
        except LogError as e:  # the corpus's bad-input logs: their own tests
            pytest.skip(f"unreadable: {e}")


@pytest.mark.parametrize("rows", [1, 2, 7, 8, 9, 16, 100, SEQUENTIAL_SUM_BELOW - 1, SEQUENTIAL_SUM_BELOW,
                                  SEQUENTIAL_SUM_BELOW + 1, 300, 1000])
def test_float_sums_are_polars_sums(rows):
    """Each column's sum is the one `context.float_sum` (a polars Series sum) gives, to the bit: values of
    mixed magnitudes, where any other summation order rounds differently."""
    rng = np.random.default_rng(rows)
    values = rng.random((rows, 12)) * 10.0 ** rng.integers(-9, 4, (rows, 12))
    values[:, 0] = 0.0  # a column of zeros sums to +0.0
    want = [float(float_sum(values[:, i]) or 0.0) for i in range(values.shape[1])]
    assert float_sums(values).tolist() == want


@pytest.mark.parametrize("path", LOGS, ids=log_id)
def test_batched_stakes_match_the_common_ones(logs_dir, path):
    """On every small shared log: the busiest rank's time from the counters (all columns at once) and from the
    trace's numpy columns equal `common.counter_stake` and `common.dxt_stake`, bit for bit."""
    ctx = context(path)
    if ctx.counters("POSIX") is not None:
        rank = ctx.column("POSIX", "rank")
        columns = [ctx.column("POSIX", c).astype(np.float64) for c in
                   ("POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME", "POSIX_BYTES_READ")]
        values = np.column_stack(columns) / 7.0  # inexact quotients: every bit counts
        assert column_stakes(ctx, rank, values.T) == [counter_stake(ctx, rank, v) for v in values.T]
    seg = ctx.seg_posix
    if not seg.is_empty():
        tr = trace_arrays(ctx)
        for mask in (tr["write"], tr["read"], tr["write"] | tr["read"], tr["length"] < 4096):
            keep = pl.Series(mask)
            assert rank_stake(tr["rank"][mask], tr["duration"][mask]) == _stake(seg.filter(keep))


def _stake(seg: pl.DataFrame) -> float:
    """`common.dxt_stake`, or from POLARS_SMALL_GROUP_BY rows the largest per-rank sum in row order (what
    `segments.group_sums` gives there)."""
    if seg.height < POLARS_SMALL_GROUP_BY:
        return dxt_stake(seg)
    per = {}
    for r, t in zip(seg["rank"].to_list(), (seg["end"] - seg["start"]).to_list()):
        per[r] = per.get(r, 0.0) + t
    return max(per.values())


@pytest.mark.parametrize("path", LOGS, ids=log_id)
def test_trace_stake_is_rank_stake(path):
    """`trace_stake` (the whole trace's per-rank times of `Context.rank_times` when a mask holds every request)
    is `rank_stake` of the masked requests, bit for bit; `rank_groups`/`rank_times` are computed once per trace
    and are `groups` and `group_sums` of its ranks."""
    from iolens.analysis.diagnosis.findings._requests import trace_stake
    from iolens.analysis.segments import group_sums, groups

    ctx = context(path)
    seg = ctx.trace_posix
    if seg.empty:
        return
    first, inv = groups(seg.rank)
    times = ctx.rank_times(seg)
    assert times.tobytes() == group_sums(inv, seg.duration, len(first)).tobytes()
    assert ctx.rank_times(seg) is times and ctx.rank_groups(seg) is ctx.rank_groups(seg)
    assert np.array_equal(ctx.rank_groups(seg)[0], first) and np.array_equal(ctx.rank_groups(seg)[1], inv)
    rng = np.random.default_rng(len(seg))
    n = len(seg)
    for mask in (np.ones(n, dtype=bool), np.zeros(n, dtype=bool), rng.random(n) < 0.5, seg.is_op("write")):
        want = rank_stake(seg.rank[mask], seg.duration[mask])
        assert trace_stake(ctx, mask) == want and np.signbit(trace_stake(ctx, mask)) == np.signbit(want)
        assert trace_stake(ctx, mask, bool(mask.all())) == want
    app = ctx.trace_app  # another trace of the log: its own groups (or the same object, the same ones)
    app_first, _ = groups(app.rank)
    assert np.array_equal(ctx.rank_groups(app)[0], app_first)
