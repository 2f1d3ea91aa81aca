"""The trace as numpy columns (`analysis.segments`) holds the rows of the log's segments table, in its order,
and its per-group float sums have the bits of a polars group-by (below POLARS_SMALL_GROUP_BY rows; sums in row
order above): the checks moved onto it report what they reported over the table."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from iolens.analysis.segments import from_table, groups, log_segments
from iolens.model import read

from support.corpus import all_logs, log_id

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


@pytest.mark.parametrize("path", SMALL, ids=log_id)
def test_groups_and_sorts_of_a_trace_are_the_sorts(path):
    """On every small shared log: the trace's keys grouped and sorted as the sorts they replace do."""
    from iolens.analysis.segments import _sorted_groups, distinct, is_in, sort_order, time_order

    seg = log_segments(_read(path))
    if seg.empty:
        return
    for keys in ((seg.rank,), (seg.file_id,), (seg.file_id, seg.rank, seg.op), (seg.module, seg.file_id, seg.rank)):
        first, inv = groups(*keys)
        want_first, want_inv = _sorted_groups(keys)
        assert np.array_equal(first, want_first) and np.array_equal(inv, want_inv)
        for last in (seg.start, seg.offset):
            assert np.array_equal(sort_order(keys, last), np.lexsort((last, *keys[::-1])))
    assert np.array_equal(time_order(seg.start), np.argsort(seg.start, kind="stable"))
    for values in (seg.file_id, seg.rank):
        assert np.array_equal(distinct(values), np.unique(values))
        some = np.unique(values)[::2]
        assert np.array_equal(is_in(values, some), np.isin(values, some))
