"""The trace as numpy columns (`analysis.segments`) holds the rows of the log's segments table, in its order,
and its per-group float sums have the bits of a polars group-by: the checks moved onto it report what they
reported over the table."""
from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

from conftest import all_logs, log_id
from iolens.analysis.segments import POLARS_SMALL_GROUP_BY, from_table, group_sums, groups, log_segments
from iolens.model import read

SMALL = [p for p in all_logs() if p.stat().st_size < (2 << 20)]


def _read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read(str(path))


@pytest.mark.parametrize("path", SMALL, ids=log_id)
def test_segments_are_the_table_rows_in_order(path):
    log = _read(path)
    seg = log_segments(log)
    if not log.has_dxt:
        assert seg.empty
        return
    table = log.segments
    assert len(seg) == table.height
    assert seg.module.tolist() == table["module"].to_physical().to_list()
    assert seg.op.tolist() == table["op"].to_physical().to_list()
    for name in ("file_id", "rank", "offset", "length", "start", "end"):
        assert np.array_equal(getattr(seg, name), table[name].to_numpy()), name
    again = from_table(table)  # a merged job's or a Recorder trace's table gives the same columns
    for name in ("module", "file_id", "rank", "op", "offset", "length", "start", "end"):
        assert np.array_equal(getattr(again, name), getattr(seg, name)), name


def test_groups_number_the_sorted_distinct_keys():
    a = np.array([3, 1, 3, 2, 1, 3])
    b = np.array([0, 5, 1, 0, 5, 0])
    first, inv = groups(a, b)
    assert [(a[i], b[i]) for i in first] == [(1, 5), (2, 0), (3, 0), (3, 1)]
    assert inv.tolist() == [2, 0, 3, 1, 0, 2]


@pytest.mark.parametrize("n", [1, 7, 63, 64, 200, POLARS_SMALL_GROUP_BY - 1, POLARS_SMALL_GROUP_BY, 5000])
def test_group_sums_have_the_bits_of_a_polars_group_by(n):
    rng = np.random.default_rng(n)
    for trial in range(30):
        ngroups = int(rng.integers(1, 40)) if trial % 3 else 1
        inv = rng.integers(0, ngroups, n)
        values = rng.random(n) * 10.0 ** rng.uniform(-9, 4, n)
        if trial % 2:
            values = np.round(values, 6)
        ref = pl.DataFrame({"g": inv, "v": values}).group_by("g").agg(pl.col("v").sum())
        got = group_sums(inv, values, ngroups)
        for g, v in zip(ref["g"].to_list(), ref["v"].to_list()):
            if n < POLARS_SMALL_GROUP_BY:
                assert got[g].hex() == v.hex(), (n, ngroups, g)
            else:  # polars' partitioned sums: not repeatable from one query to the next, bit for bit
                assert got[g] == pytest.approx(v, rel=1e-12), (n, ngroups, g)
        assert np.all(got[np.bincount(inv, minlength=ngroups) == 0] == 0)


@pytest.mark.parametrize("path", SMALL, ids=log_id)
def test_context_trace_views_are_the_table_views(path):
    """`Context.trace_mpiio`/`trace_app` hold the rows of `seg_mpiio`/`seg_app` in their order; `hosts`
    counts the DXT records' hosts without their table."""
    from iolens.analysis.diagnosis import Context, Thresholds

    log = _read(path)
    ctx = Context(log, Thresholds({}))
    for arrays, table in ((ctx.trace_posix, ctx.seg_posix), (ctx.trace_mpiio, ctx.seg_mpiio),
                          (ctx.trace_app, ctx.seg_app)):
        assert len(arrays) == table.height
        for name in ("file_id", "rank", "offset", "length", "start", "end"):
            assert np.array_equal(getattr(arrays, name), table[name].to_numpy()), name
    records = log.dxt_records
    assert ctx.hosts == (0 if records.is_empty() else records["hostname"].n_unique())
